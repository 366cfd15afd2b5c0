"""Pictures for the training lab: two runs (scaled, unscaled) side by side.

Every builder takes the two `TrainingRun`s (or what they hold) and draws the
scaled run in blue and the unscaled one in vermillion, the same everywhere, so
the legend only has to be read once. Curves may be partial (a run in progress):
the x axis always spans the steps asked for, so the lines grow to the right.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from attn_core.lessons.training import SATURATED, found_share

from .describe import Grid, Said, Values, num
from .parts import BLUE, GREEN, GREY, ORANGE, PURPLE, VERMILION, sci
from .style import FONT, NUM_FMT, SEQUENTIAL, Chart, line_layout, to_numpy

SCALED_COLOUR = BLUE
UNSCALED_COLOUR = VERMILION
REFERENCE_COLOUR = GREY  # chance and uniform lines
JAC_FLOOR = 1e-12  # per-row Jacobian norms at or below this (exact zeros included) sit here
DEAD = 1e-6  # a row whose Jacobian norm is at most this passes no usable gradient

RUNS = (("scaled (÷√d_k)", SCALED_COLOUR), ("unscaled", UNSCALED_COLOUR))


def _steps(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int32)


def _line(y: list[float], name: str, colour: str, *, dash: str = "solid", show=True) -> go.Scatter:
    return go.Scatter(
        x=_steps(len(y)),
        y=np.asarray(y, dtype=np.float32),
        mode="lines",
        name=name,
        legendgroup=name,
        showlegend=show,
        line=dict(color=colour, width=2.5, dash=dash),
        hovertemplate=f"{name}<br>step %{{x}}<br>%{{y:{NUM_FMT}}}<extra></extra>",
    )


def _x_range(runs, steps: int | None) -> list[float]:
    n = steps if steps else max(max(len(r.loss) for r in runs), 1)
    return [0, max(n - 1, 1)]


def _setting(run) -> str:
    opt = "SGD" if run.optimizer == "sgd" else "Adam"
    return f"d_k = {run.d_k}, {opt}, lr {run.lr:g}"


def loss_curves(scaled, unscaled, *, steps: int | None = None) -> Chart:
    """Training loss of both runs on a log axis, with the chance level ln(n_symbols)."""
    fig = go.Figure()
    for run, (name, colour) in zip((scaled, unscaled), RUNS, strict=True):
        fig.add_trace(_line(run.loss, name, colour))
    chance = scaled.chance
    fig.add_hline(
        y=chance,
        line=dict(color=REFERENCE_COLOUR, dash="dash", width=1.5),
        annotation_text=f"chance: ln {scaled.n_symbols} = {chance:.2f}",
        annotation_position="bottom left",
    )
    fig.update_layout(
        **line_layout(
            f"Training loss — {_setting(scaled)}",
            "training step",
            "cross-entropy loss (nats, log scale)",
        )
    )
    fig.update_xaxes(range=_x_range((scaled, unscaled), steps))
    losses = [x for r in (scaled, unscaled) for x in r.loss if x > 0]
    lo = min([*losses, chance]) / 2
    hi = max([*losses, chance]) * 1.5
    fig.update_yaxes(type="log", tickformat=NUM_FMT, range=[math.log10(lo), math.log10(hi)])
    caption = (
        "Both runs start from the same weights and see the same batches; only the √d_k differs. "
        f"The dashed line is guessing: a model that ignores the pairs cannot beat ln "
        f"{scaled.n_symbols}. The log scale shows the gap at the end in orders of magnitude."
    )
    return Chart(fig, caption)


def accuracy_curves(scaled, unscaled, *, steps: int | None = None) -> Chart:
    """Share of the batch answered correctly, per step."""
    fig = go.Figure()
    for run, (name, colour) in zip((scaled, unscaled), RUNS, strict=True):
        fig.add_trace(_line(run.accuracy, name, colour))
    fig.add_hline(
        y=1 / scaled.n_symbols,
        line=dict(color=REFERENCE_COLOUR, dash="dash", width=1.5),
        annotation_text=f"chance: 1/{scaled.n_symbols}",
        annotation_position="top right",  # a learning run is far above chance by then
    )
    fig.update_layout(**line_layout("Accuracy on each batch", "training step", "accuracy"))
    fig.update_xaxes(range=_x_range((scaled, unscaled), steps))
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    caption = (
        "How often the answer with the highest score is the right value. Read it with the loss: "
        "a run can be right most of the time and still have a noisy, jumping loss."
    )
    return Chart(fig, caption)


STEP = "training step"


def _curve(y: list[float], name: str) -> Said:
    """One recorded curve in words, from the run's own list (the generic reader would read
    every curve of a two-panel chart against the left panel's axis)."""
    v = np.asarray(y, dtype=float)
    x = np.flatnonzero(np.isfinite(v))
    if not x.size:
        return Said("histogram.empty", name=name)
    v = v[x]
    if v.size == 1:
        return Said("point", name=name, x=STEP, at=int(x[0]), y=num(v[0]))
    lo, hi = int(np.argmin(v)), int(np.argmax(v))
    return Said("line", name=name, n=v.size, x=STEP, x0=int(x[0]), x1=int(x[-1]), lo=num(v[lo]),
                at_lo=int(x[lo]), hi=num(v[hi]), at_hi=int(x[hi]), last=num(v[-1]))  # fmt: skip


