"""Reading a chart's words sentence by sentence, by the templates of content/charts.md.

`Sentences(text).take(key, **known)` finds the sentence `key` of content/charts.md in a
chart's words: a field given in `known` must read exactly so (a series' name, an axis
title), or match it where it is a compiled regex (whose named groups are numbers, handed
back too); a field named in `texts` is any text (a token, a list read apart later: keep
those between fixed words, never first in a sentence); every other field is a number as
the words write it (tests.support.words.NUMBER), handed back as a float to compare with
the test's own recomputation (tests.support.words.close).
Each sentence taken is struck out; `rest()` is what no template accounted for, so a test
can require that nothing else is said (no number left that nothing recomputed)."""

from __future__ import annotations

import re

import numpy as np

from figures.describe import positioned
from tests.support.words import NUMBER, close, value
from ui import content

TINY = 1e-30  # float32 underflow: 0 in one precision, a denormal or 1e-35 in another
_FIELD = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def pattern(key: str, texts: tuple[str, ...] = (), **known) -> str:
    """The regex of charts.md's sentence `key` (see the module's doc)."""
    template = content.raw("charts", key).strip()
    out, at, seen = [], 0, set()
    for m in _FIELD.finditer(template):
        out.append(re.escape(template[at : m.start()]))
        name = m.group(1)
        if name in known and isinstance(known[name], re.Pattern):
            out.append(f"(?:{known[name].pattern})")
        elif name in known:
            out.append(re.escape(str(known[name])))
        elif name in seen:
            out.append(f"(?P={name})")
        elif name in texts:
            out.append(f"(?P<{name}>.+?)")
        elif f"{name}+" in texts:  # greedy: a list whose items may hold ". " (a "." token)
            out.append(f"(?P<{name}>.+)")
        else:
            out.append(f"(?P<{name}>{NUMBER.pattern})")
        seen.add(name)
        at = m.end()
    tail = template[at:]
    if tail.endswith("."):  # a sentence's own full stop: followed by a space or the end
        out.append(re.escape(tail[:-1]) + r"\.(?=\s|$)")
    else:
        out.append(re.escape(tail))
    return "".join(out)


class Sentences:
    """One chart's words, read sentence by sentence."""

    def __init__(self, text: str):
        self.text = text
        self.spans: list[tuple[int, int]] = []
        self.end = 0  # where the last sentence taken ends

    def _free(self, start: int, end: int) -> bool:
        return all(end <= a or start >= b for a, b in self.spans)

    def take(
        self, key: str, /, texts: tuple[str, ...] = (), following: bool = False, **known
    ) -> dict:
        """The first sentence `key` not yet taken that reads with `known` (`following`: the
        one right after the last sentence taken): its other fields (numbers as floats,
        `texts` as strings). Fails when there is none."""
        rx = re.compile(pattern(key, texts, **known))
        if following:
            rest = self.text[self.end :]
            m = rx.match(self.text, self.end + len(rest) - len(rest.lstrip()))
            found = [m] if m and self._free(*m.span()) else []
        else:
            found, at = [], 0
            while (m := rx.search(self.text, at)) and not found:
                found, at = ([m] if self._free(*m.span()) else []), m.start() + 1
        for m in found:
            self.spans.append(m.span())
            self.end = m.end()
            said = {k: (v if k in texts or f"{k}+" in texts else value(v))
                    for k, v in m.groupdict().items()}  # fmt: skip
            return said
        where = f" right after {self.text[: self.end][-60:]!r}" if following else ""
        raise AssertionError(f"no sentence {key!r} with {known}{where} in: {self.text}")

    def has(self, key: str, /, texts: tuple[str, ...] = (), **known) -> bool:
        return re.search(pattern(key, texts, **known), self.text) is not None

    def rest(self) -> str:
        """The words no sentence taken so far accounts for."""
        out, at = [], 0
        for a, b in sorted(self.spans):
            out.append(self.text[at:a])
            at = b
        out.append(self.text[at:])
        return " ".join("".join(out).split())

    def done(self) -> None:
        """Every sentence accounted for: nothing said that the test did not recompute."""
        assert not self.rest(), f"unaccounted words: {self.rest()!r} in {self.text!r}"


