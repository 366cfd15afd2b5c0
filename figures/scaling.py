"""Pictures for "Why √d_k": scores → logits → weights, variance, saturation, the dying gradient.

Every builder takes numpy arrays or tensors and returns a `Chart` (figure + what to notice).

Speed: a step redraws its charts whenever d_k moves, so each figure is built as
one spec of plain dicts by figures.parts.fast_figure (no per-property validation;
tests/scaling/test_figures.py validates every builder's output); plotly's
incremental helpers (`add_hline`, `update_xaxes` …) validate on every call and
cost several times more. Lines, labels, the legend and the colours are the shared
ones of figures.parts. The lesson's sentences are the page's (content/scaling.md):
a builder that quotes one in its caption takes it as an argument.
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
    SKY,
    VERMILION,
    YELLOW,
    fast_figure,
    hline,
    legend_below,
    vline,
)
from .parts import label as annotation
from .style import DIVERGING, NUM_FMT, SEQUENTIAL, Chart, base_layout, line_layout
from .style import to_numpy as _f32

LOGIT_CLIP = 6.0  # colour range of the logits map: past ±6 softmax is already nearly one-hot
FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 1.19e-7
J_FLOOR = -16  # the Jacobian map's colour scale spans 1e-16 … 1
STAR = dict(size=18, symbol="star", color=YELLOW, line=dict(color=BLACK, width=1.5))


def _f64(x) -> np.ndarray:
    """Tiny values (1e-50) must not flush to 0 on the way to the chart: keep float64 here."""
    if hasattr(x, "detach"):
        x = x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _dk_axis(title: str = "d_k") -> dict:
    ticks = [2**i for i in range(11)]
    return dict(
        title=dict(text=title), type="log", tickvals=ticks, ticktext=[str(t) for t in ticks]
    )


# ---------------------------------------------------------------- 1. the three stages


def _small_map(
    z: np.ndarray,
    *,
    title: str,
    colorbar_title: str,
    diverging: bool,
    zmin: float | None = None,
    zmax: float | None = None,
    height: int,
) -> go.Figure:
    """One of the three side-by-side maps: row 0 on top, colour bar under the plot.

    Same conventions as figures.style.heatmap (float32, blank non-finite cells,
    3-digit hover), built in one pass.
    """
    n_rows, n_cols = z.shape
    finite = z[np.isfinite(z)]
    if diverging and zmin is None:
        lim = float(np.abs(finite).max()) if finite.size else 1.0
        zmin, zmax = -(lim or 1.0), lim or 1.0
    dtick = 1 if max(n_rows, n_cols) <= 8 else 2 if max(n_rows, n_cols) <= 16 else None
    ticks = dict(tickmode="linear", dtick=dtick) if dtick else dict(tickmode="auto")
    trace = dict(
        type="heatmap",
        z=np.where(np.isfinite(z), z, np.nan).astype(np.float32),
        colorscale=DIVERGING if diverging else SEQUENTIAL,
        zmin=zmin,
        zmax=zmax,
        xgap=1,
        ygap=1,
        colorbar=dict(
            orientation="h",
            y=-0.30,
            yanchor="top",
            thickness=10,
            tickformat=NUM_FMT,
            nticks=5,  # a narrow panel: more ticks would run together ("−20−10")
            title=dict(text=colorbar_title, side="top"),
        ),
        hovertemplate=f"query #%{{y}}<br>key #%{{x}}<br>value %{{z:{NUM_FMT}}}<extra></extra>",
    )
    layout = base_layout(title, "key", "query", height=height)
    layout["xaxis"].update(tickangle=0, **ticks)
    layout["yaxis"].update(autorange="reversed", **ticks)
    layout["margin"] = dict(l=10, r=10, t=50, b=110)
    return fast_figure([trace], layout)


def raw_scores_map(raw, d_k: int, *, height: int = 400) -> Chart:
    """Plain q·k, on its own colour range."""
    z = _f32(raw)
    fig = _small_map(
        z,
        title=f"① Raw scores q·k (d_k = {d_k})",
        colorbar_title="q·k",
        diverging=True,
        height=height,
    )
    sd = float(np.nanstd(z))
    return Chart(
        fig,
        f"Dot products of random queries and keys. Their spread grows like √d_k: here the "
        f"standard deviation is {sd:.3g} (theory √{d_k} = {math.sqrt(d_k):.3g}).",
    )


def logits_map(logits, *, scaled: bool, temperature: float, height: int = 400) -> Chart:
    """The logits softmax sees, on a fixed ±6 colour range so their size is visible."""
    z = _f32(logits)
    fig = _small_map(
        z,
        title="② Logits softmax sees",
        colorbar_title=f"logit (clips at ±{LOGIT_CLIP:g})",
        diverging=True,
        zmin=-LOGIT_CLIP,
        zmax=LOGIT_CLIP,
        height=height,
    )
    clipped = float(np.mean(np.abs(z) > LOGIT_CLIP)) if z.size else 0.0
    return Chart(
        fig,
        f"The raw scores × {'1/√d_k' if scaled else '1 (no scaling)'}"
        f"{f' ÷ {temperature:g}' if temperature != 1 else ''}. The colours stop at "
        f"±{LOGIT_CLIP:g} on purpose: {clipped:.0%} of the cells are beyond it. Logits that "
        "large come with large gaps between them, and softmax turns gaps into ratios: a lead of "
        f"{LOGIT_CLIP:g} already gives the winner e^{LOGIT_CLIP:g} ≈ {math.exp(LOGIT_CLIP):.0f} "
        "times the runner-up's weight. Hover for the exact value.",
    )


def weights_map(weights, *, height: int = 400) -> Chart:
    """softmax(logits), rows sum to 1, on a fixed 0–1 colour range."""
    fig = _small_map(
        _f32(weights),
        title="③ Weights after softmax",
        colorbar_title="weight",
        diverging=False,
        zmin=0.0,
        zmax=1.0,
        height=height,
    )
    return Chart(
        fig,
        "Each row sums to 1. A row with one bright cell and the rest dark is saturated: that "
        "query copies a single key and ignores the others.",
    )


def row_summary(max_weight, entropy_frac, threshold: float = 0.99, *, height: int = 400) -> Chart:
    """Per query row: the largest weight and the entropy as a share of log T (rows top-down)."""
    mw = _f32(max_weight)
    ef = _f32(entropy_frac)
    rows = np.arange(len(mw))
    data = [
        dict(
            type="scatter",
            x=values,
            y=rows,
            mode="markers",
            name=name,
            marker=dict(color=colour, size=9, symbol=symbol),
            hovertemplate=f"query %{{y}}<br>{name} %{{x:{NUM_FMT}}}<extra></extra>",
        )
        for values, name, colour, symbol in (
            (mw, "largest weight", VERMILION, "circle"),
            (ef, "entropy / log T", BLUE, "diamond"),
        )
    ]
    layout = line_layout("④ Per query row", "value (0 … 1)", "query", height=height)
    n = len(mw)
    dtick = 1 if n <= 8 else 2 if n <= 16 else None
    layout["xaxis"].update(range=[-0.03, 1.05], dtick=0.5)
    layout["yaxis"].update(range=[n - 0.5, -0.5], dtick=dtick)
    layout["shapes"] = [vline(threshold)]
    layout["margin"] = dict(l=10, r=10, t=50, b=110)
    legend_below(layout)
    saturated = int(np.sum(mw > threshold))
    words = (
        Said("dots", down="query", first="query 0", across="value (0 … 1)"),
        Values("largest weight, by query", rows, mw.astype(float)),
        Values("entropy / log T, by query", rows, ef.astype(float)),
        Said("threshold", v=f"{threshold:g}", n=saturated, total=n),
    )
    return Chart(
        fast_figure(data, layout),
        f"{saturated} of {n} rows have a largest weight above {threshold:g} (dotted line). "
        "Entropy near 1 means attention spread evenly, near 0 means one key took everything.",
        words=words,
    )


# ---------------------------------------------------------------- 2. distribution


def _normal_pdf(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-(x**2) / (2 * var)) / math.sqrt(2 * math.pi * var)


def _histogram_traces(e: np.ndarray, dens: np.ndarray, d_k: int) -> list[dict]:
    """The measured bars, then the N(0, d_k) curve and (unless d_k = 1) the N(0, 1) one."""
    centres = (e[:-1] + e[1:]) / 2
    lim = float(max(abs(e[0]), abs(e[-1]), 4.0))
    x = np.linspace(-lim, lim, 401)
    data = [
        dict(
            type="bar",
            x=centres.astype(np.float32),
            y=dens,
            width=float(e[1] - e[0]),
            name="measured logits",
            marker=dict(color=SKY, line=dict(width=0)),
            hovertemplate=f"logit ≈ %{{x:.3~g}}<br>density %{{y:{NUM_FMT}}}<extra></extra>",
        )
    ]
    curves = [(float(d_k), f"N(0, {d_k}): the unscaled theory", ORANGE, "dash")]
    if d_k != 1:
        curves.append((1.0, "N(0, 1): what softmax wants", GREEN, "solid"))
    for var, name, colour, dash in curves:
        data.append(
            dict(
                type="scatter",
                x=x.astype(np.float32),
                y=_normal_pdf(x, var).astype(np.float32),
                mode="lines",
                name=name,
                line=dict(color=colour, width=3, dash=dash),
                hoverinfo="skip",
            )
        )
    return data


def _clip_the_spike(layout: dict, dens: np.ndarray, d_k: int) -> None:
    """Keep the measured histogram readable: the tall N(0, 1) spike runs off the top, labelled."""
    tallest = float(dens.max()) if dens.size else 1.0
    peak_1 = float(_normal_pdf(np.zeros(1), 1.0)[0])
    if d_k != 1 and peak_1 > 3 * tallest:
        layout["yaxis"]["range"] = [0, 1.6 * tallest]
        layout["annotations"] = [
            annotation(
                0,
                1.6 * tallest,
                f"N(0, 1) peaks at {peak_1:.2f}, far above ↑",
                xref="x",
                xanchor="left",
                yanchor="top",
                color=GREEN,
            )
        ]


def logit_histogram(
    edges,
    density,
    *,
    d_k: int,
    measured_var: float,
    theory_var: float,
    n: int,
    label: str,
    verdict: str = "",
) -> Chart:
    """Histogram of the logits with the N(0, d_k) and N(0, 1) curves.

    `verdict`: the page's sentence on whether the measurement misses the iid prediction
    beyond its sampling noise, appended to the caption."""
    e = _f64(edges)
    dens = _f32(density)
    layout = line_layout(
        f"Distribution of the logits ({label})", "logit value", "density", bargap=0
    )
    _clip_the_spike(layout, dens, d_k)
    ratio = measured_var / theory_var
    return Chart(
        fast_figure(_histogram_traces(e, dens, d_k), layout),
        f"{n:,} sampled logits. Measured variance **{measured_var:.3g}**, theory "
        f"**{theory_var:.3g}** (ratio {ratio:.3f}). Unscaled, the logits have variance d_k; "
        "dividing by √d_k brings it back to 1 whatever d_k is, as long as the components of q "
        f"and k are independent.{' ' + verdict if verdict else ''}",
    )


# ---------------------------------------------------------------- 3–4. sweeps over d_k


def _measured(x, y, name: str, colour: str, symbol: str, hover: str, fmt: str) -> dict:
    return dict(
        type="scatter",
        x=x,
        y=_f32(y),
        mode="lines+markers",
        name=name,
        line=dict(color=colour, width=3),
        marker=dict(size=9, symbol=symbol),
        hovertemplate=f"d_k %{{x}}<br>{hover} %{{y:{fmt}}}<extra>{name}</extra>",
    )


def _your_setting(d_k: int, y: float, hover: str, fmt: str, extra: str) -> dict:
    """The star at the current d_k on a sweep over d_k."""
    return dict(
        type="scatter",
        x=[d_k],
        y=[y],
        mode="markers",
        name="your setting",
        marker=STAR,
        hovertemplate=f"d_k %{{x}}<br>{hover} %{{y:{fmt}}}<extra>{extra}</extra>",
    )


def _variance_traces(d, unscaled, scaled, *, d_k, current_var, label, slopes) -> list[dict]:
    """Both theory lines, both measured sweeps and the star at the current setting."""
    return [
        dict(
            type="scatter",
            x=d,
            y=d,
            mode="lines",
            name="theory: d_k",
            line=dict(color=GREY, dash="dash"),
            hoverinfo="skip",
        ),
        dict(
            type="scatter",
            x=d,
            y=np.ones_like(d),
            mode="lines",
            name="theory: 1",
            line=dict(color=GREY, dash="dot"),
            hoverinfo="skip",
        ),
        _measured(
            d,
            unscaled,
            f"unscaled (slope {slopes[0]:.2f})",
            VERMILION,
            "circle",
            "variance",
            NUM_FMT,
        ),
        _measured(
            d, scaled, f"÷ √d_k (slope {slopes[1]:.2f})", BLUE, "square", "variance", NUM_FMT
        ),
        _your_setting(d_k, current_var, "variance", NUM_FMT, label),
    ]


def variance_vs_dk(
    d_ks: Sequence[int],
    unscaled,
    scaled,
    *,
    d_k: int,
    current_var: float,
    label: str,
    slopes: tuple[float, float],
    init: str,
) -> Chart:
    """Measured Var(logits) against d_k, log–log, scaled and unscaled, current setting marked."""
    d = np.asarray(d_ks, dtype=np.float64)
    data = _variance_traces(
        d, unscaled, scaled, d_k=d_k, current_var=current_var, label=label, slopes=slopes
    )
    layout = line_layout("Variance of the logits against d_k", "d_k", "variance", height=420)
    layout["xaxis"].update(_dk_axis())
    layout["yaxis"].update(type="log", exponentformat="power", dtick=1)
    legend_below(layout)
    sc = _f64(scaled)
    init_note = (
        ""
        if init == "gaussian"
        else " With LayerNorm-style vectors the components are no longer independent (they "
        "sum to 0), so small d_k sits above the line: Var = d_k²/(d_k − 1) rather than d_k."
    )
    return Chart(
        fast_figure(data, layout),
        f"Measured, not plotted from the formula. Unscaled, the variance grows in step with d_k "
        f"(slope {slopes[0]:.2f} on log–log axes); divided by √d_k it stays between "
        f"{sc.min():.3g} and {sc.max():.3g} (slope {slopes[1]:.2f}). The star is your current "
        f"setting ({label}).{init_note}",
    )


def _sweep_figure(
    d_ks, unscaled, scaled, *, d_k: int, scaled_now: bool, title: str, y_title: str, hover: str
) -> go.Figure:
    d = np.asarray(d_ks, dtype=np.float64)
    now = float(_f32(scaled if scaled_now else unscaled)[list(d_ks).index(d_k)])
    data = [
        _measured(d, unscaled, "unscaled", VERMILION, "circle", hover, ".3~g"),
        _measured(d, scaled, "÷ √d_k", BLUE, "square", hover, ".3~g"),
        _your_setting(d_k, now, hover, ".3~g", "your setting"),
    ]
    layout = line_layout(title, "d_k", y_title, height=420)
    layout["xaxis"].update(_dk_axis())
    layout["yaxis"].update(range=[-0.03, 1.03])
    legend_below(layout)
    return fast_figure(data, layout)


def saturation_vs_dk(
    d_ks, unscaled, scaled, *, d_k: int, scaled_now: bool, T: int, n_rows: int, threshold: float
) -> Chart:
    """Share of rows whose largest weight exceeds the threshold."""
    fig = _sweep_figure(
        d_ks,
        unscaled,
        scaled,
        d_k=d_k,
        scaled_now=scaled_now,
        title=f"Saturated rows (largest weight > {threshold:g})",
        y_title="share of rows",
        hover="share",
    )
    u, s = _f64(unscaled), _f64(scaled)
    worst = round(float(s.max()) * n_rows)  # rows, at the d_k where scaling saturates most
    scaled_text = (
        "scaled, no row saturates at any d_k."
        if worst == 0
        else f"scaled, at most {worst:,} of the {n_rows:,} rows ({s.max():.2%}) saturate, "
        f"at d_k = {d_ks[int(s.argmax())]}."
    )
    return Chart(
        fig,
        f"{n_rows:,} sampled rows of {T} keys per d_k. Unscaled, the share "
        f"{'climbs' if u[-1] > u[0] else 'goes'} from {u[0]:.0%} at d_k = {d_ks[0]} to "
        f"{u[-1]:.0%} at d_k = {d_ks[-1]}; {scaled_text}",
    )


def entropy_vs_dk(d_ks, unscaled, scaled, *, d_k: int, scaled_now: bool, T: int) -> Chart:
    """Mean row entropy as a share of its maximum log T."""
    fig = _sweep_figure(
        d_ks,
        unscaled,
        scaled,
        d_k=d_k,
        scaled_now=scaled_now,
        title="Mean entropy of a row (share of log T)",
        y_title="entropy / log T",
        hover="entropy",
    )
    u, s = _f64(unscaled), _f64(scaled)
    return Chart(
        fig,
        f"1 means attention spread evenly over all {T} keys, 0 means one key takes everything. "
        f"Scaled, the entropy stays between {s.min():.2f} and {s.max():.2f} from d_k = "
        f"{d_ks[0]} to {d_ks[-1]}; unscaled, it goes from {u[0]:.2f} to {u[-1]:.2f}.",
    )


# ---------------------------------------------------------------- 5. the Jacobian


def jacobian_map(
    J_abs, *, row: int, dtype_name: str, threshold: float = 0.99, height: int = 420
) -> Chart:
    """|diag(α) − ααᵀ| of one row on a log colour scale; exact zeros left blank."""
    J = _f64(J_abs)
    with np.errstate(divide="ignore"):
        logJ = np.where(J > 0, np.log10(np.where(J > 0, J, 1.0)), np.nan)
    logJ = np.maximum(logJ, J_FLOOR)  # NaN (an exact zero) stays NaN, i.e. blank
    n = J.shape[0]
    dtick = 1 if n <= 16 else None
    ticks = dict(tickmode="linear", dtick=dtick) if dtick else dict(tickmode="auto")
    cticks = list(range(J_FLOOR, 1, 4))
    trace = dict(
        type="heatmap",
        z=logJ.astype(np.float32),
        customdata=J,
        colorscale=SEQUENTIAL,
        zmin=J_FLOOR,
        zmax=0,
        xgap=1,
        ygap=1,
        colorbar=dict(
            title=dict(text="|entry|"),
            thickness=14,
            tickvals=cticks,
            ticktext=[f"1e{t}" if t else "1" for t in cticks],
        ),
        hovertemplate=f"weight %{{y}}, logit %{{x}}<br>|∂αᵢ/∂sⱼ| = %{{customdata:{NUM_FMT}}}"
        "<extra></extra>",
    )
    layout = base_layout(
        f"Softmax Jacobian |∂αᵢ/∂sⱼ| for query {row}", "logit j", "weight i", height=height
    )
    layout["xaxis"].update(showgrid=False, zeroline=False, **ticks)
    layout["yaxis"].update(autorange="reversed", showgrid=False, zeroline=False, **ticks)
    layout["plot_bgcolor"] = "#D0D0D0"  # exact zeros are left out of the map and show grey
    zeros = int(np.sum(J == 0))
    zero_note = (
        f" {zeros} grey cells are exactly 0: in {dtype_name} a weight rounded to exactly 0 or "
        "1, or a product of two weights underflowed."
        if zeros
        else ""
    )
    return Chart(
        fast_figure([trace], layout),
        f"How much each weight moves when one logit moves, on a log scale from 1e{J_FLOOR} to 1. "
        f"Entries are bounded by αᵢ(1 − αᵢ) ≤ {0.5 * 0.5:g}. In a saturated row (largest weight a "
        f"above {threshold:g}) every entry is at most 1 − a < {1 - threshold:.2g}: the row is "
        "dark, its logits can barely move its weights, and little gradient reaches q or k (none "
        "at all through a grey cell). Pick a saturated (orange) row with the row slider above "
        f"to see it.{zero_note}",
        words=_jacobian_words(J),
    )


def _jacobian_words(J: np.ndarray) -> tuple:
    """|J| itself, not the log the colours show; its exact zeros are grey cells without a
    value (charts.md `blank.zero`), not values of a grid of 0s and 1s."""
    zeros = int(np.sum(J == 0))
    if zeros == J.size:  # a one-hot row in a low precision: no cell has a value
        return (Said("blank.zero", n=zeros, total=J.size),)
    return (Grid(np.where(J > 0, J, np.nan), "weight i", "logit j", blank="zero"),)


def _norm_bars(nrm, mw, *, row: int, threshold: float, floor: float) -> list[dict]:
    """One bar per row (a zero drawn at the floor, hatched), then the legend's stand-ins."""
    rows = np.arange(len(nrm))
    sat = mw > threshold
    zero = nrm == 0
    data = [
        dict(
            type="bar",
            x=rows,
            y=np.where(zero, floor, nrm),
            showlegend=False,
            marker=dict(
                color=[VERMILION if s else BLUE for s in sat],
                line=dict(color=[BLACK if r == row else "rgba(0,0,0,0)" for r in rows], width=3),
                pattern=dict(shape=["x" if z else "" for z in zero], fgcolor=BLACK, size=6),
            ),
            customdata=np.stack([nrm, mw], axis=-1),
            hovertemplate=f"query %{{x}}<br>‖J‖ = %{{customdata[0]:{NUM_FMT}}}<br>largest "
            f"weight %{{customdata[1]:{NUM_FMT}}}<extra></extra>",
        )
    ]
    legend = [(BLUE, "", "responsive row"), (VERMILION, "", f"saturated (max > {threshold:g})")]
    if zero.any():
        legend.append((VERMILION, "x", "exactly 0 (underflow)"))
    for colour, shape, name in legend:
        data.append(
            dict(
                type="bar",
                x=[None],
                y=[None],
                name=name,
                marker=dict(color=colour, pattern=dict(shape=shape, fgcolor=BLACK)),
            )
        )
    return data


