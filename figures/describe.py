"""A chart in words: the text alternative a screen reader announces, from the drawn data.

`describe(fig, say)` reads the figure's own traces (the numbers plotly draws, the
same arrays the CSV download writes) and says what a sighted reader would take from
the picture: a grid's size, range, strongest cell and each row's peak; a line's span,
lowest and highest points and where it ends; a bar chart's bars; a histogram's range and
fullest bin. `say(key, **numbers)` supplies the words (ui passes the sections of
content/charts.md), so the sentences live in a content file and every number here comes
from the figure. No streamlit: tests call it on each figure builder's output.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(x: float, digits: int = 2) -> str:
    """A number for a sentence: 0.045 as it is, 3.8e-11 as 3.8 × 10⁻¹¹ (`digits` significant)."""
    if x == 0 or not math.isfinite(x) or 1e-3 <= abs(x) < 1e4:
        return f"{x:.{digits}g}"
    mantissa, exponent = f"{x:.{digits - 1}e}".split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    mantissa = mantissa.rstrip("0").rstrip(".") if "." in mantissa else mantissa
    return power if mantissa == "1" else f"{mantissa} × {power}"


Say = Callable[..., str]

MAX_ROWS = 12  # a grid's rows read out one by one up to this many, then only the peaks
MAX_BARS = 12  # bars read out one by one up to this many, then the extremes
MAX_TRACES = 6  # series read out; the rest counted

_TAG = re.compile(r"<[^>]+>")


def plain(text: Any) -> str:
    """A plotly label as plain words: tags dropped (<br> becomes a space), entities decoded."""
    text = re.sub(r"<br\s*/?>", " ", str(text or ""), flags=re.I)
    return " ".join(html.unescape(_TAG.sub("", text)).split())


def num(x: Any) -> str:
    """A value as a sentence shows it: 3 significant digits, tiny or huge ones as × 10ⁿ."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return plain(x)
    if not np.isfinite(x):
        return "NaN" if np.isnan(x) else ("inf" if x > 0 else "−inf")
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
    if 1e3 <= abs(x) < 1e6:  # 1,020 rather than 1.02e+03: 3 significant digits, no exponent
        return f"{float(f'{x:.3g}'):,.0f}"
    return sci(x, 3)


def array(v: Any) -> Any:
    """A trace's array as numpy, also when it arrives as plotly's JSON typed array
    ({"dtype", "bdata", "shape"}: a figure read back from the JSON sent to the browser)."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        shape = v.get("shape")
        if shape:
            a = a.reshape([int(n) for n in str(shape).split(",")])
        return a
    return v


def _label(labels: Any, i: int) -> str:
    if labels is None or i >= len(labels):
        return str(i)
    return num(labels[i]) if isinstance(labels[i], int | float | np.number) else plain(labels[i])


def _ticked(fig: go.Figure, axis: str, values: Any, n: int) -> list:
    """A grid's row or column names as its axis shows them: the tick text where the
    axis names its positions (figures.style.heatmap draws labels as ticks), else the
    trace's own coordinates, else 0..n-1."""
    values = list(values) if values is not None else list(range(n))
    a = getattr(fig.layout, axis, None)
    if a is not None and a.tickvals is not None and a.ticktext is not None:
        names = {float(v): t for v, t in zip(a.tickvals, a.ticktext, strict=False)}
        values = [names.get(float(v), v) if isinstance(v, int | float | np.number) else v
                  for v in values]  # fmt: skip
    return values


def _axis_title(fig: go.Figure, axis: str, fallback: str) -> str:
    a = getattr(fig.layout, axis, None)
    text = plain(a.title.text) if a is not None and a.title is not None else ""
    return text or fallback


# ------------------------------------------------------------ what a builder declares
#
# The generic reader below reads plotly's arrays, and those are the quantity only when the
# chart draws the quantity itself. A log colour scale, a mosaic of heads on one heatmap, a
# grey overlay, × marks and reference lines are not: a builder that draws one of them
# declares what it means, as parts (Chart.words), made from the same tensors it draws.


@dataclass(frozen=True)
class Grid:
    """A grid of values in the units of the chart's title (never a log of them)."""

    z: Any  # (rows, cols); NaN: a blank cell
    down: str  # what the rows are ("query")
    across: str  # what the columns are ("key")
    rows: Sequence | None = None  # row names, else 0..rows-1
    cols: Sequence | None = None
    name: str = ""  # the panel ("L0H2", "head 3"); "" for the chart's one grid
    blank: str = "blank"  # what a blank cell is: charts.md `blank.<this>`
    by_row: bool = True  # read each row's peak (up to MAX_ROWS rows)


