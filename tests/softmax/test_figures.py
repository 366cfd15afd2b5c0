"""figures.softmax: right traces, titles, axis titles, captions; called directly."""

import math

import numpy as np
import pytest
import torch

from attn_core import DTYPES
from attn_core.lessons import softmax as core
from figures import Chart
from figures import softmax as fs

COLS = dict(q_columns=["q1", "q2", "q3"], k_columns=["k1", "k2", "k3"], v_columns=["vx", "vy"])
NAMES = ["t1", "t2", "t3"]


def example(name):
    _, q, k, v = core.SOFTMAX_EXAMPLES[name]
    return core.parse_example(q, [a + b for a, b in zip(k, v, strict=True)], **COLS)


def check(chart: Chart, title_part: str) -> None:
    assert isinstance(chart, Chart) and len(chart.caption) > 40 and chart.alt
    lay = chart.fig.layout
    assert title_part in lay.title.text
    assert lay.xaxis.title.text and lay.yaxis.title.text


def test_steps_bars_has_one_panel_per_step():
    ex = example("lesson")
    c = fs.steps_bars(NAMES, core.softmax_steps(ex), d_k=3)
    check(c, "step by step")
    assert [t.type for t in c.fig.data] == ["bar"] * 4
    assert [t.xaxis for t in c.fig.data] == ["x", "x2", "x3", "x4"]
    assert c.fig.layout.xaxis4.title.text == "token"
    np.testing.assert_allclose(c.fig.data[3].y, core.softmax_steps(ex).weights, rtol=1e-6)
    titles = [a.text for a in c.fig.layout.annotations]
    assert any("e^s" in t for t in titles)
    sumnorm = fs.steps_bars(NAMES, core.sum_normalised_steps(example("negative")), d_k=3)
    assert len(sumnorm.fig.data) == 3 and "negative" in sumnorm.caption
    ex = example("negative")
    raw = ex.k @ ex.q  # (T,)
    w = raw / raw.sum()
    assert f"here t1 ({float(w[0]):.3g})" in sumnorm.caption
    assert f"add up to {float(w[w >= 0].sum()):.3g} to compensate" in sumnorm.caption
    plain = fs.steps_bars(NAMES, core.sum_normalised_steps(example("lesson")), d_k=3)
    assert "None is negative here" in plain.caption  # lesson scores 0, 3.7, 2.5


def test_steps_table_lists_every_intermediate():
    t = fs.steps_table(NAMES, core.softmax_steps(example("lesson")), d_k=3)
    assert list(t) == ["step", *NAMES, "sum"]
    assert t["step"][0] == "q · k" and "e^s" in t["step"][2]
    assert t["t1"][0] == "0" and t["t2"][0] == "3.7"
    assert t["sum"][3] == "1" and "output" in t["sum"][-1]


def test_hull_plot_draws_hull_values_mean_and_output():
    ex = example("lesson")
    s = core.softmax_steps(ex)
    c = fs.hull_plot(NAMES, ex.v.numpy(), core.convex_hull(ex.v).numpy(), s)
    check(c, "output")
    types = [(t.type, t.fill, t.name) for t in c.fig.data]
    assert types[0][1] == "toself"
    assert any("output z" in n for _, _, n in types) and any("mean" in n for _, _, n in types)
    assert "inside the hull" in c.caption
    assert c.fig.layout.yaxis.scaleanchor == "x"  # equal aspect: hulls are not distorted
    neg = example("negative")
    out = fs.hull_plot(
        NAMES,
        neg.v,
        core.convex_hull(neg.v),
        core.sum_normalised_steps(neg),
        other_output=core.softmax_steps(neg).output,
        other_label="softmax",
    )
    assert "LEFT the hull" in out.caption and len(out.fig.data) == 5


def test_shift_figure_and_table():
    s = core.softmax_steps(example("lesson")).scores
    w, w_c = core.shifted_weights(s, 7.5)
    c = fs.shift_bars(NAMES, s.numpy(), 7.5, w.numpy(), w_c.numpy())
    check(c, "c = 7.5")
    assert len(c.fig.data) == 4 and {t.type for t in c.fig.data} == {"bar"}
    assert c.fig.layout.yaxis2.title.text == "weight"
    np.testing.assert_allclose(c.fig.data[1].y - c.fig.data[0].y, 7.5, rtol=1e-6)
    t = fs.shift_table(NAMES, s.numpy(), 7.5, w.numpy(), w_c.numpy())
    assert "softmax(s + 7.5)" in t and all(float(x) < 1e-12 for x in t["difference"])


