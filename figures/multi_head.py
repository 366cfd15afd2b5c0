"""Pictures for the multi-head page: heads side by side, outputs, interference, diversity, cost.

Numpy/tensors in, `Chart` (figure + what to notice) or markdown table text out. Token
labels may come from a user's sentence: they are HTML-escaped here before plotly sees
them (plotly renders a few HTML tags in tick text), and shortened so ticks stay legible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go

from .describe import Grid, num
from .parts import vline
from .style import (
    NUM_FMT,
    OKABE_ITO,
    WEIGHT_COLORAXIS,
    Chart,
    heatmap,
    line_layout,
    plot_label,
    to_numpy,
)

MAX_PANELS = 16  # heads drawn one by one; the rest are summarised
X_KEY = "key (attended to)"
Y_QUERY = "query (attending)"


def _labels(tokens: list[str]) -> list[str]:
    """Tick text for tokens. Cells sit at numeric positions, so a repeated word keeps its row."""
    return [plot_label(t) for t in tokens]


def _row_labels(tokens: list[str]) -> list[str] | None:
    """Token names for a heatmap's rows, or None (plain auto ticks) when too many to read.

    Every tick label is SVG text the browser lays out on each redraw: 64 of them, overlapping,
    cost more than the heatmap itself."""
    return _labels(tokens) if len(tokens) <= 24 else None


# ----------------------------------------------------------------------------- heads side by side


def _mosaic_shape(n: int, T: int, most: int | None = None) -> tuple[int, int, int, int, int]:
    """(cols, rows, gx, gy, height): the panel grid, blank cells between panels, plot height.

    The vertical gap must hold a panel title (about 24 px) at the height the plot gets.
    `most`: at most this many columns (a phone's 390 px hold two readable panels)."""
    cols = n if n <= 5 else (5 if n <= 10 else 6)  # 9 panels (h = 8) fit in two rows
    cols = min(cols, most) if most else cols
    rows = math.ceil(n / cols)
    height = 110 + 225 * rows
    plot_px = height - 130  # minus the top and bottom margins
    gy = math.ceil(24 * rows * T / (plot_px - 24 * (rows - 1))) if rows > 1 else 1
    return cols, rows, max(1, math.ceil(T / 6)), gy, height


@dataclass(frozen=True)
class _Mosaic:
    """The panel grid of heads_grid: where each head's (T, T) map sits among the cells."""

    h: int  # heads in the layer
    T: int
    shown: int  # heads drawn one by one (at most MAX_PANELS)
    cols: int
    rows: int
    sx: int  # one panel plus its gap, in cells, across…
    sy: int  # …and down
    height: int  # px

    @property
    def cells(self) -> tuple[int, int]:
        """(rows, columns) of the tiled heatmap, gaps included (none after the last panel)."""
        return self.rows * self.sy - (self.sy - self.T), self.cols * self.sx - (self.sx - self.T)

    @property
    def spots(self) -> list[tuple[int, int]]:
        """(row, col) of each panel: the heads drawn, then their average."""
        return [divmod(i, self.cols) for i in range(self.shown + 1)]


def _mosaic(h: int, T: int, most: int | None = None) -> _Mosaic:
    shown = min(h, MAX_PANELS)
    cols, rows, gx, gy, height = _mosaic_shape(shown + 1, T, most)
    return _Mosaic(h, T, shown, cols, rows, T + gx, T + gy, height)


def _tiles(w: np.ndarray, m: _Mosaic) -> tuple[np.ndarray, np.ndarray]:
    """(z, where): the heads tiled with blank (NaN) gaps, and what hover names per cell.

    Hover names the head, query and key of a cell; on large maps only the head (three
    numbers per cell cost the browser one small array per cell to unpack)."""
    T, small = m.T, m.T <= 24
    z = np.full(m.cells, np.nan, dtype=np.float32)  # the gaps stay blank
    where = np.zeros(z.shape + ((3,) if small else ()), dtype=np.uint8)
    q, k = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    for j, (r, c) in enumerate(m.spots[: m.shown]):
        cells = slice(r * m.sy, r * m.sy + T), slice(c * m.sx, c * m.sx + T)
        z[cells] = w[j]
        where[cells] = np.stack([np.full_like(q, j + 1), q, k], -1) if small else j + 1
    return z, where


def _mosaic_traces(w: np.ndarray, m: _Mosaic) -> list:
    """The tiled heads, then their average as a second heatmap in the last slot."""
    z, where = _tiles(w, m)
    small = m.T <= 24
    q, k = np.meshgrid(np.arange(m.T), np.arange(m.T), indexing="ij")
    ra, ca = m.spots[-1]
    qk = "<br>query #%{customdata[1]} → key #%{customdata[2]}" if small else ""
    avg_where = np.stack([np.zeros_like(q), q, k], -1).astype(np.uint8) if small else None
    return [
        go.Heatmap(
            z=z,
            customdata=where,
            coloraxis="coloraxis",
            hoverongaps=False,
            name="heads (tiled, blank cells between panels)",
            hovertemplate=("head %{customdata[0]}" if small else "head %{customdata}")
            + f"{qk}<br>weight %{{z:{NUM_FMT}}}<extra></extra>",
        ),
        go.Heatmap(
            z=w.mean(0),  # (T, T)
            x0=ca * m.sx,
            y0=ra * m.sy,
            customdata=avg_where,
            coloraxis="coloraxis",
            name=f"average of {m.h}",
            hovertemplate=f"average of {m.h} heads{qk}<br>weight %{{z:{NUM_FMT}}}<extra></extra>",
        ),
    ]


def _panel_titles(m: _Mosaic, focus: Any | None, short: bool = False) -> list[dict]:
    """A title above each panel: the head (and its focus), or the average. `short`: a
    phone's narrow panels, "head 1 · 0.51"."""
    out = []
    n = m.shown + 1
    for i, (r, c) in enumerate(m.spots):
        is_avg = i == n - 1
        name = f"<b>average of {m.h}</b>" if is_avg else f"head {i + 1}"
        extra = f" · focus {float(focus[i]):.2f}" if focus is not None and not is_avg else ""
        if short:
            extra = extra.replace(" focus", "")
        out.append(
            dict(
                text=name + extra,
                x=c * m.sx + (m.T - 1) / 2,
                y=r * m.sy - 0.5,
                xref="x",
                yref="y",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=13 if m.cols < 6 else 12, color=OKABE_ITO[3] if is_avg else "#333"),
            )
        )
    return out


