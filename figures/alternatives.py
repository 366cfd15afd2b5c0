"""Pictures for "Beyond the dot product": scoring functions side by side, cosine's
temperature, the cost of additive scores, attention as a kernel smoother, and
attention weights against what each token actually contributes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .describe import Grid, Said, Values, num
from .parts import (
    BLACK,
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    VERMILION,
    format_bytes,
    hline,
    label,
    legend_below,
    vline,
)
from .style import DIVERGING, NUM_FMT, SEQUENTIAL, Chart, base_layout, line_layout
from .style import to_numpy as _np

# Margins wide enough for every figure's tick labels and axis titles. Plotly grows a margin
# that is too small ("auto-margin") by laying the whole figure out a second time, on every
# redraw; with the style's 10 px margins that second pass always happened and doubled
# what a redraw costs the browser.
MARGIN = dict(l=90, r=20, t=50, b=85)


def _legend_below(layout: dict, extra: int = 60) -> dict:
    """Legend under the plot, so long titles on half-width charts do not collide with it;
    `extra` px of room under the margin that fits the axis labels."""
    layout["margin"] = dict(b=MARGIN["b"])  # the other sides: MARGIN, set by _light
    return legend_below(layout, y=-0.3, extra=extra)


def _light(layout: dict) -> dict:
    """Settings that make a redraw cheaper in the browser without changing the picture.

    - margins at least MARGIN, which fits the labels, so plotly lays the figure out once;
    - ticklabeloverflow "allow": plotly's default checks every tick label against the
      figure's edge once per label, which is quadratic in the number of labels.
    """
    margin = layout.get("margin", {})
    layout["margin"] = {k: max(margin.get(k, 0), v) for k, v in MARGIN.items()}
    for name, axis in list(layout.items()):
        if name.startswith(("xaxis", "yaxis")):
            layout[name] = dict(axis, ticklabeloverflow="allow")
    return layout


def _hline(y: float, text: str, colour: str, dash: str, position: str) -> tuple[dict, dict]:
    """A full-width horizontal reference line and its label at the left or right end."""
    x = 0.02 if position == "left" else 0.98
    return hline(y, color=colour, dash=dash), label(x, y, text, xanchor=position, size=13)


def _strip(
    mats: dict[str, np.ndarray], shown: dict[str, np.ndarray], labels: list[str], what: str
) -> tuple[np.ndarray, list]:
    """Small multiples as ONE heatmap's z: the T×T panels side by side, a blank column apart,
    and the hover text of every cell. `shown` is what the colour encodes (it may be rescaled
    per panel); `mats` holds the values the hover reports."""
    T, n = len(labels), len(mats)
    step = T + 1  # a panel and the blank column after it
    z = np.full((T, n * step - 1), np.nan, np.float32)
    text = np.full(z.shape, "", dtype=object)
    for i, (name, m) in enumerate(mats.items()):
        z[:, i * step : i * step + T] = shown[name]
        text[:, i * step : i * step + T] = [
            [f"{name}<br>query {labels[r]} · key {labels[c]}<br>{what} {m[r, c]:.3g}"
             for c in range(T)]
            for r in range(T)
        ]  # fmt: skip
    return z, text.tolist()


def _grid_traces(scores: dict, weights: dict, labels: list[str]) -> list[dict]:
    """The two heatmaps: every panel's scores (top, each on its own scale) and weights."""
    s_mats = {k: _np(v) for k, v in scores.items()}
    w_mats = {k: _np(weights[k]) for k in scores}
    s_shown = {k: m / (float(np.abs(m).max()) or 1.0) for k, m in s_mats.items()}
    z_s, text_s = _strip(s_mats, s_shown, labels, "score")
    z_w, text_w = _strip(w_mats, w_mats, labels, "weight")
    cell = dict(type="heatmap", xgap=1, ygap=1, hovertemplate="%{text}<extra></extra>")
    return [
        dict(cell, z=z_s, text=text_s, zmin=-1.0, zmax=1.0, colorscale=DIVERGING,
             showscale=False, xaxis="x2", yaxis="y2"),
        dict(cell, z=z_w, text=text_w, zmin=0.0, zmax=1.0, colorscale=SEQUENTIAL, xaxis="x",
             yaxis="y", colorbar=dict(title=dict(text="weight"), tickformat=NUM_FMT,
                                      thickness=14, len=0.45, y=0.0, yanchor="bottom")),
    ]  # fmt: skip


