"""figures.masks: trace types, titles, axis titles, shapes, the overlays that carry the lesson."""

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attn_core import (
    DTYPES,
    apply_fill,
    broadcast_lab,
    build_mask,
    causal_cost,
    custom_mask,
    demo_qkv,
    fill_outcomes,
)
from figures import Chart
from figures import masks as fm


def titled(chart: Chart) -> go.Figure:
    assert isinstance(chart, Chart) and chart.caption
    fig = chart.fig
    assert fig.layout.title.text
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    return fig


@pytest.mark.parametrize("T", [3, 20])
def test_mask_chart_is_a_two_colour_map_and_marks_empty_rows(T):
    keep = custom_mask(T, [(0, 0)]).numpy()  # row 0 empty
    fig = titled(fm.mask_chart(keep, title="Mask", caption="c"))
    (hm,) = fig.data
    assert hm.type == "heatmap" and np.asarray(hm.z).shape == (T, T)
    assert set(np.unique(np.asarray(hm.z))) <= {0.0, 1.0}
    assert "∅" in fig.layout.yaxis.ticktext[0]


def test_clickable_mask_has_one_transparent_point_per_cell():
    fig = fm.mask_chart(np.ones((5, 5), bool), title="Mask", caption="c", clickable=True).fig
    _, pts = fig.data
    assert pts.type == "scatter" and len(pts.x) == len(pts.y) == 25
    assert (pts.x[7], pts.y[7]) == (2, 1)  # row-major: point 7 is query 1, key 2
    assert "0,0,0,0" in pts.marker.color.replace(" ", "")
    assert fig.layout.dragmode is False


def test_logits_chart_greys_forbidden_cells_and_labels_minus_inf():
    q, k, v = demo_qkv(1, 4, 4)
    keep = build_mask("causal", 4)
    r = apply_fill(q, k, v, keep, "-inf", torch.float32)
    fig = titled(fm.logits_chart(r.logits[0], keep[0], stored_fill=r.stored, dtype="float32"))
    main, grey = fig.data
    assert np.isnan(np.asarray(main.z, dtype=float)[0, 1])  # forbidden: not on the colour scale
    assert grey.customdata[0][1] == "−inf" and grey.text[0][1] == "−inf"
    assert (
        "6 forbidden cells are −inf"
        in fm.logits_chart(r.logits[0], keep[0], stored_fill=r.stored, dtype="float32").caption
    )


def test_logits_chart_keeps_float64_extremes_readable():
    z = np.array([[0.0, torch.finfo(torch.float64).min]])
    fig = fm.logits_chart(z, np.array([[True, False]]), stored_fill=z[0, 1], dtype="float64").fig
    assert fig.data[1].customdata[0][1] == "−1.8e+308"


def test_plain_weights_show_nan_cells_and_forbidden_marks():
    q, k, v = demo_qkv(1, 4, 4)
    keep = custom_mask(4, [(0, 0)])[None]
    r = apply_fill(q, k, v, keep, "-inf", torch.float32)
    chart = fm.plain_weights_chart(r.weights[0].numpy(), keep[0].numpy(), nan_rows=1)
    fig = titled(chart)
    assert "1 NaN row" in fig.layout.title.text
    types = [t.type for t in fig.data]
    assert types == ["heatmap", "heatmap", "scatter"]  # weights, NaN overlay, × marks
    assert list(fig.data[1].text[0]) == ["NaN"] * 4
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1  # the shared 0–1 weight scale
    safe = titled(fm.safe_weights_chart(r.safe_weights[0].numpy(), keep[0].numpy()))
    assert [t.type for t in safe.data] == ["heatmap", "scatter"]  # no NaN anywhere


def test_fill_grid_is_fills_by_dtypes_with_a_frame_on_the_choice():
    q, k, v = demo_qkv(1, 4, 4)
    outs = fill_outcomes(q, k, v, custom_mask(4, [(0, 0)])[None], DTYPES)
    fig = titled(fm.fill_grid(outs, fill="-1e9", dtype="float16"))
    hm, *key = fig.data  # the grid, then its colour key (a legend entry per verdict)
    assert np.asarray(hm.z).shape == (4, 4)
    assert [t.name for t in key] == list(fm.VERDICT_NAMES.values())
    assert [t.marker.color for t in key] == list(fm.VERDICT_COLORS.values())
    assert list(fig.layout.xaxis.ticktext) == list(DTYPES)
    (frame,) = fig.layout.shapes
    assert (frame.x0, frame.y0) == (0.5, 0.5)  # float16 column, -1e9 row
    assert "NaN" in hm.text[1][1]


def test_broadcast_pictures():
    lab = broadcast_lab(3, 3, 6, [2, 6, 4])
    chart = fm.broadcast_masks(
        lab.right_keep[0].numpy(),
        lab.wrong_keep[0].numpy(),
        example=0,
        row_source=lab.row_source,
        lengths=lab.lengths,
    )
    fig = chart.fig
    assert fig.layout.title.text and len(fig.data) == 2
    codes = np.asarray(fig.data[1].z)
    assert codes.shape == (3, 6)
    assert (codes[1] == 2).any()  # row 1 borrows example 1's longer padding: reads padding
    assert fig.layout.yaxis2.ticktext[1].startswith("1 ← ex 1")
    diff = titled(fm.broadcast_diff(lab.diff.numpy()))
    assert np.asarray(diff.data[0].z).shape == (3, 3)


def test_cross_chart_and_cost_chart():
    w = np.full((2, 5), 0.25, np.float32)
    keep = np.array([[1, 1, 1, 1, 0]] * 2, bool)
    w[:, 4] = 0
    fig = titled(fm.cross_chart(w, keep, example=0, length=4, T_q=2, T_k=5))
    assert fig.layout.xaxis.title.text == "encoder key"
    assert fig.data[-1].type == "scatter" and len(fig.data[-1].x) == 2  # two padded cells
    cost = causal_cost(32, h=1, d_k=8, repeats=1)
    bar = titled(fm.causal_cost_chart(cost))
    assert bar.data[0].type == "bar" and len(bar.data[0].y) == 2


@pytest.mark.parametrize(
    "x,text", [(float("-inf"), "−inf"), (-1e9, "−1e+09"), (float("nan"), "NaN"), (0.5, "0.5")]
)
def test_fmt_value(x, text):
    assert fm.fmt_value(x) == text