def _two_panel_words(runs, left: tuple[str, str], right: list[tuple[str, str]]) -> tuple:
    """A two-panel chart of both runs in words: what each panel's axis holds, then each
    curve named by its panel's quantity and its run. `left` and each of `right` are
    (a TrainingRun field, what it is)."""
    y = f"on the left, {left[1]}; on the right, " + " and ".join(w for _, w in right)
    return (
        Said("axes", x=STEP, y=y, up="up"),
        *(_curve(getattr(run, field), f"{what}, {name}")
          for run, (name, _) in zip(runs, RUNS, strict=True)
          for field, what in (left, *right)),
    )  # fmt: skip


def _two_panels(left: str, right: str) -> go.Figure:
    """Two side-by-side panels with their titles."""
    return make_subplots(rows=1, cols=2, horizontal_spacing=0.12, subplot_titles=(left, right))


def _two_panel_layout(fig: go.Figure, layout: dict, y2: dict, runs, steps: int | None) -> None:
    """What the two two-panel charts share: the legend above, the right panel's axes."""
    layout["legend"].update(y=1.16)
    layout["margin"] = dict(l=10, r=10, t=105, b=10)
    layout["yaxis2"] = y2
    layout["xaxis2"] = dict(title=dict(text="training step"))
    fig.update_layout(**layout)
    fig.update_annotations(font=dict(size=14))
    fig.update_xaxes(range=_x_range(runs, steps))


def attention_shape_curves(scaled, unscaled, *, steps: int | None = None) -> Chart:
    """Left: mean entropy of the attention rows. Right: mean largest weight and saturated share."""
    fig = _two_panels("entropy of a row (nats)", "largest weight in a row")
    for run, (name, colour) in zip((scaled, unscaled), RUNS, strict=True):
        fig.add_trace(_line(run.entropy, name, colour), row=1, col=1)
        fig.add_trace(_line(run.max_weight, name, colour, show=False), row=1, col=2)
        fig.add_trace(
            _line(
                run.saturated,
                f"{name}: share of rows > {SATURATED:g}",
                colour,
                dash="dot",
                show=False,
            ),
            row=1,
            col=2,
        )
    n_keys = scaled.n_pairs
    fig.add_hline(
        y=math.log(n_keys),
        row=1,
        col=1,
        line=dict(color=REFERENCE_COLOUR, dash="dash", width=1.5),
        annotation_text=f"uniform: ln {n_keys}",
        annotation_position="bottom left",
    )
    layout = line_layout("How peaked the attention rows are", "training step", "nats", height=420)
    y2 = dict(title=dict(text="weight / share of rows"), range=[0, 1.02])
    _two_panel_layout(fig, layout, y2, (scaled, unscaled), steps)
    words = (
        *_two_panel_words(
            (scaled, unscaled), ("entropy", "mean entropy of a row (nats)"),
            [("max_weight", "mean largest weight in a row"),
             ("saturated", f"share of rows whose largest weight is above {SATURATED:g}")],
        ),
        Said("level", name=f"uniform, on the left: ln {n_keys}", y=num(math.log(n_keys))),
    )  # fmt: skip
    caption = (
        "Left: 0 nats is a one-hot row, ln(number of keys) a flat one. Right, solid: the mean "
        f"largest weight; dotted: the share of rows whose largest weight is above {SATURATED:g} "
        "— rows that pass almost no gradient back."
    )
    if scaled.max_weight and unscaled.max_weight:
        caption += (
            f" At step 0 the mean largest weight is {unscaled.max_weight[0]:.2f} unscaled "
            f"against {scaled.max_weight[0]:.2f} scaled (a flat row's is "
            f"1/{n_keys} = {1 / n_keys:.2g})."
        )
    return Chart(fig, caption, words=words)