def jacobian_norms_chart(
    norms, max_weight, *, row: int, threshold: float = 0.99, rows_text: str = ""
) -> Chart:
    """‖diag(α) − ααᵀ‖_F for every row, log y; saturated rows in orange, zeros marked.

    `rows_text`: the page's sentence comparing responsive and saturated rows, put in the
    caption after the median."""
    nrm = _f64(norms)
    positive = nrm[nrm > 0]
    floor = min(float(positive.min()) / 10 if positive.size else 1e-20, 1e-4)
    data = _norm_bars(nrm, _f64(max_weight), row=row, threshold=threshold, floor=floor)
    layout = line_layout(
        "Jacobian norm of every query row",
        "query",
        "‖J‖ (Frobenius)",
        height=420,
        barmode="overlay",
    )
    bottom = min(-4, math.floor(math.log10(floor)))
    layout["yaxis"].update(type="log", exponentformat="power", range=[bottom, 0.15], dtick=2)
    layout["xaxis"].update(dtick=1 if len(nrm) <= 24 else None)
    layout["shapes"] = [hline(1e-3)]
    # the line's label in the right margin, clear of the last bar
    layout["annotations"] = [annotation(1.0, -3, "10⁻³", xanchor="left", yanchor="middle")]
    layout["margin"] = dict(l=10, r=48, t=50, b=10)
    legend_below(layout, -0.2)
    med = float(np.median(nrm))
    below = float(np.mean(nrm < 1e-3))
    sat = np.flatnonzero(_f64(max_weight) > threshold)
    listed = 0 < sat.size < nrm.size  # none or all: the count says which
    words = (  # each norm itself: a zero is 0, not the floor its hatched bar is drawn at
        Values("‖J‖ of each query row", np.arange(len(nrm)), nrm),
        Said(
            "rows.saturated",
            n=int(sat.size),
            total=int(nrm.size),
            v=f"{threshold:g}",
            rows=": " + ", ".join(str(int(r)) for r in sat) if listed else "",
        ),
    )
    return Chart(
        fast_figure(data, layout),
        f"Median row: **{med:.3g}**; rows below 1e-3: **{below:.0%}**. "
        f"{rows_text + ' ' if rows_text else ''}A row whose largest weight a passes "
        f"{threshold:g} has ‖J‖ ≤ 1 − a² < {1 - threshold**2:.3g} (the norm is at most the "
        "trace Σ αᵢ(1 − αᵢ), which is at most a(1 − a) + (1 − a)), so little gradient reaches "
        "its query and keys. The outlined bar is the row shown on the left.",
        words=words,
    )