_TOP, _BOTTOM = [0.57, 1.0], [0.0, 0.43]  # the rows of panels: scores above, weights below


def _grid_axes(layout: dict, labels: list[str], n: int) -> None:
    """Bottom row (x, y): the weights, with the key labels; top row (x2, y2): the scores."""
    T = len(labels)
    x_range = [-0.5, n * (T + 1) - 1.5]
    rows = dict(tickmode="array", tickvals=list(range(T)), ticktext=labels, autorange="reversed")
    plain = dict(showgrid=False, zeroline=False)
    layout["xaxis"].update(
        **plain, anchor="y", range=x_range, tickmode="array", tickvals=list(range(T)),
        ticktext=labels,
    )  # fmt: skip
    layout["yaxis"].update(**plain, **rows, domain=_BOTTOM, anchor="x")
    layout["xaxis2"] = dict(**plain, anchor="y2", range=x_range, showticklabels=False)
    layout["yaxis2"] = dict(
        **plain, **rows, domain=_TOP, anchor="x2", title=dict(text="scores: query token")
    )


def _panel_titles(scores: dict, entropies: dict[str, float], T: int) -> list[dict]:
    """Each panel's name over it: the scores' range on top, the weights' entropy below."""
    step = T + 1
    sub = dict(xref="x", yref="paper", xanchor="center", yanchor="bottom", showarrow=False)
    return [
        dict(sub, text=f"<b>{k}</b><br>range {m.min():.2g} … {m.max():.2g}",
             x=i * step + (T - 1) / 2, y=_TOP[1], font=dict(size=13))
        for i, (k, m) in enumerate((k, _np(v)) for k, v in scores.items())
    ] + [
        dict(sub, text=f"<b>{k}</b><br>H = {entropies[k]:.2f}", x=i * step + (T - 1) / 2,
             y=_BOTTOM[1], font=dict(size=13))
        for i, k in enumerate(scores)
    ]  # fmt: skip


def scoring_grids(
    scores: dict[str, np.ndarray], weights: dict[str, np.ndarray], entropies: dict[str, float],
    labels: list[str],
) -> Chart:  # fmt: skip
    """Every scoring's T×T scores (top row, diverging, each panel on its own scale) and their
    softmax weights (bottom row, one shared 0–1 scale), in ONE figure of two heatmaps.

    Five panels per row are one heatmap each (blank columns between panels), not five
    subplots: this figure is redrawn on every move of the τ slider, and one figure with two
    traces draws several times faster in the browser than two figures of five subplots.
    """
    T = len(labels)
    layout = base_layout(
        "Scores, and the weights softmax makes of them: the same queries and keys, five ways",
        "key token (1 … 8 in every panel)",
        "weights: query token",
        height=660,
    )
    _grid_axes(layout, labels, len(scores))
    layout["annotations"] = _panel_titles(scores, entropies, T)
    layout["margin"] = dict(t=105, r=100)
    fig = go.Figure(data=_grid_traces(scores, weights, labels), layout=_light(layout))
    sharpest = min(entropies, key=entropies.get)
    flattest = max(entropies, key=entropies.get)
    return Chart(
        fig,
        "Top row, scores: blue is negative, orange positive, and each panel has its own "
        "colour scale, so compare patterns, and compare sizes through the ranges above the "
        "panels. Dot and bilinear scores grow with the vectors' lengths; scaled dot is the "
        "dot product divided by √d_k = 4, the same pattern with a quarter of the range; "
        "cosine never leaves [−1/τ, 1/τ]. Bottom row, weights: each row of scores through "
        f"softmax. H is the mean row entropy in nats, how spread a row is: {math.log(T):.2f} "
        f"= uniform over {T} keys, 0 = one-hot. Here **{sharpest}** is the sharpest and "
        f"**{flattest}** the flattest: large raw scores (dot, bilinear) lock rows onto one "
        "key; cosine's bounded scores leave them nearly uniform unless τ is small.",
        words=(
            *(
                Grid(_np(v), "query token", "key token", labels, labels, name=f"{k}: scores")
                for k, v in scores.items()
            ),
            *(
                Grid(
                    _np(weights[k]),
                    "query token",
                    "key token",
                    labels,
                    labels,
                    name=f"{k}: weights",
                )
                for k in scores
            ),
            Said("entropies", items="; ".join(f"{k} {entropies[k]:.2f}" for k in scores)),
        ),
    )