@dataclass(frozen=True)
class Values:
    """One value per named thing (a dot per row, a bar per head), read one by one."""

    name: str
    labels: Sequence
    values: Sequence[float]


class Said:
    """A sentence of charts.md and the numbers that fill it, computed by the builder:
    Said("mask", allowed=36, total=64, …)."""

    __slots__ = ("key", "numbers")

    def __init__(self, key: str, /, **numbers: Any):
        self.key, self.numbers = key, numbers

    def __repr__(self) -> str:
        return f"Said({self.key!r}, **{self.numbers!r})"


Part = Grid | Values | Said
MAX_PANELS = 10  # grids read one by one; past this, each of the rest by its peak only


def positioned(labels: Sequence) -> list:
    """Labels that name one place each: where a label repeats (the word "the" twice), every
    label gets its position too ("the (5)"), so a cell's name says which token it is."""
    labels = list(labels)
    names = [plain(x) if isinstance(x, str) else x for x in labels]
    if len(set(map(str, names))) == len(names):
        return labels
    return [f"{plain(x)} ({i})" for i, x in enumerate(labels)]


def _signed(values: np.ndarray) -> bool:
    return bool(values.size and values.min() < 0 < values.max())


def _grid(g: Grid, say: Say, *, alone: bool = True) -> list[str]:
    """A grid's sentences: size and range, its largest (by magnitude, with its sign, where
    the values have both signs), its blank cells named for what they are, each row's peak.
    A yes/no grid gives counts instead. In a set of panels (`alone` False) each sentence
    starts with the panel's name."""
    z = np.asarray(g.z, dtype=float)
    z = z[None, :] if z.ndim == 1 else z
    who = plain(g.name) or say("grid")
    if not z.size or not np.isfinite(z).any():
        return [say("heatmap.empty", name=who)]
    rows, cols = z.shape
    down, across = g.down, g.across
    ys = positioned(g.rows) if g.rows is not None else list(range(rows))
    xs = positioned(g.cols) if g.cols is not None else list(range(cols))
    shown = np.isfinite(z)
    blank = int((~shown).sum())
    values = z[shown]
    lo, hi = float(values.min()), float(values.max())
    first = say("heatmap", rows=rows, cols=cols, down=down, across=across, lo=num(lo), hi=num(hi))
    out = [first if alone else say("panel", name=who, rows=rows, cols=cols, lo=num(lo),
                                   hi=num(hi))]  # fmt: skip
    if blank:
        out.append(say(f"blank.{g.blank}", n=blank, total=z.size))
    if np.isin(values, (0.0, 1.0)).all():  # a yes/no grid (a mask): counts, no "largest"
        ones = (np.where(shown, z, 0) == 1).sum(axis=1)
        counts = "; ".join(
            f"{_label(ys, i)}: {int(k)}" if shown[i].any() else say("row.none", row=_label(ys, i))
            for i, k in enumerate(ones[:MAX_ROWS])
        )  # a row with no number (NaN) is not a row of zeros
        more = "" if rows <= MAX_ROWS else say("rows.more", n=rows - MAX_ROWS)
        out.append(say("heatmap.binary", ones=int(ones.sum()), total=int(shown.sum()),
                       down=down, counts=counts + more))  # fmt: skip
        return out
    if lo == hi and values.size > 1:  # no cell stands out: no "largest" to name
        out.append(say("heatmap.flat", v=num(lo)))
        return out
    signed = _signed(values)
    key = np.where(shown, np.abs(z) if signed else z, -np.inf)
    r, c = np.unravel_index(np.argmax(key), z.shape)
    out.append(say("heatmap.strongest" if signed else "heatmap.peak", v=num(z[r, c]), down=down,
                   row=_label(ys, r), across=across, col=_label(xs, c)))  # fmt: skip
    if g.by_row and alone and 1 < rows <= MAX_ROWS and cols > 1:
        peaks = []
        for i in range(rows):
            if not shown[i].any():
                continue
            row = z[i][shown[i]]
            if row.min() == row.max() and row.size > 1:  # no cell stands out: say so
                peaks.append(say("heatmap.row.flat", row=_label(ys, i), v=num(row[0])))
                continue
            j = int(np.argmax(key[i]))
            peaks.append(say("heatmap.row", row=_label(ys, i), col=_label(xs, j),
                             v=num(z[i, j])))  # fmt: skip
        rows_key = "heatmap.rows.signed" if signed else "heatmap.rows"
        out.append(say(rows_key, down=down, across=across, peaks="; ".join(peaks)))
    return out


