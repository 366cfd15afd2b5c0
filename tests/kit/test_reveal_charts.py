"""The charts a class's reveal puts on the projector (issue 40), called directly: counts on
whole-number axes, the computed answer marked in words whatever the bars' colours and
votes, and a number's bins sized to the answer, with far answers counted, not drawn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from figures.common import MARK, TRUTH_COLOUR, class_choices, class_numbers, number_axis

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


def _stems(chart) -> dict[float, int]:
    """value -> count, read off the chart's markers (x on the axis, y the count)."""
    _, dots = chart.fig.data
    ticks = chart.fig.layout.xaxis.ticktext
    xs = [float(ticks[int(x)]) if ticks else float(f"{x:.3g}") for x in dots.x]
    return dict(zip(xs, dots.y, strict=True))


@pytest.mark.parametrize("truth", [0.0037, 0.37, -2.5, 37.0, 64.0, 3.7e4])
@pytest.mark.parametrize("seed", range(5))
def test_every_answer_is_drawn_on_an_axis_that_fits_them(truth, seed):
    """Issue 50: an answer far off (the classic 256 for 16) was only counted in the
    caption; now every answer is a stem, on a log axis (or in order) when they spread."""
    rng = np.random.default_rng(seed)
    near = _guesses(rng, truth, 20, 0.3)
    far = [truth * 16, truth * 1e3] if seed % 2 else []  # the classic mistakes
    if seed == 3:
        far.append(-abs(truth) * 50)  # and one the other side of 0
    values = near + far
    chart = class_numbers(values, truth, f"{truth:.3g}")
    stems = _stems(chart)
    assert sum(stems.values()) == len(values)  # every answer is drawn
    assert set(stems) == {float(f"{v:.3g}") for v in values}
    kind = number_axis(values, truth).kind
    signs = {v > 0 for v in [*values, truth]}
    assert kind == ("linear" if not far else "log" if signs == {True} else "rank")
    assert chart.fig.layout.xaxis.type == ("log" if kind == "log" else None)
    _whole_count_axis(chart.fig.layout.yaxis)
    assert chart.fig.layout.yaxis.range[1] > max(stems.values())
    assert "orders of magnitude" in chart.caption if far else "orders" not in chart.caption


@pytest.mark.parametrize("values", [[], [5.0] * 30, [1e9, -1e9], [math.nan, math.inf, 5.0]])
def test_the_computed_value_is_a_dashed_line_behind_the_stems_and_a_star_on_its_own(values):
    truth = 5.0
    chart = class_numbers(values, truth, "5")
    (line,) = [s for s in chart.fig.layout.shapes if s.type == "line"]
    assert line.line.color == TRUTH_COLOUR and line.line.dash == "dash"
    assert line.layer == "below"  # behind the stems: it splits nothing
    (note,) = chart.fig.layout.annotations
    assert note.text.strip() == "computed 5" and note.bgcolor
    assert (not [v for v in values if math.isfinite(v)]) == ("Nobody answered" in chart.caption)
    _, dots = chart.fig.data
    stars = [i for i, sym in enumerate(dots.marker.symbol) if sym == "star"]
    assert len(stars) == (5.0 in values)  # the computed value's own stem: not colour alone
    if values and all(v == truth for v in values):
        assert list(dots.y) == [len(values)] and "30 of 30 gave it" in chart.caption


def test_positive_answers_do_not_draw_an_empty_negative_axis():
    chart = class_numbers([8.0, 8.0, 9.0, 16.0, 64.0], 8.0, "8")
    lo, _ = chart.fig.layout.xaxis.range
    assert lo >= -10
