"""Pictures for the multi-head page: heads side by side, outputs, interference, diversity, cost.

Numpy/tensors in, `Chart` (figure + what to notice) or markdown table text out. Token
labels may come from a user's sentence: they are HTML-escaped here before plotly sees
them (plotly renders a few HTML tags in tick text), and shortened so ticks stay legible.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import plotly.graph_objects as go

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


def _mosaic_shape(n: int, T: int) -> tuple[int, int, int, int, int]:
    """(cols, rows, gx, gy, height): the panel grid, blank cells between panels, plot height.

    The vertical gap must hold a panel title (about 24 px) at the height the plot gets."""
    cols = n if n <= 5 else (5 if n <= 10 else 6)  # 9 panels (h = 8) fit in two rows
    rows = math.ceil(n / cols)
    height = 110 + 225 * rows
    plot_px = height - 130  # minus the top and bottom margins
    gy = math.ceil(24 * rows * T / (plot_px - 24 * (rows - 1))) if rows > 1 else 1
    return cols, rows, max(1, math.ceil(T / 6)), gy, height


def heads_grid(weights: Any, tokens: list[str] | None, *, focus: Any | None = None) -> Chart:
    """Small multiples: up to 16 heads' (T, T) weights, then their average, on one 0–1 scale.

    `tokens` label the rows and columns of small maps; None (random vectors, nothing to
    name) labels them with positions 1…T.

    Drawn on ONE pair of axes: the heads are tiled into one heatmap with blank (NaN) cells
    between the panels, and the average is a second heatmap in the last slot. In a browser
    every subplot costs its own axes, ticks and trace; 17 subplots redrew several times
    slower than this mosaic.
    """
    w = to_numpy(weights)  # (h, T, T)
    h, T, _ = w.shape
    shown = min(h, MAX_PANELS)
    n = shown + 1  # the heads drawn, then their average
    cols, rows, gx, gy, height = _mosaic_shape(n, T)
    sx, sy = T + gx, T + gy  # one panel plus its gap, in cells
    z = np.full((rows * sy - gy, cols * sx - gx), np.nan, dtype=np.float32)  # gaps stay blank
    # Hover names the head, query and key of a cell; on large maps only the head (three
    # numbers per cell cost the browser one small array per cell to unpack).
    small = T <= 24
    where = np.zeros(z.shape + ((3,) if small else ()), dtype=np.uint8)
    q, k = np.meshgrid(np.arange(T), np.arange(T), indexing="ij")
    spots = [divmod(i, cols) for i in range(n)]  # (row, col) of each panel
    for j, (r, c) in enumerate(spots[:shown]):
        cells = slice(r * sy, r * sy + T), slice(c * sx, c * sx + T)
        z[cells] = w[j]
        where[cells] = np.stack([np.full_like(q, j + 1), q, k], -1) if small else j + 1
    ra, ca = spots[-1]
    qk = "<br>query #%{customdata[1]} → key #%{customdata[2]}" if small else ""
    fig = go.Figure(
        [
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
                x0=ca * sx,
                y0=ra * sy,
                customdata=np.stack([np.zeros_like(q), q, k], -1).astype(np.uint8)
                if small
                else None,
                coloraxis="coloraxis",
                name=f"average of {h}",
                hovertemplate=f"average of {h} heads{qk}<br>weight %{{z:{NUM_FMT}}}<extra></extra>",
            ),
        ]
    )
    annotations = []
    for i, (r, c) in enumerate(spots):
        is_avg = i == n - 1
        name = f"<b>average of {h}</b>" if is_avg else f"head {i + 1}"
        extra = f" · focus {float(focus[i]):.2f}" if focus is not None and not is_avg else ""
        annotations.append(
            dict(
                text=name + extra,
                x=c * sx + (T - 1) / 2,
                y=r * sy - 0.5,
                xref="x",
                yref="y",
                xanchor="center",
                yanchor="bottom",
                showarrow=False,
                font=dict(size=13 if cols < 6 else 12, color=OKABE_ITO[3] if is_avg else "#333"),
            )
        )
    # Token labels left of each row of panels and under the bottom-left panel only: every
    # panel shares these axes, and each label is SVG text the browser has to lay out.
    # random vectors have no words: their positions 1…T name the rows and columns instead
    labels = _labels(tokens) if tokens is not None else [str(i + 1) for i in range(T)]
    axis = dict(showgrid=False, zeroline=False, tickfont=dict(size=10))
    if labels and T <= 16:
        x_ticks = dict(tickmode="array", tickvals=list(range(T)), ticktext=labels)
        y_ticks = dict(
            tickmode="array",
            tickvals=[r * sy + j for r in range(rows) for j in range(T)],
            ticktext=labels * rows,
        )
    else:
        x_ticks = y_ticks = dict(showticklabels=False, ticks="")
    fig.update_layout(
        title=dict(
            text=f"Every head's attention weights ({shown} of {h} heads shown) and their average",
            x=0.0,
            xanchor="left",
            font=dict(size=17),
        ),
        font=dict(size=13),
        height=height,
        margin=dict(l=70, r=10, t=70, b=60),
        coloraxis=WEIGHT_COLORAXIS,
        annotations=annotations,
        hoverlabel=dict(font_size=14),
        plot_bgcolor="white",
        xaxis=dict(
            title=dict(text=X_KEY),
            range=[-0.5, z.shape[1] - 0.5],
            constrain="domain",
            tickangle=-60 if max((len(t) for t in labels), default=0) > 3 else None,  # None: auto
            **axis,
            **x_ticks,
        ),
        yaxis=dict(
            title=dict(text=Y_QUERY),
            range=[z.shape[0] - 0.5, -0.5],  # row 0 at the top, like a matrix
            scaleanchor="x",  # square cells: a T×T map is drawn as a square
            constrain="domain",
            **axis,
            **y_ticks,
        ),
    )
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
    caption = (
        "Each small map is one head: row = a token asking, column = a token being read, one "
        "colour scale for all. Compare the heads with the last panel, their **average**. "
        + compare
        + more
    )
    return Chart(fig, caption)


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
        (avg_focus, f"the averaged map: {avg_focus:.2f}", dict(color=OKABE_ITO[3], dash="dash")),
        (1.0 / T, f"uniform, 1/T = {1.0 / T:.2f}", dict(color="#555", dash="dot")),
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


def head_output_heatmap(o: Any, tokens: list[str], head: int) -> Chart:
    """One head's output (T, d_k), signed values on a diverging scale."""
    z = to_numpy(o)
    T, d_k = z.shape
    fig = heatmap(
        z,
        title=f"Head {head}'s output: T × d_k = {T} × {d_k}",
        x_title="component of the head's subspace (d_k)",
        y_title="token",
        y_labels=_row_labels(tokens),
        diverging=True,
        colorbar_title="value",
        show_values=T <= 12 and d_k <= 12,
        height=360,
    )
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
    fig = heatmap(
        z,
        title=f"All heads concatenated before W_o: T × d_model = {T} × {d_model}",
        x_title="component of d_model (head 1's slice first)",
        y_title="token",
        y_labels=_row_labels(tokens),
        diverging=True,
        colorbar_title="value",
        show_values=False,
        height=360,
    )
    fig.update_traces(xgap=0, ygap=0)
    if h <= 64:
        for j in range(1, h):
            fig.add_vline(x=j * d_k - 0.5, line=dict(color="#222", width=1))
    x0 = (head - 1) * d_k - 0.5
    fig.add_shape(
        type="rect",
        x0=x0,
        x1=x0 + d_k,
        y0=-0.5,
        y1=T - 0.5,
        line=dict(color=OKABE_ITO[4], width=4),
    )
    fig.update_xaxes(tickmode="auto")
    caption = (
        f"The {h} head outputs side by side, {d_k} columns each (thin lines mark the slices). "
        f"The pink box is head {head}, the map on the left. Nothing is mixed yet: only W_o, "
        "applied next, combines what the heads found."
    )
    return Chart(fig, caption)