def _panel_peak(g: Grid, say: Say) -> str:
    """A panel in one phrase: its name and its largest value, and where."""
    z = np.asarray(g.z, dtype=float)
    shown = np.isfinite(z)
    if not shown.any():
        return say("heatmap.empty", name=plain(g.name))
    signed = _signed(z[shown])
    key = np.where(shown, np.abs(z) if signed else z, -np.inf)
    r, c = np.unravel_index(np.argmax(key), z.shape)
    ys = positioned(g.rows) if g.rows is not None else list(range(z.shape[0]))
    xs = positioned(g.cols) if g.cols is not None else list(range(z.shape[1]))
    return say("panel.peak", name=plain(g.name), v=num(z[r, c]), row=_label(ys, r),
               col=_label(xs, c))  # fmt: skip


def _values(v: Values, say: Say) -> str:
    items = "; ".join(
        say("bar.item", label=_label(list(v.labels), i), v=num(x))
        for i, x in enumerate(v.values)
        if np.isfinite(x)
    )
    return say("values", name=plain(v.name), n=len(v.values), items=items)


def read(parts: Sequence[Part], say: Say) -> list[str]:
    """The sentences of a chart's declared parts, in order. Grids that come together are a
    set of panels: up to MAX_PANELS are read one by one, each named; past that every other
    panel is still named, with its peak."""
    out: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(part, Grid):
            j = i
            while j < len(parts) and isinstance(parts[j], Grid):
                j += 1
            grids = list(parts[i:j])
            if len(grids) == 1:
                out += _grid(grids[0], say)
            else:
                out.append(say("panels", n=len(grids), down=grids[0].down,
                               across=grids[0].across))  # fmt: skip
                for g in grids[:MAX_PANELS]:
                    out += _grid(g, say, alone=False)
                rest = grids[MAX_PANELS:]
                if rest:
                    out.append(say("panels.rest", n=len(rest), down=rest[0].down,
                                   across=rest[0].across,
                                   peaks="; ".join(_panel_peak(g, say) for g in rest)))  # fmt: skip
            i = j
            continue
        if isinstance(part, Values):
            out.append(_values(part, say))
        elif isinstance(part, Said):
            out.append(say(part.key, **part.numbers))
        i += 1
    return out


def _meta(tr: Any) -> dict:
    m = getattr(tr, "meta", None)
    return m if isinstance(m, dict) else {}


def _one_colour(tr: Any) -> bool:
    """A heatmap drawn in a single colour: a layer over the grid (grey cells), not values."""
    scale = tr.colorscale
    return bool(scale) and len({str(c) for _, c in scale}) == 1


def _heatmap(tr: Any, fig: go.Figure, say: Say, *, alone: bool = True) -> list[str]:
    z = np.asarray(array(tr.z), dtype=float)
    if z.ndim == 1:
        z = z[None, :]
    rows, cols = z.shape if z.size else (0, 0)
    if _one_colour(tr):  # a layer of marked cells: how many, and what marks them
        n = int(np.isfinite(z).sum())
        return [say("heatmap.layer", name=plain(tr.name) or say("grid"), n=n, total=z.size)]
    grid = Grid(
        z,
        _axis_title(fig, "yaxis", say("row")),
        _axis_title(fig, "xaxis", say("column")),
        _ticked(fig, "yaxis", array(tr.y), rows),
        _ticked(fig, "xaxis", array(tr.x), cols),
        name=plain(tr.name),
        blank=_meta(tr).get("blank", "blank"),
    )
    return _grid(grid, say, alone=alone)


def _xy(tr: Any) -> tuple[np.ndarray, np.ndarray] | None:
    if tr.y is None:
        return None
    y = np.asarray(array(tr.y), dtype=object).ravel()
    x = np.asarray(array(tr.x), dtype=object).ravel() if tr.x is not None else np.arange(len(y))
    n = min(len(x), len(y))
    return x[:n], y[:n]


