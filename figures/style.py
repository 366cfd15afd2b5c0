"""One look for every chart: readable on a projector, colour-blind safe.

- Sequential data (weights, probabilities): Viridis, perceptually uniform and
  readable with every common colour-vision deficiency and in greyscale.
- Signed data (scores, logits): a blue–orange diverging scale centred on 0.
- Lines: the Okabe–Ito palette, designed to be distinguishable by everyone.
- Hover and colour bars use 3 significant digits, so 3.8e-11 shows as 3.8e-11.
"""

from __future__ import annotations

import html
import re
import string
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .describe import describe

# Okabe & Ito (2008): distinguishable under protanopia, deuteranopia, tritanopia.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
SEQUENTIAL = "Viridis"
# Blue (negative) – white – orange (positive): a diverging pair safe for red–green deficiency.
DIVERGING = [
    [0.0, "#2166AC"],
    [0.25, "#67A9CF"],
    [0.5, "#F7F7F7"],
    [0.75, "#F4A582"],
    [1.0, "#B35806"],
]
FONT = dict(size=15)
NUM_FMT = ".3~g"  # d3-format: 0.045, 3.8e-11, 1.2e+03
# One 0–1 colour axis for attention weights shared by every panel of a small-multiples figure.
WEIGHT_COLORAXIS = dict(
    colorscale=SEQUENTIAL,
    cmin=0.0,
    cmax=1.0,
    colorbar=dict(title=dict(text="weight"), tickformat=NUM_FMT, thickness=14),
)


@dataclass(frozen=True)
class Chart:
    """A figure with the caption that tells the reader what to notice."""

    fig: go.Figure
    caption: str
    alt: str = ""  # a one-line description for screen readers; defaults to the title
    # the numbers for the CSV download when the drawn figure does not hold them (a map
    # drawn as an image); None: the drawn figure's own traces
    table: go.Figure | None = None
    # what the chart means, declared by its builder from the lesson's tensors
    # (figures.describe: Grid, Values, Said) where plotly's arrays are not the quantity
    # (a log scale, a mosaic of heads, overlays); () reads the drawn traces
    words: tuple = ()

    def in_words(self, say) -> str:
        """The chart's text alternative: from its declared words, else read from the
        numbers it draws (a map drawn as an image from its table); `say(key, **numbers)`
        gives the sentences (content/charts.md)."""
        if self.words:  # declared words: under the title the reader sees
            return describe(self.fig, say, self.words)
        return describe(self.table or self.fig, say)

    def __post_init__(self):
        if not self.alt:
            title = self.fig.layout.title.text or ""
            object.__setattr__(self, "alt", title)
        if self.words:  # tells a reader of the sent figure (the tests) whose words these are
            self.fig.layout.meta = dict(self.fig.layout.meta or {}, words="declared")


