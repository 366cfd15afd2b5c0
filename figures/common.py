"""Pictures more than one page draws."""

from __future__ import annotations

import html
from typing import Any

import plotly.graph_objects as go

from .parts import GREY
from .style import OKABE_ITO, Chart, heatmap, line_layout, to_numpy


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


def class_choices(choices: list[str], counts: list[int], correct: str) -> Chart:
    """What a class predicted: one bar per choice, the computed answer in its own colour."""
    n = sum(counts)
    colours = [OKABE_ITO[2] if c == correct else GREY for c in choices]
    y = [_wrap(c) for c in choices]
    share = [k / n if n else 0.0 for k in counts]
    fig = go.Figure(
        go.Bar(
            x=counts,
            y=y,
            orientation="h",
            marker_color=colours,
            text=[f"{k} ({s:.0%})" for k, s in zip(counts, share, strict=True)],
            textposition="auto",
            hovertemplate="%{y}<br>%{x} answers<extra></extra>",
        ),
        layout=line_layout(
            f"What the class predicted ({n} answer{'' if n == 1 else 's'})",
            "answers",
            "choice",
            height=120 + 60 * len(choices),
        ),
    )
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(rangemode="tozero", dtick=max(1, (max(counts, default=0) + 4) // 5))
    right = counts[choices.index(correct)] if correct in choices else 0
    caption = (
        f"The green bar is the computed answer: {right} of {n} predicted it."
        if n
        else "Nobody answered before the reveal."
    )
    return Chart(fig, caption)


def class_numbers(values: list[float], truth: float, shown: str) -> Chart:
    """What a class predicted for a number: the guesses' spread and the computed value."""
    n = len(values)
    fig = go.Figure(
        go.Histogram(x=values, nbinsx=min(20, max(5, n)), marker_color=OKABE_ITO[0],
                     hovertemplate="%{x}: %{y} answers<extra></extra>", name="answers"),
        layout=line_layout(
            f"What the class predicted ({n} answer{'' if n == 1 else 's'})",
            "predicted value",
            "answers",
            height=320,
        ),
    )  # fmt: skip
    fig.add_vline(x=truth, line_color=OKABE_ITO[3], line_width=3, line_dash="dash")
    fig.add_annotation(
        x=truth, y=1, yref="paper", text=f"computed {shown}", showarrow=False,
        xanchor="left", yanchor="top", font=dict(color=OKABE_ITO[3]),
    )  # fmt: skip
    below = sum(v < truth for v in values)
    caption = (
        f"The dashed line is the computed value, {shown}; {below} of {n} guessed lower and "
        f"{n - below} the same or higher."
        if n
        else "Nobody answered before the reveal."
    )
    return Chart(fig, caption)