def _fig(traces: list[dict], layout: dict, **axes) -> go.Figure:
    """One Figure call: traces as dicts, axis settings merged into the layout."""
    for name, extra in axes.items():  # xaxis=dict(type="log") …
        layout[name] = {**layout.get(name, {}), **extra}
    return go.Figure(data=traces, layout=_light(layout))


def _line(x, y, name: str, line: dict, hover: str, **kw) -> dict:
    return dict(type="scatter", x=x, y=y, name=name, line=line, hovertemplate=hover, **kw)


def cosine_entropy_chart(
    taus: Sequence[float], entropies: Sequence[float], scaled_entropy: float, T: int, tau: float,
    here: float | None = None,
) -> Chart:  # fmt: skip
    """Mean row entropy of cosine attention against τ, with uniform and scaled-dot references.
    `here` is the entropy at the slider's τ, computed (the page passes it); without it, read
    off the curve (exact only where τ is one of `taus`)."""
    taus, ent = _np(taus), _np(entropies)
    if here is None:
        here = float(np.interp(math.log(tau), np.log(taus), ent))
    hover = f"τ %{{x:{NUM_FMT}}}<br>entropy %{{y:.3f}} nats<extra></extra>"
    traces = [
        _line(taus, ent, "cosine / τ", dict(color=BLUE, width=3), hover, mode="lines"),
        dict(
            type="scatter", x=[tau], y=[here], mode="markers", name=f"τ = {tau:g} (slider)",
            marker=dict(color=VERMILION, size=13, symbol="diamond"),
        ),
    ]  # fmt: skip
    uniform = _hline(math.log(T), f"uniform: ln {T} = {math.log(T):.2f}", GREY, "dash", "left")
    scaled = _hline(scaled_entropy, f"scaled dot product: {scaled_entropy:.2f}", ORANGE, "dot",
                    "right")  # fmt: skip
    layout = line_layout(
        "Cosine attention stays flat unless τ is small",
        "temperature τ (log scale)",
        "mean row entropy (nats)",
        shapes=[uniform[0], scaled[0]],
        annotations=[uniform[1], scaled[1]],
    )
    fig = _fig(
        traces, _legend_below(layout), xaxis=dict(type="log"), yaxis=dict(rangemode="tozero")
    )
    return Chart(
        fig,
        f"Cosine scores lie in [−1, 1], so at τ = 1 the largest gap between two keys is 2 and "
        f"softmax stays close to uniform ({math.log(T):.2f} nats). Only below τ ≈ 0.3 does "
        "cosine attention become as selective as the scaled dot product — which is why "
        "cosine attention needs a learned temperature.",
    )


def _bars(x, y, name: str, colour: str, size: int = 14) -> dict:
    return dict(
        type="bar", x=x, y=y, name=name, marker=dict(color=colour),
        text=[f"{v:.2f}" for v in y], textposition="outside", textfont=dict(size=size),
        hovertemplate=f"%{{x}}<br>{name}: %{{y:{NUM_FMT}}}<extra></extra>",
    )  # fmt: skip