def same(said: float, true: float, *, floor: float = 0.0) -> bool:
    """`said` is `true` to the words' 3 significant digits; values at most `floor` in size
    (float rounding noise) only need to be that small too. Below float32's smallest normal
    number (~1.2e-38) a value is 0 in one precision and not in another: both pass."""
    if abs(said) < TINY and abs(true) < TINY:
        return True
    if floor and abs(true) <= floor:
        return abs(said) <= floor
    return close(said, true)


def items(text: str, sep: str = "; ") -> list[str]:
    """A list the words join with `sep`."""
    return [t for t in text.split(sep) if t]


# ------------------------------------------------------------------ a grid, recomputed
MAX_ROWS = 12  # figures.describe reads each row's peak up to this many rows
_ITEM = re.compile(rf"^(?P<row>.*) → (?P<col>.*) \((?P<v>{NUMBER.pattern})\)$")


def _tied(z: np.ndarray, key: np.ndarray, rows, cols) -> set[tuple[str, str]]:
    top = np.nanmax(key)
    at = np.nonzero(key >= top - 1e-6 * abs(top))
    return {(str(rows[i]), str(cols[j])) for i, j in zip(*at, strict=True)}


def check_grid(
    s: Sentences,
    z,
    down: str,
    across: str,
    rows=None,
    cols=None,
    *,
    name: str = "",
    blank: str = "blank",
    following: bool = False,
) -> None:
    """A grid's sentences against the true values `z` (NaN: blank), by the rules the words
    keep: size and range; blank cells counted as what they are; a yes/no grid's counts (no
    "largest"); the largest — by magnitude, with its sign, where values have both signs —
    at any tied cell; and, for a grid alone of at most MAX_ROWS rows, each row's peak.
    `rows`, `cols`: the names the words give them (positions 0… by default); `name`: the
    panel's name in a set of panels (then no row-by-row)."""
    z = np.asarray(z, dtype=float)
    R, C = z.shape
    rows = [str(r) for r in (range(R) if rows is None else positioned(rows))]
    cols = [str(c) for c in (range(C) if cols is None else positioned(cols))]
    shown = np.isfinite(z)
    vals = z[shown]
    if name:
        got = s.take("panel", name=name, following=following)
    else:
        got = s.take("heatmap", down=down, across=across, following=following)
    assert (got["rows"], got["cols"]) == (R, C), (name, got, z.shape)
    assert same(got["lo"], vals.min()) and same(got["hi"], vals.max()), (name, got)
    if (~shown).any():
        got = s.take(f"blank.{blank}", following=True)
        assert (got["n"], got["total"]) == (int((~shown).sum()), z.size), (name, got)
    if np.isin(vals, (0.0, 1.0)).all():
        got = s.take("heatmap.binary", texts=("counts",), down=down, following=True)
        ones = (np.where(shown, z, 0) == 1).sum(axis=1)
        assert (got["ones"], got["total"]) == (int(ones.sum()), int(shown.sum())), (name, got)
        counts = "; ".join(
            f"{rows[i]}: {int(k)}"
            if shown[i].any()
            else content.words("charts", "row.none", row=rows[i])
            for i, k in enumerate(ones[:MAX_ROWS])
        )
        more = content.words("charts", "rows.more", n=R - MAX_ROWS) if R > MAX_ROWS else ""
        assert got["counts"] == counts + more, (name, got["counts"])
        return
    if vals.min() == vals.max() and vals.size > 1:  # no cell stands out: no "largest"
        got = s.take("heatmap.flat", following=True)
        assert same(got["v"], vals.min()), (name, got)
        return
    signed = bool(vals.min() < 0 < vals.max())
    key = np.where(shown, np.abs(z) if signed else z, -np.inf)
    got = s.take("heatmap.strongest" if signed else "heatmap.peak", texts=("row", "col"),
                 down=down, across=across, following=True)  # fmt: skip
    r, c = np.unravel_index(np.argmax(key), z.shape)
    assert same(got["v"], z[r, c]), (name, got, z[r, c])
    assert (got["row"], got["col"]) in _tied(z, key, rows, cols), (name, got)
    if name or not 1 < R <= MAX_ROWS or C == 1:
        return
    got = s.take("heatmap.rows.signed" if signed else "heatmap.rows", texts=("peaks",),
                 down=down, across=across, following=True)  # fmt: skip
    peaks = got["peaks"].split("; ")
    assert len(peaks) == int(shown.any(axis=1).sum()), (got, R)
    for i, item in zip([i for i in range(R) if shown[i].any()], peaks, strict=True):
        m = _ITEM.match(item)
        assert m and m["row"] == rows[i], (item, rows[i])
        k = key[i : i + 1]
        j = int(np.argmax(k))
        assert same(value(m["v"]), z[i, j]), (item, z[i, j])
        assert (m["row"], m["col"]) in _tied(z[i : i + 1], k, rows[i : i + 1], cols), item


