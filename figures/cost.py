"""Pictures for the cost page: compute and memory against T, KV caches, a measured sweep,
and the FlashAttention walkthrough (tiles, running max and sum, output filling in).

Numbers in, `Chart` out. Multi-panel figures are built from plain layout dicts (no
make_subplots), which keeps a rerun cheap on the server. In the browser two things made
every redraw of these figures cost about twice what it needs (measured in headless
Chromium): plotly's auto-margins, which with the style's 10 px margins always grow and
so lay the whole figure out a second time, and its default tick-label overflow check,
which measures every label once per label. Each figure here therefore sets margins wide
enough for its labels (`fast_figure(..., margin=…)`) and lets tick labels overflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from attn_core.cost import (
    attention_macs,
    attention_probs_bytes,
    crossover_T,
    kv_cache_bytes,
    projection_macs,
)
from attn_core.lessons.cost import (
    GIB,
    T_MAX,
    T_MIN,
    fit_slope,
    largest_fitting_T,
    macs_against_T,
    probs_bytes_against_T,
)

from .describe import MAX_BARS, Grid, Said, Values, num
from .parts import (
    BLACK,
    BLUE,
    GREEN,
    GREY,
    ORANGE,
    PURPLE,
    VERMILION,
    fast_figure,
    format_bytes,
    hline,
    label,
    vline,
)
from .style import DIVERGING, NUM_FMT, Chart, base_layout, line_layout

METHOD_STYLE = {  # colour, dash, marker: distinguishable without colour too
    "attention": (VERMILION, "solid", "circle"),
    "tiled_attention": (BLUE, "dash", "square"),
    "fused_attention": (GREEN, "dot", "diamond"),
}
METHOD_LABEL = {
    "attention": "attention (materialised T×T)",
    "tiled_attention": "tiled_attention (ours, plain torch)",
    "fused_attention": "fused_attention (PyTorch SDPA)",
}


def si(x: float) -> str:
    """1.07e9 -> '1.07 G': counts of multiply–adds the way people say them."""
    for unit, size in (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.3g} {unit}"
    return f"{x:.3g}"


def gpu_share(total_bytes: float, gpu_gb: float) -> str:
    """How much of the GPU's memory: '25%' or, far beyond it, '2,048×'."""
    share = total_bytes / (gpu_gb * GIB)
    return f"{share:.0%}" if share < 10 else f"{share:,.0f}×"


def _byte_axis(lo: float, hi: float) -> dict:
    """A log axis whose ticks read 4 MiB, 1 GiB, 32 TiB … instead of 4.19e+06.

    Ticks sit on powers of two, thinned so a wide range (bytes to PiB) keeps ~6–10 labels.
    """
    e_lo, e_hi = math.floor(math.log2(max(lo, 1))), math.ceil(math.log2(max(hi, 2)))
    every = next(s for s in (1, 2, 5, 10) if (e_hi - e_lo) / s <= 10)
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    vals, text = [], []
    for e in range(e_lo, e_hi + 1):
        if e % every == 0:
            vals.append(float(2**e))
            text.append(f"{2 ** (e % 10)} {units[min(e // 10, 6)]}")
    return dict(type="log", tickmode="array", tickvals=vals, ticktext=text)


# The shared lines (figures.parts) with this lesson's 13 px labels on a white backing.
def _vline(x: float, text: str, color: str = BLACK) -> tuple[dict, dict]:
    """A dotted vertical line on a log x axis and its label (annotations take log10 there)."""
    at = math.log10(x)
    note = label(at, 0.98, text + " ", xref="x", yref="paper", yanchor="top", color=color, size=13)
    return vline(x, color=color), note


def _hline(y: float, text: str, *, log: bool, right: bool = False) -> tuple[dict, dict]:
    """A solid horizontal line across the plot and its label."""
    at = math.log10(y) if log else y
    side = "right" if right else "left"
    note = label(0.99 if right else 0.01, at, text, xanchor=side, color=BLACK, size=13)
    return hline(y, color=BLACK, dash="solid"), note


def _marks(name: str, *values: tuple[str, float]) -> dict:
    """A trace's `meta` that reads its marks as named values (a circle and a diamond at one
    T are two values, not a level line or a vertical line)."""
    items = "; ".join(f"{label} {num(v)}" for label, v in values)
    return dict(say="values", numbers=dict(name=name, n=len(values), items=items))


# ------------------------------------------------------------------------------ 1. compute