def _finite(y: np.ndarray) -> np.ndarray:
    """Which entries are numbers (None and NaN break a line in plotly)."""
    return np.array([isinstance(v, int | float | np.number) and np.isfinite(v) for v in y], bool)


PLANE_MAX = 12  # a scatter of at most this many points in a plane is read point by point


def _wanders(x: np.ndarray) -> bool:
    """Whether numeric x ever steps back (points in a plane, not a curve over x)."""
    if not all(isinstance(v, int | float | np.number) for v in x):
        return False
    d = np.diff(np.asarray(x, dtype=float))
    return bool((d < 0).any())  # a curve over x is drawn left to right


def _same(v: np.ndarray) -> bool:
    return (
        len(v) > 1
        and all(isinstance(a, int | float | np.number) for a in v)
        and (float(np.ptp(np.asarray(v, dtype=float))) == 0.0)
    )


def _line(tr: Any, i: int, say: Say, across: str) -> str | None:
    xy = _xy(tr)
    if xy is None:
        return None
    x, y = xy
    ok = _finite(y)
    if not ok.any():
        return None
    x, y = x[ok], y[ok].astype(float)
    name = plain(tr.name) or say("series", i=i + 1)
    if len(y) == 1:
        return say("point", name=name, x=across, at=_label(x, 0), y=num(y[0]))
    measured = "markers" in str(tr.mode or "")  # drawn point by point: data, not a guide
    if _same(y) and not measured:  # a line drawn across at one height: a reference level
        return say("level", name=name, y=num(y[0]))
    if _same(y):  # a measured series that happens to be flat: every point at one value
        return say("line.flat", name=name, n=len(y), x=across, x0=_label(x, 0),
                   x1=_label(x, len(x) - 1), y=num(y[0]))  # fmt: skip
    if _same(x):  # a vertical line: a mark at one x
        return say("mark", name=name, x=across, at=_label(x, 0))
    if _wanders(x):  # points in a plane (a hull, a cloud), not a curve over x
        if len(y) <= PLANE_MAX:
            pairs = ", ".join(f"({num(a)}, {num(b)})" for a, b in zip(x, y, strict=True))
            return say("points", name=name, n=len(y), points=pairs)
        xf = x.astype(float)
        top = int(np.argmax(y))
        return say("cloud", name=name, n=len(y), x0=num(xf.min()), x1=num(xf.max()),
                   y0=num(y.min()), y1=num(y.max()), at=num(xf[top]))  # fmt: skip
    lo, hi = int(np.argmin(y)), int(np.argmax(y))
    return say(
        "line", name=name, n=len(y), x=across, x0=_label(x, 0), x1=_label(x, len(x) - 1),
        lo=num(y[lo]), at_lo=_label(x, lo), hi=num(y[hi]), at_hi=_label(x, hi), last=num(y[-1]),
    )  # fmt: skip


def _bar(tr: Any, i: int, say: Say) -> str | None:
    horizontal = getattr(tr, "orientation", None) == "h"
    values, labels = (array(tr.x), array(tr.y)) if horizontal else (array(tr.y), array(tr.x))
    if values is None:
        return None
    v = np.asarray(values, dtype=object).ravel()
    labels = list(labels) if labels is not None else list(range(len(v)))
    ok = _finite(v)
    if not ok.any():
        return None
    name = plain(tr.name) or say("series", i=i + 1)
    idx = np.flatnonzero(ok)
    base = array(tr.base)
    if base is not None and len(idx) <= MAX_BARS:  # floating bars: each spans base → base + v
        b = np.broadcast_to(np.asarray(base, dtype=float), v.shape)
        bars = "; ".join(say("bar.span", label=_label(labels, k), a=num(b[k]),
                             b=num(b[k] + float(v[k]))) for k in idx)  # fmt: skip
        return say("bars", name=name, n=len(idx), bars=bars)
    if len(idx) <= MAX_BARS:
        bars = "; ".join(say("bar.item", label=_label(labels, k), v=num(v[k])) for k in idx)
        return say("bars", name=name, n=len(idx), bars=bars)
    vals = v[idx].astype(float)
    hi, lo = idx[int(np.argmax(vals))], idx[int(np.argmin(vals))]
    return say(
        "bars.many", name=name, n=len(idx), hi=num(v[hi]), at_hi=_label(labels, hi),
        lo=num(v[lo]), at_lo=_label(labels, lo),
    )  # fmt: skip


