"""Pictures for "Beyond the dot product": scoring functions side by side, cosine's
temperature, the cost of additive scores, attention as a kernel smoother, and
attention weights against what each token actually contributes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .style import DIVERGING, NUM_FMT, OKABE_ITO, SEQUENTIAL, Chart, base_layout, line_layout
from .style import to_numpy as _np

BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, _, BLACK = OKABE_ITO
GREY = "#999999"


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _legend_below(layout: dict, extra: int = 60) -> dict:
    """Legend under the plot, so long titles on half-width charts do not collide with it."""
    layout["legend"] = dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0.0)
    layout["height"] = layout["height"] + extra
    layout["margin"] = dict(layout["margin"], b=10 + extra)
    return layout


def _hline(y: float, text: str, colour: str, dash: str, position: str) -> tuple[dict, dict]:
    """A full-width horizontal reference line and its label, as plain layout entries
    (cheaper than fig.add_hline, which re-validates the whole figure)."""
    shape = dict(
        type="line", xref="paper", x0=0, x1=1, yref="y", y0=y, y1=y,
        line=dict(color=colour, dash=dash, width=2),
    )  # fmt: skip
    label = dict(
        text=text, xref="paper", yref="y", y=y, showarrow=False,
        x=0.02 if position == "left" else 0.98, xanchor=position,
        yanchor="bottom", font=dict(size=13, color="#555555"),
    )  # fmt: skip
    return shape, label


def _vline(x: float) -> dict:
    return dict(
        type="line", xref="x", x0=x, x1=x, yref="paper", y0=0, y1=1,
        line=dict(color=PURPLE, dash="dot", width=2),
    )  # fmt: skip


def _grid(
    title: str,
    mats: dict[str, np.ndarray],
    traces: list[dict],
    subtitles: list[str],
    labels: list[str],
    **extra,
) -> go.Figure:
    """Heatmaps side by side, one per entry of `mats`, built in a single Figure call.

    (make_subplots plus per-axis updates costs ~10× more, and this runs on every new
    slider value.)
    """
    n, gap = len(mats), 0.035
    width = (1 - gap * (n - 1)) / n
    ticks = dict(tickmode="array", tickvals=list(range(len(labels))))
    layout = base_layout(title, "key token", "query token", height=330)
    layout["margin"] = dict(l=10, r=10, t=110, b=10)
    layout["annotations"] = []
    for i, trace in enumerate(traces):
        ax = "" if i == 0 else str(i + 1)
        x0 = i * (width + gap)
        layout[f"xaxis{ax}"] = dict(
            domain=[x0, x0 + width], anchor=f"y{ax}", title=dict(text="key token"),
            ticktext=labels, **ticks,
        )  # fmt: skip
        layout[f"yaxis{ax}"] = dict(
            anchor=f"x{ax}", autorange="reversed",
            ticktext=labels if i == 0 else [""] * len(labels),
            title=dict(text="query token" if i == 0 else ""), **ticks,
        )  # fmt: skip
        trace.update(xaxis=f"x{ax}", yaxis=f"y{ax}", xgap=1, ygap=1)
        layout["annotations"].append(
            dict(
                text=subtitles[i], x=x0 + width / 2, y=1.0, xref="paper", yref="paper",
                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14),
            )
        )  # fmt: skip
    layout.update(extra)
    return go.Figure(data=traces, layout=layout)


def scores_grid(scores: dict[str, np.ndarray], labels: list[str]) -> Chart:
    """Each scoring function's T×T scores, diverging colours, each panel on its own scale."""
    mats = {name: _np(z) for name, z in scores.items()}
    subtitles = [f"<b>{n}</b><br>range {z.min():.2g} … {z.max():.2g}" for n, z in mats.items()]
    traces = []
    for name, z in mats.items():
        lim = float(np.abs(z).max()) or 1.0
        traces.append(
            dict(
                type="heatmap", z=z, zmin=-lim, zmax=lim, colorscale=DIVERGING, showscale=False,
                hovertemplate=(
                    f"{name}<br>query %{{y}} · key %{{x}}<br>score %{{z:{NUM_FMT}}}<extra></extra>"
                ),
            )
        )  # fmt: skip
    fig = _grid("Scores: the same queries and keys, five ways", mats, traces, subtitles, labels)
    return Chart(
        fig,
        "Blue is negative, orange positive; each panel has its own colour scale, so compare "
        "patterns, and compare sizes through the ranges above each panel. Dot and bilinear "
        "scores grow with the vectors' lengths; scaled dot is the dot product divided by "
        "√d_k = 4, the same pattern with a quarter of the range; cosine never leaves "
        "[−1/τ, 1/τ].",
    )