def check_panel_peaks(said: str, grids: dict, rows, cols) -> None:
    """`panels.rest`'s list: each panel named, with its largest value (by magnitude where
    signed) and where it is (row → column), any tied cell."""
    rows, cols = [str(r) for r in positioned(rows)], [str(c) for c in positioned(cols)]
    peaks = said.split("; ")
    assert len(peaks) == len(grids), (len(peaks), len(grids))
    for item, (name, z) in zip(peaks, grids.items(), strict=True):
        m = re.match(rf"^{re.escape(name)} (?P<v>{NUMBER.pattern}) at (?P<row>.*) → (?P<col>.*)$",
                     item)  # fmt: skip
        assert m, (item, name)
        z = np.asarray(z, dtype=float)
        shown = np.isfinite(z)
        signed = bool(z[shown].min() < 0 < z[shown].max())
        key = np.where(shown, np.abs(z) if signed else z, -np.inf)
        r, c = np.unravel_index(np.argmax(key), z.shape)
        assert same(value(m["v"]), z[r, c]), (item, z[r, c])
        assert (m["row"], m["col"]) in _tied(z, key, rows, cols), item


def check_line(s: Sentences, name, x, y, across: str, *, following: bool = False,
               floor: float = 0.0) -> dict:  # fmt: skip
    """A curve over x (charts.md `line`, or `point` for one): its count, span, lowest and
    highest (at any tied x) and its end, against the true x and y. `floor`: values at most
    this in size are float rounding, and only need to be said that small. `name` may be a
    regex (`named`): the sentence's fields, its numbers included, are handed back."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if y.size == 1:
        got = s.take("point", name=name, x=across, following=following)
        assert same(got["at"], x[0]) and same(got["y"], y[0], floor=floor), (got, x, y)
        return got
    got = s.take("line", name=name, x=across, following=following)
    assert got["n"] == y.size and same(got["x0"], x[0]) and same(got["x1"], x[-1]), (got, x)
    assert same(got["lo"], y.min(), floor=floor), (name, got, y.min())
    assert same(got["hi"], y.max(), floor=floor), (name, got, y.max())
    assert same(got["last"], y[-1], floor=floor), (name, got, y[-1])
    if floor and np.abs(y).max() <= floor:  # rounding noise: its lowest and highest fall
        assert got["at_lo"] in x and got["at_hi"] in x, (name, got)  # at some point of it
        return got
    lo, hi = y.min(), y.max()
    assert any(same(got["at_lo"], a) for a in x[y <= lo + 1e-6 * abs(lo)]), (name, got)
    assert any(same(got["at_hi"], a) for a in x[y >= hi - 1e-6 * abs(hi)]), (name, got)
    return got


def named(text: str, *numbered: str) -> re.Pattern:
    """A name that holds numbers, for `take(..., name=named("head {i} (slope {s})", "i",
    "s"))`: `text` read literally but for each {field}, a number handed back as a float."""
    out = re.escape(text)
    for f in numbered:
        out = out.replace(re.escape("{" + f + "}"), f"(?P<{f}>{NUMBER.pattern})")
    return re.compile(out)