def _histogram(tr: Any, i: int, say: Say) -> str | None:
    data = array(tr.x if tr.x is not None else tr.y)
    if data is None:
        return None
    v = np.asarray(data, dtype=object).ravel()
    v = v[_finite(v)].astype(float)
    name = plain(tr.name) or say("series", i=i + 1)
    if not v.size:
        return say("histogram.empty", name=name)
    counts, edges = np.histogram(v, bins=min(20, max(5, v.size)) if v.min() < v.max() else 1)
    k = int(np.argmax(counts))
    return say(
        "histogram", name=name, n=v.size, lo=num(v.min()), hi=num(v.max()),
        most=int(counts[k]), a=num(edges[k]), b=num(edges[k + 1]),
    )  # fmt: skip


def _brief(tr: Any, say: Say, name: str) -> str:
    """A series not read in full: its name, and where it starts and ends, its lowest and
    highest (a series of bars: its lowest and highest)."""
    xy = _xy(tr) if tr.type == "scatter" else None
    if tr.type == "bar":
        horizontal = getattr(tr, "orientation", None) == "h"
        xy = (None, np.asarray(array(tr.x if horizontal else tr.y), dtype=object).ravel())
    if xy is None:
        return name
    y = xy[1]
    y = y[_finite(y)].astype(float)
    if not y.size:
        return name
    return say("brief", name=name, a=num(y[0]), b=num(y[-1]), lo=num(y.min()), hi=num(y.max()))


def _names(traces: Sequence[Any], say: Say, skipped: int) -> str:
    """The traces not read out, each one named and summed up (never dropped silently)."""
    return "; ".join(
        _brief(t, say, plain(t.name) or say("series", i=skipped + k + 1))
        for k, t in enumerate(traces)
    )


def _down(fig: go.Figure) -> bool:
    """Whether the y axis runs downwards (row 0 at the top)."""
    a = getattr(fig.layout, "yaxis", None)
    if a is None:
        return False
    r = a.range
    return a.autorange == "reversed" or bool(r is not None and len(r) == 2 and r[0] > r[1])


def describe(fig: go.Figure, say: Say, parts: Sequence[Part] = ()) -> str:
    """The chart in a few sentences: from the parts its builder declared (every number
    computed from the lesson's data), else read from its traces. A trace whose `meta`
    says {"words": "skip"} is drawing, not data (a click layer, grid lines); one whose
    `meta` holds {"say": key, "numbers": {...}} is read as that sentence."""
    title = plain(fig.layout.title.text) if fig.layout.title is not None else ""
    out = [say("title", title=title)] if title else []
    if parts:
        return " ".join(out + read(parts, say))
    traces = [tr for tr in fig.data if getattr(tr, "visible", True) not in (False, "legendonly")]
    traces = [tr for tr in traces if _meta(tr).get("words") != "skip"]
    grids = [tr for tr in traces if tr.type == "heatmap" and "say" not in _meta(tr)]
    for tr in grids[:MAX_TRACES]:  # several grids: each named by its trace's name
        out += _heatmap(tr, fig, say, alone=len(grids) == 1 or not plain(tr.name))
    if len(grids) > MAX_TRACES:
        out.append(say("more", n=len(grids) - MAX_TRACES,
                       names=_names(grids[MAX_TRACES:], say, MAX_TRACES)))  # fmt: skip
    # layers the builder named (grey cells, × marks): their own sentence, after the grids
    out += [say(m["say"], **m.get("numbers", {})) for m in map(_meta, traces) if "say" in m]
    series, named = [], []
    x, y = _axis_title(fig, "xaxis", say("x")), _axis_title(fig, "yaxis", say("y"))
    for i, tr in enumerate(t for t in traces if t.type != "heatmap" and "say" not in _meta(t)):
        if tr.type == "scatter":
            said = _line(tr, i, say, x)
        else:
            kind = {"bar": _bar, "histogram": _histogram}.get(tr.type)
            said = kind(tr, i, say) if kind else None
        if said:
            series.append(said)
            named.append(tr)
    if series:
        out.append(say("axes", x=x, y=y, up=say("down" if _down(fig) else "up")))
        out += series[:MAX_TRACES]
        if len(series) > MAX_TRACES:
            out.append(say("more", n=len(series) - MAX_TRACES,
                           names=_names(named[MAX_TRACES:], say, MAX_TRACES)))  # fmt: skip
    if len(out) <= (1 if title else 0):
        out.append(say("nothing"))
    return " ".join(out)
