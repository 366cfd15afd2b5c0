"""Pictures for "Why √d_k": scores → logits → weights, variance, saturation, the dying gradient.

Every builder takes numpy arrays or tensors and returns a `Chart` (figure + what to notice).

Speed: this page redraws eleven charts whenever d_k moves, so each figure is
built as one spec and validated once by `go.Figure(spec)`; plotly's
incremental helpers (`add_hline`, `update_xaxes` …) validate on every call and
cost several times more.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .style import DIVERGING, NUM_FMT, OKABE_ITO, SEQUENTIAL, Chart, base_layout, line_layout
from .style import to_numpy as _f32

BLUE, ORANGE, GREEN, VERMILLION, PURPLE, SKY, YELLOW, BLACK = OKABE_ITO
GREY = "#777777"
LOGIT_CLIP = 6.0  # colour range of the logits map: past ±6 softmax is already nearly one-hot
FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 1.19e-7
J_FLOOR = -16  # the Jacobian map's colour scale spans 1e-16 … 1
STAR = dict(size=18, symbol="star", color=YELLOW, line=dict(color=BLACK, width=1.5))


def _f64(x) -> np.ndarray:
    """Tiny values (1e-50) must not flush to 0 on the way to the chart: keep float64 here."""
    if hasattr(x, "detach"):
        x = x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _figure(data: list[dict], layout: dict) -> go.Figure:
    return go.Figure(dict(data=data, layout=layout))


def _legend_below(layout: dict, y: float = -0.22) -> dict:
    layout["legend"] = dict(orientation="h", y=y, yanchor="top", x=0, xanchor="left")
    return layout


def _hline(y: float, *, color: str = GREY, dash: str = "dot") -> dict:
    """A horizontal rule across the plot (shapes take data values, also on log axes)."""
    return dict(
        type="line",
        xref="paper",
        x0=0,
        x1=1,
        yref="y",
        y0=y,
        y1=y,
        line=dict(color=color, dash=dash, width=2),
    )


def _vline(x: float, *, color: str = GREY, dash: str = "dot") -> dict:
    return dict(
        type="line",
        yref="paper",
        y0=0,
        y1=1,
        xref="x",
        x0=x,
        x1=x,
        line=dict(color=color, dash=dash, width=2),
    )


def _label(x, y, text: str, *, xref="paper", xanchor="right", yanchor="bottom", color=GREY):
    """A text label; on a log axis pass y as log10 of the value (annotations need that)."""
    return dict(
        x=x,
        xref=xref,
        y=y,
        yref="y",
        text=text,
        showarrow=False,
        xanchor=xanchor,
        yanchor=yanchor,
        font=dict(color=color),
        bgcolor="rgba(255,255,255,0.8)",
    )


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
    return _figure([trace], layout)


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
            x=mw,
            y=rows,
            mode="markers",
            name="largest weight",
            marker=dict(color=VERMILLION, size=9, symbol="circle"),
            hovertemplate=f"query %{{y}}<br>largest weight %{{x:{NUM_FMT}}}<extra></extra>",
        ),
        dict(
            type="scatter",
            x=ef,
            y=rows,
            mode="markers",
            name="entropy / log T",
            marker=dict(color=BLUE, size=9, symbol="diamond"),
            hovertemplate=f"query %{{y}}<br>entropy / log T %{{x:{NUM_FMT}}}<extra></extra>",
        ),
    ]
    layout = line_layout("④ Per query row", "value (0 … 1)", "query", height=height)
    n = len(mw)
    dtick = 1 if n <= 8 else 2 if n <= 16 else None
    layout["xaxis"].update(range=[-0.03, 1.05], dtick=0.5)
    layout["yaxis"].update(range=[n - 0.5, -0.5], dtick=dtick)
    layout["shapes"] = [_vline(threshold)]
    layout["margin"] = dict(l=10, r=10, t=50, b=110)
    _legend_below(layout)
    saturated = int(np.sum(mw > threshold))
    return Chart(
        _figure(data, layout),
        f"{saturated} of {n} rows have a largest weight above {threshold:g} (dotted line). "
        "Entropy near 1 means attention spread evenly, near 0 means one key took everything.",
    )


# ---------------------------------------------------------------- 2. distribution


def _normal_pdf(x: np.ndarray, var: float) -> np.ndarray:
    return np.exp(-(x**2) / (2 * var)) / math.sqrt(2 * math.pi * var)


NOISE_SE = 3.0  # a deviation from the iid prediction counts only beyond this many standard errors


def iid_verdict(ratio: float, rel_se: float, n_seq: int) -> str:
    """What the measured / predicted variance says about independence, given its sampling error.

    `rel_se` is the standard error of the measured variance relative to it (see
    attn_core.lessons.scaling.variance_rel_se); only a miss of more than NOISE_SE of
    them is evidence that the components are not independent.
    """
    off, noise = abs(ratio - 1), NOISE_SE * rel_se
    if off > noise:
        return (
            f" Here the measurement is {off:.1%} off the iid prediction, beyond its sampling "
            f"noise (±{noise:.1%}, {NOISE_SE:g} standard errors over the {n_seq} independent "
            "sequences): these components are not independent."
        )
    return (
        f" The measurement is {off:.1%} off the iid prediction, within sampling noise "
        f"(±{noise:.1%}, {NOISE_SE:g} standard errors over the {n_seq} independent sequences)."
    )


def logit_histogram(
    edges,
    density,
    *,
    d_k: int,
    measured_var: float,
    theory_var: float,
    n: int,
    label: str,
    rel_se: float,
    n_seq: int,
) -> Chart:
    """Histogram of the logits with the N(0, d_k) and N(0, 1) curves."""
    e = _f64(edges)
    dens = _f32(density)
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
    layout = line_layout(
        f"Distribution of the logits ({label})", "logit value", "density", bargap=0
    )
    tallest = float(dens.max()) if dens.size else 1.0
    peak_1 = float(_normal_pdf(np.zeros(1), 1.0)[0])
    if d_k != 1 and peak_1 > 3 * tallest:
        # keep the measured histogram readable; the tall N(0, 1) spike runs off the top
        layout["yaxis"]["range"] = [0, 1.6 * tallest]
        layout["annotations"] = [
            _label(
                0,
                1.6 * tallest,
                f"N(0, 1) peaks at {peak_1:.2f}, far above ↑",
                xref="x",
                xanchor="left",
                yanchor="top",
                color=GREEN,
            )
        ]
    ratio = measured_var / theory_var
    off = iid_verdict(ratio, rel_se, n_seq)
    return Chart(
        _figure(data, layout),
        f"{n:,} sampled logits. Measured variance **{measured_var:.3g}**, theory "
        f"**{theory_var:.3g}** (ratio {ratio:.3f}). Unscaled, the logits have variance d_k; "
        "dividing by √d_k brings it back to 1 whatever d_k is, as long as the components of q "
        f"and k are independent.{off}",
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
    data = [
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
            VERMILLION,
            "circle",
            "variance",
            NUM_FMT,
        ),
        _measured(
            d, scaled, f"÷ √d_k (slope {slopes[1]:.2f})", BLUE, "square", "variance", NUM_FMT
        ),
        dict(
            type="scatter",
            x=[d_k],
            y=[current_var],
            mode="markers",
            name="your setting",
            marker=STAR,
            hovertemplate=f"d_k %{{x}}<br>variance %{{y:{NUM_FMT}}}<extra>{label}</extra>",
        ),
    ]
    layout = line_layout("Variance of the logits against d_k", "d_k", "variance", height=420)
    layout["xaxis"].update(_dk_axis())
    layout["yaxis"].update(type="log", exponentformat="power", dtick=1)
    _legend_below(layout)
    sc = _f64(scaled)
    init_note = (
        ""
        if init == "gaussian"
        else " With LayerNorm-style vectors the components are no longer independent (they "
        "sum to 0), so small d_k sits above the line: Var = d_k²/(d_k − 1) rather than d_k."
    )
    return Chart(
        _figure(data, layout),
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
        _measured(d, unscaled, "unscaled", VERMILLION, "circle", hover, ".3~g"),
        _measured(d, scaled, "÷ √d_k", BLUE, "square", hover, ".3~g"),
        dict(
            type="scatter",
            x=[d_k],
            y=[now],
            mode="markers",
            name="your setting",
            marker=STAR,
            hovertemplate=f"d_k %{{x}}<br>{hover} %{{y:.3~g}}<extra>your setting</extra>",
        ),
    ]
    layout = line_layout(title, "d_k", y_title, height=420)
    layout["xaxis"].update(_dk_axis())
    layout["yaxis"].update(range=[-0.03, 1.03])
    _legend_below(layout)
    return _figure(data, layout)


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
        _figure([trace], layout),
        f"How much each weight moves when one logit moves, on a log scale from 1e{J_FLOOR} to 1. "
        f"Entries are bounded by αᵢ(1 − αᵢ) ≤ {0.5 * 0.5:g}. In a saturated row (largest weight a "
        f"above {threshold:g}) every entry is at most 1 − a < {1 - threshold:.2g}: the row is "
        "dark, its logits can barely move its weights, and little gradient reaches q or k (none "
        "at all through a grey cell). Pick a saturated (orange) row with the row slider above "
        f"to see it.{zero_note}",
    )


def jacobian_norms_chart(norms, max_weight, *, row: int, threshold: float = 0.99) -> Chart:
    """‖diag(α) − ααᵀ‖_F for every row, log y; saturated rows in orange, zeros marked."""
    nrm = _f64(norms)
    mw = _f64(max_weight)
    rows = np.arange(len(nrm))
    positive = nrm[nrm > 0]
    floor = min(float(positive.min()) / 10 if positive.size else 1e-20, 1e-4)
    sat = mw > threshold
    zero = nrm == 0
    data = [
        dict(
            type="bar",
            x=rows,
            y=np.where(zero, floor, nrm),
            showlegend=False,
            marker=dict(
                color=[VERMILLION if s else BLUE for s in sat],
                line=dict(color=[BLACK if r == row else "rgba(0,0,0,0)" for r in rows], width=3),
                pattern=dict(shape=["x" if z else "" for z in zero], fgcolor=BLACK, size=6),
            ),
            customdata=np.stack([nrm, mw], axis=-1),
            hovertemplate=f"query %{{x}}<br>‖J‖ = %{{customdata[0]:{NUM_FMT}}}<br>largest "
            f"weight %{{customdata[1]:{NUM_FMT}}}<extra></extra>",
        )
    ]
    legend = [(BLUE, "", "responsive row"), (VERMILLION, "", f"saturated (max > {threshold:g})")]
    if zero.any():
        legend.append((VERMILLION, "x", "exactly 0 (underflow)"))
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
    layout["shapes"] = [_hline(1e-3)]
    # the line's label in the right margin, clear of the last bar
    layout["annotations"] = [_label(1.0, -3, "10⁻³", xanchor="left", yanchor="middle")]
    layout["margin"] = dict(l=10, r=48, t=50, b=10)
    _legend_below(layout, -0.2)
    med = float(np.median(nrm))
    below = float(np.mean(nrm < 1e-3))
    return Chart(
        _figure(data, layout),
        f"Median row: **{med:.3g}**; rows below 1e-3: **{below:.0%}**. "
        f"{_responsive_vs_saturated(nrm, sat)} A row whose largest weight a passes "
        f"{threshold:g} has ‖J‖ ≤ 1 − a² < {1 - threshold**2:.3g} (the norm is at most the "
        "trace Σ αᵢ(1 − αᵢ), which is at most a(1 − a) + (1 − a)), so little gradient reaches "
        "its query and keys. The outlined bar is the row shown on the left.",
    )


def _responsive_vs_saturated(nrm: np.ndarray, sat: np.ndarray) -> str:
    """Both kinds of row in numbers: median norm of the responsive, largest of the saturated."""
    n_sat, n_resp = int(sat.sum()), int((~sat).sum())
    if n_sat == 0:
        return f"No row is saturated: the {n_resp} rows have a median norm of {np.median(nrm):.3g}."
    top = float(nrm[sat].max())
    if n_resp == 0:
        return f"All {n_sat} rows are saturated; the largest norm among them is {top:.3g}."
    resp = float(np.median(nrm[~sat]))
    times = f" ({resp / top:.3g}× less)" if top > 0 else ""
    return (
        f"The {n_resp} responsive rows have a median norm of {resp:.3g}; the {n_sat} saturated "
        f"ones at most {top:.3g}{times}."
    )


# ---------------------------------------------------------------- 6. two keys


def _exact_two_key(x: float) -> float:
    e = math.exp(-abs(x))
    return e / (1 + e) ** 2


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
    lesson_share: tuple[float, int, int] | None = None,
) -> Chart:
    """α(1 − α) against the logit gap, log y, with float32's epsilon and the lesson's points.

    `typical_gap` is the median lead of a row's winner over its runner-up (the
    gap that caps how one-hot the row can be). `lesson_share` = (share, rows, T):
    how many sampled rows of T keys at d_k = 64 unscaled lead by the lesson's
    larger gap or more.
    """
    g, ex, comp = _f64(gaps), _f64(exact), _f64(computed)
    gmax = float(g[-1])
    lx = [p for p in lesson_points if p <= gmax]
    shown_gap = min(typical_gap, gmax)
    off = typical_gap > gmax
    data = [
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
            x=lx,
            y=[_exact_two_key(p) for p in lx],
            mode="markers+text",
            name="the lesson's two points",
            marker=dict(size=12, color=GREEN, symbol="circle", line=dict(color=BLACK, width=1)),
            text=[f"gap {p:g}: {_exact_two_key(p):.2g}" for p in lx],
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
    layout = line_layout(
        "Two keys: the softmax gradient α(1 − α) against the logit gap",
        "logit gap between the two keys",
        "gradient α(1 − α)",
        height=480,
    )
    layout["yaxis"].update(type="log", exponentformat="power", range=[-16, 0.3], dtick=2)
    layout["xaxis"].update(range=[0, gmax])
    shapes = [_hline(FLOAT32_EPS)]
    annotations = [_label(1, math.log10(FLOAT32_EPS), "float32 epsilon ≈ 1.2e-7")]
    if zero_gap is not None:
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
        shapes.append(_vline(zero_gap, color=ORANGE))
        annotations.append(
            _label(
                zero_gap,
                -15.5,
                f"{dtype_name}: exactly 0 from gap {zero_gap:.3g}",
                xref="x",
                xanchor="right",
                color=VERMILLION,
            )
        )
    layout["shapes"] = shapes
    layout["annotations"] = annotations
    _legend_below(layout, -0.2)
    zero_text = (
        f"Computed in {dtype_name}, backpropagation gets exactly 0 from gap "
        f"{zero_gap:.3g} on (shaded): the winner's weight has rounded to 1.0."
        if zero_gap is not None
        else f"In {dtype_name} the computed gradient follows the exact curve over this range."
    )
    return Chart(
        _figure(data, layout),
        f"{_lesson_points_text(lesson_points)} {zero_text} The star is {typical_label}: in the "
        f"median row the winner leads the runner-up by {typical_gap:.3g}, where α(1 − α) = "
        f"{_exact_two_key(typical_gap):.2g}. That lead, not the row's full range, caps how "
        "one-hot a row can be: its winner's weight is at most 1 / (1 + e^(−lead)), however many "
        f"keys there are.{_lesson_share_text(lesson_points, lesson_share)}",
    )


def _lesson_points_text(points: Sequence[float]) -> str:
    """The lesson's two gaps in numbers: their gradients, how far apart, against float32's eps."""
    lo, hi = min(points), max(points)
    glo, ghi = _exact_two_key(lo), _exact_two_key(hi)
    eps = (
        f", the second {FLOAT32_EPS / ghi:,.0f} times smaller than float32's epsilon"
        if ghi < FLOAT32_EPS
        else ""
    )
    return (
        f"The gradient falls like e^(−gap): gap {lo:g} gives {glo:.2g}, gap {hi:g} gives "
        f"{ghi:.2g}, {math.log10(glo / ghi):.1f} orders of magnitude apart{eps}."
    )


def _lesson_share_text(points: Sequence[float], share: tuple[float, int, int] | None) -> str:
    """How common the lesson's large gap really is at d_k = 64 unscaled, from the page's sample."""
    if share is None:
        return ""
    p, n, T = share
    hi = max(points)
    verdict = (
        "the fully saturated extreme, not a typical row"
        if p < 0.05
        else "common, as the lesson says"
    )
    return (
        f" The lesson calls a gap of {hi:g} ordinary at d_k = 64 unscaled; of {n:,} sampled "
        f"rows of {T} keys at that setting, {p:.2%} have a winner that leads by {hi:g} or "
        f"more: {verdict}."
    )


# ---------------------------------------------------------------- the lesson's words


def try_this(c: dict) -> list[tuple[str, str]]:
    """The page's three experiments, each with what it shows at the reader's own settings.

    `c` holds numbers the page computed with attn_core for exactly the settings
    each experiment asks for (everything else as the reader has it): T, the
    d_k = 128 unscaled share of clipped logits (`clip`), rows above the
    threshold (`n_sat`), median Jacobian norm scaled over unscaled (`drop`);
    d_k = 64 scaled at temperature 8: least entropy share and largest weight
    (`ent_min`, `w_max`); d_k = 1024 unscaled in float16: rows with exact zeros
    in their Jacobian (`zero_rows`), exact zeros in row 0's (`zero_cells0`), and
    where float16's two-key gradient becomes exactly 0 (`zero_gap`, or None).
    """
    T = c["T"]
    drop = c["drop"]
    change = (
        "exactly 0"
        if math.isinf(drop)
        else f"{drop:.3g}× smaller than with the scaling"
        if drop >= 1
        else f"{1 / drop:.3g}× larger than with the scaling"
    )
    zeros = (
        f"{c['zero_rows']} of {T} rows get exact zeros in their Jacobian, drawn as blank cells "
        f"(row 0: {c['zero_cells0']} of {T * T} cells)"
        if c["zero_rows"]
        else "no Jacobian entry is exactly 0 at these settings"
    )
    curve = (
        f"the two-key curve hits exactly 0 from a gap of {c['zero_gap']:.3g}: gradients that are "
        "not small but gone"
        if c["zero_gap"] is not None
        else "the two-key curve never reaches exactly 0 on the chart"
    )
    return [
        (
            "Set d_k = 128 and switch the scaling off",
            f"{c['clip']:.0%} of the logits go past the map's ±{LOGIT_CLIP:g} colour range, "
            f"{c['n_sat']} of {T} weight rows collapse to one bright cell (largest weight above "
            f"{c['threshold']:g}), and the median row's Jacobian norm on the Jacobian step is "
            f"{change}.",
        ),
        (
            "Scaling off, d_k = 64, temperature 8",
            "you are back to the scaled picture: dividing by √64 = 8 *is* a temperature. Now "
            "switch scaling on as well: ÷ 64 in total leaves every row close to uniform "
            f"(entropy at least {c['ent_min']:.3f} of log T, largest weight at most "
            f"{c['w_max']:.3f} against 1/T = {1 / T:.3f}).",
        ),
        ("Scaling off, d_k = 1024, precision float16", f"{zeros}, and {curve}."),
    ]


VARIANCE_ARGUMENT = r"""
Take one query q and one key k whose d_k components are independent, with mean 0 and variance 1.
Their dot product is a sum of d_k products, $q \cdot k = \sum_i q_i k_i$.

