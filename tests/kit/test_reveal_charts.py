"""The charts a class's reveal puts on the projector (issue 40), called directly: counts on
whole-number axes, the computed answer marked in words whatever the bars' colours and
votes, and a number's bins sized to the answer, with far answers counted, not drawn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from figures.common import MARK, TRUTH_COLOUR, class_choices, class_numbers, number_bins

CHOICES = ["It grows like √d_k", "It stays about 1", "It shrinks towards 0"]


def _whole_count_axis(axis) -> None:
    assert axis.tickformat == "d"
    assert axis.dtick >= 1 and float(axis.dtick).is_integer()
    assert axis.range[0] == 0 and axis.range[1] >= 1


@pytest.mark.parametrize("counts", [[7, 0, 12], [0, 0, 0], [1, 0, 0], [30, 29, 31]])
def test_a_choice_chart_counts_in_whole_numbers_and_names_the_answer_even_with_no_votes(counts):
    chart = class_choices(CHOICES, counts, CHOICES[1])
    (bar,) = chart.fig.data
    _whole_count_axis(chart.fig.layout.xaxis)
    assert chart.fig.layout.xaxis.range[1] > max(counts)  # the fullest bar and its words fit
    marked = [i for i, t in enumerate(bar.text) if MARK in t]
    assert marked == [1]  # in words beside the bar, also when its bar is empty
    assert "✓" in bar.y[1] and not any("✓" in y for k, y in enumerate(bar.y) if k != 1)
    assert bar.marker.pattern.shape[1] and not bar.marker.pattern.shape[0]  # not colour alone
    assert bar.textposition == "outside"  # the words sit on the page, not on a bar's colour
    n = sum(counts)
    if n:
        assert f"{counts[1]} of {n} predicted it" in chart.caption and MARK in chart.caption
    else:
        assert "Nobody answered" in chart.caption and MARK in chart.caption


def _guesses(rng, truth: float, n: int, rel: float) -> list[float]:
    return list(truth * (1 + rng.uniform(-rel, rel, n)))


@pytest.mark.parametrize("truth", [0.0037, 0.37, -2.5, 37.0, 64.0, 3.7e4])
@pytest.mark.parametrize("seed", range(5))
def test_a_number_chart_s_bins_fit_the_answer_and_every_answer_is_drawn_or_counted(truth, seed):
    rng = np.random.default_rng(seed)
    near = _guesses(rng, truth, 20, 0.3)
    far = [truth * 1e4, -abs(truth) * 1e3] if seed % 2 else []  # a joker or two
    values = near + far
    chart = class_numbers(values, truth, f"{truth:.3g}")
    bins = number_bins(values, truth)
    (bar,) = chart.fig.data
    assert bins.width <= 0.1 * abs(truth)  # bars narrower than a tenth of the answer
    assert bins.width >= abs(truth) / 1e4  # and not a pile of one-answer slivers
    lo, hi = chart.fig.layout.xaxis.range
    assert lo < truth < hi
    assert all(lo <= v <= hi for v in near)  # the class's near guesses are all on it
    assert sum(bar.y) + bins.below + bins.above == len(values)
    assert bins.below + bins.above == len(far)
    assert len({round((v - truth) / bins.width) for v in near}) > 1  # not one lump
    _whole_count_axis(chart.fig.layout.yaxis)
    assert chart.fig.layout.yaxis.range[1] > max(bar.y)
    if far:
        assert f"{len(far)} answers beyond the chart" in chart.caption
        assert f"({bins.below} lower, {bins.above} higher)" in chart.caption
    else:
        assert "beyond the chart" not in chart.caption


@pytest.mark.parametrize("values", [[], [5.0] * 30, [1e9, -1e9], [math.nan, math.inf, 5.0]])
def test_the_computed_value_is_a_line_over_the_bars_and_in_words_whoever_answered(values):
    truth = 5.0
    chart = class_numbers(values, truth, "5")
    lines = [s for s in chart.fig.layout.shapes if s.type == "line"]
    assert [s.x0 for s in lines] == [truth, truth]
    assert [s.line.color for s in lines] == ["white", TRUTH_COLOUR]  # a halo, then the line
    assert all(s.layer == "above" for s in lines)  # drawn over whatever bar is there
    lo, hi = chart.fig.layout.xaxis.range
    assert lo < truth < hi
    (note,) = chart.fig.layout.annotations
    assert note.text.strip() == "computed 5" and note.bgcolor
    assert (values == []) == ("Nobody answered" in chart.caption)
    if values and all(v == truth for v in values):
        (bar,) = chart.fig.data
        assert max(bar.y) == len(values) and bar.x[list(bar.y).index(len(values))] == truth


def test_positive_answers_do_not_draw_an_empty_negative_axis():
    chart = class_numbers([8.0, 8.0, 9.0, 16.0, 64.0], 8.0, "8")
    lo, _ = chart.fig.layout.xaxis.range
    width = number_bins([8.0, 8.0, 9.0, 16.0, 64.0], 8.0).width
    assert -width <= lo <= 0
