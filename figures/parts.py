"""The parts every figure module shares: named colours, the one grey, reference lines
and their labels, a legend under the plot, a fast figure constructor, number formats.

Lines and labels are plain layout dicts (`shapes`, `annotations`): cheaper than
fig.add_hline, which re-validates the whole figure on every call.
"""

from __future__ import annotations

import math
from functools import lru_cache

import plotly.graph_objects as go
from plotly.colors import get_colorscale

from attn_core.cost import format_bytes

from .describe import sci
from .style import OKABE_ITO

BLUE, ORANGE, GREEN, VERMILION, PURPLE, SKY, YELLOW, BLACK = OKABE_ITO
GREY = "#767676"  # the one grey: reference lines, baselines and their labels (4.5:1 on white)

__all__ = [
    "BLACK",
    "BLUE",
    "GREEN",
    "GREY",
    "ORANGE",
    "PURPLE",
    "SKY",
    "VERMILION",
    "YELLOW",
    "fast_figure",
    "fmt",
    "fmt_value",
    "format_bytes",
    "hline",
    "hline_labelled",
    "label",
    "legend_below",
    "sci",
    "vline",
    "vline_labelled",
]


# ------------------------------------------------------------------------------ lines


def hline(y: float, *, color: str = GREY, dash: str = "dot", width: float = 2, x0=0, x1=1):
    """A horizontal rule across the plot (shapes take data values, also on log axes)."""
    return dict(
        type="line", xref="paper", x0=x0, x1=x1, yref="y", y0=y, y1=y,
        line=dict(color=color, dash=dash, width=width),
    )  # fmt: skip


def vline(x: float, *, color: str = GREY, dash: str = "dot", width: float = 2, xref="x"):
    """A vertical rule from the bottom of the plot to its top."""
    return dict(
        type="line", yref="paper", y0=0, y1=1, xref=xref, x0=x, x1=x,
        line=dict(color=color, dash=dash, width=width),
    )  # fmt: skip


def label(x, y, text: str, *, xref="paper", yref="y", xanchor="right", yanchor="bottom",
          color: str = GREY, size: int | None = None) -> dict:  # fmt: skip
    """A text label on a white backing; on a log axis pass log10 of the value."""
    font = dict(color=color) | (dict(size=size) if size else {})
    return dict(
        x=x, xref=xref, y=y, yref=yref, text=text, showarrow=False, xanchor=xanchor,
        yanchor=yanchor, font=font, bgcolor="rgba(255,255,255,0.8)",
    )  # fmt: skip


def hline_labelled(y: float, text: str, *, color: str = GREY, dash: str = "dot",
                   side: str = "left", log: bool = False) -> tuple[dict, dict]:  # fmt: skip
    """A horizontal rule and its label at the left or right end, just above the line."""
    x = 0.01 if side == "left" else 0.99
    note = label(x, math.log10(y) if log else y, text, xanchor=side, color=color)
    return hline(y, color=color, dash=dash), note


def vline_labelled(x: float, text: str, *, color: str = GREY, dash: str = "dot",
                   log: bool = False) -> tuple[dict, dict]:  # fmt: skip
    """A vertical rule and its label hanging at the top, left of the line."""
    at = math.log10(x) if log else x
    note = label(at, 0.98, text + " ", xref="x", yref="paper", yanchor="top", color=color)
    return vline(x, color=color, dash=dash), note


# ------------------------------------------------------------------------------ layout


def legend_below(layout: dict, y: float = -0.22, extra: int = 0) -> dict:
    """The legend under the plot, left-aligned, so it never collides with a long title;
    `extra` px are added to the height and the bottom margin to make room for it."""
    layout["legend"] = dict(orientation="h", y=y, yanchor="top", x=0, xanchor="left")
    if extra:
        layout["height"] = layout.get("height", 380) + extra
        margin = layout.get("margin", {})
        layout["margin"] = dict(margin, b=margin.get("b", 10) + extra)
    return layout


# plotly's own property names with an underscore (every other `_` is a path shorthand)
_UNDERSCORED = frozenset(
    ("paper_bgcolor", "plot_bgcolor", "error_x", "error_y", "error_z", "copy_ystyle", "copy_zstyle")
)


@lru_cache(maxsize=32)
def _stops(name: str) -> list:
    """A named scale's stops (plotly's lookup takes ~0.25 ms: once per name, not per rerun)."""
    return get_colorscale(name)


def _spelled_out(spec: dict) -> dict:
    """A spec as plotly.js reads it: what validation would otherwise have done for us.

    Apart from a few (`plot_bgcolor`, `error_y` …), plotly's property names hold no
    underscore, so `font_size` is the Python shorthand for `font.size`; plotly.js does not
    know it and would silently drop it.
    A colour scale given by name ("Viridis") becomes its stops: plotly.js has its own
    table of names, with different stops for some of them."""
    out: dict = {}
    for key, value in spec.items():
        if isinstance(value, dict):
            value = _spelled_out(value)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            value = [_spelled_out(v) for v in value]  # annotations, shapes
        elif key == "colorscale" and isinstance(value, str):
            value = _stops(value)
        head, _, rest = key.partition("_")
        if rest and head and key not in _UNDERSCORED:
            value = _spelled_out({rest: value})
            key = head
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            value = _merge(out[key], value)
        out[key] = value
    return out


def _merge(a: dict, b: dict) -> dict:
    """`b` over `a`, nested dicts merged (`font=dict(color=…)` with `font_size=…`)."""
    out = dict(a)
    for key, value in b.items():
        both = isinstance(value, dict) and isinstance(out.get(key), dict)
        out[key] = _merge(out[key], value) if both else value
    return out


def fast_figure(data: list, layout: dict, margin: dict | None = None) -> go.Figure:
    """One constructor call with plain dicts, without plotly's per-property validation.

    Validation costs ~10 ms per figure here, most of a calculator rerun; the figure
    tests re-validate every builder's output (`go.Figure(chart.fig.to_dict())`), so a
    typo in a property name still fails, in CI instead of per rerun. `margin` (l, r,
    t, b px) should leave room for every label: then plotly's auto-margin has nothing
    to grow and lays the figure out once per update instead of twice.
    """
    layout = _spelled_out(layout)
    data = [_spelled_out(trace) if isinstance(trace, dict) else trace for trace in data]
    layout = dict(layout, template=dict(layout={}))  # Streamlit's theme styles the chart;
    if margin is not None:  # plotly's default template would add ~6 KB to every rerun
        layout["margin"] = margin
    for name, axis in layout.items():
        if name.startswith(("xaxis", "yaxis")):
            # "allow": skip the check that measures every tick label once per label
            # (quadratic; labels here never run past the figure's edge)
            layout[name] = dict(axis, ticklabeloverflow="allow")
    return go.Figure(data=data, layout=layout, _validate=False)


# ------------------------------------------------------------------------------ numbers


def fmt(x: float, digits: int = 4) -> str:
    """A number for a table: 0.0730, 8.467, 2.3e+38, inf, NaN."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def fmt_value(x: float) -> str:
    """−inf, −1e+04, −6.55e+04 …: short, with a true minus sign, honest about infinities."""
    if math.isinf(x):
        return "−inf" if x < 0 else "inf"
    if math.isnan(x):
        return "NaN"
    return f"{x:.3g}".replace("-", "−")