def gradient_curves(scaled, unscaled, *, steps: int | None = None) -> Chart:
    """Left: mean softmax-Jacobian norm per row. Right: gradient norm reaching W_q and W_k."""
    fig = _two_panels("softmax Jacobian norm (mean per row)", "gradient reaching W_q, W_k")
    for run, (name, colour) in zip((scaled, unscaled), RUNS, strict=True):
        fig.add_trace(_line(run.jacobian_norm, name, colour), row=1, col=1)
        fig.add_trace(_line(run.qk_grad_norm, name, colour, show=False), row=1, col=2)
    layout = line_layout(
        "How much gradient gets through the softmax", "training step", "‖J‖ (log)", height=420
    )
    y2 = dict(title=dict(text="‖∂L/∂(W_q, W_k)‖ (log)"))
    _two_panel_layout(fig, layout, y2, (scaled, unscaled), steps)
    fig.update_yaxes(type="log", tickformat=NUM_FMT)
    words = _two_panel_words(
        (scaled, unscaled),
        ("jacobian_norm", "softmax Jacobian norm ‖J‖, mean per row"),
        [("qk_grad_norm", "gradient norm reaching W_q and W_k")],
    )
    caption = (
        "Left: the size of d softmax / d logits, averaged over rows — near 0 for a one-hot row. "
        "Right: what actually arrives at the query and key weights. Both axes are logarithmic: "
        "equal distances are equal factors, so a line one decade lower carries ten times less "
        "signal."
    )
    return Chart(fig, caption, words=words)


