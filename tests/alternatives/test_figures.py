"""figures.alternatives: right traces, titles, axis titles and shapes, called directly."""

import numpy as np
import pytest

from attn_core import (
    compare_scorings,
    kernel_smoother_demo,
    loud_key_example,
    scoring_setup,
    weights_vs_contributions,
)
from figures import Chart
from figures import alternatives as fa

LABELS = [str(i) for i in range(1, 9)]


def _titled(chart: Chart) -> dict:
    assert isinstance(chart, Chart)
    layout = chart.fig.layout
    assert layout.title.text
    assert layout.xaxis.title.text and layout.yaxis.title.text
    assert len(chart.caption) > 40
    return layout


@pytest.fixture(scope="module")
def comparison():
    return compare_scorings(scoring_setup(8, seed=0), tau=1.0)


def test_scoring_grids_show_scores_above_weights_one_heatmap_per_row(comparison):
    chart = fa.scoring_grids(comparison.scores, comparison.weights, comparison.mean_entropy, LABELS)
    layout = _titled(chart)
    scores, weights = chart.fig.data
    assert [t.type for t in chart.fig.data] == ["heatmap", "heatmap"]
    # five 8×8 panels side by side, one blank (NaN) column between neighbours
    for t in (scores, weights):
        z = np.asarray(t.z, float)
        assert z.shape == (8, 5 * 9 - 1)
        assert np.isnan(z[:, 8::9]).all() and np.isfinite(np.delete(z, np.s_[8::9], 1)).all()
    # scores: each panel rescaled to its own ±1; the hover keeps the true value
    for i, name in enumerate(comparison.scores):
        panel = np.asarray(scores.z, float)[:, i * 9 : i * 9 + 8]
        raw = comparison.scores[name].numpy()
        np.testing.assert_allclose(panel, raw / np.abs(raw).max(), atol=1e-6)
        assert scores.text[0][i * 9].startswith(f"{name}<br>query 1 · key 1<br>score ")
    assert (scores.zmin, scores.zmax, scores.showscale) == (-1, 1, False)
    # weights: the softmax itself on one 0–1 scale, rows summing to 1 in every panel
    w = np.asarray(weights.z, float)
    assert (weights.zmin, weights.zmax) == (0, 1)
    for i in range(5):
        np.testing.assert_allclose(w[:, i * 9 : i * 9 + 8].sum(1), 1, atol=1e-5)
    assert layout.yaxis.autorange == "reversed" and layout.yaxis2.autorange == "reversed"
    assert scores.yaxis == "y2" and weights.yaxis == "y"
    assert layout.yaxis2.domain[0] > layout.yaxis.domain[1]  # scores above weights
    names = " ".join(a.text for a in layout.annotations)
    for name in ("dot", "scaled dot", "additive", "cosine", "bilinear"):
        assert f"<b>{name}</b><br>range" in names and f"<b>{name}</b><br>H =" in names
    assert "sharpest" in chart.caption


def test_figures_are_light_to_redraw(comparison):
    """Margins wide enough that plotly need not grow them (which lays a figure out twice on
    every redraw), and tick labels allowed to overflow (plotly's check is quadratic)."""
    lk = loud_key_example(1.0)
    d = kernel_smoother_demo(0.5, n=30, n_query=41)
    charts = [
        fa.scoring_grids(comparison.scores, comparison.weights, comparison.mean_entropy, LABELS),
        fa.loud_key_chart(lk.labels, lk.dot_weights, lk.cosine_weights, 1.0),
        fa.memory_chart([128, 2048], [2**22, 2**30], 2**28),
        fa.smoother_chart(d.x, d.y, d.x_query, d.truth, d.fits, 0.5, d.probe, 0.0),
    ]
    for chart in charts:
        layout = chart.fig.layout
        assert layout.margin.l >= 80 and layout.margin.b >= 80, layout.title.text
        axes = [k for k in chart.fig.to_dict()["layout"] if k.startswith(("xaxis", "yaxis"))]
        assert all(layout[k].ticklabeloverflow == "allow" for k in axes)


