"""figures.scaling builders, called directly: traces, titles, axes, shapes, captions."""

import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

import figures.scaling as fs
from attn_core import (
    logit_distribution,
    row_jacobian,
    saturation_sweep,
    scaling_sample,
    sweep_raw_scores,
    two_key_gradient,
    two_key_gradient_in,
    variance_sweep,
)
from attn_core.lessons.scaling import NOISE_SE, iid_check, variance_rel_se
from figures import Chart
from ui.content import Words

W = Words("scaling")


def _check(chart: Chart, *types: str) -> dict:
    assert isinstance(chart, Chart)
    fig = chart.fig
    go.Figure(fig.to_dict())  # built unvalidated (parts.fast_figure): every property checked here
    assert fig.layout.title.text, "every figure needs a title"
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text, "axis titles"
    assert len(chart.caption) > 40, "a caption that says what to notice"
    assert [t.type for t in fig.data[: len(types)]] == list(types)
    return fig


@pytest.fixture(scope="module")
def seq():
    return scaling_sample(10, 64, scaled=False, seed=0)


@pytest.fixture(scope="module")
def sweep():
    return sweep_raw_scores(d_ks=(1, 4, 16, 64), n_seq=4, seed=0)


def test_three_stage_maps_and_row_summary(seq):
    raw = _check(fs.raw_scores_map(seq.raw_scores, 64), "heatmap")
    assert np.asarray(raw.data[0].z).shape == (10, 10)
    assert raw.layout.yaxis.autorange == "reversed"  # row 0 at the top, like a matrix
    logits = _check(fs.logits_map(seq.logits, scaled=False, temperature=2), "heatmap")
    assert (logits.data[0].zmin, logits.data[0].zmax) == (-fs.LOGIT_CLIP, fs.LOGIT_CLIP)
    assert np.asarray(logits.data[0].z).dtype == np.float32
    weights = _check(fs.weights_map(seq.weights), "heatmap")
    assert (weights.data[0].zmin, weights.data[0].zmax) == (0, 1)
    rows = fs.row_summary(seq.max_weight, seq.entropy_frac)
    fig = _check(rows, "scatter", "scatter")
    assert len(fig.data[0].x) == 10
    saturated = int((seq.max_weight > 0.99).sum())
    assert rows.caption.startswith(f"{saturated} of 10 rows")


def test_histogram_keeps_the_measured_logits_readable(sweep):
    h = logit_distribution(sweep[64], 1.0)  # unscaled: N(0, 1) is a tall narrow spike
    chart = fs.logit_histogram(
        h.edges,
        h.density,
        d_k=64,
        measured_var=h.variance,
        theory_var=64,
        n=h.n,
        label="x",
    )
    fig = _check(chart, "bar", "scatter", "scatter")
    assert {t.name for t in fig.data[1:]} == {
        "N(0, 64): the unscaled theory",
        "N(0, 1): what softmax wants",
    }
    assert fig.layout.yaxis.range[1] < 0.4  # the N(0, 1) peak runs off the top ...
    assert "far above" in fig.layout.annotations[0].text  # ... and says so
    assert "theory **64**" in chart.caption
    scaled = logit_distribution(sweep[64], 1 / 8)
    fig = fs.logit_histogram(
        scaled.edges, scaled.density, d_k=64, measured_var=scaled.variance, theory_var=1,
        n=scaled.n, label="x",
    ).fig  # fmt: skip
    assert fig.layout.yaxis.range is None


def test_variance_chart_is_log_log_with_the_setting_marked(sweep):
    v = variance_sweep(sweep)
    chart = fs.variance_vs_dk(
        v.d_ks, v.unscaled, v.scaled, d_k=16, current_var=16.0, label="d_k = 16",
        slopes=(v.slope_unscaled, v.slope_scaled), init="layernorm",
    )  # fmt: skip
    fig = _check(chart, "scatter", "scatter", "scatter", "scatter", "scatter")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    star = fig.data[-1]
    assert star.name == "your setting" and list(star.x) == [16]
    assert "LayerNorm" in chart.caption


def test_histogram_says_when_the_iid_prediction_misses():
    raw = sweep_raw_scores(d_ks=(4,), n_seq=4, init="layernorm", seed=0)[4]
    h = logit_distribution(raw, 0.5)
    miss = iid_check(h.variance, variance_rel_se(raw))  # measured / predicted (1.0)
    assert miss.dependent  # beyond the sampling noise: the page words it so
    verdict = W("spread.iid.beyond", off=miss.off, noise=miss.noise, k=NOISE_SE, n_seq=4)
    chart = fs.logit_histogram(
        h.edges, h.density, d_k=4, measured_var=h.variance, theory_var=1.0, n=h.n, label="x",
        verdict=verdict,
    )  # fmt: skip
    assert "off the iid prediction, beyond its sampling noise" in chart.caption
    assert "not independent" in chart.caption
    assert chart.caption.endswith(f"the components of q and k are independent. {verdict}")
    # the same miss inside a wider sampling error is not evidence of anything
    loose = iid_check(h.variance, rel_se=(h.variance - 1) / 2)
    assert not loose.dependent
    text = W("spread.iid.within", off=loose.off, noise=loose.noise, k=NOISE_SE, n_seq=4)
    assert "within sampling noise" in text and "not independent" not in text