def _log_hist(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    counts, _ = np.histogram(np.clip(x, edges[0], edges[-1]), bins=edges)
    return counts / max(len(x), 1)


def _hist_words(norms: np.ndarray, name: str, edges: np.ndarray) -> Said:
    """One run's bars in words: how many rows, their norms' true range, and the fullest bar
    (the first bar holds every row at or below the floor, exact zeros too: from 0)."""
    if not norms.size:
        return Said("histogram.empty", name=name)
    counts, _ = np.histogram(np.clip(norms, edges[0], edges[-1]), bins=edges)
    k = int(np.argmax(counts))
    return Said(
        "histogram", name=f"{name}, ‖J‖ of each probe row", n=norms.size, lo=num(norms.min()),
        hi=num(norms.max()), most=int(counts[k]), a=num(0.0 if k == 0 else edges[k]),
        b=num(edges[k + 1]),
    )  # fmt: skip


def row_jacobian_histogram(
    scaled_norms: Any, unscaled_norms: Any, *, when: str = "at step 0"
) -> Chart:
    """Distribution of per-row Jacobian norms for both runs, on a log axis.

    Rows whose norm is exactly 0 or below JAC_FLOOR (fully saturated in float32)
    are drawn at JAC_FLOOR; the caption counts them.
    """
    raw = [to_numpy(x).ravel().astype(np.float64) for x in (scaled_norms, unscaled_norms)]
    raw = [x[np.isfinite(x)] for x in raw]  # diverged rows dropped
    s, u = (np.maximum(x, JAC_FLOOR) for x in raw)
    hi = max(float(s.max(initial=1.0)), float(u.max(initial=1.0)), 1.0)
    edges = np.logspace(-12, math.log10(hi) + 0.05, 49)
    centres = np.sqrt(edges[:-1] * edges[1:])
    fig = go.Figure()
    for norms, (name, colour) in zip((s, u), RUNS, strict=True):
        fig.add_trace(
            go.Bar(
                x=centres.astype(np.float32),
                y=_log_hist(norms, edges).astype(np.float32),
                width=(edges[1:] - edges[:-1]).astype(np.float32),
                name=name,
                marker=dict(color=colour, line=dict(width=0)),
                opacity=0.7,
                hovertemplate=(
                    f"{name}<br>‖J‖ ≈ %{{x:{NUM_FMT}}}<br>%{{y:.1%}} of rows<extra></extra>"
                ),
            )
        )
    layout = line_layout(
        f"Per-row softmax Jacobian norms {when}",
        "‖∂softmax/∂logits‖ for one row (log scale)",
        "share of rows",
        barmode="overlay",
    )
    fig.update_layout(**layout)
    fig.update_xaxes(type="log", tickformat=NUM_FMT, exponentformat="power")
    fig.update_yaxes(tickformat=".0%")
    dead_s, dead_u = (float((x <= DEAD).mean()) if x.size else 0.0 for x in (s, u))
    caption = (
        f"Each bar counts rows of the fixed probe set ({len(s)} examples). Far left are rows "
        f"whose gradient is effectively gone (‖J‖ ≤ {sci(DEAD)}): {dead_s:.0%} of the scaled rows, "
        f"{dead_u:.0%} of the unscaled ones. The rest still pass gradient back — those are "
        "the rows that can keep the shared W_q and W_k learning."
    )
    words = tuple(_hist_words(x, name, edges) for x, (name, _) in zip(raw, RUNS, strict=True))
    return Chart(fig, caption, words=words)


def _probe_panel(fig: go.Figure, w: Any, pos: np.ndarray, r: int, c: int, rows: int) -> None:
    """One panel: the first `rows` probe rows' weights, the matching key ringed in white."""
    fig.add_trace(
        go.Heatmap(
            z=to_numpy(w)[:rows],
            coloraxis="coloraxis",
            xgap=1,
            ygap=1,
            hovertemplate="example %{y}<br>key %{x}<br>weight %{z:.3~g}<extra></extra>",
        ),
        row=r,
        col=c,
    )
    fig.add_trace(
        go.Scatter(
            x=pos,
            y=np.arange(len(pos)),
            mode="markers",
            marker=dict(symbol="square-open", size=13, color="#FFFFFF", line=dict(width=2.5)),
            name="the matching key",
            showlegend=False,  # white rings: the legend gets a dark one (below)
            hovertemplate="example %{y}: the answer sits at key %{x}<extra></extra>",
        ),
        row=r,
        col=c,
    )
    fig.update_yaxes(autorange="reversed", row=r, col=c, title_text="example" if c == 1 else "")
    fig.update_xaxes(row=r, col=c, title_text="key (pair) position")


def _hits(name: str, w: Any, pos: np.ndarray) -> str:
    """A panel's examples whose largest weight is on their matching key (the ringed one)."""
    top = to_numpy(w)[: len(pos)].argmax(-1)
    return f"{name} {int((top == pos).sum())} of {len(pos)}"


def _ring_legend() -> go.Scatter:
    """The legend's entry for the rings: a dark one, readable on white."""
    return go.Scatter(
        x=[None], y=[None], mode="markers", name="the matching key",
        marker=dict(symbol="square-open", size=13, color="#000000", line=dict(width=2.5)),
    )  # fmt: skip


def _probe_layout(n_rows: int) -> dict:
    return dict(
        title=dict(
            text="Where the query looks: probe examples before and after training",
            x=0.0,
            xanchor="left",
            font=dict(size=17),
        ),
        coloraxis=dict(
            colorscale=SEQUENTIAL,
            cmin=0.0,
            cmax=1.0,
            colorbar=dict(title=dict(text="weight"), thickness=14, tickformat=NUM_FMT),
        ),
        legend=dict(orientation="h", yanchor="bottom", y=1.06, xanchor="right", x=1.0),
        font=FONT,
        height=330 * n_rows + 40,
        margin=dict(l=10, r=10, t=80, b=10),
        plot_bgcolor="#FFFFFF",
    )


def _probe_caption(before: tuple[Any, Any], after: tuple[Any, Any] | None, position: Any) -> str:
    s0, u0 = (to_numpy(w) for w in before)
    n_keys = s0.shape[-1]
    top_s, top_u = (float(np.nanmean(w.max(-1))) for w in (s0, u0))
    caption = (
        "Each row is one example's query looking over its key/value pairs; the white square "
        "marks the pair that holds the answer. Before training neither run knows where the "
        f"answer is: over all {len(s0)} probe examples the largest weight sits on it in "
        f"{found_share(s0, position):.0%} of the scaled rows and "
        f"{found_share(u0, position):.0%} of the unscaled ones (one key in {n_keys} by chance), "
        f"and a row's largest weight averages {top_u:.2f} unscaled against {top_s:.2f} scaled "
        f"(a flat row's is {1 / n_keys:.2g})."
    )
    if after is not None:
        caption += (
            " After training, a row that learned the task is bright exactly on its square; a "
            "bright cell anywhere else is a row locked onto the wrong pair. The largest weight "
            f"now sits on the answer in {found_share(after[0], position):.0%} of the scaled "
            f"rows and {found_share(after[1], position):.0%} of the unscaled ones."
        )
    return caption


def probe_rows(
    before: tuple[Any, Any],
    after: tuple[Any, Any] | None,
    position: Any,
    *,
    rows: int = 10,
) -> Chart:
    """Attention rows of the first probe examples: scaled / unscaled × before / after.

    `before` and `after` are (scaled, unscaled) arrays of shape (N, n_pairs); the
    matching key of each example (`position`) is ringed.
    """
    pos = to_numpy(position).astype(np.int64)[:rows]
    panels = [("scaled — before", before[0]), ("unscaled — before", before[1])]
    if after is not None:
        panels += [("scaled — after", after[0]), ("unscaled — after", after[1])]
    n_cols = 2
    n_rows = len(panels) // 2
    fig = make_subplots(
        rows=n_rows,
        cols=n_cols,
        subplot_titles=[p[0] for p in panels],
        horizontal_spacing=0.06,
        vertical_spacing=0.16 if n_rows > 1 else 0.1,
    )
    for i, (_, w) in enumerate(panels):
        r, c = i // n_cols + 1, i % n_cols + 1
        _probe_panel(fig, w, pos, r, c, rows)
        if i == 0:
            fig.add_trace(_ring_legend(), row=r, col=c)
    fig.update_layout(**_probe_layout(n_rows))
    fig.update_annotations(font=dict(size=14))
    words = (
        *(Grid(to_numpy(w)[:rows], "example", "key (pair) position", name=name)
          for name, w in panels),
        Values("the matching key (ringed), by example", range(len(pos)), pos.astype(float)),
        Said("probe.hits", hits="; ".join(_hits(name, w, pos) for name, w in panels)),
    )  # fmt: skip
    return Chart(fig, _probe_caption(before, after, position), words=words)


SWEEP_COLOURS = (VERMILION, ORANGE, GREEN, BLUE, PURPLE)
SWEEP_DASHES = ("dot", "dashdot", "dash", "solid", "longdash")


def head_sweep_curves(runs, *, steps: int | None = None) -> Chart:
    """Training loss of the scaled model cut into h = d_model / d_k heads, one line per d_k."""
    fig = go.Figure()
    for i, run in enumerate(runs):
        name = f"d_k = {run.d_k} (h = {run.heads})"
        colour, dash = SWEEP_COLOURS[i % len(SWEEP_COLOURS)], SWEEP_DASHES[i % len(SWEEP_DASHES)]
        fig.add_trace(_line(run.loss, name, colour, dash=dash))
    first = runs[0]
    fig.add_hline(
        y=first.chance,
        line=dict(color=REFERENCE_COLOUR, dash="dash", width=1.5),
        annotation_text=f"chance: ln {first.n_symbols} = {first.chance:.2f}",
        annotation_position="bottom left",
    )
    opt = "SGD" if first.optimizer == "sgd" else "Adam"
    fig.update_layout(
        **line_layout(
            f"Training loss by head width — d_model = {first.d_model}, {opt}, lr {first.lr:g}",
            "training step",
            "cross-entropy loss (nats, log scale)",
        )
    )
    fig.update_xaxes(range=_x_range(runs, steps))
    losses = [x for r in runs for x in r.loss if x > 0]
    lo = min([*losses, first.chance]) / 2
    hi = max([*losses, first.chance]) * 1.5
    fig.update_yaxes(type="log", tickformat=NUM_FMT, range=[math.log10(lo), math.log10(hi)])
    caption = (
        f"Every line is the usual scaled model (÷√d_k) at d_model = {first.d_model}, from the "
        "same initial weights and on the same batches; only how W_q, W_k and W_v are cut into "
        "heads differs: h heads of width d_k = d_model / h. Lower is better; the dashed line "
        "is guessing."
    )
    return Chart(fig, caption)
