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


def test_scores_and_weights_grids_have_one_heatmap_per_scoring(comparison):
    scores = fa.scores_grid(comparison.scores, LABELS)
    weights = fa.weights_grid(comparison.weights, comparison.mean_entropy, LABELS)
    for chart in (scores, weights):
        layout = _titled(chart)
        assert [t.type for t in chart.fig.data] == ["heatmap"] * 5
        assert all(np.asarray(t.z).shape == (8, 8) for t in chart.fig.data)
        assert layout.yaxis.autorange == "reversed"
        names = " ".join(a.text for a in layout.annotations)
        for name in ("dot", "scaled dot", "additive", "cosine", "bilinear"):
            assert f"<b>{name}</b>" in names
    # scores: diverging and centred per panel; weights: one shared 0–1 colour axis
    for t in scores.fig.data:
        assert t.zmin == -t.zmax
    assert weights.fig.layout.coloraxis.cmin == 0 and weights.fig.layout.coloraxis.cmax == 1
    assert "sharpest" in weights.caption


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
