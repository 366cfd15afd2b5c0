"""Pictures for "Softmax and values": the steps, the hull, shift, stability, temperature, dropout.

Builders take plain lists/arrays/tensors (as attn_core returns them) and give back a
`Chart`; the small number tables come back as {column: [text, …]} for st.table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from .describe import Said, num
from .parts import GREY, fmt, hline
from .style import NUM_FMT, OKABE_ITO, Chart, base_layout, escape, heatmap, line_layout, to_numpy


def clean_label(name: object, i: int) -> str:
    """A token name safe to draw: letters, digits and a little punctuation, ≤ 12 characters.

    Plotly reads a subset of HTML in text, so anything tag-like is dropped.
    """
    if name is None or (isinstance(name, float) and math.isnan(name)):
        name = ""  # a freshly added row has no name yet
    s = re.sub(r"[^\w .'\-]", "", str(name)).strip()[:12]
    return s or f"t{i + 1}"


def token_labels(names: Sequence[object]) -> list[str]:
    """Cleaned, and unique: a repeated name gets #2, #3 so bars and columns stay apart."""
    out: list[str] = []
    for i, n in enumerate(names):
        label = clean_label(n, i)
        base, k = label, 2
        while label in out:
            label, k = f"{base}#{k}", k + 1
        out.append(label)
    return out


def _panels(layout: dict, titles: list[str], x_title: str, y_titles: list[str]) -> dict:
    """Side-by-side panels on one row, written straight into a layout dict.

    make_subplots and attribute-by-attribute updates cost tens of ms per figure;
    one go.Figure(data, layout) call validates everything once.
    """
    n, gap = len(titles), 0.1
    width = (1 - gap * (n - 1)) / n
    notes = []
    for i, (title, y_title) in enumerate(zip(titles, y_titles, strict=True)):
        sfx = "" if i == 0 else str(i + 1)
        x0 = i * (width + gap)
        x_ax = dict(domain=[x0, x0 + width], anchor=f"y{sfx}", title=dict(text=x_title))
        layout[f"xaxis{sfx}"] = x_ax
        layout[f"yaxis{sfx}"] = dict(anchor=f"x{sfx}", title=dict(text=y_title))
        notes.append(
            dict(
                text=title, x=x0 + width / 2, y=1.0, xref="paper", yref="paper",
                xanchor="center", yanchor="bottom", showarrow=False, font=dict(size=14),
            )
        )  # fmt: skip
    layout["annotations"] = notes
    layout["margin"] = dict(l=10, r=10, t=80, b=10)
    return layout


def _colors(n: int) -> list[str]:
    return [OKABE_ITO[i % len(OKABE_ITO)] for i in range(n)]


# ---------------------------------------------------------------- 1. the worked example


def steps_table(names: list[str], steps, *, d_k: int) -> dict[str, list[str]]:
    """Rows = steps, columns = tokens: every intermediate vector, as numbers."""
    softmax = steps.exp is not None
    rows = [("q · k", steps.raw), (f"÷ √{d_k} (score s)", steps.scores)]
    if softmax:
        rows.append(("e^s", steps.exp))
        rows.append(("e^s ÷ Σ e^s (weight)", steps.weights))
    else:
        rows.append(("(q · k) ÷ Σ (q · k) (weight)", steps.weights))
    table = {"step": [r[0] for r in rows] + ["weight × value"]}
    for j, name in enumerate(names):
        table[name] = [fmt(float(r[1][j])) for r in rows]
        c = steps.contributions[j].tolist()
        table[name].append("[" + ", ".join(fmt(x, 3) for x in c) + "]")
    sums = [fmt(float(r[1].sum())) for r in rows]
    sums.append("[" + ", ".join(fmt(x, 3) for x in steps.output.tolist()) + "] = output")
    table["sum"] = sums
    return table


