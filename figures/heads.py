"""Pictures for the trained-heads page: every head's map, its job, the loss along the
sequence, ablations, attention versus contribution, and the training curves.

Numpy/tensors in, `Chart` out; no streamlit. Token labels can come from the user's
text, so they are HTML-escaped and shortened here before plotly sees them (plotly
renders a few tags in tick and hover text). The lesson's words are in content/heads.md;
what stays here is each chart's title, axes, legend, hover and caption.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go

from attn_core.lessons.heads import halfway_step, running_mean

from .describe import Grid, Said, num
from .parts import BLACK, BLUE, GREEN, GREY, ORANGE, SKY, VERMILION
from .style import (
    FONT,
    NUM_FMT,
    OKABE_ITO,
    WEIGHT_COLORAXIS,
    Chart,
    line_layout,
    plot_label,
    to_numpy,
)

JOB_TEXT = {"previous-token": "previous-token head", "induction": "induction head", "": ""}
SHORT_JOB = {"previous-token": "prev-token", "induction": "induction", "": "no clear job"}
LEGEND_ABOVE = dict(orientation="h", yanchor="bottom", y=1.0, x=0, xanchor="left")


def _title(text: str) -> dict:
    return dict(text=text, x=0.0, xanchor="left", font=dict(size=17))


def _fmt(x: float) -> str:
    return "n/a" if not math.isfinite(x) else f"{x:.2f}"


def _layout(title: str, x_title: str, y_title: str, y_top: float, **kw) -> dict:
    """The 420 px bar and line charts: the y axis from 0 to `y_top`, room above for the legend."""
    return line_layout(
        title, x_title, y_title, height=420, margin=dict(l=10, r=10, t=100, b=10),
        yaxis=dict(title=dict(text=y_title), range=[0, y_top]), **kw,
    )  # fmt: skip


def _chance_trace(x0: float, x1: float, chance: float) -> go.Scatter:
    """The blind guess, ln(vocab), as a dotted grey line from x0 to x1."""
    return go.Scatter(
        x=[x0, x1],
        y=[chance, chance],
        mode="lines",
        name=f"blind guess, ln(vocab) = {chance:.2f}",
        line=dict(color=GREY, dash="dot", width=2),
        hoverinfo="skip",
    )


def _line_words(name: str, x: Any, y: Any, across: str) -> Said | None:
    """A curve over x in words, from the numbers it draws (charts.md `line`, or `point`
    for a single one): its span, lowest and highest points and where it ends."""
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    ok = np.isfinite(y)
    x, y = x[ok], y[ok]
    if not y.size:
        return None
    if y.size == 1:
        return Said("point", name=name, x=across, at=num(x[0]), y=num(y[0]))
    lo, hi = int(np.argmin(y)), int(np.argmax(y))
    return Said(
        "line", name=name, n=y.size, x=across, x0=num(x[0]), x1=num(x[-1]), lo=num(y[lo]),
        at_lo=num(x[lo]), hi=num(y[hi]), at_hi=num(x[hi]), last=num(y[-1]),
    )  # fmt: skip


def _axes_words(across: str, up: str) -> Said:
    return Said("axes", x=across, y=up, up="up")


def _level_lines(names: Sequence[str], levels: list[tuple[float, str, str, str]]) -> list:
    """One flat line across every head per (y, colour, dash, legend name)."""
    return [
        go.Scatter(
            x=list(names),
            y=[y] * len(names),
            mode="lines",
            name=text,
            line=dict(color=color, dash=dash, width=2),
            hovertemplate=f"{hover}<extra></extra>",
        )
        for y, color, dash, text, hover in levels
    ]


# --- every head's map


def head_maps(
    weights: Any,
    labels: Sequence[str],
    previous_token: Any,
    induction: Any,
    jobs: list[list[str]],
    *,
    token_ticks: bool = True,
) -> Chart:
    """A layers × heads mosaic of (T, T) causal maps on one pair of axes and one 0–1 colour axis.

    One subplot instead of L·h: in the browser every subplot brings its own axes, ticks
    and clip paths, and an 8-panel grid cost several times a plain chart on every redraw.
    Each head is its own trace, shifted to its place in the mosaic; its hover names the
    head and gives the query and key positions (customdata), since the axes' coordinates
    are mosaic coordinates. Tick labels are token labels, drawn only with `token_ticks`
    (all tokens up to 16, else a few): they are costly to lay out, and a random sequence's
    ids say little as words.
    """
    w = to_numpy(weights)  # (L, h, T, T)
    L, _, T, _ = w.shape
    # blank cells between panels; taller between the rows, where each head's label sits
    # (tall enough for a two-line head name on a phone, where a cell is 1–2 px)
    gap = (max(2, round(0.12 * T)), max(4, round(0.45 * T)))
    prev, ind = to_numpy(previous_token), to_numpy(induction)
    traces, notes = _map_panels(w, prev, ind, jobs, gap)
    x_axis, y_axis, bottom = _mosaic_axes(w.shape, gap, labels if token_ticks else None)
    fig = go.Figure(traces)
    fig.update_layout(**_maps_layout(L, bottom, notes, x_axis, y_axis))
    causal = np.tril(np.ones((T, T), bool))
    names = [_map_name(w[l, h], l, h, jobs[l][h], prev[l, h], ind[l, h])
             for l in range(L) for h in range(w.shape[1])]  # fmt: skip
    words = tuple(
        Grid(
            np.where(causal, m, np.nan), "query position", "key position", name=name, blank="future"
        )
        for m, name in zip(w.reshape(-1, T, T), names, strict=True)
    )
    return Chart(
        fig,
        _maps_caption(w, jobs),
        alt="Grid of attention maps, one per layer and head",
        words=words,
    )


def _map_name(w: np.ndarray, l: int, h: int, job: str, prev: float, ind: float) -> str:
    """A map's name in words: its head, its job, and the two scores the job is read from
    (what the picture's diagonal and stripe show); a map the page hides says so, no more."""
    if np.isnan(w).all():  # the page hid it until its exercise is revealed
        return f"L{l}H{h} (blank until your prediction is revealed)"
    scores = f"previous-token score {num(float(prev))}"
    if np.isfinite(ind):  # no repeated token: no induction score
        scores += f", induction score {num(float(ind))}"
    return f"L{l}H{h} ({JOB_TEXT[job] or 'no clear job'}; {scores})"


def _map_panels(w, prev, ind, jobs, gap) -> tuple[list, list]:
    """One heatmap per head at its place in the mosaic, and its two-line name above it."""
    L, H, T, _ = w.shape
    gap_x, gap_y = gap
    causal = np.tril(np.ones((T, T), bool))
    qk = np.stack(np.indices((T, T)), axis=-1).astype(np.uint8 if T < 256 else np.int32)
    traces, notes = [], []
    for l in range(L):
        for h in range(H):
            job = JOB_TEXT[jobs[l][h]]
            traces.append(
                go.Heatmap(
                    z=np.where(causal, w[l, h], np.nan).astype(np.float32),
                    x0=h * (T + gap_x),
                    y0=l * (T + gap_y),
                    customdata=qk,  # (T, T, 2): query, key
                    coloraxis="coloraxis",
                    hovertemplate=f"L{l}H{h}{' · ' + job if job else ''}<br>"
                    f"prev {_fmt(prev[l, h])} · ind {_fmt(ind[l, h])}<br>"
                    "query %{customdata[0]} → key %{customdata[1]}<br>"
                    f"weight %{{z:{NUM_FMT}}}<extra></extra>",
                )
            )
            # two short lines, so that four maps' titles fit side by side on a phone (the
            # scores themselves are in the hover and on the Scores step)
            notes.append(
                dict(
                    text=f"<b>L{l}H{h}</b><br>{SHORT_JOB[jobs[l][h]]}",
                    x=h * (T + gap_x) + (T - 1) / 2,
                    y=l * (T + gap_y) - 0.5,
                    xref="x",
                    yref="y",
                    xanchor="center",
                    yanchor="bottom",
                    showarrow=False,
                    font=dict(size=12, color=VERMILION if job else GREY),
                )
            )
    return traces, notes


def _mosaic_axes(shape, gap, labels: Sequence[str] | None) -> tuple[dict, dict, int]:
    """(x axis, y axis, bottom margin) of the mosaic; token ticks when `labels` are given."""
    L, H, T, _ = shape
    gap_x, gap_y = gap
    axis = dict(showgrid=False, zeroline=False, showticklabels=False, ticks="")
    x_axis = dict(axis, range=[-0.5, H * (T + gap_x) - gap_x - 0.5])
    y_axis = dict(axis, range=[L * (T + gap_y) - gap_y - 0.5, -0.5])  # row 0 at the top
    # square cells: each T×T map is a square at every width, never a sliver on a phone
    y_axis.update(scaleanchor="x", constrain="domain", constraintoward="top")
    x_axis["constrain"] = "domain"
    x_title, y_title = "key position", "query position"
    bottom = 40
    if labels is not None:
        ticks = [plot_label(t, 6) for t in labels]
        step = 1 if T <= 16 else math.ceil(T / 6)
        keep = range(0, T, step)
        tick = dict(showticklabels=True, tickfont=dict(size=10), tickangle=0)
        for a, n, span in ((x_axis, H, T + gap_x), (y_axis, L, T + gap_y)):
            a.update(
                tick,
                tickmode="array",
                tickvals=[p * span + i for p in range(n) for i in keep],
                ticktext=[ticks[i] for _ in range(n) for i in keep],
            )
        # about 800 px for the whole row of maps: words wider than their cells stand upright
        longest = max((len(html.unescape(ticks[i])) for i in keep), default=1)
        if longest * 6 > 800 * step / (H * (T + gap_x)):
            x_axis["tickangle"] = -90
            bottom = 40 + 6 * longest
        x_title, y_title = "key (attended to)", "query (attending)"
    x_axis["title"] = dict(text=x_title, font=dict(size=12))
    y_axis["title"] = dict(text=y_title, font=dict(size=12))
    return x_axis, y_axis, bottom


def _maps_layout(L: int, bottom: int, notes: list, x_axis: dict, y_axis: dict) -> dict:
    return dict(
        title=_title("Every head's attention map, named by its job"),
        font=dict(size=13),
        height=200 + 250 * L + bottom - 40,
        margin=dict(l=60, r=10, t=110, b=bottom + 80),  # + the colour bar under the plot
        # the colour bar under the maps, not beside them: on a phone the maps keep the width
        coloraxis=dict(
            WEIGHT_COLORAXIS,
            colorbar=dict(
                WEIGHT_COLORAXIS["colorbar"],
                orientation="h",
                x=0.0,
                xanchor="left",
                y=-0.12,
                yanchor="top",
                len=0.5,
                thickness=12,
            ),
        ),
        annotations=notes,
        hoverlabel=dict(font_size=14),
        plot_bgcolor="#FFFFFF",
        xaxis=x_axis,
        yaxis=y_axis,
    )


def _maps_caption(w: np.ndarray, jobs: list[list[str]]) -> str:
    """Which heads have which job, and how bright each previous-token line is."""
    L, H, T, _ = w.shape
    named = [f"L{l}H{h}" for l in range(L) for h in range(H) if jobs[l][h] == "previous-token"]
    below = np.diagonal(w, offset=-1, axis1=-2, axis2=-1)  # (L, h, T-1): weight of i on i-1
    lit = "; ".join(
        f"{nm}: weight ≥ 0.5 at {int((below[l, h] >= 0.5).sum())} of the {T - 1} queries"
        for l in range(L)
        for h in range(H)
        if (nm := f"L{l}H{h}") in named
    )
    found = [f"L{l}H{h}" for l in range(L) for h in range(H) if jobs[l][h] == "induction"]
    return (
        "Top row: layer 0, bottom row: layer 1, one map per head, named with the job its "
        "scores give it (the Scores step shows them; hover a map for its previous-token and "
        "induction scores). Row i of each map is where query i looks "
        "(only keys up to i: the model is causal); hover for the positions and the weight. "
        f"Previous-token head{'s' if len(named) != 1 else ''}: {', '.join(named) or 'none found'} "
        + (f"— a bright line just below the diagonal ({lit}). " if named else "— ")
        + f"Induction head{'s' if len(found) != 1 else ''}: {', '.join(found) or 'none found'} "
        "— once the pattern repeats, a bright stripe one step to the right of the earlier copy."
    )


# --- scores


def head_score_bars(
    names: Sequence[str],
    previous_token: Any,
    induction: Any,
    uniform_previous: float,
    uniform_induction: float,
    jobs: list[list[str]] | None = None,
) -> Chart:
    """Two bars per head: previous-token and induction score, with uniform attention's.

    `jobs`: the (layers, h) grid of HeadScores.jobs, for the caption's count."""
    prev, ind = to_numpy(previous_token).ravel(), to_numpy(induction).ravel()
    bars = [go.Bar(name="previous-token score", x=list(names), y=prev, marker_color=BLUE)]
    if np.isfinite(ind).any():  # no token repeats: no induction score at all, not bars of 0
        bars.append(
            go.Bar(
                name="induction score",
                x=list(names),
                y=np.nan_to_num(ind),
                marker_color=ORANGE,
                marker_pattern_shape="/",
            )
        )
    fig = go.Figure(bars)
    fig.update_traces(texttemplate="%{y:.2f}", textposition="outside", cliponaxis=False)
    uniform = [
        (y, color, "dot", f"{what} ({y:.3g})", f"{what}: {y:.3f}")
        for y, color, what in (
            (uniform_previous, BLUE, "uniform attention, previous-token score"),
            (uniform_induction, ORANGE, "uniform attention, induction score"),
        )
        if math.isfinite(y)
    ]
    fig.add_traces(_level_lines(names, uniform))
    top = float(np.nanmax(np.concatenate([prev, ind, [uniform_previous, 0.1]])))
    fig.update_layout(legend=LEGEND_ABOVE)
    fig.update_layout(
        **_layout(
            "How much each head looks at the two places that matter",
            "head (layer, head)",
            "mean attention weight",
            top * 1.18,
            barmode="group",
        )
    )
    return Chart(
        fig,
        "Blue: the mean weight from each token to the one just before it. Orange: the mean "
        "weight from each repeated token to the token that followed its earlier copy. Dotted "
        "lines: what a head that spreads its weight evenly would score. A job shows up as one "
        "bar far above its dotted line."
        + ("" if np.isfinite(ind).any() else " No token repeats here: no induction score.")
        + _job_count(names, jobs),
    )


def _job_count(names: Sequence[str], jobs: list[list[str]] | None) -> str:
    if jobs is None:
        return ""
    with_job = [n for n, j in zip(names, (j for row in jobs for j in row), strict=True) if j]
    return f" On this sequence {len(with_job)} of the {len(names)} heads have one" + (
        f" ({', '.join(with_job)})." if with_job else "."
    )


# --- loss along the sequence


POSITION = "position i (predicting the token at i + 1)"


def position_loss(
    loss: Any,
    repeated: Any,
    labels: Sequence[str],
    chance: float,
    *,
    ablated: Any | None = None,
    ablated_name: str = "",
) -> Chart:
    """Loss of predicting token i+1 at each position i; repeated positions highlighted."""
    y = to_numpy(loss).ravel()  # (T-1,)
    rep = np.asarray(repeated, bool).ravel()
    n = y.size
    x = np.arange(n)
    lab = [plot_label(t, 10) for t in labels]
    traces = _loss_traces(x, y, rep, lab)
    if ablated is not None:
        traces.append(_ablated_line(x, to_numpy(ablated).ravel(), ablated_name))
    traces.append(_chance_trace(-0.5, max(n - 0.5, 0.5), chance))
    fig = go.Figure(traces)
    # in words, every point by its position (the axis names short sequences by their tokens)
    words = [_axes_words(POSITION, "loss (nats)")]
    words += [_line_words(tr.name, tr.x, tr.y, POSITION) for tr in traces[1:-1]]
    words.append(Said("level", name=traces[-1].name, y=num(chance)))
    xaxis: dict = dict(title=dict(text=POSITION))
    if n <= 24:
        xaxis.update(tickmode="array", tickvals=list(x), ticktext=lab[:n])
        xaxis["title"]["text"] = "current token (predicting the next one)"
    top = max(chance, float(np.nanmax(y)) if n else chance)
    if ablated is not None and n:
        top = max(top, float(np.nanmax(to_numpy(ablated))))
    fig.update_layout(
        **_layout(
            "How surprised the model is by each next token", "", "loss (nats)", top * 1.12,
            xaxis=xaxis,
        )
    )  # fmt: skip
    return Chart(fig, _loss_caption(y, rep, chance), words=tuple(w for w in words if w))


def _loss_traces(x: np.ndarray, y: np.ndarray, rep: np.ndarray, lab: list[str]) -> list:
    """A thin grey line through every position, then first occurrences and repeats as markers."""
    hover = np.asarray([f"after {lab[i]} → {lab[i + 1]}" for i in range(y.size)], dtype=object)
    traces = [
        go.Scatter(
            x=x, y=y, mode="lines", line=dict(color=GREY, width=1), showlegend=False,
            hoverinfo="skip", meta=dict(words="skip"),  # joins the markers below: drawing
        )
    ]  # fmt: skip
    for sel, name, color, symbol in (
        (~rep, "first occurrence (nothing to copy)", BLUE, "circle"),
        (rep, "repeated token (copying can work)", ORANGE, "diamond"),
    ):
        traces.append(
            go.Scatter(
                x=x[sel],
                y=y[sel],
                mode="markers",
                name=name,
                marker=dict(color=color, size=9, symbol=symbol),
                customdata=hover[sel],
                hovertemplate="position %{x}: %{customdata}<br>loss %{y:.3~g} nats<extra></extra>",
            )
        )
    return traces


def _ablated_line(x: np.ndarray, a: np.ndarray, name: str) -> go.Scatter:
    return go.Scatter(
        x=x,
        y=a,
        mode="lines+markers",
        name=f"with {name} switched off",
        line=dict(color=VERMILION, dash="dash", width=2),
        marker=dict(size=6, symbol="x"),
        hovertemplate="position %{x}<br>loss %{y:.3~g} nats (ablated)<extra></extra>",
    )


def _loss_caption(y: np.ndarray, rep: np.ndarray, chance: float) -> str:
    new, old = y[~rep], y[rep]
    caption = (
        "Blue circles: the current token is new, so the next one cannot be read off the "
        f"context; here they average {np.nanmean(new):.2f} nats ({np.nanmin(new):.2f} to "
        f"{np.nanmax(new):.2f}), against a blind guess of {chance:.2f}. "
        if new.size
        else ""
    )
    return caption + (
        "Orange diamonds: the current token appeared before, so the model can copy what "
        f"followed it last time; here they average {np.nanmean(old):.2g} nats."
        if old.size
        else "No token repeats here, so there are no orange diamonds: nothing to copy."
    )


# --- ablation


def ablation_bars(
    names: Sequence[str],
    single: Any,
    full_repeated: float,
    chance: float,
    *,
    selected: Sequence[str] = (),
    selected_loss: float | None = None,
) -> Chart:
    """Repeated-position loss with each head switched off on its own."""
    s = to_numpy(single).ravel()
    levels = [
        (full_repeated, GREEN, "solid", f"all heads on: {full_repeated:.3g}"),
        (chance, GREY, "dot", f"blind guess: {chance:.3g}"),
    ]
    if selected_loss is not None and selected:
        levels.append(
            (selected_loss, VERMILION, "dash", f"your selection off: {selected_loss:.3g}")
        )
    fig = go.Figure([_ablation_bar(names, s, selected)])
    fig.add_traces(_level_lines(names, [(*level, level[-1]) for level in levels]))
    top = max(chance, float(s.max()), selected_loss or 0.0)
    fig.update_layout(
        **_layout(
            "Switch off one head at a time: loss on the repeated tokens",
            "head switched off",
            "loss on repeated tokens (nats)",
            top * 1.15,
            legend=LEGEND_ABOVE,
        )
    )
    return Chart(
        fig,
        "Measured on 128 fresh repeated sequences. A tall bar is a head the model cannot do "
        "without; a bar that stays at the green line belongs to a head that can be pruned for "
        "free. Dark blue: layer 0, light blue: layer 1; an outlined bar is in your selection.",
    )


def _ablation_bar(names: Sequence[str], s: np.ndarray, selected: Sequence[str]) -> go.Bar:
    """One bar per head, blue by layer, the selected ones outlined."""
    layers = [int(nm[1 : nm.index("H")]) for nm in names]
    return go.Bar(
        x=list(names),
        y=s,
        name="loss with that head off",  # no legend; the chart's words name the bars
        marker_color=[(BLUE, SKY)[lyr % 2] for lyr in layers],
        marker_line=dict(
            color=[BLACK if nm in selected else "rgba(0,0,0,0)" for nm in names], width=3
        ),
        texttemplate="%{y:.2f}",
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{x} off: repeated-position loss %{y:.3~g} nats<extra></extra>",
        showlegend=False,
    )


# --- attention vs contribution

SYMBOLS = ["circle", "diamond", "square", "triangle-up", "x", "cross", "star", "hexagon"]


def contribution_scatter(weights: Any, contribution: Any, names: Sequence[str]) -> Chart:
    """Per head and key: the largest weight any query gives that key, against ‖α v W_o‖.

    One dot per (head, key) rather than per (query, key) pair: a key's pairs all lie on one
    line of slope 1 on these log–log axes (‖α v W_o‖ = α ‖v W_o‖), so its strongest pair
    places that line, and the browser draws a few hundred markers instead of thousands
    (an SVG marker each: a full scatter cost over half a second per redraw).
    """
    w = to_numpy(weights)  # (L, h, T, T)
    c = to_numpy(contribution)
    L, H, T, _ = w.shape
    causal = np.tril(np.ones((T, T), bool))
    q = np.where(causal, w, -1.0).argmax(axis=-2)  # (L, h, T): the query that looks hardest
    best_w = np.take_along_axis(w, q[..., None, :], axis=-2)[..., 0, :]  # (L, h, T)
    best_c = np.take_along_axis(c, q[..., None, :], axis=-2)[..., 0, :]
    traces = [
        _head_dots(best_w[l, h], best_c[l, h], q[l, h], names[l * H + h], l * H + h, h)
        for l in range(L)
        for h in range(H)
    ]
    fig = go.Figure(traces)
    fig.update_layout(
        **line_layout(
            "Attention weight versus what the head actually writes",
            "largest attention weight α the key receives (log scale)",
            "size of what is written, ‖α · v · W_o‖ (log)",
            height=440,
            legend=dict(orientation="v", x=1.01, y=1, xanchor="left", yanchor="top"),
            margin=dict(l=10, r=10, t=50, b=10),
        )
    )
    fig.update_xaxes(type="log", range=[-2.05, 0.05], tickvals=[0.01, 0.03, 0.1, 0.3, 1])
    fig.update_yaxes(type="log", dtick=1, exponentformat="none")
    # in words, every head's dots (the reader's default names six series, then only names)
    words = (
        _axes_words(fig.layout.xaxis.title.text, fig.layout.yaxis.title.text),
        *(_cloud_words(tr.name, tr.x, tr.y) for tr in traces),
    )
    return Chart(
        fig,
        "Each dot is one key of one head, placed at the largest weight any query gives it "
        "(below 0.01 left out) and at what that query–key pair writes; both axes are "
        "logarithmic, and the key's other pairs lie on a line of slope 1 through its dot. If "
        "the weight were the whole story, all dots would sit on one line. Instead, at the same "
        "weight the amount written differs by a factor of ten or more between heads and "
        "between keys: a head can look hard at a token whose value is small and change almost "
        "nothing. Weights say where a head looks, not how much it changes the result.",
        words=words,
    )


def _cloud_words(name: str, x: Any, y: Any) -> Said:
    """One head's dots in words: how many, their spread across and up, where the highest is."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size == 0:  # every weight of this head under 0.01: no dot drawn
        return Said("heatmap.empty", name=name)
    if x.size == 1:
        return Said("point", name=name, x="across", at=num(x[0]), y=num(y[0]))
    top = int(np.argmax(y))
    return Said("cloud", name=name, n=x.size, x0=num(x.min()), x1=num(x.max()),
                y0=num(y.min()), y1=num(y.max()), at=num(x[top]))  # fmt: skip


def _head_dots(best_w, best_c, q, name: str, i: int, h: int) -> go.Scatter:
    """One head's keys: (T,) largest weight, what that pair writes, and which query gave it."""
    keys = np.flatnonzero(best_w > 0.01)  # tiny weights crowd the origin
    return go.Scatter(
        x=best_w[keys],
        y=best_c[keys],
        customdata=np.stack([keys, q[keys]], axis=-1).astype(np.int32),
        mode="markers",
        name=name,
        marker=dict(
            color=OKABE_ITO[i % len(OKABE_ITO)],
            symbol=SYMBOLS[h % len(SYMBOLS)],  # shape = head, colour = layer+head
            size=8,
            opacity=0.8,
            line=dict(width=0.5, color="#ffffff"),
        ),
        hovertemplate=f"{name}, key %{{customdata[0]}} "
        "(most weight from query %{customdata[1]})<br>weight %{x:.3~g}<br>"
        "‖α·v·W_o‖ %{y:.3~g}<extra></extra>",
    )


# --- training


def training_curves(
    loss_repeated: Sequence[float],
    loss_first: Sequence[float],
    score_steps: Sequence[int],
    best_previous: Sequence[float],
    best_induction: Sequence[float],
    chance: float,
    *,
    total_steps: int | None = None,
    phase_step: int | None = None,
    title: str = "Training: the loss and the two head scores",
) -> Chart:
    """Two stacked panels on one step axis: the two losses, then the two best head scores."""
    n = len(loss_repeated)
    x_max = max(total_steps or n, 1)
    traces = [
        *_loss_curves(loss_repeated, loss_first),
        *_score_curves(score_steps, best_previous, best_induction),
        _chance_trace(0, x_max, chance),
    ]
    shapes, notes = _phase_marks(phase_step)
    top = max([chance, *loss_first, *loss_repeated[:50]]) if n else chance
    fig = go.Figure(traces)
    fig.update_layout(
        title=_title(title),
        font=FONT,
        colorway=OKABE_ITO,
        height=600,
        margin=dict(l=10, r=10, t=120, b=10),
        hoverlabel=dict(font_size=14),
        legend=dict(orientation="h", yanchor="bottom", y=1.01, xanchor="left", x=0),
        xaxis=dict(domain=[0, 1], anchor="y", range=[0, x_max], showticklabels=False),
        yaxis=dict(domain=[0.55, 1], title=dict(text="loss (nats)"), range=[0, top * 1.1]),
        xaxis2=dict(domain=[0, 1], anchor="y2", range=[0, x_max], title=dict(text="training step")),
        yaxis2=dict(domain=[0, 0.43], title=dict(text="head score"), range=[0, 1]),
        shapes=shapes,
        annotations=notes,
    )
    # in words: the one step axis (its title sits under the bottom panel) and each panel's
    # own unit, the dashed phase-change line named for what it is
    words = [_axes_words("training step", "loss (nats) in the top panel, head score in the bottom")]
    words += [_line_words(tr.name, tr.x, tr.y, "step") for tr in traces[:-1]]
    words.append(Said("level", name=traces[-1].name, y=num(chance)))
    if phase_step is not None:
        words.append(Said("mark", name="phase change", x="step", at=num(phase_step)))
    return Chart(
        fig,
        curves_caption(
            loss_repeated, loss_first, score_steps, best_previous, best_induction, chance
        ),
        words=tuple(w for w in words if w),
    )


def _loss_curves(loss_repeated: Sequence[float], loss_first: Sequence[float]) -> list:
    """The top panel: the loss at every step, first occurrences and repeated tokens."""
    steps = np.arange(1, len(loss_repeated) + 1)
    return [
        go.Scatter(
            x=steps,
            y=np.asarray(loss_first, np.float32),
            name="loss on first occurrences",
            line=dict(color=BLUE, width=2),
            hovertemplate="step %{x}: %{y:.3~g} nats<extra>first occurrence</extra>",
        ),
        go.Scatter(
            x=steps,
            y=np.asarray(loss_repeated, np.float32),
            name="loss on repeated tokens",
            line=dict(color=ORANGE, width=2.5),
            hovertemplate="step %{x}: %{y:.3~g} nats<extra>repeated</extra>",
        ),
    ]


def _score_curves(steps: Sequence[int], best_previous, best_induction) -> list:
    """The bottom panel: the best head of each job at every scoring snapshot."""
    return [
        go.Scatter(
            x=list(steps),
            y=np.asarray(best_previous, np.float32),
            name="best previous-token score, layer 0",
            line=dict(color=GREEN, width=2.5),
            xaxis="x2",
            yaxis="y2",
            hovertemplate="step %{x}: %{y:.2f}<extra>previous-token, layer 0</extra>",
        ),
        go.Scatter(
            x=list(steps),
            y=np.asarray(best_induction, np.float32),
            name="best induction score, layer 1",
            line=dict(color=VERMILION, width=2.5, dash="dash"),
            xaxis="x2",
            yaxis="y2",
            hovertemplate="step %{x}: %{y:.2f}<extra>induction, layer 1</extra>",
        ),
    ]


def _phase_marks(phase_step: int | None) -> tuple[list[dict], list[dict]]:
    """A dashed line through both panels at the phase change, labelled in the top one."""
    if phase_step is None:
        return [], []
    shapes = [
        dict(
            type="line", xref="x" if ya == "y" else "x2", yref=f"{ya} domain",
            x0=phase_step, x1=phase_step, y0=0, y1=1,
            line=dict(color=BLACK, dash="dash", width=1.5),
        )
        for ya in ("y", "y2")
    ]  # fmt: skip
    note = dict(
        text=f" phase change ≈ step {phase_step}", x=phase_step, y=0.45, xref="x",
        yref="y domain", xanchor="left", yanchor="middle", showarrow=False, font=dict(size=13),
    )  # fmt: skip
    return shapes, [note]


WINDOW = 25  # steps per running mean: one step's batch loss is noisy


def curves_caption(
    loss_repeated: Sequence[float],
    loss_first: Sequence[float],
    score_steps: Sequence[int],
    best_previous: Sequence[float],
    best_induction: Sequence[float],
    chance: float,
) -> str:
    """What the training curves show, every number read off the logged curves."""
    n = len(loss_first)
    measures = (
        "Top: the blue curve is the loss where the current token is new, so the next one "
        f"cannot be read off the context; a blind guess scores ln(vocab) = {chance:.2f} there. "
    )
    if n < 2 * WINDOW:
        return measures + f"Only {n} steps so far: too few for {WINDOW}-step means."
    first, centre = running_mean(loss_first, WINDOW)
    rep, _ = running_mean(loss_repeated, WINDOW)
    start, end = float(np.mean(loss_first[:WINDOW])), float(np.mean(loss_first[-2 * WINDOW :]))
    k = int(np.argmax(first))
    peak, at = float(first[k]), int(centre[k])
    # the drop: the repeated-token loss falls from 3/4 of a blind guess to 1/4 of it
    hi, lo = rep < 0.75 * chance, rep < 0.25 * chance
    drop = (int(centre[np.argmax(hi)]), int(centre[np.argmax(lo)])) if lo.any() else None
    ends = "below" if end < chance else "above"
    text = measures + (
        f"It starts at {start:.2f} ({WINDOW}-step mean) and climbs to {peak:.2f} around step "
        f"{at}, then settles at {end:.2f} over the last {2 * WINDOW} steps, "
        f"{abs(end - chance):.2f} {ends} the blind guess. "
    )
    if drop is None:
        return text + "The orange loss on repeated tokens has not collapsed yet."
    return (
        text + _drop_text(drop, at) + _halves_text(score_steps, best_previous, best_induction, drop)
    )


def _drop_text(drop: tuple[int, int], at: int) -> str:
    """The phase change, and whether the first-occurrence peak falls inside it."""
    during = drop[0] <= at <= drop[1]
    return (
        f"Between steps {drop[0]} and {drop[1]} the orange loss on repeated tokens falls from "
        "three quarters of a blind guess to a quarter: the phase change"
        + (
            ", and the blue peak falls inside it. A likely reason: the copying that forms then "
            "also bets on tokens already in the context, and a new token is usually followed "
            "by one not seen yet, so on first occurrences those bets miss until the model "
            "learns when to copy. "
            if during
            else f". The blue peak, at step {at}, lies outside it. "
        )
    )


def _halves_text(score_steps, best_previous, best_induction, drop: tuple[int, int]) -> str:
    """When the two best head scores make half of their rise, against the drop."""
    half = [halfway_step(score_steps, best_previous), halfway_step(score_steps, best_induction)]
    if None in half:
        return ""
    every = score_steps[1] - score_steps[0]
    near = all(drop[0] - every <= h <= drop[1] + every for h in half)
    return (
        f"Bottom: the best previous-token score (layer 0) and the best induction score "
        f"(layer 1) make half of their rise by steps {half[0]} and {half[1]} (scored every "
        f"{every} steps)"
        + (
            ", within one scoring interval of the drop: the two heads start to work together."
            if near
            else "."
        )
    )


def run_curves(run: Any, title: str) -> Chart:
    """`training_curves` for a training run (anything with InductionRun's fields)."""
    return training_curves(
        run.loss_repeated,
        run.loss_first,
        run.score_steps,
        [max(p[0]) for p in run.previous_token],  # best layer-0 head at each snapshot
        [max(p[-1]) for p in run.induction],  # best last-layer head
        run.chance,
        total_steps=run.steps,
        phase_step=run.phase_change_step(),
        title=title,
    )