def _pow2_ticks(lo: float, hi: float, every: int = 2) -> dict:
    """Log-axis ticks at powers of two (every `every`-th): 16, 64, 256, 1,024 …"""
    vals = [2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1, every)]
    return dict(type="log", tickmode="array", tickvals=vals, ticktext=[f"{v:,}" for v in vals])


def _log_T_axes(layout: dict) -> dict:
    layout["xaxis"].update(**_pow2_ticks(T_MIN, T_MAX))
    return layout


LINE_MARGIN = dict(l=100, r=15, t=90, b=80)  # log tick labels left, legend on top


def flops_chart(d_model: int, T: int) -> Chart:
    """Projection MACs (4·T·d²) and attention MACs (2·T²·d) per layer against T, log–log."""
    Ts, proj, attn = macs_against_T(d_model)
    cross = crossover_T(d_model)
    p, a = projection_macs(T, d_model), attention_macs(T, d_model)
    hover = "T = %{x:,}<br>%{y:.3~s} MACs<extra>%{fullData.name}</extra>"
    data = [
        dict(type="scatter", x=Ts, y=proj, name="projections: 4·T·d²", mode="lines",
             line=dict(color=BLUE, width=3), hovertemplate=hover),
        dict(type="scatter", x=Ts, y=attn, name="attention: 2·T²·d", mode="lines",
             line=dict(color=ORANGE, width=3, dash="dash"), hovertemplate=hover),
        dict(type="scatter", x=[T, T], y=[p, a], mode="markers", name=f"your T = {T:,}",
             marker=dict(color=BLACK, size=12, symbol=["circle", "diamond"]),
             hovertemplate="T = %{x:,}<br>%{y:.3~s} MACs<extra></extra>",
             meta=_marks(f"your T = {T:,}, multiply–adds", ("projections", p),
                         ("attention", a))),
    ]  # fmt: skip
    shape, note = _vline(cross, f"crossover T = 2·d = {cross:,}", GREY)
    layout = line_layout(
        f"Compute per layer against sequence length (d_model = {d_model})",
        "sequence length T (tokens, log scale)",
        "multiply–adds per layer (log scale)",
        height=420,
        shapes=[shape],
        annotations=[note],
    )
    layout["yaxis"].update(type="log", exponentformat="power")
    fig = fast_figure(data, _log_T_axes(layout), LINE_MARGIN)
    share = a / (a + p)
    side = "attention's T² term dominates" if a > p else "the projections dominate"
    if a == p:
        side = "the two are exactly equal"
    caption = (
        f"The two lines cross at T = 2·d_model = {cross:,}: below it the projections cost more; "
        f"above it the quadratic attention term takes over, its line twice as steep. "
        f"At T = {T:,} {side}: attention is {share:.0%} of this layer's multiply–adds "
        "(1 multiply–add = 2 FLOPs)."
    )
    return Chart(fig, caption)


# ------------------------------------------------------------------------------ 2. memory


def _bytes_per(dtype: str) -> int:
    return attention_probs_bytes(1, 1, 1, dtype)