# ----------------------------------------------------------------------------- the tired cat


def _vec(v) -> str:
    """[4, 0]: a short vector as the lesson writes it."""
    return "[" + ", ".join(f"{float(x):.3g}" for x in v) + "]"


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
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[v_cat[0], v_tired[0]],
            y=[v_cat[1], v_tired[1]],
            mode="markers+text",
            marker=dict(size=18, color=[OKABE_ITO[1], OKABE_ITO[2]], symbol="square"),
            text=[f"v_cat = {_vec(v_cat)}", f"v_tired = {_vec(v_tired)}"],
            textposition=["middle right", "top center"],
            name="value vectors",
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
        f"cat). With head 1 on cat and head 2 on tired the result is {_vec(to_numpy(apart))}: "
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


def reshape_table_md(steps) -> str:
    """The walk-through as a markdown table (shapes and strides are numbers, safe to print)."""
    rows = [
        "| step | code | shape | strides | contiguous? | what it means |",
        "|---:|---|---|---|:---:|---|",
    ]
    for i, s in enumerate(steps, 1):
        ok = "yes" if s.contiguous else "**no**"
        shape, stride = (str(tuple(t)).replace(", ", ",\u00a0") for t in (s.shape, s.stride))
        rows.append(f"| {i} | `{s.code}` | {shape} | {stride} | {ok} | {s.meaning} |")
    return "\n".join(rows)