def _mosaic_axes(m: _Mosaic, tokens: list[str] | None) -> dict:
    """The shared x and y axes: square cells, row 0 on top, token labels where they fit.

    Token labels left of each row of panels and under the bottom-left panel only: every
    panel shares these axes, and each label is SVG text the browser has to lay out.
    Random vectors have no words: their positions 1…T name the rows and columns instead."""
    T, shape = m.T, m.cells
    labels = _labels(tokens) if tokens is not None else [str(i + 1) for i in range(T)]
    axis = dict(showgrid=False, zeroline=False, tickfont=dict(size=10))
    if labels and T <= 16:
        x_ticks = dict(tickmode="array", tickvals=list(range(T)), ticktext=labels)
        y_ticks = dict(
            tickmode="array",
            tickvals=[r * m.sy + j for r in range(m.rows) for j in range(T)],
            ticktext=labels * m.rows,
        )
    else:
        x_ticks = y_ticks = dict(showticklabels=False, ticks="")
    long = max((len(t) for t in labels), default=0) > 3
    return dict(
        xaxis=dict(
            title=dict(text=X_KEY),
            range=[-0.5, shape[1] - 0.5],
            constrain="domain",
            tickangle=-60 if long else None,  # None: auto
            **axis,
            **x_ticks,
        ),
        yaxis=dict(
            title=dict(text=Y_QUERY),
            range=[shape[0] - 0.5, -0.5],  # row 0 at the top, like a matrix
            scaleanchor="x",  # square cells: a T×T map is drawn as a square
            constrain="domain",
            **axis,
            **y_ticks,
        ),
    )