def probs_memory_chart(
    batch: int, heads: int, dtype: str, layers: int, gpu_gb: float, T: int
) -> Chart:
    """Bytes of the stored T×T probabilities (one layer, all layers) against the GPU's memory."""
    Ts, per, total = probs_bytes_against_T(batch, heads, dtype, layers)
    gpu = gpu_gb * GIB
    mine = attention_probs_bytes(batch, heads, T, dtype, layers)
    mine1 = attention_probs_bytes(batch, heads, T, dtype)
    hover = "T = %{x:,}<br>%{customdata}<extra>%{fullData.name}</extra>"
    data = [
        dict(type="scatter", x=Ts, y=total, name=f"all {layers} layers", mode="lines",
             line=dict(color=VERMILION, width=3), customdata=[format_bytes(b) for b in total],
             hovertemplate=hover),
        dict(type="scatter", x=Ts, y=per, name="one layer", mode="lines",
             line=dict(color=BLUE, width=3, dash="dash"),
             customdata=[format_bytes(b) for b in per], hovertemplate=hover),
        dict(type="scatter", x=[T, T], y=[mine, mine1], mode="markers", name=f"your T = {T:,}",
             marker=dict(color=BLACK, size=12, symbol=["circle", "diamond"]),
             customdata=[format_bytes(mine), format_bytes(mine1)], hovertemplate=hover,
             meta=_marks(f"your T = {T:,}, bytes", (f"all {layers} layers", mine),
                         ("one layer", mine1))),
    ]  # fmt: skip
    lo, hi = float(min(per.min(), gpu)), float(max(total.max(), gpu))
    oom = dict(
        type="rect", x0=0, x1=1, y0=gpu, y1=hi * 4, xref="paper", yref="y",
        fillcolor=VERMILION, opacity=0.08, line=dict(width=0), layer="below",
    )  # fmt: skip
    line, note = _hline(gpu, f"GPU memory: {gpu_gb:g} GiB — above it: out of memory", log=True)
    layout = line_layout(
        f"Stored attention probabilities: batch {batch} × {heads} heads × T² × "
        f"{_bytes_per(dtype)} bytes",
        "sequence length T (tokens, log scale)",
        "memory in bytes (log scale)",
        height=420,
        shapes=[oom, line],
        annotations=[note],
    )
    layout["yaxis"].update(**_byte_axis(lo, hi), range=[math.log10(lo) - 0.3, math.log10(hi) + 0.3])
    fig = fast_figure(data, _log_T_axes(layout), dict(LINE_MARGIN, l=110))
    fit = largest_fitting_T(batch, heads, dtype, layers, gpu_gb)
    verdict = (
        f"All {layers} layers' probabilities fit only up to T = {fit:,}"
        if fit
        else "Not even T = 1 fits"
    )
    caption = (
        f"At T = {T:,} the probabilities kept for the backward pass take {format_bytes(mine1)} "
        f"per layer and {format_bytes(mine)} for {layers} layers — "
        f"{gpu_share(mine, gpu_gb)} of a {gpu_gb:g} GiB GPU. Doubling T multiplies them by 4. "
        f"{verdict}, however fast the GPU computes: memory runs out before compute does."
    )
    return Chart(fig, caption)


# ------------------------------------------------------------------------------ 3. KV cache


def kv_cache_chart(
    batch: int, T: int, layers: int, heads: int, kv_heads: int, d_head: int, dtype: str,
    gpu_gb: float,
) -> Chart:  # fmt: skip
    """KV cache of MHA (h K/V heads), GQA (kv_heads) and MQA (1) at the current settings."""
    kinds = [
        (f"MHA: {heads} K/V heads", heads, BLUE),
        (f"GQA: {kv_heads} K/V heads", kv_heads, ORANGE),
        ("MQA: 1 K/V head", 1, GREEN),
    ]
    vals = [kv_cache_bytes(batch, T, layers, n, d_head, dtype) for _, n, _ in kinds]
    unit_i = max(0, min(5, int(math.log(max(vals[0], 1), 1024))))
    unit = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")[unit_i]
    scale = 1024**unit_i
    data = [
        dict(type="bar", x=[k for k, _, _ in kinds], y=[v / scale for v in vals],
             name=f"K and V cache in {unit}",
             marker=dict(color=[c for _, _, c in kinds]), cliponaxis=False,
             text=[format_bytes(v) for v in vals], textposition="outside",
             hovertemplate="%{x}<br>%{text}<extra></extra>"),
    ]  # fmt: skip
    gpu = gpu_gb * GIB
    top = max(vals) / scale * 1.25
    shapes, notes = [], []
    if gpu <= 3 * max(vals):
        line, note = _hline(gpu / scale, f"GPU memory: {gpu_gb:g} GiB", log=False, right=True)
        shapes, notes = [line], [note]
        top = max(top, gpu / scale * 1.15)
    layout = base_layout(
        f"KV cache while generating: batch {batch}, T = {T:,}, {layers} layers, d_head = {d_head}",
        "attention variant",
        f"K and V cache ({unit})",
        height=400,
    )
    layout["yaxis"].update(range=[0, top], tickformat=NUM_FMT)
    layout.update(showlegend=False, shapes=shapes, annotations=notes)
    fig = fast_figure(data, layout, dict(l=95, r=15, t=60, b=80))
    fits = [v <= gpu for v in vals]
    if all(fits):
        fit_txt = f"All three fit in {gpu_gb:g} GiB."
    elif not any(fits):
        fit_txt = f"None of them fits in {gpu_gb:g} GiB."
    else:
        names = [k.split(":")[0] for (k, _, _), f in zip(kinds, fits, strict=True) if f]
        fit_txt = (
            f"Only {' and '.join(names)} fit{'s' if len(names) == 1 else ''} in {gpu_gb:g} GiB."
        )
    caption = (
        "While generating, each token's keys and values are kept for every later token: "
        "2 × batch × T × layers × K/V heads × d_head × bytes. Sharing one K/V head among all "
        f"{heads} query heads (MQA) divides the cache by h = {heads}; GQA with {kv_heads} "
        f"K/V heads divides it by {heads // max(kv_heads, 1)}. {fit_txt}"
    )
    return Chart(fig, caption)