# ---------------------------------------------------------------- 6. two keys


def _exact_two_key(x: float) -> float:
    e = math.exp(-abs(x))
    return e / (1 + e) ** 2


def _two_key_traces(g, ex, comp, *, dtype_name, points, typical_gap, typical_label) -> list:
    """The exact curve, backprop's in dtype (zeros left out of the log axis), the lesson's
    points and the star at the reader's typical lead (clipped to the chart, and said so)."""
    gmax = float(g[-1])
    shown_gap = min(typical_gap, gmax)
    off = typical_gap > gmax
    return [
        dict(
            type="scatter",
            x=g,
            y=ex,
            mode="lines",
            name="exact α(1 − α)",
            line=dict(color=BLACK, width=3),
            hovertemplate=f"gap %{{x:.3~g}}<br>α(1 − α) = %{{y:{NUM_FMT}}}<extra>exact</extra>",
        ),
        dict(
            type="scatter",
            x=g,
            y=np.where(comp > 0, comp, np.nan),
            mode="lines",
            name=f"backprop in {dtype_name}",
            line=dict(color=ORANGE, width=3, dash="dash"),
            hovertemplate=f"gap %{{x:.3~g}}<br>gradient %{{y:{NUM_FMT}}}<extra>{dtype_name}"
            "</extra>",
        ),
        dict(
            type="scatter",
            x=points,
            y=[_exact_two_key(p) for p in points],
            mode="markers+text",
            name="the lesson's two points",
            marker=dict(size=12, color=GREEN, symbol="circle", line=dict(color=BLACK, width=1)),
            text=[f"gap {p:g}: {_exact_two_key(p):.2g}" for p in points],
            textposition="top right",
            hovertemplate=f"gap %{{x}}<br>α(1 − α) = %{{y:{NUM_FMT}}}<extra>lesson</extra>",
        ),
        dict(
            type="scatter",
            x=[shown_gap],
            y=[_exact_two_key(shown_gap)],
            mode="markers+text",
            name="your setting",
            marker=STAR,
            text=[f"your lead ≈ {typical_gap:.3g}" + (" (off the chart →)" if off else "")],
            textposition="bottom right" if shown_gap < gmax / 2 else "bottom left",
            hovertemplate=f"typical lead {typical_gap:.3g}<br>α(1 − α) = "
            f"{_exact_two_key(typical_gap):.3g}<extra>{typical_label}</extra>",
        ),
    ]