def shape_table_md(rows) -> str:
    """(code, shape, meaning) rows -> a markdown table (shapes are numbers, safe to print)."""
    out = ["| step | code | shape | what it means |", "|---:|---|---|---|"]
    for i, r in enumerate(rows, 1):
        shape = str(tuple(r.shape)).replace(", ", ",\u00a0")
        out.append(f"| {i} | `{r.code}` | {shape} | {r.meaning} |")
    return "\n".join(out)


def value_width_md(walk) -> str:
    """What the d_v ≠ d_k walk shows, every number read from its tensors' shapes."""
    h = walk.head_output[1]  # (B, h, T, d_v)
    text = (
        "**d_v may differ from d_k: only q and k must share a width.** A score is q·k, a sum of "
        f"d_k = {walk.d_k} products, so q and k need the same d_k, and the sum leaves one number "
        "per pair of tokens whatever d_k was. v never meets q or k; the weights only average "
        f"it, so its width is free. Here d_v = {walk.d_v}: every head returns "
        f"{_shape(walk.head_output)} = (B, h, T, d_v), the {h} heads merge into "
        f"{walk.merged[-1]} = h·d_v numbers per token, and W_o, {_shape(walk.W_o)}, maps them "
        f"back to d_model = {walk.output[-1]}. PyTorch's F.scaled_dot_product_attention on the "
        f"same q, k, v agrees to {walk.sdpa_max_diff:.2g}."
    )
    if walk.d_v == walk.d_k:
        text += " (Here d_v = d_k, as most models choose: move the d_v slider to make them differ.)"
    return text


def _shape(shape) -> str:
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


# ----------------------------------------------------------------------------- the page's words
# Kept beside the pictures they talk about, so the page script stays a short composition.

INTRO = (
    "One attention head gives every token **one** probability distribution over the others, "
    "so it can stress one kind of relation at a time. Multi-head attention cuts d_model into h "
    "slices of width d_k = d_model / h and runs an independent head in each — h separate "
    "distributions per token — then glues the results side by side and mixes them with W_o. "
    "Walk through it step by step below; the settings in the sidebar drive every step."
)


def try_heads(max_tokens: int) -> list[tuple[str, str]]:
    return [
        ("Set heads to 1", "one map, and the average is that same map: nothing is blurred."),
        (
            "Switch the input to a sentence and type your own",
            "the same words always give the same maps, and each head still prefers other pairs.",
        ),
        (
            f"Raise tokens to {max_tokens}",
            f"each row shares its weight among {max_tokens} tokens: compare the bars with the "
            f"uniform line, now 1/T = {1 / max_tokens:.3g}.",
        ),
    ]


def cat_intro(v_cat, v_tired) -> str:
    return (
        "The query *sat* needs two things at once: its subject **cat** and the modifier "
        f"**tired**. Give them the values v_cat = {_vec(v_cat)} and v_tired = {_vec(v_tired)}. "
        "One head has one set of weights to split between them; two heads, each in its own "
        "2-number slice, have one set each."
    )


def try_cat(half: Any, both_on_cat: Any) -> list[tuple[str, str]]:
    """`half`: one head's output at weight 0.5; `both_on_cat`: two heads both at weight 1."""
    mid = _vec(to_numpy(half))
    return [
        (
            "Put the one-head weight at 0.5",
            f"the output is {mid} — exactly what one token with value {mid} would give. "
            "Nothing records that two facts went in.",
        ),
        (
            "Slide the one-head weight from 0 to 1",
            "the point only moves along the grey segment: one distribution can trade cat for "
            "tired, never keep both.",
        ),
        (
            "Set both heads to weight 1 on cat",
            f"the two-head output becomes {_vec(to_numpy(both_on_cat))}: heads that agree waste "
            "their extra room — which is why head diversity (the *Diversity* step) matters.",
        ),
    ]


WHY_VIEW_FAILS = (
    "A tensor is one flat block of memory plus **strides**: how many elements to skip for one "
    "step along each axis. `.transpose` only swaps two strides; no number moves. `.view` can "
    "only re-read memory in its existing order, and after the transpose one token's h slices "
    "are no longer side by side, so it cannot glue them. `.contiguous()` first copies the "
    "numbers into the new order; `.reshape` makes that same copy for you when it must."
)

PARAMS_NOTE = (
    "Counted on real layers. Splitting into h heads changes how W_q, W_k and W_v are read, not "
    "their size: more heads buy independent distributions, not parameters."
)


def kv_note(context: int, layers: int, batch: int, dtype: str) -> str:
    return (
        "The KV cache holds the keys and values of every past token during generation. Assumed: "
        f"a context of {context:,} tokens, {layers} layers, batch {batch}, {dtype}. Sharing K and "
        "V across a group of query heads divides the cache by the group size (MQA: by h)."
    )


