"""Pictures more than one page draws."""

from __future__ import annotations

from typing import Any

from .style import Chart, heatmap, to_numpy


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
