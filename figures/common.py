"""Pictures more than one page draws."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import plotly.graph_objects as go

from .parts import GREY, vline
from .style import NUM_FMT, OKABE_ITO, Chart, heatmap, line_layout, to_numpy


def weights_heatmap(
    w: Any,
    labels: list[str],
    *,
    title: str = "Attention weights",
    caption: str = "Each row is one query's weights over the keys; every row sums to 1.",
    key_labels: list[str] | None = None,
    height: int = 380,
) -> Chart:
    """(T_q, T_k) weights on a fixed 0–1 colour axis, so pages compare like with like."""
    fig = heatmap(
        to_numpy(w),
        title=title,
        x_title="key (attended to)",
        y_title="query (attending)",
        x_labels=key_labels if key_labels is not None else labels,
        y_labels=labels,
        zmin=0.0,
        zmax=1.0,
        colorbar_title="weight",
        height=height,
    )
    return Chart(fig, caption)


def _wrap(text: str, width: int = 28) -> str:
    """A choice's words over several lines (plotly breaks a label at <br> only)."""
    words, lines = html.escape(text).split(), [""]
    for w in words:
        if lines[-1] and len(lines[-1]) + len(w) > width:
            lines.append("")
        lines[-1] = f"{lines[-1]} {w}".strip()
    return "<br>".join(lines)


MARK = "✓ computed answer"  # the computed answer's own words on a reveal chart
TRUTH_COLOUR = OKABE_ITO[3]  # vermilion: the computed value's line, over the blue bars


def _count_axis(top: int, room: float = 1.3) -> dict:
    """A count axis from 0 in whole numbers, with room above the fullest bar."""
    top = max(top, 1)
    return dict(range=[0, top * room], dtick=max(1, math.ceil(top / 5)), tickformat="d")


def class_choices(choices: list[str], counts: list[int], correct: str) -> Chart:
    """What a class predicted: one bar per choice. The computed answer is marked in words
    beside its bar and on its label (not by colour alone), also when nobody chose it."""
    n = sum(counts)
    right = [c == correct for c in choices]
    share = [k / n if n else 0.0 for k in counts]
    text = [
        f"{k} ({s:.0%})" + (f"  {MARK}" if r else "")
        for k, s, r in zip(counts, share, right, strict=True)
    ]
    fig = go.Figure(
        go.Bar(
            x=counts,
            y=[
                f"<b>✓ {_wrap(c)}</b>" if r else _wrap(c)
                for c, r in zip(choices, right, strict=True)
            ],
            orientation="h",
            marker=dict(
                color=[OKABE_ITO[2] if r else GREY for r in right],
                pattern=dict(shape=["/" if r else "" for r in right], fgcolor="white"),
            ),
            text=text,
            textposition="outside",  # on the white page, whatever the bar's colour
            cliponaxis=False,
            hovertemplate="%{y}<br>%{x} answers<extra></extra>",
            name="answers",
        ),
        layout=line_layout(
            f"What the class predicted ({n} answer{'' if n == 1 else 's'})",
            "answers",
            "choice",
            height=120 + 60 * len(choices),
        ),
    )
    fig.update_yaxes(autorange="reversed")
    top = max(counts, default=0)
    fig.update_xaxes(**_count_axis(top, room=1.8))  # room for the words beside the bars
    got = sum(k for k, r in zip(counts, right, strict=True) if r)
    caption = (
        f"The bar marked “{MARK}” is what the app computed: {got} of {n} predicted it."
        if n
        else f"Nobody answered before the reveal; the computed answer is marked “{MARK}”."
    )
    return Chart(fig, caption)


def _key(v: float) -> float:
    """An answer as the chart groups it: to 3 significant digits (3.14 and 3.1415 are one
    answer's stem; the caption says so)."""
    return float(f"{v:.3g}")


@dataclass(frozen=True)
class NumberAxis:
    """How a class's numbers lie on the x axis: "linear", "log" (all positive, spread over
    more than SPREAD times), or "rank" (signed and spread that far: each distinct answer at
    its place in order, spacing not to scale). Every answer is drawn on any of them."""

    kind: str
    values: tuple[float, ...]  # the distinct answers (grouped by _key), in order
    counts: tuple[int, ...]

    def x(self, v: float) -> float:
        """Where value `v` sits (a rank axis puts a value between its neighbours)."""
        if self.kind != "rank":
            return v
        below = sum(u < v for u in self.values)
        if v in self.values:
            return float(self.values.index(v))
        return below - 0.5


SPREAD = 30.0  # answers spread over more than this factor leave a linear axis


def number_axis(values: list[float], truth: float) -> NumberAxis:
    finite = [_key(v) for v in values if math.isfinite(v)]
    grouped = sorted(set(finite))
    counts = tuple(finite.count(v) for v in grouped)
    every = [*grouped, truth]
    mags = [abs(v) for v in every if v]
    wide = bool(mags) and max(mags) / min(mags) > SPREAD and len(set(every)) > 2
    if not wide:
        kind = "linear"
    elif all(v > 0 for v in every):
        kind = "log"
    else:
        kind = "rank"
    return NumberAxis(kind, tuple(grouped), counts)