def loud_key_chart(labels: list[str], dot_w, cos_w, tau: float) -> Chart:
    """One query, four keys: the weight each gets under the dot product and under cosine."""
    x = [lab.replace(", ", "<br>") for lab in labels]
    traces = [
        _bars(x, _np(dot_w), "scaled dot product", ORANGE),
        _bars(x, _np(cos_w), f"cosine, τ = {tau:g}", BLUE),
    ]
    layout = line_layout(
        "A long key 'advertises louder' — to the dot product only",
        "key (its direction relative to q, and its length)",
        "attention weight",
        barmode="group",
    )
    fig = _fig(traces, _legend_below(layout), yaxis=dict(range=[0, 1.12]))
    dot_top = labels[int(np.argmax(_np(dot_w)))].split(",")[0]
    cos_top = labels[int(np.argmax(_np(cos_w)))].split(",")[0]
    return Chart(
        fig,
        f"Query q = [1, 2, 0]. The dot product scores ‖q‖‖k‖cos θ, so the **{dot_top}** key wins: "
        f"its length makes up for its angle. Cosine keeps only cos θ, so the **{cos_top}** key "
        "wins and the length is thrown away — along with any signal a model stored in it.",
    )


def _log_log(Ts: list[int], ys: Sequence[float] = ()) -> dict:
    """Log–log axes: a tick at every T, and on y one tick per power of ten. Given the
    plotted values `ys`, the y range leaves room above them for point labels."""
    yaxis = dict(type="log", tickformat=NUM_FMT, dtick=1)
    if len(ys):
        lo, hi = math.log10(min(ys)), math.log10(max(ys))
        yaxis["range"] = [lo - 0.25, hi + 0.45]
    pad = 0.12 * math.log10(Ts[-1] / Ts[0]) if len(Ts) > 1 else 0.3  # end labels stay inside
    xaxis = dict(type="log", tickvals=Ts, ticktext=[str(t) for t in Ts])
    xaxis["range"] = [math.log10(Ts[0]) - pad, math.log10(Ts[-1]) + pad]
    return dict(xaxis=xaxis, yaxis=yaxis)


def speed_chart(Ts: Sequence[int], dot_s: Sequence[float], additive_s: Sequence[float]) -> Chart:
    """Measured seconds for all T×T scores, dot product against additive, log–log."""
    Ts = list(Ts)
    dot_ms, add_ms = _np(dot_s) * 1e3, _np(additive_s) * 1e3
    ratios = add_ms / dot_ms
    hover = f"T %{{x}}<br>%{{y:{NUM_FMT}}} ms<extra></extra>"
    traces = [
        _line(Ts, dot_ms, "dot product  q kᵀ", dict(color=BLUE, width=3), hover,
              mode="lines+markers"),
        _line(Ts, add_ms, "additive  v_aᵀ tanh(W₁q + W₂k)", dict(color=VERMILION, width=3),
              hover, mode="lines+markers+text", textposition="top center",
              text=[f"×{r:.0f}" if r >= 10 else f"×{r:.1f}" for r in ratios]),
    ]  # fmt: skip
    layout = line_layout(
        "Time to score every query against every key (d = 64)",
        "sequence length T (log scale)",
        "milliseconds (log scale)",
    )
    fig = _fig(traces, _legend_below(layout), **_log_log(Ts, [*dot_ms, *add_ms]))
    return Chart(
        fig,
        f"Measured on this device (fastest of several runs); labels give additive's time over "
        f"the dot product's. At T = {Ts[-1]} additive is **{ratios[-1]:.0f}× slower**. Both are "
        "O(T²·d) on paper; the dot product is one matrix multiply while additive must write, "
        "tanh and read back a T×T×d tensor.",
    )