def test_cosine_entropy_chart_marks_the_slider_and_the_references():
    taus = np.logspace(-2, 1, 11)
    ent = np.linspace(0.1, 2.0, 11)
    chart = fa.cosine_entropy_chart(taus, ent, 1.6, 8, 0.5)
    layout = _titled(chart)
    assert [t.type for t in chart.fig.data] == ["scatter", "scatter"]
    assert list(chart.fig.data[1].x) == [0.5]
    assert layout.xaxis.type == "log"
    assert len(layout.shapes) == 2  # uniform ln T and the scaled dot product


def test_loud_key_chart_groups_dot_and_cosine_bars():
    lk = loud_key_example(1.0)
    chart = fa.loud_key_chart(lk.labels, lk.dot_weights, lk.cosine_weights, 1.0)
    layout = _titled(chart)
    assert [t.type for t in chart.fig.data] == ["bar", "bar"]
    assert layout.barmode == "group"
    assert "**off-angle**" in chart.caption and "**aligned**" in chart.caption


def test_speed_and_memory_charts():
    Ts = [128, 256, 512]
    chart = fa.speed_chart(Ts, [1e-4, 2e-4, 5e-4], [1e-3, 8e-3, 5e-2])
    layout = _titled(chart)
    assert [t.type for t in chart.fig.data] == ["scatter", "scatter"]
    assert layout.xaxis.type == "log" and layout.yaxis.type == "log"
    assert list(chart.fig.data[1].text) == ["×10", "×40", "×100"]
    assert "100× slower" in chart.caption
    mem = fa.memory_chart([128, 2048], [2**22, 2**30], 2**28)
    _titled(mem)
    bar = mem.fig.data[0]
    assert bar.type == "bar" and list(bar.text) == ["4 MiB", "1 GiB"]
    assert bar.marker.color[0] != bar.marker.color[1]  # over the cap is coloured apart
    (label,) = mem.fig.layout.annotations  # on the cap line of the log axis (log10 units)
    assert "page cap 256 MiB" in label.text and label.y == pytest.approx(np.log10(256))


def test_smoother_and_probe_charts():
    d = kernel_smoother_demo(0.5, n=30, n_query=41)
    chart = fa.smoother_chart(d.x, d.y, d.x_query, d.truth, d.fits, 0.5, d.probe, d.max_gap_softmax)
    _titled(chart)
    names = [t.name for t in chart.fig.data]
    assert names[:2] == ["samples (keys x_j, values y_j)", "true curve"]
    assert set(names[2:]) == {"Gaussian kernel", "softmax attention", "linear attention"}
    assert all(len(t.x) == 41 for t in chart.fig.data[1:])
    probe = fa.probe_weights_chart(d.x, d.probe_weights, d.probe, 0.5)
    _titled(probe)
    assert len(probe.fig.data) == 3 and all(len(t.y) == 30 for t in probe.fig.data)


def test_attention_speed_chart_reports_growth():
    chart = fa.attn_speed_chart([256, 512], [1e-3, 4e-3], [1e-3, 2e-3], (2.0, 1.0))
    _titled(chart)
    assert len(chart.fig.data) == 2
    assert "T^2.0" in chart.caption and "T^1.0" in chart.caption


@pytest.mark.parametrize("value_scale,verdict", [(0.02, "the least of all"), (1.0, "Now")])
def test_contributions_chart_says_who_contributes(value_scale, verdict):
    c = weights_vs_contributions(value_scale)
    chart = fa.contributions_chart(c.tokens, c.weights, c.contributions)
    _titled(chart)
    assert [t.type for t in chart.fig.data] == ["bar", "bar"]
    assert list(chart.fig.data[0].x) == c.tokens
    assert verdict in chart.caption