@pytest.mark.parametrize("offset", [0, -14])
def test_naive_vs_stable_marks_nan(offset):
    r = core.stability_demo([s + offset for s in core.STABILITY_SCORES], "float32")
    c = fs.naive_vs_stable(r)
    check(c, "float32")
    naive, stable = c.fig.data
    np.testing.assert_allclose(stable.y, r.stable, rtol=1e-6)
    assert np.isfinite(np.asarray(naive.y, dtype=float)).all()  # NaN drawn as an empty bar
    assert ("NaN" in naive.text) == (offset == 0)
    assert ("NaN" in c.caption) == (offset == 0)
    table = fs.stability_table(r)
    assert table["token 3"][0] == ("102" if offset == 0 else "88")


def test_exp_range_has_a_band_per_precision_and_the_scores():
    limits = [core.exp_limits(d) for d in DTYPES]
    c = fs.exp_range(limits, [100.0, 101.0, 102.0], "float16")
    check(c, "finite")
    bars = [t for t in c.fig.data if t.type == "bar"]
    assert len(bars) == 4 and c.fig.data[-1].type == "scatter"
    f16 = next(b for b in bars if b.y[0].startswith("float16"))
    assert f16.base[0] == pytest.approx(core.exp_limits("float16").underflow_at)
    assert f16.base[0] + f16.x[0] == pytest.approx(core.exp_limits("float16").overflow_at)
    assert c.fig.data[-1].y[0].startswith("float16")


def _edge(dt, zero: bool) -> float:
    """Independent of attn_core: walk float16/float32 values until torch.exp flips."""
    x = torch.tensor(0.0, dtype=dt)
    step = torch.tensor(-1.0 if zero else 1.0, dtype=dt)
    while True:  # coarse, then every stored value (nextafter) near the edge
        nxt = x + step
        e = float(torch.exp(nxt))
        if (e == 0.0) if zero else math.isinf(e):
            break
        x = nxt
    while True:
        nxt = torch.nextafter(x, torch.tensor(-math.inf if zero else math.inf, dtype=dt))
        e = float(torch.exp(nxt))
        if (e == 0.0) if zero else math.isinf(e):
            return (float(x) + float(nxt)) / 2  # the edge lies between the two stored values
        x = nxt


def test_exp_range_caption_states_the_narrowest_band_as_torch_exp_finds_it():
    c = fs.exp_range([core.exp_limits(d) for d in DTYPES], [100.0, 101.0, 102.0], "float32")
    lo, hi = _edge(torch.float16, True), _edge(torch.float16, False)
    assert f"float16's band is the narrowest: {lo:.2f} to {hi:.2f}" in c.caption
    fi = torch.finfo(torch.float16)
    assert lo < math.log(fi.smallest_normal * fi.eps) - 0.5  # not the old ln(tiny)


def test_temperature_figures():
    s = core.softmax_steps(example("lesson")).scores
    sw = core.temperature_sweep(s, torch.logspace(-2, 2, 41, dtype=torch.float64))
    now = core.temperature_sweep(s, torch.tensor([0.2], dtype=torch.float64))
    one = core.temperature_sweep(s, torch.tensor([1.0], dtype=torch.float64))
    bars = fs.temperature_bars(NAMES, now.weights[0], one.weights[0], 0.2)
    check(bars, "τ = 0.2")
    assert len(bars.fig.data) == 2
    assert len(fs.temperature_bars(NAMES, one.weights[0], one.weights[0], 1.0).fig.data) == 1
    curve = fs.entropy_curve(sw, 0.2, float(now.entropy[0]))
    check(curve, "Entropy")
    assert curve.fig.layout.xaxis.type == "log"
    assert len(curve.fig.layout.shapes) == 2  # the two limits


@pytest.mark.parametrize("training", [True, False])
def test_dropout_figures(training):
    d = core.dropout_stats(0.2, training, 0, n_samples=20)
    h = fs.dropout_heatmap(d.sample, training, 0.2)
    check(h, "dropout")
    assert h.fig.data[0].type == "heatmap" and np.asarray(h.fig.data[0].z).shape == (8, 8)
    r = fs.row_sums_chart(d, training)
    check(r, "Row sums")
    assert [t.type for t in r.fig.data] == ["bar", "scatter"]
    assert ("average" in r.caption) == training


def test_labels_are_cleaned_and_numbers_formatted():
    assert fs.clean_label("<b>cat</b>", 0) == "bcatb"
    assert fs.clean_label("", 4) == "t5" and fs.clean_label(None, 0) == "t1"
    assert len(fs.clean_label("x" * 50, 0)) == 12
    assert fs.clean_label(float("nan"), 3) == "t4"
    assert fs.token_labels(["a", "a", None, "a"]) == ["a", "a#2", "t3", "a#3"]
    assert fs.fmt(float("nan")) == "NaN" and fs.fmt(float("inf")) == "inf"
    assert fs.fmt(0.072981) == "0.07298"