# ------------------------------------------------------------------------------ 4. measured sweep


def _sweep_traces(series: dict, slopes: dict[str, float], what: str) -> tuple[list, list]:
    """One line per method that has points, its fitted slope in the legend; and every y."""
    data, all_y = [], []
    for method, (Ts, ys) in series.items():
        if not len(Ts):
            continue
        color, dash, symbol = METHOD_STYLE[method]
        s = slopes.get(method, float("nan"))
        slope = f"slope {s:.2f}" if math.isfinite(s) else "slope n/a"
        text = [format_bytes(y) if what == "memory" else f"{y * 1e3:.3g} ms" for y in ys]
        ys = list(ys) if what == "memory" else [y * 1e3 for y in ys]  # time drawn in ms
        data.append(
            dict(type="scatter", x=list(Ts), y=ys, name=f"{METHOD_LABEL[method]}: {slope}",
                 mode="lines+markers", line=dict(color=color, width=3, dash=dash),
                 marker=dict(symbol=symbol, size=10), customdata=text,
                 hovertemplate="T = %{x:,}<br>%{customdata}<extra>" + method + "</extra>")
        )  # fmt: skip
        all_y.extend(float(y) for y in ys)
    return data, all_y


def _sweep_layout(series: dict, all_y: list, what: str, device: str) -> dict:
    if what == "memory":
        title, y_title = (
            f"Peak memory, measured on {device}",
            "peak memory in bytes, incl. q, k, v (log)",
        )
    else:
        title, y_title = f"Time per call, measured on {device}", "milliseconds per call (log)"
    layout = line_layout(title, "sequence length T (log scale)", y_title, height=400)
    layout["legend"] = dict(orientation="v", yanchor="top", y=0.99, xanchor="left", x=0.01)
    all_T = [t for Ts, _ in series.values() for t in Ts] or [256]
    layout["xaxis"].update(**_pow2_ticks(min(all_T), max(all_T), every=1))
    if what == "memory" and all_y:
        layout["yaxis"].update(**_byte_axis(min(all_y), max(all_y)))
    else:
        layout["yaxis"].update(type="log", dtick=1, tickformat=",~g")
    return layout


def _sweep_caption(series: dict, slopes: dict[str, float], what: str) -> str:
    fitted = [(m, slopes.get(m, float("nan"))) for m, (Ts, _) in series.items() if len(Ts)]
    measured = ", ".join(f"`{m}` {s:.2f}" for m, s in fitted if math.isfinite(s))
    measured = f" Measured here: {measured}." if measured else ""
    if what == "memory":
        return (
            "On log–log axes a slope of 2 means memory grows like T²: the materialised path "
            "stores T×T scores and weights. A slope of 1 means it grows like T: the tiled and "
            "fused paths hold one tile plus the T×d inputs and output. Slopes are fitted over "
            "the largest T, where fixed overheads stop mattering." + measured
        )
    ends = {m: (Ts[-1], ys[-1]) for m, (Ts, ys) in series.items() if len(Ts)}
    T_end = min(T for T, _ in ends.values()) if ends else 0
    at_end = {m: ys[list(Ts).index(T_end)] for m, (Ts, ys) in series.items() if T_end in Ts}
    fastest = min(at_end, key=at_end.get) if at_end else None
    return (
        "All three do about 2·T²·d multiply–adds, so once T is large their time should grow "
        "with slope 2."
        + measured
        + (f" Fastest at T = {T_end:,}: `{fastest}`." if fastest else "")
        + " Our tiled version pays Python's overhead on every tile; the fused "
        "kernel runs the same loop in compiled code, without writing T×T to memory."
    )


def sweep_chart(
    series: dict[str, tuple[Sequence[int], Sequence[float]]],
    slopes: dict[str, float],
    *,
    what: str,
    device: str,
) -> Chart:
    """Measured time or peak memory of each method against T, log–log, slope in the legend."""
    if what not in ("time", "memory"):
        raise ValueError(f"what must be 'time' or 'memory'; got {what!r}")
    data, all_y = _sweep_traces(series, slopes, what)
    layout = _sweep_layout(series, all_y, what, device)
    fig = fast_figure(data, layout, dict(l=110, r=15, t=60, b=80))
    return Chart(fig, _sweep_caption(series, slopes, what))