def test_saturation_and_entropy_charts(sweep):
    s = saturation_sweep(sweep, 8)
    common = dict(d_k=64, scaled_now=True, T=8)
    sat = fs.saturation_vs_dk(
        s.d_ks, s.saturated_unscaled, s.saturated_scaled, n_rows=s.n_rows, threshold=0.99,
        **common,
    )  # fmt: skip
    ent = fs.entropy_vs_dk(s.d_ks, s.entropy_unscaled, s.entropy_scaled, **common)
    for chart in (sat, ent):
        fig = _check(chart, "scatter", "scatter", "scatter")
        assert fig.layout.xaxis.type == "log"
        assert tuple(fig.layout.yaxis.range) == (-0.03, 1.03)
        star = fig.data[2]
        assert list(star.x) == [64] and star.y[0] == pytest.approx(float(fig.data[1].y[-1]))


def test_jacobian_map_uses_a_log_scale_and_leaves_exact_zeros_blank():
    w = torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.25, 0.25]], dtype=torch.float16)
    chart = fs.jacobian_map(row_jacobian(w, 0), row=0, dtype_name="float16")
    fig = _check(chart, "heatmap")
    z = np.asarray(fig.data[0].z)
    assert np.isnan(z).all()  # a one-hot row: every entry exactly 0, drawn blank ...
    assert "9 grey cells are exactly 0" in chart.caption  # ... and explained
    chart = fs.jacobian_map(row_jacobian(w.double(), 1), row=1, dtype_name="float64")
    z = np.asarray(chart.fig.data[0].z)
    assert np.isfinite(z).all() and z.max() <= 0 and z.min() >= fs.J_FLOOR
    assert chart.fig.data[0].customdata[0][0] == pytest.approx(0.25)  # hover shows |J| itself
    assert "grey cells" not in chart.caption


def test_jacobian_norms_chart_marks_zero_and_saturated_rows():
    norms = np.array([0.4, 2e-9, 0.0])
    max_w = np.array([0.5, 0.999, 1.0])
    chart = fs.jacobian_norms_chart(norms, max_w, row=1)
    fig = _check(chart, "bar")
    bar = fig.data[0]
    assert list(bar.marker.pattern.shape) == ["", "", "x"]  # hatched: exactly 0
    assert all(y > 0 for y in bar.y)  # a zero is drawn at the floor of the log axis
    assert "exactly 0 (underflow)" in [t.name for t in fig.data[1:]]
    assert list(bar.marker.color) == [fs.BLUE, fs.VERMILION, fs.VERMILION]
    assert fig.layout.yaxis.type == "log"
    assert "Median row: **2e-09**" in chart.caption and "**67%**" in chart.caption


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_two_key_curve(dtype):
    gaps = torch.linspace(0, 30, 601, dtype=torch.float64)
    computed = two_key_gradient_in(gaps, dtype)
    zero = 8.35 if dtype == torch.float16 else None
    chart = fs.two_key_curve(
        gaps, two_key_gradient(gaps), computed, dtype_name=str(dtype), zero_gap=zero,
        typical_gap=45.0, typical_label="your gap",
    )  # fmt: skip
    fig = _check(chart, "scatter", "scatter", "scatter", "scatter")
    assert fig.layout.yaxis.type == "log"
    eps = fig.layout.shapes[0]
    assert eps.y0 == pytest.approx(1.19e-7, rel=0.01)
    assert "epsilon" in fig.layout.annotations[0].text
    assert fig.layout.annotations[0].y == pytest.approx(math.log10(1.19e-7), abs=0.01)
    lesson = fig.data[2]
    assert list(lesson.x) == [3.0, 24.0] and lesson.text[0] == "gap 3: 0.045"
    star = fig.data[3]
    assert list(star.x) == [30.0] and "off the chart" in star.text[0]  # clipped, and said so
    if zero is None:
        assert len(fig.layout.shapes) == 1 and "follows the exact curve" in chart.caption
    else:
        assert any("exactly 0 from gap 8.35" in a.text for a in fig.layout.annotations)
        assert np.isnan(np.asarray(fig.data[1].y, dtype=float)[gaps.numpy() > 9]).all()


def test_lesson_texts_are_present():
    for key in ("explain.variance", "explain.saturated"):
        assert len(W(key).split()) > 40
    excess = {f"excess{d}": 0.5 for d in (2, 4, 32, 1024)}
    assert len(W("explain.iid", **excess).split()) > 40