def memory_chart(Ts: Sequence[int], nbytes: Sequence[int], budget: int) -> Chart:
    """Size of additive's T×T×d intermediate against T, with the page's memory cap."""
    Ts, nbytes = list(Ts), [int(b) for b in nbytes]
    mib = [b / 2**20 for b in nbytes]
    what = "additive's intermediate in MiB, by T"
    bar = dict(
        type="bar", x=[str(t) for t in Ts], y=mib, name=what,
        marker=dict(color=[GREEN if b <= budget else VERMILION for b in nbytes]),
        text=[format_bytes(b) for b in nbytes], textposition="outside",
        hovertemplate="T %{x}<br>%{text}<extra></extra>",
    )  # fmt: skip
    cap = _hline(budget / 2**20, f"page cap {format_bytes(budget)}", GREY, "dash", "left")
    cap[1]["y"] = math.log10(budget / 2**20)  # an annotation on a log axis takes log10(y)
    layout = base_layout(
        "Memory of additive's T×T×d intermediate (float32, d = 64)",
        "sequence length T",
        "MiB (log scale)",
    )
    layout.update(shapes=[cap[0]], annotations=[cap[1]])
    lo, hi = math.log10(min([*mib, budget / 2**20])), math.log10(max([*mib, budget / 2**20]))
    fig = _fig(
        [bar], layout, xaxis=dict(type="category"),
        yaxis=dict(type="log", tickformat=NUM_FMT, range=[lo - 0.3, hi + 0.5]),
    )  # fmt: skip
    return Chart(
        fig,
        "Doubling T quadruples it: 4·T²·d bytes, per head and per layer, before any gradient "
        "is stored. The dot product needs only the T×T scores, d = 64 times less. Red bars "
        "are over this page's cap and are not timed.",
        words=(  # the bars, and the cap drawn as a line (a shape, which the reader skips)
            Values(what, Ts, mib),
            Said(
                "level",
                name=f"the page's cap, {format_bytes(budget)} (bars above it are not timed)",
                y=num(budget / 2**20),
            ),
        ),
    )


SMOOTHER_STYLES = {
    "Gaussian kernel": dict(color=BLUE, width=7),
    "softmax attention": dict(color=ORANGE, width=2.5, dash="dash"),
    "linear attention": dict(color=GREEN, width=2.5, dash="dot"),
}


def smoother_chart(
    x, y, x_query, truth, fits: dict[str, np.ndarray], bandwidth: float, probe: float,
    max_gap: float,
) -> Chart:  # fmt: skip
    """The toy regression: samples, the true curve, and the three smoothers' fits."""
    xq = _np(x_query)
    traces = [
        dict(type="scatter", x=_np(x), y=_np(y), mode="markers",
             name="samples (keys x_j, values y_j)", marker=dict(color=GREY, size=7)),
        dict(type="scatter", x=xq, y=_np(truth), mode="lines", name="true curve",
             line=dict(color=BLACK, width=1.5, dash="dot")),
    ]  # fmt: skip
    for name, f in fits.items():
        hover = f"x %{{x:.2f}}<br>ŷ %{{y:.3f}}<extra>{name}</extra>"
        traces.append(_line(xq, _np(f), name, SMOOTHER_STYLES.get(name, {}), hover, mode="lines"))
    layout = line_layout(
        f"Attention as a kernel smoother — bandwidth h = {bandwidth:g}",
        "x (query position; the samples' x are the keys)",
        "y",
        height=430,
        shapes=[vline(probe, color=PURPLE)],
    )
    fig = _fig(traces, _legend_below(layout, 85))  # five entries: two rows
    return Chart(
        fig,
        f"The dashed softmax-attention curve lies exactly on the thick Gaussian-kernel curve "
        f"(largest gap {max_gap:.1e}): with query [x, 1]/h² and key [x_j, −x_j²/2], softmax(q·k) "
        "*is* the Gaussian kernel, normalised. Linear attention follows closely while the "
        "bandwidth is wider than its anchor spacing. The purple line marks the query whose "
        "weights are drawn below.",
    )