# ------------------------------------------------------------------- 1b. parallel vs recurrent

PARALLEL_STYLE = {  # path -> colour, dash, marker, legend name: distinguishable without colour
    "loop": (VERMILION, "solid", "circle", "recurrence: Python loop of T dependent steps"),
    "rnn": (PURPLE, "dashdot", "x", "torch.nn.RNN: the same T steps, compiled"),
    "scores": (GREEN, "dot", "diamond", "all T² scores: one matmul q·kᵀ"),
    "attention": (BLUE, "dash", "square", "attention: scores, softmax, · v"),
}


def duration(seconds: float) -> str:
    """0.0123 -> '12.3 ms', 9.1e-6 -> '9.1 µs': a time in the unit people read it in."""
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def versus(loop_s: float, attention_s: float) -> str:
    """'3.1× faster' / '1.4× slower': attention against the loop, as the table and text say it."""
    if attention_s <= loop_s:
        return f"{loop_s / attention_s:.3g}× faster"
    return f"{attention_s / loop_s:.3g}× slower"


def parallel_chart(rows: Sequence[dict], device: str) -> Chart:
    """Measured time of the recurrence and the parallel paths against T, log–log."""
    Ts = [r["T"] for r in rows]
    data, slopes = [], {}
    for path, (color, dash, symbol, name) in PARALLEL_STYLE.items():
        secs = [r[f"{path}_s"] for r in rows]
        slopes[path] = fit_slope(Ts, secs)
        data.append(
            dict(type="scatter", x=Ts, y=[s * 1e3 for s in secs], name=name,
                 mode="lines+markers", line=dict(color=color, width=3, dash=dash),
                 marker=dict(symbol=symbol, size=10), customdata=[duration(s) for s in secs],
                 hovertemplate="T = %{x:,}<br>%{customdata}<extra>" + path + "</extra>")
        )  # fmt: skip
    layout = line_layout(
        f"T dependent steps against one matmul, measured on {device} (width d = {rows[0]['d']})",
        "sequence length T (log scale)",
        "milliseconds per call (log)",
        height=480,
    )
    # under the axes: on a GPU the loop's line runs along the top, where a legend would sit
    layout["legend"] = dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0)
    layout["xaxis"].update(**_pow2_ticks(min(Ts), max(Ts), every=1))
    layout["yaxis"].update(type="log", dtick=1, tickformat=",~g")
    fig = fast_figure(data, layout, dict(l=110, r=15, t=60, b=150))
    fitted = ", ".join(f"{name.split(':')[0]} {slopes[p]:.2f}"
                       for p, (*_, name) in PARALLEL_STYLE.items())  # fmt: skip
    caption = (
        f"Slopes over the largest three T (log–log): {fitted}. A slope of 1 means time ∝ T: the "
        "recurrence does T steps of the same size, one after another. A slope of 2 means "
        "time ∝ T²: attention's T² scores, once there are enough of them to keep the device busy."
    )
    return Chart(fig, caption)


# ------------------------------------------------------------------------------ 5. walkthrough


def _grid_lines(T_q: int, T_k: int, block_q: int, block_k: int) -> tuple[list, list]:
    """Tile borders as one NaN-separated line trace (far cheaper than one shape per tile)."""
    gx: list = []
    gy: list = []
    for c in [*range(0, T_k, block_k), T_k]:
        gx += [c - 0.5, c - 0.5, None]
        gy += [-0.5, T_q - 0.5, None]
    for r in [*range(0, T_q, block_q), T_q]:
        gx += [-0.5, T_k - 0.5, None]
        gy += [r - 0.5, r - 0.5, None]
    return gx, gy


def _veil(tiles, done: set, shape: tuple[int, int], block_q: int, block_k: int) -> np.ndarray:
    """0 = still to come (white haze), 1 = skipped by the causal mask (grey), NaN = done."""
    veil = np.full(shape, np.nan, np.float32)
    for qi, ki, v in tiles:
        if (qi, ki) not in done:
            rows = slice(qi * block_q, (qi + 1) * block_q)
            veil[rows, ki * block_k : (ki + 1) * block_k] = 0.0 if v else 1.0
    return veil


def _domains(stats: bool) -> dict[str, list[float]]:
    """Where each panel sits across the figure: scores, so far, exact (and m, l)."""
    if stats:
        return dict(s=[0.0, 0.45], o=[0.53, 0.61], e=[0.63, 0.71], m=[0.8, 0.885], l=[0.915, 1.0])
    return dict(s=[0.0, 0.58], o=[0.68, 0.79], e=[0.83, 0.94])  # the first view: larger panels