def _two_key_marks(zero_gap: float | None, gmax: float, dtype_name: str) -> tuple[list, list]:
    """float32's epsilon as a line, and where the computed gradient is exactly 0 (shaded)."""
    shapes = [hline(FLOAT32_EPS)]
    annotations = [annotation(1, math.log10(FLOAT32_EPS), "float32 epsilon ≈ 1.2e-7")]
    if zero_gap is None:
        return shapes, annotations
    shapes.append(
        dict(
            type="rect",
            xref="x",
            x0=zero_gap,
            x1=gmax,
            yref="paper",
            y0=0,
            y1=1,
            fillcolor=ORANGE,
            opacity=0.10,
            line=dict(width=0),
            layer="below",
        )
    )
    shapes.append(vline(zero_gap, color=ORANGE))
    annotations.append(
        annotation(
            zero_gap,
            -15.5,
            f"{dtype_name}: exactly 0 from gap {zero_gap:.3g}",
            xref="x",
            xanchor="right",
            color=VERMILION,
        )
    )
    return shapes, annotations


def _line_said(name: str, x: np.ndarray, y: np.ndarray, across: str) -> Said | None:
    """A curve over x in words (charts.md `line`), from the points it draws (finite y)."""
    ok = np.isfinite(y)
    x, y = x[ok], y[ok]
    if not y.size:
        return None
    lo, hi = int(np.argmin(y)), int(np.argmax(y))
    return Said(
        "line", name=name, n=y.size, x=across, x0=num(x[0]), x1=num(x[-1]), lo=num(y[lo]),
        at_lo=num(x[lo]), hi=num(y[hi]), at_hi=num(x[hi]), last=num(y[-1]),
    )  # fmt: skip


