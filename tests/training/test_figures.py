"""Training-lab figures, built from tiny real runs: traces, titles, axes, live partial runs."""

import numpy as np
import pytest
import torch

from attn_core import train_pair
from figures import Chart
from figures import training as tf

SMALL = dict(n_pairs=6, n_symbols=12, d_model=16, batch=16)


@pytest.fixture(scope="module")
def runs():
    return train_pair(16, steps=6, **SMALL)


def _titles(fig):
    axes = [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]
    return [a.title.text for a in axes]


@pytest.mark.parametrize(
    "builder", ["loss_curves", "accuracy_curves", "attention_shape_curves", "gradient_curves"]
)
def test_curve_charts_have_both_runs_titles_and_labelled_axes(runs, builder):
    chart = getattr(tf, builder)(*runs, steps=50)
    assert isinstance(chart, Chart) and chart.caption and chart.fig.layout.title.text
    assert all(_titles(chart.fig)), _titles(chart.fig)
    names = {t.name for t in chart.fig.data if t.showlegend is not False}
    assert {"scaled (÷√d_k)", "unscaled"} <= names
    assert all(t.type == "scatter" for t in chart.fig.data)
    # the x axis spans the steps asked for, so a live (partial) run grows to the right
    assert list(chart.fig.layout.xaxis.range) == [0, 49]
    assert len(chart.fig.data[0].y) == 6


def test_loss_chart_is_log_scale_with_the_chance_line(runs):
    fig = tf.loss_curves(*runs).fig
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.shapes[0].y0 == pytest.approx(np.log(12))
    assert "d_k = 16" in fig.layout.title.text and "SGD" in fig.layout.title.text


def test_gradient_chart_uses_log_axes(runs):
    fig = tf.gradient_curves(*runs).fig
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"


def test_histogram_handles_exact_zeros_and_nan_rows():
    s = torch.tensor([0.3, 0.2, 0.25])
    u = torch.tensor([0.0, 1e-20, 0.1, float("nan")])
    chart = tf.row_jacobian_histogram(s, u, when="after training")
    bars = chart.fig.data
    assert [b.type for b in bars] == ["bar", "bar"]
    assert chart.fig.layout.xaxis.type == "log" and all(_titles(chart.fig))
    assert float(np.sum(bars[0].y)) == pytest.approx(1.0)
    assert float(np.sum(bars[1].y)) == pytest.approx(1.0)  # the NaN row is dropped
    assert "67%" in chart.caption  # two of three finite unscaled rows have no gradient
    assert "after training" in chart.fig.layout.title.text


def test_probe_rows_before_only_and_before_after(runs):
    a, b = runs
    before = tf.probe_rows((a.probe_start, b.probe_start), None, a.probe_position, rows=5)
    heat = [t for t in before.fig.data if t.type == "heatmap"]
    assert len(heat) == 2 and heat[0].z.shape == (5, 6)
    both = tf.probe_rows(
        (a.probe_start, b.probe_start), (a.probe_end, b.probe_end), a.probe_position, rows=5
    )
    heat = [t for t in both.fig.data if t.type == "heatmap"]
    assert len(heat) == 4 and both.fig.layout.coloraxis.cmax == 1.0
    marks = [t for t in both.fig.data if t.type == "scatter"]
    assert list(marks[0].x) == a.probe_position[:5].tolist()
    assert "After training" in both.caption


def test_captions_quote_the_runs_own_numbers(runs):
    a, b = runs
    shape = tf.attention_shape_curves(a, b).caption
    assert f"{b.max_weight[0]:.2f} unscaled against {a.max_weight[0]:.2f} scaled" in shape
    both = tf.probe_rows(
        (a.probe_start, b.probe_start), (a.probe_end, b.probe_end), a.probe_position
    ).caption
    pos = a.probe_position
    on_answer = [
        float((w.argmax(-1) == pos).float().mean())
        for w in (a.probe_start, b.probe_start, a.probe_end, b.probe_end)
    ]
    top_u = float(b.probe_start.amax(-1).mean())
    assert f"{on_answer[0]:.0%} of the scaled rows and {on_answer[1]:.0%} of the unscaled" in both
    assert f"averages {top_u:.2f} unscaled" in both
    assert f"answer in {on_answer[2]:.0%} of the scaled rows and {on_answer[3]:.0%}" in both


def test_head_sweep_chart_has_one_line_per_width():
    from attn_core.lessons.training import head_sweep

    runs = head_sweep(16, (4, 8, 16), steps=5, n_pairs=6, n_symbols=12, batch=16)
    chart = tf.head_sweep_curves(runs, steps=5)
    names = [t.name for t in chart.fig.data]
    assert names == ["d_k = 4 (h = 4)", "d_k = 8 (h = 2)", "d_k = 16 (h = 1)"]
    assert len({t.line.color for t in chart.fig.data}) == 3  # told apart by colour and dash
    assert len({t.line.dash for t in chart.fig.data}) == 3
    assert chart.fig.layout.yaxis.type == "log" and all(_titles(chart.fig))
    assert "d_model = 16" in chart.fig.layout.title.text and chart.caption
    assert list(chart.fig.layout.xaxis.range) == [0, 4]


@pytest.mark.parametrize(
    "x,text",
    [
        (0.045, "0.045"),
        (3.78e-11, "3.8 × 10⁻¹¹"),
        (1.1920929e-07, "1.2 × 10⁻⁷"),
        (1e-6, "10⁻⁶"),
        (2.5e5, "2.5 × 10⁵"),
        (0.0, "0"),
        (8.0, "8"),
    ],
)
def test_sci_writes_tiny_and_huge_numbers_with_powers_of_ten(x, text):
    assert tf.sci(x) == text