_BAR = dict(tickformat=NUM_FMT, thickness=12, len=0.9, title=dict(side="top"))


def _tile_traces(scores: np.ndarray, veil: np.ndarray, grid: tuple, dom: dict) -> list[dict]:
    """The scores panel: the T×T scores, the veil over tiles not done, the tile borders."""
    finite = scores[np.isfinite(scores)]
    s_lim = float(np.abs(finite).max()) if finite.size else 1.0
    gx, gy = grid
    return [
        dict(type="heatmap", z=np.where(np.isfinite(scores), scores, np.nan).astype(np.float32),
             name="scores", meta=dict(blank="forbidden"), colorscale=DIVERGING, zmin=-s_lim,
             zmax=s_lim, xgap=1, ygap=1,
             colorbar=dict(_BAR, x=dom["s"][1] + 0.01, title=dict(text="score", side="top")),
             hovertemplate="query %{y}, key %{x}<br>score %{z:" + NUM_FMT + "}<extra></extra>"),
        dict(type="heatmap", z=veil, zmin=0, zmax=1, showscale=False, opacity=0.8,
             colorscale=[[0, "#FFFFFF"], [0.5, "#FFFFFF"], [0.5, GREY], [1, GREY]],
             hoverinfo="skip",
             meta=dict(say="tiles.veil", numbers=dict(todo=int((veil == 0).sum()),
                                                      skipped=int((veil == 1).sum())))),
        dict(type="scatter", x=gx, y=gy, mode="lines", line=dict(color="#444", width=1.5),
             hoverinfo="skip", showlegend=False, meta=dict(words="skip")),  # tile borders
    ]  # fmt: skip


def _output_traces(out: np.ndarray, exact: np.ndarray, dom: dict) -> list[dict]:
    """The output so far and the exact output, on one symmetric scale."""
    o_lim = float(np.abs(exact).max()) or 1.0
    return [
        dict(type="heatmap", z=z, colorscale=DIVERGING, zmin=-o_lim, zmax=o_lim, xaxis=xa,
             yaxis="y", xgap=1, ygap=1, showscale=xa == "x3",
             colorbar=dict(_BAR, x=dom["e"][1] + 0.01, title=dict(text="output", side="top")),
             name=f"output {name}", meta=dict(blank="pending"),
             hovertemplate="row %{y}, column %{x}<br>" + name + " %{z:" + NUM_FMT
             + "}<extra></extra>")
        for z, xa, name in ((out, "x2", "so far"), (exact, "x3", "exact"))
    ]  # fmt: skip


def _span(values) -> dict:
    """{"lo", "hi"} of the finite values, as the words show them ("−inf" before any tile)."""
    v = np.asarray(values, dtype=float)
    ok = v[np.isfinite(v)]
    if not ok.size:
        return dict(
            lo=num(float(v.min())) if v.size else "none",
            hi=num(float(v.max())) if v.size else "none",
        )
    return dict(lo=num(float(ok.min())), hi=num(float(ok.max())))


def _stat_traces(stats: tuple, current, T_q: int) -> list[dict]:
    """Each row's running max m and sum l as bars (orange: the current tile's rows), with
    the final value as a ◇ beside them."""
    rows_now = np.zeros(T_q, bool)
    if current is not None:
        rows_now[current[0][0] : current[0][1]] = True
    colors = np.where(rows_now, ORANGE, BLUE).tolist()
    y = np.arange(T_q)
    dot = 8 if T_q <= 24 else 5  # the final-value ◇, smaller when the rows are thin
    m, l, m_final, l_final = stats
    data = []
    for name, now, final, xa in (("m", m, m_final, "x4"), ("l", l, l_final, "x5")):
        data += [
            dict(type="bar", orientation="h", x=np.asarray(now, np.float32), y=y, xaxis=xa,
                 yaxis="y", marker=dict(color=colors), name=f"each row's {name} so far",
                 hovertemplate="row %{y}<br>" + name + " so far %{x:" + NUM_FMT
                 + "}<extra></extra>"),
            dict(type="scatter", x=np.asarray(final, np.float32), y=y, mode="markers",
                 xaxis=xa, yaxis="y", marker=dict(symbol="diamond-open", size=dot, color=BLACK),
                 name=f"final {name}", meta=dict(say="final.stat", numbers=dict(
                     name=name, **_span(final))),
                 hovertemplate="row %{y}<br>final " + name + " %{x:" + NUM_FMT
                 + "}<extra></extra>"),
        ]  # fmt: skip
    return data


