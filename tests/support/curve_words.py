"""A curve's words against its true numbers, shared by the pages' word tests: `near` (3
significant digits, as computed or as drawn in float32), `ties` (any tied point may be
named), the axes sentence, and a curve's sentence (a point, a level, flat data or a line)."""

from __future__ import annotations

import numpy as np

from tests.support.grid_words import y_down
from tests.support.word_templates import Sentences, same
from ui import content


def near(said: float, true: float, floor: float = 0.0) -> bool:
    """`said` is `true` to 3 significant digits, as computed or as the chart's float32."""
    return same(said, true, floor=floor) or same(said, float(np.float32(true)), floor=floor)


def ties(y: np.ndarray, target: float) -> np.ndarray:
    """Where `y` holds `target`, as computed or as drawn in float32 (any may be named)."""
    y = np.asarray(y, dtype=float)
    drawn = y.astype(np.float32) == np.float32(target)
    return np.flatnonzero(np.isclose(y, target, rtol=1e-5, atol=0) | (y == target) | drawn)


def take_axes(w: Sentences, spec: dict, x: str, y: str) -> None:
    """The axes sentence, whose up is the one the chart draws (these charts all rise)."""
    assert not y_down(spec), "a chart of this page drawn top-down"
    w.take("axes", x=x, y=y, up=content.words("charts", "up"))


def check_line(w: Sentences, name, x, y, across: str) -> dict:
    """A curve's sentence against (x, y) (non-finite y: not drawn), ties allowed."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(y)
    x, y = x[ok], y[ok]
    if y.size == 1:
        got = w.take("point", name=name, x=across)
        assert near(got["y"], y[0]) and near(got["at"], x[0]), (got, x, y)
        return got
    if np.ptp(y.astype(np.float32)) == 0:
        # a guide line (a level) or measured points that happen to be flat (line.flat)
        flat = w.has("line.flat", name=name, x=across, texts=("x0", "x1"))
        got = (w.take("line.flat", name=name, x=across, texts=("x0", "x1")) if flat
               else w.take("level", name=name))  # fmt: skip
        assert near(got["y"], y[0]), (got, y[0])
        return got
    got = w.take("line", name=name, x=across)
    assert got["n"] == y.size, (got, y.size)
    for said, true in ((got["x0"], x[0]), (got["x1"], x[-1]), (got["last"], y[-1])):
        assert near(said, true), (got, said, true)
    for v, at, best in (("lo", "at_lo", y.min()), ("hi", "at_hi", y.max())):
        assert near(got[v], best), (got, v, best)
        assert any(near(got[at], x[i]) for i in ties(y, best)), (got, at, x[ties(y, best)])
    return got