def _grid_caption(w: np.ndarray) -> str:
    """What to notice: each head against the average, measured on these weights."""
    h = w.shape[0]
    more = (
        f" Heads {MAX_PANELS + 1}–{h} are not drawn one by one; the focus chart below covers all."
        if h > MAX_PANELS
        else ""
    )
    avg_focus = float(w.mean(0).max(-1).mean())  # mean largest weight of the average map
    head_focus = float(w.max(-1).mean())  # …and of a head, averaged over the heads
    if h == 1:
        compare = "With one head the average is that head's own map: nothing is blurred."
    else:
        flatter = "flatter" if avg_focus < head_focus else "no flatter"
        compare = (
            f"Each head keeps its own pattern, while the average is {flatter}: its rows put "
            f"{avg_focus:.2f} on their favourite token, against {head_focus:.2f} for a head. "
            "Averaging the heads (which is what one head would have to do) blurs the patterns "
            "together."
        )
    return (
        "Each small map is one head: row = a token asking, column = a token being read, one "
        "colour scale for all. Compare the heads with the last panel, their **average**. "
        + compare
        + more
    )


def heads_grid(
    weights: Any,
    tokens: list[str] | None,
    *,
    focus: Any | None = None,
    columns: int | None = None,
) -> Chart:
    """Small multiples: up to 16 heads' (T, T) weights, then their average, on one 0–1 scale.

    `tokens` label the rows and columns of small maps; None (random vectors, nothing to
    name) labels them with positions 1…T. `columns`: at most this many panels a row (a
    phone: 2), more rows instead.

    Drawn on ONE pair of axes: the heads are tiled into one heatmap with blank (NaN) cells
    between the panels, and the average is a second heatmap in the last slot. In a browser
    every subplot costs its own axes, ticks and trace; 17 subplots redrew several times
    slower than this mosaic.
    """
    w = to_numpy(weights)  # (h, T, T)
    h, T, _ = w.shape
    m = _mosaic(h, T, columns)
    narrow = m.cols <= 2 and columns is not None
    fig = go.Figure(_mosaic_traces(w, m))
    fig.update_layout(
        title=dict(
            text=f"Every head's attention weights ({m.shown} of {h} heads shown) and their average",
            x=0.0,
            xanchor="left",
            font=dict(size=17),
        ),
        font=dict(size=13),
        height=m.height,
        margin=dict(l=70, r=10, t=70, b=60) if not narrow else dict(l=44, r=4, t=70, b=110),
        # a phone's two columns get the width: the colour bar lies under them
        coloraxis=WEIGHT_COLORAXIS
        if not narrow
        else {
            **WEIGHT_COLORAXIS,
            "colorbar": dict(
                WEIGHT_COLORAXIS["colorbar"],
                orientation="h",
                y=-0.06,
                yanchor="top",
                len=1.0,
                title=dict(text="weight", side="top"),
            ),
        },
        annotations=_panel_titles(m, focus, short=narrow),
        hoverlabel=dict(font_size=14),
        plot_bgcolor="white",
        **_mosaic_axes(m, tokens),
    )
    labels = _labels(tokens) if tokens is not None else [str(i + 1) for i in range(T)]
    average = f"the average of the {h} heads" if h > 1 else "the average of the one head"
    words = tuple(
        Grid(z, Y_QUERY, X_KEY, labels, labels, name=name)
        for z, name in [(w.mean(0), average)] + [(w[i], f"head {i + 1}") for i in range(h)]
    )
    return Chart(fig, _grid_caption(w), words=words)