* Each product has mean 0 (the factors are independent and centred) and variance
  $E[q_i^2]\,E[k_i^2] = 1 \cdot 1 = 1$.
* Variances of independent terms add, so $\mathrm{Var}(q \cdot k) = d_k$ and the standard
  deviation is $\sqrt{d_k}$: about ±8 at d_k = 64 instead of ±1.
* Multiplying by $1/\sqrt{d_k}$ divides the variance by d_k, giving exactly 1 for every head size.

Nothing here is tuned: √d_k is the one factor that keeps the logits at unit variance.
"""


def layernorm_excess(d_k: int) -> float:
    """How much larger Var(q·k) is for LayerNorm-style vectors than d_k: d_k/(d_k − 1) − 1.

    Centred vectors of squared length d_k live in a (d_k − 1)-dimensional
    subspace, so E[(q·k)²] = d_k · d_k / (d_k − 1). (d_k = 1 is left as drawn.)
    """
    return 0.0 if d_k < 2 else 1 / (d_k - 1)


_EXCESS = {d: layernorm_excess(d) for d in (2, 4, 32, 1024)}
IID_CAVEAT = f"""
The derivation assumes independent, unit-variance components. That is exactly true for the
gaussian draw here, and only roughly true inside a network: after a few layers, learned projections
make the components of q and k correlated and their scale drifts, so Var(q·k) is no longer exactly
d_k. Choose **layernorm** under "How q and k are drawn" for one such departure: every vector is
centred and normalised, so its components are tied together (they sum to 0) and Var(q·k) becomes
d_k²/(d_k − 1) — {_EXCESS[2]:.0%} more than d_k at d_k = 2 (the sample here measures a little
less: LayerNorm's small ε shrinks the vectors whose two components nearly agree),
{_EXCESS[4]:.0%} at 4, {_EXCESS[32]:.1%} at 32 and {_EXCESS[1024]:.2%} at 1024. The Spread step
measures it, and its histogram says whether its sample can tell the difference from sampling
noise. So √d_k is a principled way to start the logits at a sane scale, not an exact law for a
trained model.
"""
SATURATED_GRADIENT = r"""
The softmax's Jacobian is $\partial\alpha_i/\partial s_j = \alpha_i(\delta_{ij} - \alpha_j)$,
i.e. $\mathrm{diag}(\alpha) - \alpha\alpha^\top$. Every entry contains a product of a weight with
either another weight or with one minus itself. When one weight is ≈ 1 and the rest ≈ 0, every such
product is ≈ 0 — the matrix is nearly all zeros. The backward pass multiplies the incoming gradient
by this matrix, so almost nothing reaches that row's scores, and through them $W_Q$ and $W_K$: the
row can hardly change which key it attends to. Rows that are still soft keep passing gradient, and
since $W_Q$ and $W_K$ are shared, how much a model suffers depends on how many rows saturate (the
"Two keys" step quotes what the training lab measures).
"""
AT_INIT_TITLE = "At initialisation: what the training lab measures"


def at_init(t: dict) -> str:
    """The story of the start, told with the training lab's own measurements.

    `t` holds what pages/training.py shows for one setting, computed by the same
    attn_core.lessons.training calls: d_k (and `asked`, the d_k this page is set to),
    optimizer, lr, init_std, seed, n_symbols, chance = ln n_symbols; step-0
    shares of rows above `threshold` (sat0_s, sat0_u), the unscaled / scaled
    W_q, W_k gradient norm ratio (`ratio`), the loss at step 0 and at step
    `step` of each run (loss0_s, loss0_u, loss_s, loss_u), the unscaled share of
    saturated rows at `step` (sat_u), the step-0 unscaled share with initial std
    3 (sat0_std3), and the lesson's large gap with its two-key gradient
    (`gap`, `grad`).
    """
    d_k, step, thr, ratio = t["d_k"], t["step"], t["threshold"], t["ratio"]
    where = (
        f"d_k = {d_k}"
        if t["asked"] == d_k
        else f"d_k = {d_k} (the nearest it offers to this page's {t['asked']})"
    )
    opt = "SGD" if t["optimizer"] == "sgd" else "Adam"
    others = "Every row still passes" if t["sat0_u"] == 0 else "The other rows still pass"
    rest = (
        ""
        if t["sat0_u"] == 1
        else f" {others} gradient, and W_q and W_k are shared by every row, so on the "
        f"first batch the gradient reaching them is {ratio:.3g} times the scaled run's"
        + (": larger, not smaller." if ratio > 1 else ".")
    )
    takes_off = t["loss_u"] < min(t["loss0_u"], t["chance"])
    loss = (
        "So the unscaled run does take off: its loss falls"
        if takes_off
        else "The unscaled run's loss goes"
    )
    below = "below" if t["loss_u"] < t["chance"] else "not below"
    pushed = (
        f"By step {step}, {t['sat_u']:.0%} of the unscaled rows are above {thr:g}, up from "
        f"{t['sat0_u']:.0%} at the start: learning itself has pushed rows into saturation, "
        "toward the flat end of the two-key curve above."
        if t["sat_u"] > t["sat0_u"]
        else f"By step {step}, {t['sat_u']:.0%} of the unscaled rows are above {thr:g} "
        f"(at the start: {t['sat0_u']:.0%})."
    )
    return f"""
The logits are this large on the very first forward pass, before any training: the weights
start random and d_k is fixed by the architecture. But a random start saturates only the rows
that happen to get a large lead. In the training lab at {where}, with its other defaults
({opt}, learning rate {t["lr"]:g}, initial std {t["init_std"]:g}, seed {t["seed"]}), the largest
weight starts above {thr:g} in {t["sat0_u"]:.0%} of the unscaled model's attention rows on the
first batch, against {t["sat0_s"]:.0%} with ÷√d_k.{rest}

{loss} from {t["loss0_u"]:.3g} at step 0 to {t["loss_u"]:.3g} at step {step}, {below} guessing
(ln {t["n_symbols"]} ≈ {t["chance"]:.3g}); the scaled run's loss goes from {t["loss0_s"]:.3g} to
{t["loss_s"]:.3g}. {pushed}

The lesson's vanishing gradient and its run that never takes off are the fully saturated limit:
the two-key curve at a gap of {t["gap"]:g} gives {t["grad"]:.2g}. A model starts there only when
every row starts saturated — with an initial std of 3 in the training lab, {t["sat0_std3"]:.0%}
of the unscaled rows start above {thr:g}.
"""


# ---------------------------------------------------------------- check yourself
# Questions and explanations for the page's "predict, then reveal" exercises. Every
# number in them is computed by the page with attn_core and passed in.

INIT_WORDS = {
    "gaussian": "independent N(0, 1) components",
    "layernorm": "LayerNorm-style components (each vector centred and scaled to unit variance)",
}
JACOBIAN_DROPS = (
    "Less than 3× smaller (or even larger)",
    "3× to 30× smaller",
    "30× to 1,000× smaller",
    "More than 1,000× smaller",
)
JACOBIAN_DROP_EDGES = (3.0, 30.0, 1000.0)


def jacobian_drop_label(ratio: float) -> str:
    """The choice among JACOBIAN_DROPS that a scaled / unscaled ratio falls into."""
    return JACOBIAN_DROPS[sum(ratio >= edge for edge in JACOBIAN_DROP_EDGES)]


def sd_question(d_k: int, init: str, seed: int) -> str:
    return (
        f"Draw a query q and a key k with d_k = **{d_k}** and {INIT_WORDS[init]} (seed {seed}). "
        "**Before** any division by √d_k, what is the standard deviation of q·k over many "
        "such pairs?"
    )


def sd_why(d_k: int, init: str, sd: float, n: int) -> str:
    text = (
        f"q·k is a sum of {d_k} products q_i·k_i. Each product has mean 0 and variance 1, and "
        f"the variances of independent terms add up, so Var(q·k) = {d_k} and the spread is "
        f"√{d_k} ≈ {math.sqrt(d_k):.3g}. The usual wrong guesses are 1 (the spread of one "
        f"component) and {d_k} (the variance, not its square root). Measured on {n:,} sampled "
        f"pairs: **{sd:.3g}**. Dividing by √d_k is precisely what brings it back to 1."
    )
    if init == "layernorm":
        var = d_k * d_k / (d_k - 1)
        text += (
            " With LayerNorm-style vectors the components are tied together (they sum to 0), "
            f"which lifts the variance slightly, to d_k²/(d_k − 1) ≈ {var:.4g} (SD "
            f"{math.sqrt(var):.3g})."
        )
    return text


def max_weight_question(d_k: int, T: int, seed: int, dtype: str) -> str:
    return (
        f"Take a sequence of T = {T} random tokens (seed {seed}) with d_k = **{d_k}**, and "
        f"switch the division by √d_k **off** (temperature 1, {dtype}). In a typical row (the "
        "median over the rows), how large is the biggest attention weight?"
    )


def max_weight_why(
    d_k: int,
    T: int,
    gap: float,
    scaled_max: float,
    unscaled_max: float,
    saturated_off: float,
    threshold: float = 0.99,
) -> str:
    """Why the answer is what it is, with this sequence's own numbers (all medians over rows)."""
    ratio = math.exp(min(gap, 700.0))
    softer = (
        ": attention starts spread over more keys, which is where an untrained layer should start"
        if scaled_max < unscaled_max
        else ""
    )
    return (
        f"Unscaled, the logits spread about √{d_k} ≈ {math.sqrt(d_k):.3g} around 0, so the "
        f"winner of a row can lead the runner-up by several units — the median lead among these "
        f"{T} keys is {gap:.3g} — and softmax turns a lead of g into a weight ratio of e^g "
        f"between the two (here about {ratio:.3g} to 1). So on the very first forward pass, "
        f"before any training, the typical row's largest weight is **{unscaled_max:.3g}**, and "
        f"{saturated_off:.0%} of the rows are above {threshold:g}. With ÷√d_k the same tokens "
        f"give a typical largest weight of **{scaled_max:.3g}**{softer}."
    )


def jacobian_question(d_k: int, T: int, seed: int, dtype: str, scaled_norm: float) -> str:
    return (
        f"Same tokens (d_k = {d_k}, T = {T}, seed {seed}, {dtype}). A row's Jacobian norm "
        "measures how much its weights move when its logits move — how much gradient can pass "
        f"through. With ÷√d_k the median row's norm is {scaled_norm:.3g}. Switch the scaling "
        "**off**: how much smaller does the median row's norm get?"
    )


def jacobian_truth(unscaled_norm: float, ratio: float, dtype: str) -> str:
    if unscaled_norm == 0:
        return f"Unscaled, the median row's norm is exactly 0 in {dtype}: the weights rounded."
    if ratio < 1:
        return f"Unscaled, the median row's norm is {unscaled_norm:.3g}, {1 / ratio:.3g}× larger."
    return f"Unscaled, the median row's norm is {unscaled_norm:.3g}, {ratio:.3g}× smaller."


def jacobian_why(saturated_off: float, saturated_on: float, threshold: float = 0.99) -> str:
    return (
        "A row's Jacobian diag(α) − ααᵀ is built from products of a weight with another weight "
        "or with one minus itself. In a nearly one-hot row one factor of every such product is "
        "close to 0, so each entry shrinks roughly like e^(−lead): every extra unit by which "
        "the winner leads costs another factor of e ≈ 2.7 in gradient. Most students expect "
        "a few times smaller; once the median row saturates, the exponential makes it far more. "
        f"In this sequence {saturated_off:.0%} of the unscaled rows are saturated (largest "
        f"weight above {threshold:g}), against {saturated_on:.0%} with scaling. The forward pass "
        "still looks harmless — a weighted average, only a sharp one — but the saturated rows "
        "send almost nothing back to W_Q and W_K: only the rows that are still soft carry the "
        "learning signal. (The training lab measures what that does to a whole model.)"
    )
