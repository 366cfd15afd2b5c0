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
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .parts import sci

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
    if x == int(x) and abs(x) < 1e6:
        return str(int(x))
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


def _heatmap(tr: Any, fig: go.Figure, say: Say) -> list[str]:
    z = np.asarray(array(tr.z), dtype=float)
    if z.ndim == 1:
        z = z[None, :]
    if not z.size or not np.isfinite(z).any():
        return [say("heatmap.empty", name=plain(tr.name) or say("grid"))]
    rows, cols = z.shape
    down, across = _axis_title(fig, "yaxis", say("row")), _axis_title(fig, "xaxis", say("column"))
    ys, xs = _ticked(fig, "yaxis", array(tr.y), rows), _ticked(fig, "xaxis", array(tr.x), cols)
    shown = np.isfinite(z)
    masked = int((~shown).sum())
    lo, hi = float(z[shown].min()), float(z[shown].max())
    r, c = np.unravel_index(np.argmax(np.where(shown, z, -np.inf)), z.shape)
    out = [
        say("heatmap", rows=rows, cols=cols, down=down, across=across, lo=num(lo), hi=num(hi)),
        say("heatmap.peak", hi=num(hi), down=down, row=_label(ys, r), across=across,
            col=_label(xs, c)),
    ]  # fmt: skip
    if masked:
        out.append(say("heatmap.blank", n=masked, total=z.size))
    values = z[shown]
    if np.isin(values, (0.0, 1.0)).all():  # a yes/no grid (a mask): count, not peaks
        ones = (np.where(shown, z, 0) == 1).sum(axis=1)
        counts = "; ".join(f"{_label(ys, i)}: {int(k)}" for i, k in enumerate(ones[:MAX_ROWS]))
        out.append(say("heatmap.binary", ones=int(ones.sum()), total=int(shown.sum()),
                       down=down, counts=counts))  # fmt: skip
        return out
    if 1 < rows <= MAX_ROWS and cols > 1:
        peaks = []
        for i, line in enumerate(z):
            if np.isfinite(line).any():
                j = int(np.nanargmax(np.where(np.isfinite(line), line, -np.inf)))
                peaks.append(
                    say("heatmap.row", row=_label(ys, i), col=_label(xs, j), v=num(line[j]))
                )
        out.append(say("heatmap.rows", down=down, across=across, peaks="; ".join(peaks)))
    return out


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
    """Whether numeric x goes back and forth (points in a plane, not a curve over x)."""
    if not all(isinstance(v, int | float | np.number) for v in x):
        return False
    d = np.diff(np.asarray(x, dtype=float))
    return bool((d > 0).any() and (d < 0).any())


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
    if len(y) <= PLANE_MAX and _wanders(x):  # points in a plane (a hull, a cloud): each one
        pairs = ", ".join(f"({num(a)}, {num(b)})" for a, b in zip(x, y, strict=True))
        return say("points", name=name, n=len(y), points=pairs)
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


def describe(fig: go.Figure, say: Say) -> str:
    """The chart in a few sentences, every number read from its traces."""
    title = plain(fig.layout.title.text) if fig.layout.title is not None else ""
    out = [say("title", title=title)] if title else []
    traces = [tr for tr in fig.data if getattr(tr, "visible", True) not in (False, "legendonly")]
    grids = [tr for tr in traces if tr.type == "heatmap"]
    for tr in grids[:MAX_TRACES]:
        out += _heatmap(tr, fig, say)
    series = []
    x, y = _axis_title(fig, "xaxis", say("x")), _axis_title(fig, "yaxis", say("y"))
    for i, tr in enumerate(t for t in traces if t.type != "heatmap"):
        if tr.type == "scatter":
            said = _line(tr, i, say, x)
        else:
            kind = {"bar": _bar, "histogram": _histogram}.get(tr.type)
            said = kind(tr, i, say) if kind else None
        if said:
            series.append(said)
    if series:
        out.append(say("axes", x=x, y=y))
        out += series[:MAX_TRACES]
        if len(series) > MAX_TRACES:
            out.append(say("more", n=len(series) - MAX_TRACES))
    if len(out) <= (1 if title else 0):
        out.append(say("nothing"))
    return " ".join(out)