def focus_bars(focus: Any, avg_focus: float, T: int) -> Chart:
    """Each head's mean largest weight, against the average map's and a uniform row's."""
    f = to_numpy(focus)
    h = f.shape[0]
    fig = go.Figure(
        go.Bar(
            x=np.arange(1, h + 1),
            y=f,
            marker_color=OKABE_ITO[0],
            name="one head",
            hovertemplate=f"head %{{x}}<br>mean largest weight %{{y:{NUM_FMT}}}<extra></extra>",
        )
    )
    ends = [0.5, h + 0.5]
    for y, name, style in (
        # 3 significant digits, as the words read the line (1/64 is 0.0156, not 0.02)
        (avg_focus, f"the averaged map: {avg_focus:.3g}", dict(color=OKABE_ITO[3], dash="dash")),
        (1.0 / T, f"uniform, 1/T = {1.0 / T:.3g}", dict(color="#555", dash="dot")),
    ):
        fig.add_trace(
            go.Scatter(x=ends, y=[y, y], mode="lines", line=dict(width=3, **style), name=name)
        )
    fig.update_layout(
        **line_layout(
            "How sharply each head focuses",
            "head",
            "mean largest weight in a row",
            height=340,
            margin=dict(l=10, r=10, t=80, b=10),
        )
    )
    fig.update_xaxes(tickmode="linear" if h <= 16 else "auto", dtick=1)
    fig.update_yaxes(range=[0, 1.05])
    above = int((f > avg_focus).sum())
    if h == 1:
        where = "the same as the one head: there is nothing to average"
    elif above > h / 2:
        where = f"lower than {above} of the {h} heads, because averaging spreads attention out"
    else:
        where = f"lower than only {above} of the {h} heads"
    caption = (
        "Bar = how much of its attention a head puts, on average, on its single favourite token "
        "(1 = always one token, 1/T = spread evenly). The dashed line is the same measure for "
        f"the averaged map: {where}."
    )
    return Chart(fig, caption)


# ----------------------------------------------------------------------------- outputs


def _signed_map(z, title: str, x_title: str, tokens: list[str], show_values=False):
    """Token rows against vector components, signed values on a diverging scale."""
    return heatmap(
        z,
        title=title,
        x_title=x_title,
        y_title="token",
        y_labels=_row_labels(tokens),
        diverging=True,
        colorbar_title="value",
        show_values=show_values,
        height=360,
    )


def head_output_heatmap(o: Any, tokens: list[str], head: int) -> Chart:
    """One head's output (T, d_k), signed values on a diverging scale."""
    z = to_numpy(o)
    T, d_k = z.shape
    title = f"Head {head}'s output: T × d_k = {T} × {d_k}"
    x_title = "component of the head's subspace (d_k)"
    fig = _signed_map(z, title, x_title, tokens, show_values=T <= 12 and d_k <= 12)
    if d_k > 24:
        fig.update_traces(xgap=0)
    if T > 24:
        fig.update_traces(ygap=0)
    caption = (
        f"Each row is what head {head} hands back to one token: a weighted average of the "
        f"head's own {d_k}-number value vectors. Rows that look alike came from similar weights."
    )
    return Chart(fig, caption)