def weights_grid(weights: dict[str, np.ndarray], entropies: dict[str, float], labels) -> Chart:
    """Softmax of each panel of `scores_grid`, on one shared 0–1 colour scale."""
    T = len(labels)
    mats = {name: _np(w) for name, w in weights.items()}
    subtitles = [f"<b>{name}</b><br>H = {entropies[name]:.2f}" for name in mats]
    traces = [
        dict(
            type="heatmap", z=w, coloraxis="coloraxis",
            hovertemplate=(
                f"{name}<br>query %{{y}} · key %{{x}}<br>weight %{{z:{NUM_FMT}}}<extra></extra>"
            ),
        )
        for name, w in mats.items()
    ]  # fmt: skip
    coloraxis = dict(
        colorscale=SEQUENTIAL, cmin=0.0, cmax=1.0,
        colorbar=dict(title=dict(text="weight"), tickformat=NUM_FMT, thickness=14),
    )  # fmt: skip
    fig = _grid(
        "Weights: softmax of each row of scores", mats, traces, subtitles, labels,
        coloraxis=coloraxis,
    )  # fmt: skip
    sharpest = min(entropies, key=entropies.get)
    flattest = max(entropies, key=entropies.get)
    return Chart(
        fig,
        f"H is the mean row entropy in nats, how spread a row is: {math.log(T):.2f} = uniform "
        f"over {T} keys, 0 = one-hot. Here **{sharpest}** is the sharpest and **{flattest}** the "
        "flattest. Large raw scores (dot, bilinear) lock rows onto one key; cosine's "
        "bounded scores leave them nearly uniform unless τ is small.",
    )


def _fig(traces: list[dict], layout: dict, **axes) -> go.Figure:
    """One Figure call: traces as dicts, axis settings merged into the layout."""
    for name, extra in axes.items():  # xaxis=dict(type="log") …
        layout[name] = {**layout.get(name, {}), **extra}
    return go.Figure(data=traces, layout=layout)


def _line(x, y, name: str, line: dict, hover: str, **kw) -> dict:
    return dict(type="scatter", x=x, y=y, name=name, line=line, hovertemplate=hover, **kw)


def cosine_entropy_chart(
    taus: Sequence[float], entropies: Sequence[float], scaled_entropy: float, T: int, tau: float
) -> Chart:
    """Mean row entropy of cosine attention against τ, with uniform and scaled-dot references."""
    taus, ent = _np(taus), _np(entropies)
    here = float(np.interp(math.log(tau), np.log(taus), ent))
    hover = f"τ %{{x:{NUM_FMT}}}<br>entropy %{{y:.3f}} nats<extra></extra>"
    traces = [
        _line(taus, ent, "cosine / τ", dict(color=BLUE, width=3), hover, mode="lines"),
        dict(
            type="scatter", x=[tau], y=[here], mode="markers", name=f"τ = {tau:g} (slider)",
            marker=dict(color=VERMILLION, size=13, symbol="diamond"),
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


def _log_log(Ts: list[int]) -> dict:
    return dict(
        xaxis=dict(type="log", tickvals=Ts, ticktext=[str(t) for t in Ts]),
        yaxis=dict(type="log", tickformat=NUM_FMT),
    )


def speed_chart(Ts: Sequence[int], dot_s: Sequence[float], additive_s: Sequence[float]) -> Chart:
    """Measured seconds for all T×T scores, dot product against additive, log–log."""
    Ts = list(Ts)
    dot_ms, add_ms = _np(dot_s) * 1e3, _np(additive_s) * 1e3
    ratios = add_ms / dot_ms
    hover = f"T %{{x}}<br>%{{y:{NUM_FMT}}} ms<extra></extra>"
    traces = [
        _line(Ts, dot_ms, "dot product  q kᵀ", dict(color=BLUE, width=3), hover,
              mode="lines+markers"),
        _line(Ts, add_ms, "additive  v_aᵀ tanh(W₁q + W₂k)", dict(color=VERMILLION, width=3),
              hover, mode="lines+markers+text", textposition="top center",
              text=[f"×{r:.0f}" if r >= 10 else f"×{r:.1f}" for r in ratios]),
    ]  # fmt: skip
    layout = line_layout(
        "Time to score every query against every key (d = 64)",
        "sequence length T (log scale)",
        "milliseconds (log scale)",
    )
    fig = _fig(traces, _legend_below(layout), **_log_log(Ts))
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
    bar = dict(
        type="bar", x=[str(t) for t in Ts], y=mib,
        marker=dict(color=[GREEN if b <= budget else VERMILLION for b in nbytes]),
        text=[_fmt_bytes(b) for b in nbytes], textposition="outside",
        hovertemplate="T %{x}<br>%{text}<extra></extra>",
    )  # fmt: skip
    cap = _hline(budget / 2**20, f"page cap {_fmt_bytes(budget)}", GREY, "dash", "left")
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
        shapes=[_vline(probe)],
    )
    fig = _fig(traces, _legend_below(layout))
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
        shapes=[_vline(probe)],
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
        _bars(tokens, c, "contribution ‖α_j v_j‖", VERMILLION, size=12),
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