def _two_key_words(
    g, ex, comp, *, dtype_name, zero_gap, points, typical_gap, typical_label, across, up
) -> tuple:
    """The two-key chart in words, in the order it is read: both curves, where backprop's
    becomes exactly 0 (the shaded part the log axis cannot show), float32's epsilon line,
    the lesson's points and the reader's typical lead, at its true gap even when the star
    sits clipped at the chart's right edge."""
    shown = comp > 0
    parts = [
        Said("axes", x=across, y=up, up="up"),
        _line_said("exact α(1 − α)", g, ex, across),
        _line_said(f"backprop in {dtype_name}", g, np.where(shown, comp, np.nan), across),
    ]
    if zero_gap is not None:
        name = f"where backprop in {dtype_name} becomes exactly 0 (shaded from there on)"
        parts.append(Said("mark", name=name, x=across, at=num(zero_gap)))
    parts.append(Said("level", name="float32 epsilon", y=num(FLOAT32_EPS)))
    if points:
        pairs = ", ".join(f"({num(p)}, {num(_exact_two_key(p))})" for p in points)
        parts.append(Said("points", name="the lesson's two points", n=len(points), points=pairs))
    off = typical_gap > float(g[-1])
    name = typical_label + (" (the star, off the chart: drawn at its right edge)" if off else "")
    parts.append(
        Said("point", name=name, x=across, at=num(typical_gap), y=num(_exact_two_key(typical_gap)))
    )
    return tuple(p for p in parts if p is not None)