def _row_stat(name: str, now: np.ndarray) -> list:
    """Each started row's running `name` (m or l) so far, in words: one by one up to
    MAX_BARS rows, else its highest and lowest; the rows with no tile yet counted."""
    now = np.asarray(now, dtype=float)
    started = np.flatnonzero(np.isfinite(now))
    what = f"{name} so far, by started row"
    if not started.size:
        return [Said("title", title=f"No row has started yet: no {name} so far")]
    if started.size <= MAX_BARS:
        out = [Values(what, [int(i) for i in started], now[started])]
    else:
        hi, lo = started[int(np.argmax(now[started]))], started[int(np.argmin(now[started]))]
        out = [Said("bars.many", name=what, n=started.size, hi=num(now[hi]), at_hi=f"row {hi}",
                    lo=num(now[lo]), at_lo=f"row {lo}")]  # fmt: skip
    return out


def _walk_words(scores: np.ndarray, veil: np.ndarray, out: np.ndarray, exact: np.ndarray,
                stats: tuple | None) -> tuple:  # fmt: skip
    """The walkthrough in words, panel by panel, from the arrays it draws: the scores (cells
    the causal mask forbids named so), the veil over the tiles not done, the output so far
    and the exact output (their columns are output components, not key positions), and
    with `stats` each row's running max m and sum l so far and their final values."""
    todo, skipped = int((veil == 0).sum()), int((veil == 1).sum())
    parts: list = [
        Said("title", title="Left, the scores q·k/√d_k under the tiles"),
        Grid(np.where(np.isfinite(scores), scores, np.nan), "query row", "key position",
             blank="forbidden"),
        Said("tiles.veil", todo=todo, skipped=skipped),
        Said("title", title="Beside them, the output, one row per query"),
        Grid(out, "query row", "output column", name="output so far (acc / l)",
             blank="pending"),
        Grid(exact, "query row", "output column", name="exact output"),
    ]  # fmt: skip
    if stats is not None:
        m, l, m_final, l_final = stats
        rows = np.asarray(m, dtype=float)
        waiting = int((~np.isfinite(rows)).sum())
        parts += _row_stat("running max m", m) + _row_stat("running sum l", l)
        if waiting and waiting < rows.size:
            parts.append(Said("title", title=f"{waiting} of {rows.size} rows have no tile yet"))
        parts += [
            Said("final.stat", name="m", **_span(m_final)),
            Said("final.stat", name="l", **_span(l_final)),
        ]
    return tuple(parts)


def _walk_title_and_frames(step: int, n_steps: int, current, d_v: int) -> tuple[str, list]:
    """The step's title, and the frames around the current tile and its output rows."""
    if current is None:
        return f"Step 0 of {n_steps}: no tile processed yet", []
    (r0, r1), (c0, c1) = current
    title = f"Step {step} of {n_steps}: query rows {r0}–{r1 - 1} meet keys {c0}–{c1 - 1}"
    frame = dict(line=dict(color=BLACK, width=4), layer="above", y0=r0 - 0.5, y1=r1 - 0.5)
    return title, [
        dict(frame, type="rect", x0=c0 - 0.5, x1=c1 - 0.5, xref="x", yref="y"),
        dict(frame, type="rect", x0=-0.5, x1=d_v - 0.5, xref="x2", yref="y"),
    ]


def _walk_layout(title: str, shape: tuple[int, int], d_v: int, dom: dict, stats: bool) -> dict:
    T_q, T_k = shape
    layout = base_layout(title, "key position", "query row", height=520)
    layout["xaxis"].update(domain=dom["s"], range=[-0.6, T_k - 0.4], showgrid=False, zeroline=False)
    # row 0 at the top; an explicit range, since the bars would pad an automatic one
    layout["yaxis"].update(range=[T_q - 0.5, -0.5], showgrid=False, zeroline=False)
    small = dict(showgrid=False, zeroline=False, dtick=1 if d_v <= 8 else None, anchor="y")
    layout["xaxis2"] = dict(small, domain=dom["o"], title=dict(text="column"))
    layout["xaxis3"] = dict(small, domain=dom["e"], title=dict(text="column"))
    heads = [("scores q·k/√d_k", dom["s"]), ("so far:<br>acc / l", dom["o"]), ("exact", dom["e"])]
    if stats:
        stat = dict(anchor="y", nticks=3, tickformat=".2~g", rangemode="tozero")
        layout["xaxis4"] = dict(stat, domain=dom["m"], title=dict(text="m"))
        layout["xaxis5"] = dict(stat, domain=dom["l"], title=dict(text="l"))
        heads += [("running<br>max m", dom["m"]), ("running<br>sum l", dom["l"])]
    else:
        heads[1] = ("output<br>so far", dom["o"])
    layout["annotations"] = [
        dict(text=text, x=sum(d) / 2, y=1.0, xref="paper", yref="paper", showarrow=False,
             yanchor="bottom", font=dict(size=14))
        for text, d in heads
    ]  # fmt: skip
    return layout