def steps_bars(names: list[str], steps, *, d_k: int) -> Chart:
    """One panel per step, one bar per token, in the token's colour throughout."""
    softmax = steps.exp is not None
    panels = [("1 · q · k", steps.raw), (f"2 · ÷ √{d_k}", steps.scores)]
    if softmax:
        panels += [("3 · e^s", steps.exp), ("4 · ÷ Σ e^s = weights", steps.weights)]
    else:
        panels += [("3 · ÷ Σ (q·k) = weights", steps.weights)]
    colors = _colors(len(names))
    traces = []
    for c, (label, vals) in enumerate(panels):
        y = to_numpy(vals)
        traces.append(
            go.Bar(
                x=names,
                y=y,
                marker_color=colors,
                text=[fmt(float(t), 3) for t in y],
                textposition="outside",
                cliponaxis=False,
                name=label,
                showlegend=False,
                xaxis=f"x{c + 1 if c else ''}",
                yaxis=f"y{c + 1 if c else ''}",
                hovertemplate=f"%{{x}}<br>{label}: %{{y:{NUM_FMT}}}<extra></extra>",
            )
        )
    layout = base_layout("From scores to weights, step by step", "token", "value")
    y_titles = ["value"] + [""] * (len(panels) - 1)
    fig = go.Figure(traces, _panels(layout, [p[0] for p in panels], "token", y_titles))
    if softmax:
        caption = (
            "Dividing by √d_k shrinks every score by the same factor; e^s makes every score "
            "positive and stretches the gaps; dividing by the sum makes the weights add up to 1. "
            "The tallest score always ends as the largest weight."
        )
    else:
        w = to_numpy(steps.weights)
        neg = [
            f"{escape(n, 12)} ({fmt(float(x), 3)})" for n, x in zip(names, w, strict=True) if x < 0
        ]
        if neg:
            caption = (
                "Without e^s a weight is just the raw score divided by the sum of scores, so it "
                f"can be negative: here {', '.join(neg)}; the other weights add up to "
                f"{fmt(float(w[w >= 0].sum()), 3)} to compensate."
            )
        else:
            caption = (
                "Without e^s a weight is just the raw score divided by the sum of scores. None "
                "is negative here, but a score whose sign differs from the sum's would give a "
                "weight below 0."
            )
    return Chart(fig, caption)


def _hull_area(hull: np.ndarray) -> list:
    """The shaded convex hull of the values (none for fewer than three corners)."""
    if len(hull) < 3:
        return []
    closed = np.vstack([hull, hull[:1]])
    corners = ", ".join(f"({num(a)}, {num(b)})" for a, b in hull.tolist())
    return [
        go.Scatter(
            x=closed[:, 0],
            y=closed[:, 1],
            fill="toself",
            fillcolor="rgba(0,114,178,0.12)",
            line=dict(color=OKABE_ITO[0], width=1.5, dash="dot"),
            name="convex hull of the values",
            hoverinfo="skip",
            # in words, each corner once (the outline's closing point repeats the first)
            meta=dict(
                say="points",
                numbers=dict(
                    name="convex hull of the values (shaded), by its corners",
                    n=len(hull),
                    points=corners,
                ),
            ),
        )
    ]


def _point(xy, name: str, **marker) -> go.Scatter:
    """One marked point with its legend entry."""
    return go.Scatter(x=[xy[0]], y=[xy[1]], mode="markers", marker=marker, name=name)


def _hull_traces(names, v, hull, out, mean, other_output, other_label) -> list:
    """The hull, the value vectors, the plain mean, the other output and the output, in
    drawing order (the output's star last, on top)."""
    traces = _hull_area(hull)
    traces.append(
        go.Scatter(
            x=v[:, 0],
            y=v[:, 1],
            mode="markers+text",
            marker=dict(size=15, color=_colors(len(names)), line=dict(color="white", width=1)),
            text=[f"v({n})" for n in names],
            textposition="top center",
            name="value vectors",
            hovertemplate="%{text}: [%{x:.3~g}, %{y:.3~g}]<extra></extra>",
        )
    )
    black = dict(color="black", width=1)
    mean_marker = dict(size=14, symbol="diamond", color=GREY, line=black)
    traces.append(_point(mean, f"plain mean [{mean[0]:.3g}, {mean[1]:.3g}]", **mean_marker))
    if other_output is not None:
        other = dict(size=13, symbol="star-open", color=OKABE_ITO[2], line=dict(width=2))
        traces.append(_point(to_numpy(other_output), other_label, **other))
    star = dict(size=20, symbol="star", color=OKABE_ITO[3], line=black)
    traces.append(_point(out, f"output z = [{out[0]:.3f}, {out[1]:.3f}]", **star))
    return traces