def try_prune(curve: Any) -> list[tuple[str, str]]:
    """`curve`: relative output change after removing 0, 1, … h heads (least useful first)."""
    end = 100 * float(to_numpy(curve)[-1])
    return [
        (
            "Prune half the heads",
            "the output moves a lot here but keeps a clearly positive cosine similarity: the "
            "heads left still carry their share.",
        ),
        ("Prune every head", f"the output collapses to W_o's bias; the curve ends at {end:.0f} %."),
        (
            "Set key/value heads to 1 (MQA)",
            "compare the divergence map: heads still differ through their own queries even "
            "when they share one K and V.",
        ),
    ]


def untrained_vs_trained(curve: Any) -> str:
    """Pruning on random weights (half the heads, from `curve`) against trained models."""
    c = to_numpy(curve)
    h = c.shape[0] - 1
    k = h // 2
    if k:
        share, root = k / h, math.sqrt(k / h)
        closer = "√(k/h)" if abs(c[k] - root) <= abs(c[k] - share) else "k/h"
        cost = (
            f"pruning the {k} least useful of {h} heads moves the output by {100 * c[k]:.0f} %. "
            f"A cost in proportion to the heads removed would be k/h = {share:.0%}; heads whose "
            f"contributions point in unrelated directions give about √(k/h) = {root:.0%}. Here "
            f"the measurement is closer to {closer}"
        )
    else:
        cost = "with a single head, pruning it leaves only W_o's bias"
    return (
        f"These weights are random, so every head carries a similar share: {cost}. In trained "
        "models, studies find many heads redundant: a large fraction can be removed with little "
        "loss, and the surviving maps do recognisable jobs (previous token, a verb's subject, "
        "matching brackets). The *Trained heads* page shows real ones."
    )


# ----------------------------------------------------------------------------- predict, then reveal
# Templates only: every number in them is filled in by the page from attn_core.

EX_PARAMS_Q = (
    "One head at d_model = {d_model} has **{p1:,}** parameters in W_q, W_k, W_v and W_o "
    "(weights and biases, counted on a real layer). Keep d_model and split it into "
    "**h = {h} heads**. How many parameters does the layer have now?"
)
EX_PARAMS_WHY = (
    "Each projection is still one d_model × d_model matrix: the split into heads happens "
    "*after* it, when `.view` cuts every {d_model}-number output into {h} slices of "
    "d_k = {d_k}. Head j simply reads columns of W_q, W_k and W_v that one big head would "
    "have used anyway, and W_o mixes the same {d_model} numbers back. More heads buy more "
    "independent distributions per token for free in parameters; what they give up is width "
    "per head (d_k shrinks as h grows)."
)
EX_MQA_Q = (
    "Multi-query attention: all **{h} query heads** share **one** K and one V projection "
    "(kv_heads = 1), seed {seed}, {T} tokens. How many *different* attention maps does the "
    "layer produce?"
)
EX_MQA_TRUTH = (
    "Counted {n} distinct maps; the closest pair of heads still differs by {js:.3g} bits "
    "(Jensen–Shannon, averaged over queries)."
)
EX_MQA_WHY = (
    "A head's map is softmax(q_j·Kᵀ/√d_k). Sharing K fixes the keys every head compares "
    "against, but each head keeps its own W_q slice, so each asks its own question of those "
    "keys and gets its own distribution. What MQA gives up is variety in *what* the heads can "
    "match on and read out (one K and one V for all), and what it wins is a KV cache {h}× "
    "smaller. Sharing weights is not the same as sharing attention."
)
EX_PRUNE_Q = (
    "This layer (seed {seed}) has {h} heads. Prune **{heads}** ({k} of {h}) by zeroing "
    "before W_o. By what percentage does the layer's output move, ‖y_pruned − y‖ / ‖y‖? "
    "(Answer in %.)"
)
EX_PRUNE_WHY = (
    "Removing {k} of {h} heads removes {share:.0%} of the *terms*, but the output's norm does "
    "not fall in proportion. Each head writes into the {d_model}-wide output through its own "
    "block of W_o, and with random weights those {h} contributions point in nearly unrelated "
    "directions. Lengths of unrelated vectors add like Pythagoras: squared norms add, so "
    "dropping a fraction k/h of the squared length moves the output by about √(k/h) = "
    "{root:.0%}. {verdict}"
)


def prune_verdict(k: int, h: int, measured_pct: float) -> str:
    """How the naive guess k/h compares with the measured change (in %) on this layer."""
    share = 100 * k / h
    if measured_pct > share:
        return (
            f"Here the guess k/h = {share:.0f} % undercounts the measured {measured_pct:.0f} %: "
            "a few heads already matter a lot."
        )
    return (
        f"Here the guess k/h = {share:.0f} % is not below the measured {measured_pct:.0f} %: "
        "with so few dimensions the heads' contributions are not unrelated enough."
        if h > 1
        else f"With one head, pruning it moves the output by {measured_pct:.0f} %: only the "
        "bias is left."
    )