def class_numbers(values: list[float], truth: float, shown: str) -> Chart:
    """What a class predicted for a number: one stem per answer given (its height, how many
    gave it), every answer drawn on an axis that fits them (linear; log when they spread
    over orders of magnitude; in order when they also change sign), and the computed value
    as a dashed line behind the stems, marked in words; a stem on it is a star."""
    n = sum(math.isfinite(v) for v in values)
    axis = number_axis(values, truth)
    xs = [axis.x(v) for v in axis.values]
    hit = [v == _key(truth) for v in axis.values]
    stems_x, stems_y = [], []
    for x, k in zip(xs, axis.counts, strict=True):
        stems_x += [x, x, None]
        stems_y += [0, k, None]
    fig = go.Figure(
        [
            go.Scatter(
                x=stems_x, y=stems_y, mode="lines", line=dict(color=OKABE_ITO[0], width=3),
                hoverinfo="skip", showlegend=False, name="stems",
            ),
            go.Scatter(
                x=xs, y=list(axis.counts), mode="markers", name="answers",
                marker=dict(
                    size=[16 if h else 11 for h in hit],
                    symbol=["star" if h else "circle" for h in hit],
                    color=[TRUTH_COLOUR if h else OKABE_ITO[0] for h in hit],
                    line=dict(color="white", width=1),
                ),
                customdata=[f"{v:.3g}" for v in axis.values],
                hovertemplate="%{customdata}: %{y} answers<extra></extra>",
            ),
        ],
        layout=line_layout(
            f"What the class predicted ({n} answer{'' if n == 1 else 's'})",
            "predicted value" + (" (in order, not to scale)" if axis.kind == "rank" else ""),
            "answers",
            height=320,
        ),
    )  # fmt: skip
    fig.update_yaxes(**_count_axis(max(axis.counts, default=0)))
    tx = axis.x(_key(truth))
    _x_axis(fig, axis, tx)
    fig.add_shape(vline(tx, color=TRUTH_COLOUR, width=2, dash="dash"), layer="below")
    left = not xs or tx <= (min(xs) + max(xs)) / 2  # the label reads away from the edge
    fig.add_annotation(
        x=math.log10(tx) if axis.kind == "log" else tx, y=1, yref="paper",
        text=f" computed {shown} ", showarrow=False, xanchor="left" if left else "right",
        yanchor="top", font=dict(color=TRUTH_COLOUR), bgcolor="rgba(255,255,255,0.9)",
        bordercolor=TRUTH_COLOUR, borderwidth=1,
    )  # fmt: skip
    # Read and downloaded as what it means: how many gave each value (the drawn traces are
    # stems with gaps, which a reader of arrays would take for a curve).
    table = go.Figure(
        go.Bar(x=[f"{v:.3g}" for v in axis.values], y=list(axis.counts), name="answers"),
        layout=line_layout(fig.layout.title.text, "predicted value", "answers"),
    )
    return Chart(fig, _numbers_caption(values, truth, shown, axis), table=table)


def _x_axis(fig: go.Figure, axis: NumberAxis, tx: float) -> None:
    xs = [axis.x(v) for v in axis.values] + [tx]
    lo, hi = min(xs), max(xs)
    if axis.kind == "log":
        pad = max(0.1, 0.05 * (math.log10(hi) - math.log10(lo)))
        fig.update_xaxes(type="log", range=[math.log10(lo) - pad, math.log10(hi) + pad])
    elif axis.kind == "rank":
        ticks = list(range(len(axis.values)))
        fig.update_xaxes(range=[lo - 0.7, hi + 0.7], tickmode="array", tickvals=ticks,
                         ticktext=[f"{v:.3g}" for v in axis.values])  # fmt: skip
    else:
        pad = 0.08 * (hi - lo) if hi > lo else max(abs(hi), 1.0) * 0.5
        if lo >= 0:  # positive answers: the axis starts at 0, not below it
            fig.update_xaxes(range=[max(0.0, lo - pad) if lo - pad > 0 else -pad * 0.2, hi + pad])
        else:
            fig.update_xaxes(range=[lo - pad, hi + pad])
        fig.update_xaxes(tickformat=NUM_FMT)


def _numbers_caption(values: list[float], truth: float, shown: str, axis: NumberAxis) -> str:
    finite = [v for v in values if math.isfinite(v)]
    n = len(finite)
    if not n:
        return f"Nobody answered before the reveal; the dashed line is the computed value, {shown}."
    got = sum(_key(v) == _key(truth) for v in finite)
    below = sum(_key(v) < _key(truth) for v in finite)
    text = (
        f"Each stem is one value the class gave (to 3 significant digits), its height how "
        f"many gave it. The dashed line is the computed value, {shown}: {got} of {n} gave it "
        f"(the star), {below} guessed lower and {n - got - below} higher."
    )
    if axis.kind == "log":
        text += " The axis is logarithmic: the answers spread over orders of magnitude."
    elif axis.kind == "rank":
        text += (" The answers spread over orders of magnitude on both sides of 0, so each "
                 "stands at its place in order; the spacing is not to scale.")  # fmt: skip
    return text