def concat_heatmap(concat: Any, tokens: list[str], h: int, head: int) -> Chart:
    """(T, d_model) heads glued side by side before W_o, head boundaries drawn."""
    z = to_numpy(concat)
    T, d_model = z.shape
    d_k = d_model // h
    title = f"All heads concatenated before W_o: T × d_model = {T} × {d_model}"
    fig = _signed_map(z, title, "component of d_model (head 1's slice first)", tokens)
    fig.update_traces(xgap=0, ygap=0)
    # every shape in one layout update: add_vline re-validates all earlier shapes on each
    # call, which took 1.4 s of server CPU for the 63 boundaries of 64 heads
    bounds = [vline(j * d_k - 0.5, color="#222", dash="solid", width=1) for j in range(1, h)]
    x0 = (head - 1) * d_k - 0.5
    box = dict(type="rect", x0=x0, x1=x0 + d_k, y0=-0.5, y1=T - 0.5,
               line=dict(color=OKABE_ITO[4], width=4))  # fmt: skip
    fig.update_layout(shapes=[*(bounds if h <= 64 else []), box])
    fig.update_xaxes(tickmode="auto")
    # each column named by its head's slice, as the lines on the chart show it
    slices = [f"head {j // d_k + 1} · component {j % d_k}" for j in range(d_model)]
    # rows named as the axis names them (and as the head's output map beside it does):
    # the tokens while they are ticked, else positions 0…T-1
    rows = _row_labels(tokens) or list(range(T))
    words = (Grid(z, "token", "column", rows, slices),)
    caption = (
        f"The {h} head outputs side by side, {d_k} columns each (thin lines mark the slices). "
        f"The pink box is head {head}, the map on the left. Nothing is mixed yet: only W_o, "
        "applied next, combines what the heads found."
    )
    return Chart(fig, caption, words=words)


# ----------------------------------------------------------------------------- the tired cat


def vec(v) -> str:
    """[4, 0]: a short vector as the lesson writes it."""
    return "[" + ", ".join(f"{float(x):.3g}" for x in v) + "]"


def _xy(v) -> str:
    return f"({num(v[0])}, {num(v[1])})"


def _segment_words(v_cat, v_tired) -> dict:
    name = "every output one head can make"
    return dict(say="segment", numbers=dict(name=name, a=_xy(v_cat), b=_xy(v_tired)))


def _vector_words(v_cat, v_tired) -> dict:
    points = f"v_cat {_xy(v_cat)}, v_tired {_xy(v_tired)}"
    return dict(say="points", numbers=dict(name="value vectors", n=2, points=points))


def tired_cat_plane(out: Any, weight_on_cat: float, v_cat, v_tired) -> Chart:
    """Where one head's output can be: only on the segment between the two values."""
    y = to_numpy(out)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[v_cat[0], v_tired[0]],
            y=[v_cat[1], v_tired[1]],
            mode="lines",
            line=dict(color="#999", width=6),
            name="every output one head can make",
            hoverinfo="skip",
            meta=_segment_words(v_cat, v_tired),  # a segment, every point reachable
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[v_cat[0], v_tired[0]],
            y=[v_cat[1], v_tired[1]],
            mode="markers+text",
            marker=dict(size=18, color=[OKABE_ITO[1], OKABE_ITO[2]], symbol="square"),
            text=[f"v_cat = {vec(v_cat)}", f"v_tired = {vec(v_tired)}"],
            textposition=["middle right", "top center"],
            name="value vectors",
            meta=_vector_words(v_cat, v_tired),  # each named: which one is cat's
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[y[0]],
            y=[y[1]],
            mode="markers+text",
            marker=dict(size=22, color=OKABE_ITO[0], symbol="circle", line=dict(width=2)),
            text=[f"output [{y[0]:.3g}, {y[1]:.3g}]"],
            textposition="bottom left",
            name="one head's output",
        )
    )
    fig.update_layout(
        **line_layout(
            f"One head: {weight_on_cat:.2f} on cat, {1 - weight_on_cat:.2f} on tired",
            "coordinate 1",
            "coordinate 2",
            height=430,
            legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0),
            margin=dict(l=10, r=10, t=50, b=10),
        )
    )
    fig.update_xaxes(range=[-0.6, 5.2], zeroline=True)
    fig.update_yaxes(range=[-0.6, 5.2], zeroline=True, scaleanchor="x", scaleratio=1)
    caption = (
        f"The output is {weight_on_cat:.2f}·v_cat + {1 - weight_on_cat:.2f}·v_tired. "
        "Whatever the split, it lands on the grey segment — and a point on it could equally "
        f"be one token whose value is [{y[0]:.3g}, {y[1]:.3g}]. Which facts went in is lost."
    )
    return Chart(fig, caption)


