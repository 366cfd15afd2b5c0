"""A cached chart's plotly JSON, made once and sent by every session that shows it.

`st.plotly_chart(fig)` turns the figure into a dict (`fig.to_dict()`, a deep copy) and
the dict into JSON (`plotly.io.to_json`, base64 for every array) on every run: about
1 ms a chart, four times a /scaling run, and again for each of a class's followers,
who all show the same cached charts. Pages cache their charts (`ui.cache_resource`),
so the JSON of one chart object never changes: `sent(chart)` makes it the first time
and hands Streamlit a stand-in that gives back the same dict and the same JSON after.

Two pieces of plotly and Streamlit this relies on, each checked by
tests/kit/test_streamlit_internals.py on the pinned versions:
- `st.plotly_chart` takes any `BaseFigure` by calling its `to_dict()` (through
  `plotly.tools.return_figure_from_figure_or_data`), and
- serialises that dict with `plotly.io.to_json(figure, validate=False)`, looked up on
  the module when it runs (so the wrapper below is the one it calls).
If either changes, `sent` logs a warning once and returns the figure itself: charts
are then serialised per run, as before, and nothing else changes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import plotly.io
import plotly.tools
from plotly.basedatatypes import BaseFigure

from figures import Chart

_LOG = logging.getLogger(__name__)
_KEPT = "_ui_plotly_sent"  # the attribute that keeps a chart's stand-in on the chart


class Spec(dict):
    """A figure's dict with its JSON, made once (plotly.io.to_json returns `json`)."""

    json: str = ""


class Sent(BaseFigure):
    """A stand-in for a figure whose dict and JSON are made: `to_dict()` returns the same
    Spec every time. Never initialised (BaseFigure's set-up would validate it again)."""

    spec: Spec

    def __init__(self) -> None:  # pragma: no cover - made only by `_stand_in`
        raise TypeError("made by ui.plotly_spec.sent")

    def to_dict(self) -> Spec:  # type: ignore[override]
        return self.spec


def _stand_in(spec: Spec) -> Sent:
    out = object.__new__(Sent)
    object.__setattr__(out, "spec", spec)
    return out


_to_json = plotly.io.to_json  # plotly's own


def to_json(fig: Any, *args: Any, **kw: Any) -> str:
    """plotly.io.to_json, except that a Spec gives back the JSON made for it."""
    if type(fig) is Spec and fig.json:
        return fig.json
    return _to_json(fig, *args, **kw)


def _works() -> bool:
    """Whether plotly and Streamlit still go the way this module expects (see above)."""
    try:
        spec = Spec({"data": [], "layout": {}})
        spec.json = '{"data":[],"layout":{}}'
        back = plotly.tools.return_figure_from_figure_or_data(_stand_in(spec), True)
        return back is spec and plotly.io.to_json(back, validate=False) is spec.json
    except Exception:  # any change in those pieces: fall back
        return False


plotly.io.to_json = to_json
WORKS = _works()
if not WORKS:  # pragma: no cover - only on another plotly or Streamlit
    _LOG.warning(
        "ui.plotly_spec: this plotly or Streamlit no longer takes a figure's cached JSON; "
        "every chart is serialised on every run"
    )


def sent(chart: Chart, look: Callable[[BaseFigure], BaseFigure] | None = None) -> BaseFigure:
    """What to hand st.plotly_chart for `chart`: its figure, serialised the first time.

    `look` restyles the figure (ui.share.for_projector): a function of the figure alone,
    so its result is kept on the chart too, one per look."""
    attr = _KEPT if look is None else f"{_KEPT}_{look.__module__}.{look.__qualname__}"
    if not WORKS:
        return chart.fig if look is None else look(chart.fig)
    kept = chart.__dict__.get(attr)
    if kept is None:
        fig = chart.fig if look is None else look(chart.fig)
        spec = Spec(fig.to_dict())
        spec.json = _to_json(spec, validate=False)
        kept = _stand_in(spec)
        object.__setattr__(chart, attr, kept)  # (Chart is a frozen dataclass)
    return kept