def hull_plot(names: list[str], v, hull, steps, *, other_output=None, other_label="") -> Chart:
    """The 2-D values, their convex hull, the output and the plain mean."""
    out, mean = to_numpy(steps.output), to_numpy(steps.mean)
    traces = _hull_traces(names, to_numpy(v), to_numpy(hull), out, mean, other_output, other_label)
    layout = line_layout(
        "Where the output lands among the values",
        "value component 1",
        "value component 2",
        height=470,
    )
    layout["legend"] = dict(orientation="h", yanchor="top", y=-0.3, x=0.0)
    layout["margin"] = dict(l=10, r=10, t=50, b=10)
    layout["yaxis"].update(scaleanchor="x", scaleratio=1)
    fig = go.Figure(traces, layout)
    if steps.inside_hull:
        verdict = "The output sits inside the hull: a convex mix of the values can never leave it."
    else:
        verdict = (
            "The output has LEFT the hull: some weight is negative, so this is no longer a mix."
        )
    return Chart(
        fig,
        f"{verdict} The grey diamond is the plain average (every weight 1/{len(names)}); "
        "attention pulls the output away from it, toward the values it weighs most.",
    )


# ---------------------------------------------------------------- 2. shift invariance


def shift_table(names, scores, c, w, w_shift) -> dict[str, list[str]]:
    return {
        "token": list(names),
        "score s": [fmt(x) for x in scores.tolist()],
        f"s + {c:g}": [fmt(x) for x in (scores + c).tolist()],
        "softmax(s)": [f"{x:.6f}" for x in w.tolist()],
        f"softmax(s + {c:g})": [f"{x:.6f}" for x in w_shift.tolist()],
        "difference": [f"{x:.1e}" for x in np.abs(np.asarray(w_shift) - np.asarray(w)).tolist()],
    }


def shift_bars(names, scores, c, w, w_shift) -> Chart:
    traces = []
    for col, (before, after) in enumerate([(scores, scores + c), (w, w_shift)]):
        for j, (label, vals, color) in enumerate(
            [("before", before, OKABE_ITO[0]), (f"after adding c = {c:g}", after, OKABE_ITO[1])]
        ):
            traces.append(
                go.Bar(
                    x=names,
                    y=to_numpy(vals),
                    name=f"weights {label}" if col else label,  # the right panel: weights
                    marker_color=color,
                    showlegend=col == 0,
                    legendgroup=str(j),
                    xaxis="x2" if col else "x",
                    yaxis="y2" if col else "y",
                    hovertemplate=f"%{{x}}: %{{y:{NUM_FMT}}}<extra>{label}</extra>",
                )
            )
    layout = line_layout(f"Adding c = {c:g} to every score", "token", "score", barmode="group")
    titles = ["scores: every bar moves by c", "weights: nothing moves"]
    _panels(layout, titles, "token", ["score", "weight"])
    layout["yaxis2"]["range"] = [0, 1]
    layout["legend"]["y"] = 1.12
    fig = go.Figure(traces, layout)
    return Chart(
        fig,
        "Left, the scores all move by c. Right, the orange and blue weight bars stay equal: "
        "e^(s+c) = e^c·e^s, and the common factor e^c cancels in the division.",
    )


# ---------------------------------------------------------------- 3. numerical stability


def stability_table(st_) -> dict[str, list[str]]:
    n = len(st_.scores)
    return {
        "step": [
            "score s (as stored)",
            "e^s",
            "naive: e^s ÷ Σ e^s",
            "e^(s − max s)",
            "stable weight",
        ],
        **{
            f"token {j + 1}": [
                fmt(st_.scores[j], 6),
                fmt(st_.naive_exp[j]),
                fmt(st_.naive[j]),
                fmt(st_.stable_exp[j]),
                fmt(st_.stable[j]),
            ]
            for j in range(n)
        },
    }


def naive_vs_stable(st_) -> Chart:
    n = len(st_.scores)
    x = [f"token {j + 1}" for j in range(n)]
    naive = np.array(st_.naive, dtype=np.float64)
    bar = dict(x=x, textposition="outside", cliponaxis=False)
    traces = [
        go.Bar(
            y=np.where(np.isfinite(naive), naive, 0.0).astype(np.float32),
            name="naive (exp, then divide)",
            marker_color=OKABE_ITO[3],
            text=[fmt(t, 3) for t in st_.naive],
            **bar,
        ),
        go.Bar(
            y=to_numpy(st_.stable),
            name="stable (subtract the max first)",
            marker_color=OKABE_ITO[0],
            text=[fmt(t, 3) for t in st_.stable],
            **bar,
        ),
    ]
    title = f"Naive against stable softmax in {st_.limits.dtype}"
    layout = line_layout(title, "token", "weight", barmode="group")
    nan = "" if np.isfinite(naive).all() else " (NaN: no number, drawn as an empty bar)"
    words = (  # a NaN weight is said as NaN, not as the 0 its empty bar is drawn at
        Said("axes", x="token", y="weight", up="up"),
        _bars_said(traces[0].name + nan, x, st_.naive),
        _bars_said(traces[1].name, x, st_.stable),
    )
    layout["yaxis"]["range"] = [0, 1.12]
    if st_.naive_agrees:
        caption = "Both agree: no exp overflowed or underflowed, so the shortcut happened to work."
    elif st_.naive_ok:
        caption = (
            f"The naive bars are finite but off by up to {st_.naive_error:.2g}: the smaller e^s "
            f"lost their digits in {st_.limits.dtype} (or rounded to 0). The stable version is "
            "untouched."
        )
    else:
        caption = (
            "The naive bars read NaN (or a false 0): e^s overflowed to inf, and inf ÷ inf is NaN — "
            "or every e^s underflowed to 0, and 0 ÷ 0 is NaN. The stable version is untouched."
        )
    return Chart(go.Figure(traces, layout), caption, words=words)


