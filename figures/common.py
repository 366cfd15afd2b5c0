"""Pictures more than one page draws."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, replace
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


def _nice(x: float) -> float:
    """The smallest of 1, 2 or 5 × 10^k that is at least x (> 0)."""
    e = math.floor(math.log10(x))
    for m in (1, 2, 5, 10):
        if m * 10.0**e >= x * (1 - 1e-9):
            return m * 10.0**e
    return 10.0 ** (e + 1)


WINDOWS = (0.5, 1.0, 2.0, 5.0, 10.0)  # the half-widths a reveal may show, × the answer's size
MOST_BINS = 20  # bins across the widest window


@dataclass(frozen=True)
class NumberBins:
    """How a class's numbers are drawn: bins of `width` centred on truth + i·width for i in
    first … last, the truth in the middle of its own bin (so "got it" is one bar). Answers
    beyond the outer bins are not drawn, only counted (`below`, `above`)."""

    truth: float
    width: float
    first: int
    last: int
    below: int = 0
    above: int = 0

    @property
    def centres(self) -> list[float]:
        return [self.truth + i * self.width for i in range(self.first, self.last + 1)]

    @property
    def span(self) -> tuple[float, float]:
        """The chart's x range: the outer edges of the outer bins."""
        return (
            self.truth + (self.first - 0.5) * self.width,
            self.truth + (self.last + 0.5) * self.width,
        )

    def counts(self, values: list[float]) -> list[int]:
        out = [0] * (self.last - self.first + 1)
        lo, hi = self.span
        for v in values:
            if lo <= v < hi:  # False for nan
                i = round((v - self.truth) / self.width) - self.first
                out[min(max(i, 0), len(out) - 1)] += 1
        return out


def _size(values: list[float], truth: float) -> float:
    """The answer's size: |truth|; for a truth of 0 the answers' middle size, or 1."""
    if truth:
        return abs(truth)
    sizes = sorted(abs(v) for v in values if math.isfinite(v) and v)
    return sizes[len(sizes) // 2] if sizes else 1.0


def number_bins(values: list[float], truth: float) -> NumberBins:
    """Bins that fit the answer's scale: the chart shows the truth ± the narrowest of
    WINDOWS × its size that holds three quarters of the answers (a few far-off answers do
    not squeeze the rest into one bar), cut into about MOST_BINS bins of a round width."""
    size = _size(values, truth)
    finite = [abs(v - truth) for v in values if math.isfinite(v)]
    need = math.ceil(0.75 * len(finite))
    window = next(
        (w * size for w in WINDOWS if sum(d <= w * size for d in finite) >= need),
        WINDOWS[-1] * size,
    )
    width = _nice(2 * window / MOST_BINS)
    half = math.ceil(window / width - 0.5)
    first, last = -half, half
    zero = round(-truth / width)  # the bin of 0: a chart of positive answers stops there
    if truth >= 0 and all(v >= 0 for v in values):
        first = max(first, min(zero, 0))
    elif truth <= 0 and all(v <= 0 for v in values):
        last = min(last, max(zero, 0))
    bins = NumberBins(truth, width, first, last)
    lo, hi = bins.span
    return replace(bins, below=sum(v < lo for v in values), above=sum(v >= hi for v in values))


def class_numbers(values: list[float], truth: float, shown: str) -> Chart:
    """What a class predicted for a number: the guesses' spread over bins that fit the
    answer's scale, and the computed value as a line that shows over any bar."""
    n = len(values)
    bins = number_bins(values, truth)
    centres, counts = bins.centres, bins.counts(values)
    fig = go.Figure(
        go.Bar(
            x=centres, y=counts, width=bins.width * 0.92, marker_color=OKABE_ITO[0],
            hovertemplate="%{x:.3~g}: %{y} answers<extra></extra>", name="answers",
        ),
        layout=line_layout(
            f"What the class predicted ({n} answer{'' if n == 1 else 's'})",
            "predicted value",
            "answers",
            height=320,
        ),
    )  # fmt: skip
    fig.update_xaxes(range=list(bins.span), tickformat=NUM_FMT)
    fig.update_yaxes(**_count_axis(max(counts, default=0)))
    for colour, width, dash in (("white", 7, "solid"), (TRUTH_COLOUR, 3, "dash")):
        fig.add_shape(vline(truth, color=colour, width=width, dash=dash), layer="above")
    left = truth <= (centres[0] + centres[-1]) / 2  # the label reads away from the edge
    fig.add_annotation(
        x=truth, y=1, yref="paper", text=f" computed {shown} ", showarrow=False,
        xanchor="left" if left else "right", yanchor="top", font=dict(color=TRUTH_COLOUR),
        bgcolor="rgba(255,255,255,0.9)", bordercolor=TRUTH_COLOUR, borderwidth=1,
    )  # fmt: skip
    return Chart(fig, _numbers_caption(values, truth, shown, bins))


def _numbers_caption(values: list[float], truth: float, shown: str, bins: NumberBins) -> str:
    n = len(values)
    if not n:
        return f"Nobody answered before the reveal; the dashed line is the computed value, {shown}."
    below = sum(v < truth for v in values)
    text = (
        f"The dashed line is the computed value, {shown}; {below} of {n} guessed lower and "
        f"{n - below} the same or higher."
    )
    out = bins.below + bins.above
    if out:
        lo, hi = bins.span
        text += (
            f" {out} answer{'' if out == 1 else 's'} beyond the chart's {lo:.3g} to {hi:.3g} "
            f"({bins.below} lower, {bins.above} higher) {'is' if out == 1 else 'are'} "
            "counted here but not drawn."
        )
    return text