def tired_cat_concat(out: Any, a1: float, a2: float, apart: Any) -> Chart:
    """Two heads' outputs concatenated: four numbers, coloured by the head that wrote them.

    `apart` is the concatenation with head 1 all on cat and head 2 all on tired."""
    y = to_numpy(out)
    fig = go.Figure(
        go.Bar(
            x=["head 1 · c1", "head 1 · c2", "head 2 · c1", "head 2 · c2"],
            y=y,
            marker_color=[OKABE_ITO[0]] * 2 + [OKABE_ITO[3]] * 2,
            text=[f"{v:.3g}" for v in y],
            textposition="outside",
            hovertemplate="%{x}: %{y:.3~g}<extra></extra>",
            name="the concatenation",  # what its words call the four bars
        )
    )
    fig.update_layout(
        **line_layout(
            f"Two heads: [head 1 | head 2] = [{y[0]:.3g}, {y[1]:.3g} | {y[2]:.3g}, {y[3]:.3g}]",
            "coordinate of the concatenation",
            "value",
            height=430,
            showlegend=False,
        )
    )
    fig.update_yaxes(range=[0, 5])
    caption = (
        f"Blue bars: head 1's two numbers ({a1:.2f} on cat); orange bars: head 2's ({a2:.2f} on "
        f"cat). With head 1 on cat and head 2 on tired the result is {vec(to_numpy(apart))}: "
        "both facts survive in their own coordinates, and W_o can route each wherever later "
        "layers need it."
    )
    return Chart(fig, caption)


# ----------------------------------------------------------------------------- diversity & pruning


def diversity_heatmap(js: Any) -> Chart:
    """(h, h) Jensen–Shannon divergence between heads, in bits (0 same … 1 disjoint)."""
    z = to_numpy(js).copy()
    h = z.shape[0]
    off = z[~np.eye(h, dtype=bool)]
    np.fill_diagonal(z, np.nan)  # a head against itself is 0 by definition: left blank
    labels = [str(j + 1) for j in range(h)]
    fig = heatmap(
        z,
        title="How different are the heads? Jensen–Shannon divergence",
        x_title="head",
        y_title="head",
        x_labels=labels,
        y_labels=labels,
        zmin=0.0,
        zmax=1.0,
        colorbar_title="bits",
        show_values=h <= 4,  # per-cell text doubles what the browser redraws; hover has it
        height=420,
    )
    fig.data[0].meta = dict(blank="self")  # the blank diagonal, named for what it is
    if h > 16:
        fig.update_xaxes(tickmode="auto")
        fig.update_yaxes(tickmode="auto")
    mean = float(off.mean()) if off.size else 0.0
    caption = (
        "Cell (a, b) compares head a's and head b's weights row by row, averaged over queries: "
        "0 bits = they read exactly the same tokens, 1 bit = they never read the same ones. "
        f"Mean between different heads: {mean:.2f} bits. Dark cells are near-redundant pairs; "
        "the blank diagonal is each head against itself."
    )
    return Chart(fig, caption)