def two_key_curve(
    gaps,
    exact,
    computed,
    *,
    dtype_name: str,
    zero_gap: float | None,
    typical_gap: float,
    typical_label: str,
    lesson_points: Sequence[float] = (3.0, 24.0),
    lesson_text: str = "",
    share_text: str = "",
) -> Chart:
    """α(1 − α) against the logit gap, log y, with float32's epsilon and the lesson's points.

    `typical_gap` is the median lead of a row's winner over its runner-up (the
    gap that caps how one-hot the row can be). The page's sentences open and close
    the caption: `lesson_text` on the lesson's two gaps, `share_text` on how common
    its larger gap is.
    """
    g, ex, comp = _f64(gaps), _f64(exact), _f64(computed)
    gmax = float(g[-1])
    points = [p for p in lesson_points if p <= gmax]
    across, up = "logit gap between the two keys", "gradient α(1 − α)"
    data = _two_key_traces(
        g,
        ex,
        comp,
        dtype_name=dtype_name,
        points=points,
        typical_gap=typical_gap,
        typical_label=typical_label,
    )
    words = _two_key_words(
        g, ex, comp, dtype_name=dtype_name, zero_gap=zero_gap, points=points,
        typical_gap=typical_gap, typical_label=typical_label, across=across, up=up,
    )  # fmt: skip
    layout = line_layout(
        "Two keys: the softmax gradient α(1 − α) against the logit gap", across, up, height=480
    )
    layout["yaxis"].update(type="log", exponentformat="power", range=[-16, 0.3], dtick=2)
    layout["xaxis"].update(range=[0, gmax])
    layout["shapes"], layout["annotations"] = _two_key_marks(zero_gap, gmax, dtype_name)
    legend_below(layout, -0.2)
    zero_text = (
        f"Computed in {dtype_name}, backpropagation gets exactly 0 from gap "
        f"{zero_gap:.3g} on (shaded): the winner's weight has rounded to 1.0."
        if zero_gap is not None
        else f"In {dtype_name} the computed gradient follows the exact curve over this range."
    )
    return Chart(
        fast_figure(data, layout),
        f"{lesson_text + ' ' if lesson_text else ''}{zero_text} The star is {typical_label}: in "
        f"the median row the winner leads the runner-up by {typical_gap:.3g}, where α(1 − α) = "
        f"{_exact_two_key(typical_gap):.2g}. That lead, not the row's full range, caps how "
        "one-hot a row can be: its winner's weight is at most 1 / (1 + e^(−lead)), however many "
        f"keys there are.{' ' + share_text if share_text else ''}",
        words=words,
    )