def _bars_said(name: str, labels: Sequence[str], values: Sequence[float]) -> Said:
    """Bars in words (charts.md `bars`), each by its label and value, NaN as NaN."""
    bars = "; ".join(f"{label} {num(v)}" for label, v in zip(labels, values, strict=True))
    return Said("bars", name=name, n=len(labels), bars=bars)


BANDS = "x where e^x is finite and non-zero, one bar per precision from the top"


def exp_range(limits: Sequence, scores: Sequence[float], chosen: str) -> Chart:
    """For each precision, the band of x where e^x is finite and non-zero, and the scores."""
    label = {
        lim.dtype: f"{lim.dtype} ({lim.underflow_at:.1f} … {lim.overflow_at:.1f})" for lim in limits
    }
    traces = [
        go.Bar(
            y=[label[lim.dtype]],
            x=[lim.overflow_at - lim.underflow_at],
            base=[lim.underflow_at],
            orientation="h",
            marker_color=OKABE_ITO[2] if lim.dtype == chosen else "rgba(153,153,153,0.45)",
            showlegend=False,
            hovertemplate=(
                f"{lim.dtype}: e^x finite for x < {lim.overflow_at:.2f}, "
                f"non-zero for x > {lim.underflow_at:.2f}<extra></extra>"
            ),
        )
        for lim in limits
    ]
    traces.append(
        go.Scatter(
            x=list(scores),
            y=[label[chosen]] * len(scores),
            mode="markers",
            marker=dict(size=13, symbol="x-thin-open", color="black", line=dict(width=3)),
            name="the current scores",
        )
    )
    layout = line_layout(
        "Where e^x stays finite, per precision", "score x fed to exp", "precision", height=300
    )
    lo, hi = min(-800.0, min(scores) - 20), max(800.0, max(scores) + 20)
    layout["xaxis"].update(range=[lo, hi], zeroline=True)
    layout["yaxis"].update(categoryorder="array", categoryarray=list(label.values())[::-1])
    narrow = min(limits, key=lambda lim: lim.overflow_at - lim.underflow_at)
    bands = "; ".join(
        f"{lim.dtype} from {num(lim.underflow_at)} to {num(lim.overflow_at)}" for lim in limits
    )
    marks = "; ".join(f"token {j + 1} {num(x)}" for j, x in enumerate(scores))
    words = (  # every band named by its precision, and the crosses, which are the scores
        Said("bars", name=BANDS, n=len(limits), bars=bands),
        Said("values", name=f"the current scores (× marks on the {chosen} band)",
             n=len(scores), items=marks),
    )  # fmt: skip
    return Chart(
        go.Figure(traces, layout),
        "Each band is the range of x where e^x is a finite, non-zero number in that precision, "
        "as torch.exp computes it. The crosses are the scores: outside the band a naive "
        f"softmax breaks, inside it works. {narrow.dtype}'s band is the narrowest: "
        f"{narrow.underflow_at:.2f} to {narrow.overflow_at:.2f}.",
        words=words,
    )


# ---------------------------------------------------------------- 4. temperature


def temperature_bars(names, w_now, w_one, tau: float) -> Chart:
    traces = []
    if tau != 1.0:
        grey = "rgba(153,153,153,0.6)"
        traces.append(go.Bar(x=names, y=to_numpy(w_one), name="τ = 1", marker_color=grey))
    traces.append(
        go.Bar(
            x=names,
            y=to_numpy(w_now),
            name=f"τ = {tau:g}",
            marker_color=OKABE_ITO[4],
            text=[f"{x:.3f}" for x in w_now.tolist()],
            textposition="outside",
            cliponaxis=False,
        )
    )
    title = f"Weights at temperature τ = {tau:g}"
    layout = line_layout(title, "token", "weight", barmode="group")
    layout["legend"] = dict(orientation="h", yanchor="top", y=-0.2, x=0.0)
    layout["yaxis"]["range"] = [0, 1.12]
    return Chart(
        go.Figure(traces, layout),
        "Small τ sharpens the weights toward the largest score; large τ flattens them toward "
        "1/T each. The grey bars are τ = 1 for comparison.",
    )