def to_numpy(x: Any) -> np.ndarray:
    """Tensor or array -> float32 numpy (sent to the browser as a compact binary array)."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.ascontiguousarray(np.asarray(x, dtype=np.float32))


def base_layout(title: str, x_title: str, y_title: str, *, height: int = 380) -> dict:
    return dict(
        title=dict(text=title, x=0.0, xanchor="left", font=dict(size=17)),
        xaxis=dict(title=dict(text=x_title)),
        yaxis=dict(title=dict(text=y_title)),
        font=FONT,
        height=height,
        margin=dict(l=10, r=10, t=50, b=10),
        hoverlabel=dict(font_size=14),
    )


def line_layout(title: str, x_title: str, y_title: str, *, height: int = 380, **kw) -> dict:
    layout = base_layout(title, x_title, y_title, height=height)
    layout["colorway"] = OKABE_ITO
    layout["legend"] = dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0)
    layout.update(kw)
    return layout


def _ticks(labels: list[str] | None, n: int) -> dict:
    if labels is None:
        return dict(tickmode="auto") if n > 16 else dict(tickmode="linear", dtick=1)
    if len(labels) != n:
        raise ValueError(f"{len(labels)} labels for {n} cells")
    return dict(tickmode="array", tickvals=list(range(n)), ticktext=[str(t) for t in labels])


def heatmap(
    z: Any,
    *,
    title: str,
    x_title: str,
    y_title: str,
    x_labels: list[str] | None = None,
    y_labels: list[str] | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
    diverging: bool = False,
    colorbar_title: str = "",
    show_values: bool | None = None,
    height: int = 380,
) -> go.Figure:
    """A labelled heatmap, row 0 at the top like a matrix.

    Values are float32 numpy; per-cell text is drawn only up to 12×12 so large
    maps stay light. Non-finite cells (masked logits) are left blank and named
    in the hover text.
    """
    z = to_numpy(z)
    n_rows, n_cols = z.shape
    if show_values is None:
        show_values = n_rows <= 12 and n_cols <= 12
    finite = z[np.isfinite(z)]
    if diverging and finite.size:
        lim = float(np.abs(finite).max()) or 1.0
        zmin, zmax = (-lim, lim) if zmin is None else (zmin, zmax)
    trace = dict(
        z=np.where(np.isfinite(z), z, np.nan).astype(np.float32),
        colorscale=DIVERGING if diverging else SEQUENTIAL,
        zmin=zmin,
        zmax=zmax,
        colorbar=dict(title=dict(text=colorbar_title), tickformat=NUM_FMT, thickness=14),
        hovertemplate=(
            f"{y_title} #%{{y}}<br>{x_title} #%{{x}}<br>value %{{z:{NUM_FMT}}}<extra></extra>"
        ),
        xgap=1,
        ygap=1,
    )
    # Positions are numeric and labels are tick text, so repeated words ("the" twice)
    # keep their own rows instead of merging into one category.
    if show_values:
        trace["texttemplate"] = "%{z:.2~g}"
        trace["textfont"] = dict(size=12)
    fig = go.Figure(go.Heatmap(**trace))
    layout = base_layout(title, x_title, y_title, height=height)
    layout["yaxis"].update(autorange="reversed", **_ticks(y_labels, n_rows))
    layout["xaxis"].update(side="bottom", **_ticks(x_labels, n_cols))
    fig.update_layout(**layout)
    return fig


def plot_label(token: object, limit: int = 10) -> str:
    """User text (a token, a word) as plain text for plotly, which reads a subset of HTML:
    printable characters only, escaped (no tags), at most `limit` characters."""
    s = "".join(ch for ch in str(token) if ch.isprintable())
    s = s if len(s) <= limit else s[: limit - 1] + "…"
    return html.escape(s, quote=False) or "·"


# ------------------------------------------------ user text in markdown (notes, captions)

_ZW = "\u200b"  # zero-width space: invisible, and breaks what works on the parsed text
_PUNCT = frozenset(string.punctuation)  # CommonMark lets a backslash escape each of these


def escape(text: Any, limit: int = 40, *, code: bool = False) -> str:
    """User or URL text made literal for markdown: the one function every page uses.

    The text is made one printable line and cut to `limit` characters (then "…"), so a
    link cannot fill the page. Then, for plain markdown (notes, captions, labels):
    every ASCII punctuation mark is backslash-escaped, which stops emphasis, links and
    images, raw HTML, headings, lists, tables and `$` maths; and a zero-width space
    after each `:` and `@`, and between `w` and `.`, breaks what Streamlit finds in the
    already parsed text, where escapes no longer count: `:red[…]` colour directives,
    `:material/…:` icons, `:emoji:` shortcodes, and the autolinks of bare `https://…`,
    `www.…` and e-mail addresses.

    With `code=True` the result goes between backticks (a code span, where markdown,
    maths and directives are not read): only backticks, which would end it, are replaced.
    """
    s = re.sub(r"\s", " ", str(text))  # newlines and tabs would end a line, a list, a table
    s = "".join(ch for ch in s if ch.isprintable())  # also drops bidi overrides
    if len(s) > limit:
        s = s[:limit] + "…"
    if code:
        return s.replace("`", "'") or " "
    s = re.sub(r"(?i)(?<=w)(?=\.)", _ZW, s)  # www.example.com
    out = []
    for ch in s:
        out.append("\\" + ch if ch in _PUNCT else ch)
        if ch in ":@":
            out.append(_ZW)  # :red[…], :smile:, https://…, a@b.com
    return "".join(out)


def safe_text(text: Any, limit: int = 40) -> str:
    """`escape` for inside a code span: f"`{safe_text(x)}`"."""
    return escape(text, limit, code=True)