def probe_weights_chart(x, weights: dict[str, np.ndarray], probe: float, bandwidth: float) -> Chart:
    """The weights one query (x = probe) puts on each sample, for each smoother."""
    order = np.argsort(_np(x))
    xs = _np(x)[order]
    traces = [
        _line(xs, _np(w)[order], name, SMOOTHER_STYLES.get(name, {}),
              f"key x %{{x:.2f}}<br>weight %{{y:{NUM_FMT}}}<extra>{name}</extra>", mode="lines")
        for name, w in weights.items()
    ]  # fmt: skip
    layout = line_layout(
        f"Weights of the query at x = {probe:g} over the samples",
        "key position x_j",
        "attention weight",
        height=340,
        shapes=[vline(probe, color=PURPLE)],
    )
    fig = _fig(traces, _legend_below(layout))
    return Chart(
        fig,
        f"A bump of width about h = {bandwidth:g} around the query: nearby samples get the "
        "weight, far ones almost none. Each method's weights sum to 1, so the fit is a "
        "weighted average of the samples' y — the same job attention does with value vectors.",
    )


def attn_speed_chart(Ts: Sequence[int], softmax_s, linear_s, exps: tuple[float, float]) -> Chart:
    """Measured time of softmax attention against linear attention, log–log."""
    Ts = list(Ts)
    hover = f"T %{{x}}<br>%{{y:{NUM_FMT}}} ms<extra></extra>"
    traces = [
        _line(Ts, _np(softmax_s) * 1e3, "softmax attention (T×T weights)",
              dict(color=ORANGE, width=3), hover, mode="lines+markers"),
        _line(Ts, _np(linear_s) * 1e3, "linear attention, elu + 1",
              dict(color=GREEN, width=3), hover, mode="lines+markers"),
    ]  # fmt: skip
    layout = line_layout(
        "Softmax attention against linear attention (d = 64)",
        "sequence length T (log scale)",
        "milliseconds (log scale)",
    )
    fig = _fig(traces, _legend_below(layout), **_log_log(Ts))
    e_soft, e_lin = exps
    return Chart(
        fig,
        f"On a log–log plot the slope is the growth rate. Over the last doubling of T, softmax "
        f"time grew like T^{e_soft:.1f} and linear like T^{e_lin:.1f} (ideal: 2 and 1). At "
        "small T fixed overheads dominate and the lines can cross the other way; the gap only "
        "opens for long sequences.",
    )


def contributions_chart(tokens: list[str], weights, contributions, query: str = "good") -> Chart:
    """Per token: its attention weight α_j beside its contribution ‖α_j v_j‖."""
    w, c = _np(weights), _np(contributions)
    traces = [
        _bars(tokens, w, "weight α_j", BLUE, size=12),
        _bars(tokens, c, "contribution ‖α_j v_j‖", VERMILION, size=12),
    ]
    layout = line_layout(
        f'What the query "{query}" attends to, and what it actually receives',
        "token (key / value)",
        "weight  |  length of contribution",
        height=400,
        barmode="group",
    )
    top_y = max(float(w.max()), float(c.max())) * 1.18
    fig = _fig(traces, _legend_below(layout), yaxis=dict(range=[0, top_y]))
    top, most = tokens[int(np.argmax(w))], tokens[int(np.argmax(c))]
    least = tokens[int(np.argmin(c))]
    verdict = (
        f"**{top}** takes the most weight yet contributes "
        + ("the least of all" if least == top else "less than its weight suggests")
        + f"; **{most}** adds the most to the output."
        if top != most
        else f"Now **{top}** both takes the most weight and contributes the most: "
        "weights and contributions agree only because its value vector is long enough."
    )
    return Chart(
        fig,
        f"The output is Σ α_j v_j, so what a token adds is its weight times its value vector. "
        f"{verdict} An attention map shows only the blue bars.",
    )