def entropy_curve(sweep, tau: float, h_now: float) -> Chart:
    traces = [
        go.Scatter(
            x=to_numpy(sweep.temperatures),
            y=to_numpy(sweep.entropy),
            mode="lines",
            name="entropy of the weights",
            line_width=3,
        ),
        go.Scatter(
            x=[tau],
            y=[h_now],
            mode="markers",
            marker=dict(size=14, color=OKABE_ITO[4], line=dict(color="black", width=1)),
            name=f"τ = {tau:g}",
        ),
    ]
    layout = line_layout(
        "Entropy against temperature", "temperature τ (log scale)", "entropy (nats)"
    )
    hot, cold = sweep.hot_limit, sweep.cold_limit
    layout["shapes"] = [hline(hot, dash="dash"), hline(cold, dash="dot")]
    layout["annotations"] = [
        dict(text=f"uniform (τ → ∞): ln T = {hot:.3f}", x=0, y=hot, xref="paper",
             xanchor="left", yanchor="bottom", showarrow=False),
        dict(text=f"argmax (τ → 0): {cold:.3f}", x=1, y=cold, xref="paper",
             xanchor="right", yanchor="top", showarrow=False),
    ]  # fmt: skip
    layout["showlegend"] = False
    layout["xaxis"]["type"] = "log"
    layout["yaxis"]["range"] = [-0.05, hot * 1.15 + 0.05]
    return Chart(
        go.Figure(traces, layout),
        "Entropy measures how spread the weights are: 0 means all weight on one token, ln T "
        "means an even split. It climbs smoothly from the argmax limit to the uniform one.",
    )


# ---------------------------------------------------------------- 5. dropout


def dropout_heatmap(sample, training: bool, p: float) -> Chart:
    z = to_numpy(sample)
    mode = f"training, p = {p:g}" if training else "eval"
    fig = heatmap(
        z,
        title=f"One draw of the weights after dropout ({mode})",
        x_title="key",
        y_title="query",
        zmin=0.0,
        zmax=max(1.0, float(z.max())),
        colorbar_title="weight",
        height=400,
    )
    if training and p > 0:
        caption = (
            f"Zeros are dropped entries; every survivor is multiplied by 1/(1 − {p:g}) = "
            f"{1 / (1 - p):.3f}, so a row no longer sums to 1 in any one draw."
        )
    else:
        caption = "No dropout is applied: these are the softmax weights, and every row sums to 1."
    return Chart(fig, caption)


def row_sums_chart(stats, training: bool) -> Chart:
    x = list(range(stats.sample.shape[0]))
    traces = [
        go.Bar(
            x=x,
            y=to_numpy(stats.sample_row_sums),
            name="this draw",
            marker_color=OKABE_ITO[5],
            text=[f"{s:.3f}" for s in stats.sample_row_sums.tolist()],
            textposition="inside",
            insidetextanchor="start",
            textangle=-90,
        ),
        go.Scatter(
            x=x,
            y=to_numpy(stats.mean_row_sums),
            mode="markers",
            marker=dict(size=13, symbol="diamond", color=OKABE_ITO[3]),
            name=f"mean over {stats.n_samples} draws",
        ),
    ]
    layout = line_layout("Row sums", "query row", "sum of the row's weights")
    layout["shapes"] = [hline(1.0, dash="dash", color="black")]
    layout["yaxis"]["range"] = [0, max(1.3, float(stats.sample_row_sums.max()) * 1.15)]
    layout["xaxis"]["dtick"] = 1
    if training:
        caption = (
            "Single draws scatter around 1; the diamonds (the average over many draws) sit on the "
            "dashed line: dropout keeps the sum right only on average."
        )
    else:
        caption = "In eval mode dropout is off: every bar reaches exactly the dashed line at 1."
    return Chart(go.Figure(traces, layout), caption)


# ---------------------------------------------------------------- numbers in sentences


def fmt_list(xs, digits: int = 3) -> str:
    """[0, 0, NaN]: a short list of numbers for a sentence."""
    return "[" + ", ".join(fmt(float(x), digits) for x in xs) + "]"