def _walk_caption(tiles, shape: tuple[int, int], block_q: int, block_k: int, stats: bool) -> str:
    T_q, T_k = shape
    skipped = sum(1 for *_, v in tiles if not v)
    # scores inside the skipped tiles (edge tiles can be short when a block does not divide T)
    saved = sum(
        (min(block_q, T_q - qi * block_q)) * (min(block_k, T_k - ki * block_k))
        for qi, ki, v in tiles
        if not v
    )
    caption = (
        "Each box on the left is a tile: a block of queries meets a block of keys. Clear tiles "
        "are done, hazy ones still to come; the thick frame is the tile just folded in, the "
        "only scores that exist at that moment. The framed output rows change as each key "
        "block arrives, and a row equals the exact answer once its last tile is in."
    )
    if stats:
        caption = (
            "Each box on the left is a tile: one block of queries meets one block of keys. Clear "
            "tiles are done, hazy ones are still to come, and the thick frame is the tile just "
            "folded in — the only scores that exist at that moment (the full matrix is drawn "
            "for you; the method never stores it). Beside it, the framed output rows change as "
            "each key block arrives; blank rows have not started; a row equals the exact answer "
            "once its last tile is in. On the right, each row's running max m and running sum l "
            "(orange: "
            "the rows of the current tile): when a new key block holds a bigger score, m jumps "
            "up and everything summed so far is multiplied by exp(m_old − m_new) before the new "
            "keys are added — so l can even shrink. Each bar reaches its ◇ once the row's last "
            "key block is in."
        )
    if skipped:
        caption += (
            f" The {skipped} grey tiles lie wholly in their queries' future: with the causal "
            f"mask they are never computed, which saves {saved:,} of the {T_q * T_k:,} scores "
            f"({saved / (T_q * T_k):.0%})."
        )
    return caption


def walkthrough_chart(
    scores: np.ndarray,
    tiles: list[tuple[int, int, bool]],
    out: np.ndarray,
    exact: np.ndarray,
    m: np.ndarray,
    l: np.ndarray,
    m_final: np.ndarray,
    l_final: np.ndarray,
    *,
    block_q: int,
    block_k: int,
    step: int,
    current: tuple[tuple[int, int], tuple[int, int]] | None,
    stats: bool = True,
) -> Chart:
    """Five panels sharing the query rows, redrawn as ONE figure on every step: the T×T
    scores under the tile grid (done tiles clear, waiting ones hazy, the current one
    framed), the output so far (acc / l), the exact attention output, and each row's
    running max m and running sum l beside their final values. With `stats` False (the
    first view) only the first three.

    Built from nine traces and at most two shapes, so it stays cheap for T = 64 with 2×2
    tiles (one figure with five panels draws faster than two figures with three and two).
    """
    scores = np.asarray(scores, np.float32)
    out, exact = np.asarray(out, np.float32), np.asarray(exact, np.float32)
    shape, d_v = scores.shape, exact.shape[1]
    visited = [(qi, ki) for qi, ki, v in tiles if v]
    veil = _veil(tiles, set(visited[:step]), shape, block_q, block_k)
    dom = _domains(stats)
    data = _tile_traces(scores, veil, _grid_lines(*shape, block_q, block_k), dom)
    data += _output_traces(out, exact, dom)
    if stats:
        data += _stat_traces((m, l, m_final, l_final), current, shape[0])
    title, shapes = _walk_title_and_frames(step, len(visited), current, d_v)
    layout = _walk_layout(title, shape, d_v, dom, stats)
    layout.update(shapes=shapes, showlegend=False, bargap=0.15)
    fig = fast_figure(data, layout, dict(l=90, r=20, t=100, b=80))
    words = _walk_words(scores, veil, out, exact, (m, l, m_final, l_final) if stats else None)
    return Chart(fig, _walk_caption(tiles, shape, block_q, block_k, stats), words=words)
