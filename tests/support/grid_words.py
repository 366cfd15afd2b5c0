"""A grid's words (figures.describe: `heatmap` or a set's `panel`, its blank cells, its
largest or strongest cell, a yes/no grid's counts, each row's peak) checked against a
test's own recomputation of the grid's values, sentence by sentence
(tests.support.word_templates): every number said is the recomputed one to the words'
3 significant digits, every cell named holds that value (any of tied cells will do), every
row is read in order under its own name; and the axis order the words give is the one
the chart draws."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from figures.describe import positioned
from tests.support.word_templates import Sentences, items, pattern, same
from tests.support.words import value
from ui import content

FLOOR = 1e-12  # values this small are float noise: the words need only be as small
ROWS = 12  # figures.describe.MAX_ROWS: rows read one by one up to this many


def names(labels: Sequence | None, n: int) -> list[str]:
    """Row or column names as the words write them: the labels, else 0..n-1."""
    return (
        [str(x) for x in positioned(labels)] if labels is not None else [str(i) for i in range(n)]
    )


def holds(z: np.ndarray, rows: list[str], cols: list[str], row: str, col: str, v: float) -> bool:
    """Whether some cell named (row, col) holds v (a repeated name: any of its cells)."""
    return any(
        np.isfinite(z[i, j]) and same(v, z[i, j], floor=FLOOR)
        for i, r in enumerate(rows)
        if r == row
        for j, c in enumerate(cols)
        if c == col
    )


def check_grid(
    s: Sentences,
    z,
    *,
    down: str,
    across: str,
    rows: Sequence | None = None,
    cols: Sequence | None = None,
    blank: str | None = None,
    panel: str | None = None,
    by_row: bool = True,
) -> None:
    """The sentences of one grid of `s` against `z` (NaN: a blank cell). `blank`: the kind
    of blank cell its words name (charts.md `blank.<kind>`); `panel`: the grid's name in a
    set of panels (its sentences then follow the last one taken)."""
    z = np.asarray(z, dtype=float)
    R, C = z.shape
    rn, cn = names(rows, R), names(cols, C)
    shown = np.isfinite(z)
    if not shown.any():
        s.take("heatmap.empty", name=panel or "The grid", following=panel is not None)
        return
    vals = z[shown]
    if panel is None:
        got = s.take("heatmap", rows=R, cols=C, down=down, across=across)
    else:
        got = s.take("panel", name=panel, rows=R, cols=C, following=True)
    assert same(got["lo"], vals.min(), floor=FLOOR), (got, vals.min())
    assert same(got["hi"], vals.max(), floor=FLOOR), (got, vals.max())
    if (~shown).any():
        assert blank is not None, "blank cells the test did not expect"
        s.take(f"blank.{blank}", n=int((~shown).sum()), total=z.size, following=True)
    if np.isin(vals, (0.0, 1.0)).all():  # a yes/no grid: counts, no "largest"
        ones = (np.where(shown, z, 0) == 1).sum(1)
        counts = "; ".join(
            f"{rn[i]}: {int(k)}"
            if shown[i].any()
            else content.words("charts", "row.none", row=rn[i])
            for i, k in enumerate(ones[:ROWS])
        )
        counts += "" if R <= ROWS else content.words("charts", "rows.more", n=R - ROWS)
        s.take("heatmap.binary", ones=int(ones.sum()), total=int(shown.sum()), down=down,
               counts=counts, following=True)  # fmt: skip
        return
    if vals.min() == vals.max() and vals.size > 1:  # no cell stands out: no "largest"
        flat = s.take("heatmap.flat", following=True)
        assert same(flat["v"], vals.min(), floor=FLOOR), (flat, vals.min())
        return
    signed = bool(vals.min() < 0 < vals.max())
    top = float(np.abs(vals).max() if signed else vals.max())
    p = s.take("heatmap.strongest" if signed else "heatmap.peak", texts=("row", "col"),
               down=down, across=across, following=True)  # fmt: skip
    assert same(abs(p["v"]) if signed else p["v"], top, floor=FLOOR), (p, top)
    assert holds(z, rn, cn, p["row"], p["col"], p["v"]), (p, "not that cell's value")
    if not (by_row and panel is None and 1 < R <= ROWS and C > 1):
        return
    key = "heatmap.rows.signed" if signed else "heatmap.rows"
    peaks = items(s.take(key, texts=("peaks",), down=down, across=across, following=True)["peaks"])
    read = [i for i in range(R) if shown[i].any()]
    assert len(peaks) == len(read), (peaks, read)
    one = re.compile(pattern("heatmap.row", texts=("row", "col")))
    flat = re.compile(pattern("heatmap.row.flat", texts=("row",)))
    for i, said in zip(read, peaks, strict=True):
        row = z[i][shown[i]]
        if row.size > 1 and row.min() == row.max():  # a row where no cell stands out
            m = flat.fullmatch(said)
            assert m and m["row"] == rn[i] and same(value(m["v"]), row[0], floor=FLOOR), said
            continue
        m = one.fullmatch(said)
        assert m and m["row"] == rn[i], (said, rn[i])
        v, row = value(m["v"]), z[i][shown[i]]
        best = float(np.abs(row).max() if signed else row.max())
        assert same(abs(v) if signed else v, best, floor=FLOOR), (said, best)
        assert holds(z[i : i + 1], [rn[i]], cn, rn[i], m["col"], v), (said, "not that cell")


def y_down(spec: dict, axis: str = "yaxis") -> bool:
    """Whether the chart draws its y axis downwards (row 0 at the top)."""
    a = spec["layout"].get(axis) or {}
    r = a.get("range")
    return a.get("autorange") == "reversed" or bool(r and len(r) == 2 and r[0] > r[1])


def check_axes(spec: dict, text: str) -> None:
    """The axis order the words give is the one drawn: a grid's rows or an 'up'/'down'
    axis; and no axis is a log scale (the words read values, never their logs)."""
    for key, a in spec["layout"].items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(a, dict):
            assert a.get("type") != "log", (key, "a log axis: are the words in its units?")
    if " down, " in text or "; down (the first at the top): " in text:
        assert y_down(spec), "the words say down, the chart draws up"
    if "; up: " in text:
        assert not y_down(spec), "the words say up, the chart draws down"


def trace_names(spec: dict) -> list[str]:
    """The names of a generic chart's data traces that its words must each name (drawing
    marked `words: skip` left out)."""
    out = []
    for tr in spec["data"]:
        meta = tr.get("meta") if isinstance(tr.get("meta"), dict) else {}
        if meta.get("words") == "skip" or "say" in meta or not tr.get("name"):
            continue
        out.append(tr["name"])
    return out