def pruning_chart(curve: Any, h: int, pruned_count: int, pruned_change: float) -> Chart:
    """Output change as heads are removed least-important first, and the user's choice."""
    c = to_numpy(curve) * 100.0
    k = np.arange(c.shape[0])
    fig = go.Figure(
        go.Scatter(
            x=k,
            y=c,
            mode="lines+markers",
            line=dict(color=OKABE_ITO[0], width=3),
            marker=dict(size=6 if h <= 32 else 3),
            name="least important first",
            hovertemplate=f"%{{x}} heads removed<br>output moves %{{y:{NUM_FMT}}} %<extra></extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[pruned_count],
            y=[pruned_change * 100.0],
            mode="markers",
            marker=dict(size=18, color=OKABE_ITO[3], symbol="diamond"),
            name="your pruned heads",
            hovertemplate="your choice: %{x} heads<br>output moves %{y:.3~g} %<extra></extra>",
        )
    )
    fig.update_layout(
        **line_layout(
            "How far the output moves when heads are pruned",
            "heads removed (least important first)",
            "relative change of the output (%)",
            height=380,
        )
    )
    fig.update_yaxes(rangemode="tozero")
    q = max(1, h // 4)
    caption = (
        "Removing a head zeroes its slice of the concatenation before W_o. The curve removes the "
        "heads whose loss moves the output least first; the diamond is your own selection. "
        f"Here the least useful {q} of {h} heads move the output by {c[q]:.0f} %; with random "
        "weights every head carries a similar share, so the curve climbs steadily up to W_o's "
        f"bias alone ({c[-1]:.0f} % with every head gone)."
    )
    return Chart(fig, caption)


# ----------------------------------------------------------------------------- tables (markdown)


def _int(n: int) -> str:
    return f"{n:,}"


def reshape_table_md(steps, meanings: dict[str, str]) -> str:
    """The walk-through as a markdown table (shapes and strides are numbers, safe to print);
    `meanings` holds each step's words by its key (content/multi_head.md `reshape.steps`)."""
    rows = [
        "| step | code | shape | strides | contiguous? | what it means |",
        "|---:|---|---|---|:---:|---|",
    ]
    for i, s in enumerate(steps, 1):
        ok = "yes" if s.contiguous else "**no**"
        shape, stride = shape_text(s.shape), shape_text(s.stride)
        rows.append(f"| {i} | `{s.code}` | {shape} | {stride} | {ok} | {meanings[s.key]} |")
    return "\n".join(rows)


def shape_table_md(rows, meanings: dict[str, str]) -> str:
    """(code, shape, key) rows -> a markdown table (shapes are numbers, safe to print);
    `meanings` holds each row's words by its key (content/multi_head.md `value_width.rows`)."""
    out = ["| step | code | shape | what it means |", "|---:|---|---|---|"]
    for i, r in enumerate(rows, 1):
        shape = shape_text(r.shape)
        out.append(f"| {i} | `{r.code}` | {shape} | {meanings[r.key]} |")
    return "\n".join(out)


def shape_text(shape) -> str:
    """(1, 8, 10, 64): a shape for a sentence or a table, kept on one line."""
    return str(tuple(shape)).replace(", ", ",\u00a0")


def params_table_md(d_model: int, rows: list[tuple[int, dict[str, int]]]) -> str:
    """(h, counts) rows -> a markdown table; the formula in the header."""
    out = [
        "| heads h | d_k | W_q | W_k | W_v | W_o | total | 4·d² + 4·d |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    formula = 4 * d_model * d_model + 4 * d_model
    for h, p in rows:
        out.append(
            f"| {h} | {d_model // h} | {_int(p['W_q'])} | {_int(p['W_k'])} | {_int(p['W_v'])} | "
            f"{_int(p['W_o'])} | **{_int(p['total'])}** | {_int(formula)} |"
        )
    return "\n".join(out)


def kv_table_md(rows, h: int, current: int, fmt_bytes) -> str:
    """KV rows (attn_core.lessons.multi_head.KVRow) -> a markdown table, current setting marked."""
    out = [
        "| kind | K/V heads | query heads per K/V head | K+V projection params | "
        "cache per token per layer | cache for the whole context | vs MHA |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        mark = " ← current" if r.h_kv == current else ""
        out.append(
            f"| **{r.kind}**{mark} | {r.h_kv} | {h // r.h_kv} | {_int(r.kv_params)} | "
            f"{fmt_bytes(r.bytes_per_token)} | {fmt_bytes(r.cache_bytes)} | "
            f"{r.ratio:.3g}× |"
        )
    return "\n".join(out)
