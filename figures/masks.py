"""Pictures for the masks page: the mask, masked logits, weights, fills, the broadcast bug."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .common import weights_heatmap
from .describe import Grid, Said, num, plain
from .parts import BLUE, GREEN, ORANGE, SKY, VERMILION, fmt_value
from .style import NUM_FMT, Chart, base_layout, heatmap, line_layout, to_numpy

BLOCKED = "#DDDDDD"  # light grey: a cell the mask forbids
ALLOWED = BLUE
WRONG_OPEN = VERMILION  # the bug lets this query read padding
WRONG_SHUT = ORANGE  # the bug hides a real key
MARK = "rgba(255,255,255,0.75)"  # the × drawn on forbidden cells
CELL_TEXT_MAX = 8  # per-cell numbers up to 8 x 8: the page shows two maps side by side


def _grid_ticks(n: int, labels: Sequence[str] | None = None) -> dict:
    if labels is not None:
        return dict(tickmode="array", tickvals=list(range(n)), ticktext=list(labels))
    return dict(tickmode="linear", dtick=1) if n <= 16 else dict(tickmode="auto")


def _categorical(z: np.ndarray, colors: Sequence[str]) -> list:
    """A stepped colour scale for integer codes 0..len(colors)-1."""
    n = len(colors)
    scale = []
    for c, color in enumerate(colors):
        scale += [[c / n, color], [(c + 1) / n, color]]
    return scale


def _cells(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = np.nonzero(mask)
    return cols.astype(np.float32), rows.astype(np.float32)  # x = key, y = query


def _marker_px(n: int, height: int) -> int:
    return max(4, min(28, int(0.55 * (height - 90) / max(n, 1))))


def query_labels(keep: np.ndarray) -> list[str]:
    """Query tick labels; a row with no allowed key gets '∅' beside its number."""
    empty = ~np.asarray(keep, dtype=bool).any(-1)
    return [f"{i} ∅" if e else str(i) for i, e in enumerate(empty)]


def _click_layer(T_q: int, T_k: int, height: int) -> go.Scatter:
    """An invisible point on every cell centre: a click reports x (key) and y (query)."""
    jj, ii = np.meshgrid(np.arange(T_k), np.arange(T_q))
    return go.Scatter(
        x=jj.ravel().astype(np.float32),
        y=ii.ravel().astype(np.float32),
        mode="markers",
        marker=dict(symbol="square", size=_marker_px(max(T_q, T_k), height), color="rgba(0,0,0,0)"),
        selected=dict(marker=dict(color="rgba(0,0,0,0)")),
        unselected=dict(marker=dict(opacity=1)),
        hovertemplate="click to flip query %{y}, key %{x}<extra></extra>",
        showlegend=False,
        name="cells",
        meta=dict(words="skip"),  # a layer for clicks, not data
    )


def _mask_axes(layout: dict, keep: np.ndarray) -> None:
    """Query ticks with '∅' on empty rows (thinned past 16 rows), key ticks per cell."""
    T_q, T_k = keep.shape
    labels = query_labels(keep)
    layout["yaxis"].update(autorange="reversed", **_grid_ticks(T_q, labels))
    layout["xaxis"].update(**_grid_ticks(T_k))
    if T_q > 16:  # '∅' labels only where rows are empty; plain numbers are too dense
        vals = [i for i in range(T_q) if i % 4 == 0 or labels[i].endswith("∅")]
        layout["yaxis"].update(tickmode="array", tickvals=vals, ticktext=[labels[i] for i in vals])


def mask_chart(
    keep: Any,
    *,
    title: str,
    caption: str,
    clickable: bool = False,
    height: int = 400,
    x_title: str = "key (attended to)",
    y_title: str = "query (attending)",
) -> Chart:
    """A boolean mask: blue = may attend, grey = blocked; rows with no key marked '∅'.

    With clickable=True an invisible scatter point sits on every cell centre, so a
    click selects (query, key) — the page turns that into a toggle.
    """
    keep = np.asarray(keep, dtype=bool)
    T_q, T_k = keep.shape
    fig = go.Figure(
        go.Heatmap(
            z=keep.astype(np.float32),
            zmin=0,
            zmax=1,
            colorscale=_categorical(keep, [BLOCKED, ALLOWED]),
            colorbar=dict(
                tickvals=[0.25, 0.75], ticktext=["blocked", "allowed"], thickness=14, len=0.5
            ),
            hovertemplate=f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>%{{customdata}}<extra></extra>",
            customdata=np.where(keep, "allowed", "blocked"),
            xgap=1,
            ygap=1,
        )
    )
    if clickable:
        fig.add_trace(_click_layer(T_q, T_k, height))
    layout = base_layout(title, x_title, y_title, height=height)
    _mask_axes(layout, keep)
    if clickable:
        layout["dragmode"] = False  # a click must select a cell, not start a zoom box
    fig.update_layout(**layout)
    fig.update_xaxes(range=[-0.5, T_k - 0.5])
    fig.update_yaxes(range=[T_q - 0.5, -0.5])
    allowed = keep.sum(1)
    # every row's count (at most 48 rows): none dropped behind a "…"
    words = [Said("mask", allowed=int(allowed.sum()), total=keep.size, down=y_title,
                  counts="; ".join(f"{i}: {int(n)}" for i, n in enumerate(allowed)))]  # fmt: skip
    if (allowed == 0).any():
        words.append(Said("mask.empty", n=int((allowed == 0).sum()), down=y_title))
    return Chart(fig, caption, words=tuple(words))


def _overlay(
    fig: go.Figure,
    where: np.ndarray,
    *,
    text: np.ndarray | None,
    hover: str,
    color: str,
    customdata: np.ndarray | None = None,
    words: dict | None = None,
) -> None:
    """Grey cells (and optional per-cell text) drawn on top of a heatmap where `where` is True;
    `words` ({"say": key, "numbers": {...}}): the sentence that names them in words."""
    if not where.any():
        return
    z = np.where(where, 1.0, np.nan).astype(np.float32)
    trace = dict(
        z=z,
        colorscale=[[0, color], [1, color]],
        showscale=False,
        hovertemplate=hover,
        xgap=1,
        ygap=1,
    )
    if customdata is not None:
        trace["customdata"] = customdata
    if words is not None:
        trace["meta"] = words
    if text is not None:
        trace["text"] = text
        trace["texttemplate"] = "%{text}"
        trace["textfont"] = dict(size=11, color="#222222")
    fig.add_trace(go.Heatmap(**trace))


def _leak_words(w: np.ndarray, keep: np.ndarray, q_labels: Sequence[str]) -> dict:
    """What the × marks say in words: how many forbidden cells, how many of them hold weight
    that leaked through the mask, how much at most and where, and which rows leak."""
    nan = np.isnan(w)
    marked = ~keep & ~nan
    leaked = marked & (np.nan_to_num(w) > 0)
    numbers = dict(n=int(marked.sum()), forbidden=int((~keep).sum()), nan=int((~keep & nan).sum()))
    if not leaked.any():
        return dict(say="marks.none", numbers=numbers)
    share = np.where(marked, np.nan_to_num(w), 0.0)  # (T_q, T_k) weight on forbidden keys
    r, c = np.unravel_index(np.argmax(share), share.shape)
    rows = share.sum(1)
    out = [i for i in np.flatnonzero(rows > 0)]
    return dict(
        say="marks.leak",
        numbers=dict(
            numbers,
            cells=int(leaked.sum()),
            rows=len(out),
            top=num(float(share[r, c])),
            row=q_labels[r],
            key=int(c),
            most=num(float(rows.max())),
            which=", ".join(f"{q_labels[i]} ({num(float(rows[i]))})" for i in out[:16])
            + (f" and {len(out) - 16} more" if len(out) > 16 else ""),
        ),
    )


def _forbidden_marks(fig: go.Figure, forbidden: np.ndarray, n: int, height: int, words) -> None:
    """A small × on every forbidden cell: colour showing under it is weight that leaked."""
    if not forbidden.any():
        if words["numbers"]["forbidden"]:  # every forbidden cell is in a NaN row: say so
            fig.add_trace(go.Scatter(x=[None], y=[None], showlegend=False, meta=words))
        return
    x, y = _cells(forbidden)
    fig.add_trace(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            marker=dict(
                symbol="x-thin",
                size=max(3, _marker_px(n, height) // 2),
                line=dict(width=1.5, color=MARK),
            ),
            hoverinfo="skip",
            showlegend=False,
            # read as what it marks (and what leaked), not as points (x: keys, y: queries)
            meta=words,
        )
    )


def logits_chart(logits: Any, keep: Any, *, stored_fill: float, dtype: str, height: int = 400):
    """Allowed logits on the diverging scale; forbidden cells grey, labelled with their value.

    The forbidden values (−1e9, −inf …) would swamp any colour scale, so they are
    drawn apart from the allowed ones and their number is written or hovered.
    """
    # float64 for the labels: float64's most negative finite value is -inf in float32
    z = np.asarray(logits.detach().double().cpu() if hasattr(logits, "detach") else logits)
    z = z.astype(np.float64)
    keep = np.asarray(keep, dtype=bool)
    T_q, T_k = z.shape
    shown = to_numpy(np.where(keep, z, np.nan))
    fig = heatmap(
        shown,
        title=f"Masked logits ({dtype})",
        x_title="key (attended to)",
        y_title="query (attending)",
        diverging=True,
        colorbar_title="logit",
        height=height,
    )
    values = np.vectorize(fmt_value, otypes=[object])(z)  # (T_q, T_k) "−inf", "−1e+04" …
    # numbers in the cells only while they stay short (small grid, |logit| < 100, "−inf")
    room = max(T_q, T_k) <= CELL_TEXT_MAX
    allowed = np.abs(z[keep & np.isfinite(z)])
    numbers = room and (allowed.size == 0 or allowed.max() < 100)
    fig.update_traces(texttemplate="%{z:.1~f}" if numbers else None, textfont_size=11)
    small = room and all(len(t) <= 5 for t in values[~keep])
    _overlay(
        fig,
        ~keep,
        text=np.where(~keep, values, "") if small else None,
        customdata=values,
        hover="query %{y}<br>key %{x}<br>forbidden: logit = %{customdata}<extra></extra>",
        color=BLOCKED,
        words=dict(words="skip"),  # the chart's declared words say what these cells hold
    )
    n_inf = int(np.isneginf(z[~keep]).sum())
    caption = (
        f"Allowed logits keep their colour; grey cells are forbidden and hold the fill "
        f"({fmt_value(stored_fill)} as {dtype} stores it) added to the score. "
        + (
            f"{n_inf} forbidden cells are −inf. "
            if n_inf
            else "Every forbidden logit is finite: softmax gives it exp(logit − max), tiny "
            "but not zero unless the gap is large. "
        )
    )
    return Chart(fig, caption, words=_logits_words(z, keep, dtype))


def _held(values: np.ndarray) -> str:
    """What the forbidden cells hold: each distinct value (up to 4, in order), else their
    range, "lowest … highest" (a large finite fill plus the scores: many values); then NaN
    where a fill met a score already +inf (−inf + inf)."""
    nan = np.isnan(values)
    held = sorted({fmt_value(float(x)): float(x) for x in values[~nan]}.items(),
                  key=lambda kv: kv[1])  # fmt: skip
    said = [t for t, _ in held] if len(held) <= 4 else [f"{held[0][0]} … {held[-1][0]}"]
    return ", ".join(said + (["NaN"] if nan.any() else []))


def _logits_words(z: np.ndarray, keep: np.ndarray, dtype: str) -> tuple:
    """The masked logits in words: the allowed logits as a grid (forbidden cells blank),
    what the forbidden cells hold, and any allowed score already ±inf in this precision
    (drawn blank too: counted apart, never as forbidden)."""
    over = keep & np.isinf(z)  # scores that overflowed before any mask
    blank = "blank" if over.any() else "forbidden"
    words: list = [Grid(np.where(keep, z, np.nan), "query (attending)", "key (attended to)",
                        blank=blank)]  # fmt: skip
    if (~keep).any():
        words.append(Said("forbidden.fill", fill=_held(z[~keep])))
    if over.any():
        words.append(Said("overflow.cells", n=int(over.sum()), dtype=dtype,
                          pos=int(np.isposinf(z[over]).sum()), neg=int(np.isneginf(z[over]).sum()),
                          forbidden=int((~keep).sum())))  # fmt: skip
    return tuple(words)


def weights_chart(
    w: Any,
    keep: Any,
    *,
    title: str,
    caption: str,
    height: int = 400,
    labels=None,
    numbers: bool = True,
) -> Chart:
    """Softmax weights on the fixed 0–1 scale; NaN cells grey and labelled, forbidden cells ×."""
    w = to_numpy(w)
    keep = np.asarray(keep, dtype=bool)
    T_q, T_k = w.shape
    q_labels = labels if labels is not None else [str(i) for i in range(T_q)]
    k_labels = [str(j) for j in range(T_k)]
    chart = weights_heatmap(
        np.nan_to_num(w, nan=np.nan), q_labels, key_labels=k_labels, title=title, height=height
    )
    fig = chart.fig
    if numbers and max(T_q, T_k) <= CELL_TEXT_MAX:  # only where a cell can hold a number
        text = np.where(keep & np.isfinite(w), np.char.mod("%.2f", w), "")  # none under an ×
        fig.update_traces(text=text, texttemplate="%{text}", textfont_size=11)
    else:
        fig.update_traces(texttemplate=None)
    if T_q > 16 or T_k > 16:
        fig.update_xaxes(tickmode="auto")
        fig.update_yaxes(tickmode="auto")
    nan = np.isnan(w)
    _overlay(
        fig,
        nan,
        text=np.where(nan, "NaN", "") if max(T_q, T_k) <= 12 else None,
        hover="query %{y}<br>key %{x}<br>NaN (0/0)<extra></extra>",
        color="#BBBBBB",
        words=dict(words="skip"),  # the grid's own blank cells say it (blank.nan)
    )
    fig.data[0].meta = dict(blank="nan")
    words = _leak_words(w, keep, q_labels)
    _forbidden_marks(fig, ~keep & ~nan, max(T_q, T_k), height, words)
    return Chart(fig, caption)


VERDICT_COLORS = {"ok": GREEN, "reads": SKY, "leak": ORANGE, "nan": VERMILION}
VERDICT_NAMES = {
    "ok": "exact",
    "reads": "empty row reads forbidden keys",
    "leak": "forbidden keys leak",
    "nan": "NaN",
}


def _fill_cells(outcomes: Sequence[Any], fills: list, dtypes: list):
    """(verdict codes, cell words as drawn, the same as plain words) of the fill × precision
    grid."""
    codes = list(VERDICT_COLORS)
    z = np.zeros((len(fills), len(dtypes)), dtype=np.float32)
    text = np.empty(z.shape, dtype=object)
    said = np.empty(z.shape, dtype=object)
    for o in outcomes:
        i, j = fills.index(o.fill), dtypes.index(o.dtype)
        z[i, j] = codes.index(o.verdict)
        detail = {
            "ok": "exact",
            "reads": "empty row reads<br>forbidden keys",
            "leak": f"leaks {o.max_leak:.0%}",
            "nan": f"NaN in {o.nan_rows} row{'s' * (o.nan_rows != 1)}",
        }[o.verdict]
        text[i, j] = f"{detail}<br>stored {fmt_value(o.stored)}"
        said[i, j] = f"{plain(detail)} (stored {fmt_value(o.stored)})"
    return z, text, said


def _verdict_key() -> list[go.Scatter]:
    """The colour key, on the chart as a legend: one empty square marker per verdict."""
    return [
        go.Scatter(
            x=[None], y=[None], mode="markers", name=name, hoverinfo="skip",
            marker=dict(symbol="square", size=14, color=VERDICT_COLORS[code]),
        )
        for code, name in VERDICT_NAMES.items()
    ]  # fmt: skip


def _frame(i: int, j: int) -> dict:
    """The black frame around cell (i, j): the current choice."""
    return dict(
        type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5,
        line=dict(color="#000000", width=3),
    )  # fmt: skip


def fill_grid(
    outcomes: Sequence[Any], *, fill: str, dtype: str, fill_labels: dict | None = None
) -> Chart:
    """Every fill × every precision for the current mask and logit size, one word per cell."""
    fills = list(dict.fromkeys(o.fill for o in outcomes))
    dtypes = list(dict.fromkeys(o.dtype for o in outcomes))
    z, text, said = _fill_cells(outcomes, fills, dtypes)
    n = len(VERDICT_COLORS)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            zmin=-0.5,
            zmax=n - 0.5,
            colorscale=_categorical(z, list(VERDICT_COLORS.values())),
            showscale=False,
            text=text,
            texttemplate="%{text}",
            textfont=dict(size=13, color="#000000"),
            hovertemplate="%{y} in %{x}<br>%{text}<extra></extra>",
            xgap=3,
            ygap=3,
            showlegend=False,
        )
    )
    fig.add_traces(_verdict_key())
    layout = base_layout("What each fill does, in each precision", "precision", "fill value")
    layout["legend"] = dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0.0)
    layout["margin"] = dict(layout["margin"], b=70)  # room for the key under the axis title
    layout["yaxis"].update(
        autorange="reversed",
        tickmode="array",
        tickvals=list(range(len(fills))),
        ticktext=[(fill_labels or {}).get(f, f) for f in fills],
    )
    layout["xaxis"].update(tickmode="array", tickvals=list(range(len(dtypes))), ticktext=dtypes)
    fig.update_layout(**layout)
    # the verdicts are categories (colours), not values: each cell said in its own words
    cells = "; ".join(
        f"{(fill_labels or {}).get(f, f)}: "
        + ", ".join(f"{d} {said[i, j]}" for j, d in enumerate(dtypes))
        for i, f in enumerate(fills)
    )
    words = [Said("fill.grid", cells=cells)]
    if fill in fills and dtype in dtypes:
        fig.add_shape(**_frame(fills.index(fill), dtypes.index(dtype)))
        words.append(Said("fill.choice", fill=fill, dtype=dtype))
    caption = (
        "The same mask and logits through a plain softmax, for every fill and precision; the "
        "black frame is your current choice; the key below the grid names the colours (sky "
        "blue: a row with no allowed key spreads its weight over forbidden keys). "
        + fill_summary(outcomes)
    )
    return Chart(fig, caption, words=tuple(words))


def _fill_name(fill: str) -> str:
    return fill.replace("-", "−")


def _pairs(outcomes: Sequence[Any], fills: Sequence[str], dtypes: Sequence[str]) -> str:
    """'every fill in float16; −inf in every precision; −1e9 in bfloat16': the (fill, dtype)
    pairs of `outcomes`, grouped first by whole precisions, then by fill."""
    pairs = [(o.fill, o.dtype) for o in outcomes]
    whole = [d for d in dtypes if all((f, d) in pairs for f in fills)]
    parts = []
    if len(whole) == len(dtypes):
        return "every fill in every precision"
    if whole:
        parts.append(f"every fill in {', '.join(whole)}")
    by_fill: dict[str, list[str]] = {}
    for f, d in pairs:
        if d not in whole:
            by_fill.setdefault(f, []).append(d)
    for f, ds in by_fill.items():
        where = "every precision" if len(ds) == len(dtypes) else ", ".join(ds)
        parts.append(f"{_fill_name(f)} in {where}")
    return "; ".join(parts)


def fill_summary(outcomes: Sequence[Any]) -> str:
    """What the grid shows, in sentences: which pairs give NaN and why, which leak.

    Every claim is read off the outcomes (attn_core.fill_outcomes), so it holds for
    the mask and logit size the grid was computed for.
    """
    if not outcomes:
        return ""
    every = (list(dict.fromkeys(o.fill for o in outcomes)),
             list(dict.fromkeys(o.dtype for o in outcomes)))  # fmt: skip
    empty = outcomes[0].empty_rows
    out = [
        f"This mask leaves {empty} row{'s' * (empty != 1)} with no allowed key (∅)."
        if empty
        else "Every row here keeps at least one allowed key."
    ]
    nan = [o for o in outcomes if o.nan_rows]
    out.append(f"NaN here: {_pairs(nan, *every)}." if nan else "No fill gives NaN here.")
    stored_inf = [o for o in nan if o.nan_empty and o.overflowed]
    if stored_inf:
        out.append(
            f"{_pairs(stored_inf, *every)}: finite on paper, but stored as −inf, so a row with "
            "no allowed key turns NaN exactly as with −inf."
        )
    summed_inf = [o for o in nan if o.nan_empty and o.fill != "-inf" and not o.overflowed]
    if summed_inf:
        out.append(
            f"With {_pairs(summed_inf, *every)} the fill itself is finite, but adding the empty "
            "row's negative scores pushes it past the largest number the precision holds: −inf "
            "again, and NaN."
        )
    scored_inf = [o for o in nan if o.nan_rows > o.nan_empty]
    if scored_inf:
        big = ", ".join(f"{fmt_value(o.max_finite)} in {o.dtype}" for o in
                        {o.dtype: o for o in scored_inf}.values())  # fmt: skip
        out.append(
            f"NaN in rows that do have keys ({_pairs(scored_inf, *every)}): some scores are "
            f"larger than the precision's largest number ({big}) and are already ±inf before "
            "any fill, and a row holding +inf is NaN whatever the fill."
        )
    spread = [o for o in outcomes if o.empty_rows and not o.nan_empty]
    if spread:
        out.append(
            f"No NaN on the empty row with {_pairs(spread, *every)}: a fill that stays finite "
            "spreads that row's weight over forbidden keys instead."
        )
    leak = [o for o in outcomes if o.max_leak > 1e-3]
    if leak:
        top = max(o.max_leak for o in leak)
        out.append(
            f"Forbidden keys leak (up to {top:.0%} of a row) with {_pairs(leak, *every)}: the "
            "logits are as large as the fill, so the shift no longer hides them."
        )
    else:
        out.append("No fill leaks at this logit size.")
    return " ".join(out)


def broadcast_masks(
    right: Any, wrong: Any, *, example: int, row_source: Sequence[int], lengths: Sequence[int]
) -> Chart:
    """Two panels: the mask example b should get, and what the bare (B, T_k) mask gives it."""
    right = np.asarray(right, dtype=bool)
    wrong = np.asarray(wrong, dtype=bool)
    T_q, T_k = right.shape
    # 0 blocked, 1 allowed, 2 wrongly allowed (reads padding), 3 wrongly blocked (misses a key)
    code = np.where(right & wrong, 1, 0)
    code = np.where(~right & wrong, 2, code)
    code = np.where(right & ~wrong, 3, code).astype(np.float32)
    colors = [BLOCKED, ALLOWED, WRONG_OPEN, WRONG_SHUT]
    words = ["blocked", "allowed", "reads padding", "misses a real key"]
    titles = (
        f"(B, 1, 1, T_k): example {example} (length {lengths[example]})",
        "(B, T_k) as is: row i gets example i's padding",
    )
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14, subplot_titles=titles)
    for col, z in ((1, right.astype(np.float32)), (2, code)):
        fig.add_trace(
            go.Heatmap(
                z=z,
                zmin=-0.5,
                zmax=3.5,
                colorscale=_categorical(z, colors),
                showscale=col == 2,
                colorbar=dict(tickvals=[0, 1, 2, 3], ticktext=words, thickness=14),
                customdata=np.array(words, dtype=object)[z.astype(int)],
                hovertemplate="query %{y}<br>key %{x}<br>%{customdata}<extra></extra>",
                xgap=1,
                ygap=1,
            ),
            row=1,
            col=col,
        )
    fig.update_layout(
        **base_layout(
            "Which example's padding lands on which query row", "key", "query", height=420
        )
    )
    src = [f"{i} ← ex {s} ({lengths[s]})" for i, s in enumerate(row_source)]
    dense = T_q > 16
    vals = [i for i in range(T_q) if not dense or i % 4 == 0]
    fig.update_yaxes(autorange="reversed", title_text="query")
    fig.update_yaxes(tickmode="array", tickvals=vals, ticktext=[str(i) for i in vals], col=1)
    fig.update_yaxes(tickmode="array", tickvals=vals, ticktext=[src[i] for i in vals], col=2)
    fig.update_xaxes(title_text="key", **_grid_ticks(T_k))
    caption = (
        f"Left: the mask example {example} should get — its first {lengths[example]} keys on "
        "every row. Right: what it actually gets when the (B, T_k) mask is passed as is. "
        "Vermillion cells let a query read padding; orange cells hide a real key. Rows whose "
        f"source example has the same length as example {example} come out right by luck."
    )
    return Chart(fig, caption, words=_broadcast_words(right, code, titles, row_source, lengths))


def _broadcast_words(right, code, titles, row_source, lengths) -> tuple:
    """Both panels by name, their cells counted by kind (the colours are categories, not
    values), and each query row of the right one with the example whose padding it gets."""
    per_row = [(code == c).sum(1) for c in (2, 3)]  # (T_q,) reads padding, misses a key
    rows = "; ".join(
        f"{i} ← {s} ({lengths[s]}): {int(per_row[0][i])}, {int(per_row[1][i])}"
        for i, s in enumerate(row_source)
    )
    return (
        Said("broadcast.right", name=plain(titles[0]), allowed=int(right.sum()),
             total=right.size, length=int(right.sum(1).max()), keys=right.shape[1]),
        Said("broadcast.wrong", name=plain(titles[1]), ok=int((code == 1).sum()),
             open=int((code == 2).sum()), shut=int((code == 3).sum()),
             blocked=int((code == 0).sum()), rows=rows),
    )  # fmt: skip


def broadcast_diff(diff: Any) -> Chart:
    """Max |wrong − right| output per (example, query row)."""
    d = to_numpy(diff)
    B, T_q = d.shape
    fig = heatmap(
        d,
        title="How wrong each output row is",
        x_title="query row",
        y_title="example",
        zmin=0.0,
        colorbar_title="max |Δ|",
        height=max(240, min(420, 80 + 22 * B)),
    )
    fig.update_traces(
        hovertemplate=(
            f"example %{{y}}<br>query row %{{x}}<br>max |Δ| %{{z:{NUM_FMT}}}<extra></extra>"
        )
    )
    wrong = int((d > 1e-9).sum())
    caption = (
        f"{wrong} of {B * T_q} output rows differ from the correctly masked ones, yet nothing "
        "raised. The diagonal is always 0 (row i of example i happens to use its own padding), "
        "as is any row whose source example has the same length."
    )
    return Chart(fig, caption)


def cross_chart(w: Any, keep: Any, *, example: int, length: int, T_q: int, T_k: int) -> Chart:
    """Decoder queries over encoder keys with padded key columns crossed out."""
    w = to_numpy(w)
    keep = np.asarray(keep, dtype=bool)
    chart = weights_chart(
        w,
        keep,
        numbers=False,
        title=f"Cross-attention: {T_q} queries over {T_k} keys (example {example})",
        caption=(
            f"Example {example} has {length} real encoder tokens; the crossed-out columns are its "
            f"padding and get weight 0 from every query. The (B, 1, 1, T_k) mask broadcasts over "
            "heads and over all T_q query rows, so a query length different from the key length "
            "is no problem and no query row is ever empty."
        ),
    )
    chart.fig.update_xaxes(title_text="encoder key")
    chart.fig.update_yaxes(title_text="decoder query")
    return chart


def causal_cost_chart(cost: Any) -> Chart:
    """Median time per call: is_causal=True against a materialised (T, T) mask."""
    names = ["is_causal=True", "materialised mask"]
    ms = [cost.ms_is_causal, cost.ms_mask]
    fig = go.Figure(
        go.Bar(
            x=names,
            y=ms,
            marker_color=[GREEN, ORANGE],
            text=[f"{m:.3g} ms" for m in ms],
            textposition="outside",
            name="median time per call (ms)",
            hovertemplate="%{x}<br>%{y:.3g} ms per call<extra></extra>",
        )
    )
    fig.update_layout(
        **line_layout(
            f"Time per call at T = {cost.T} ({cost.h} heads, d_k = {cost.d_k}, {cost.dtype})",
            "how the causal structure is given",
            "milliseconds per call (median)",
            height=360,
        )
    )
    fig.update_yaxes(rangemode="tozero")
    ratio = cost.ms_mask / cost.ms_is_causal if cost.ms_is_causal > 0 else float("nan")
    caption = (
        f"Measured on {cost.device}: the materialised mask takes {ratio:.2g}× the time of the "
        "flag. "
        "With the flag the kernel knows the structure and can skip the upper triangle; with a "
        "mask it has to read T × T entries it could have worked out."
    )
    return Chart(fig, caption)


def plain_weights_chart(w: Any, keep: Any, *, nan_rows: int, height: int = 400) -> Chart:
    """What a plain softmax makes of the filled logits (may hold NaN or leaked weight)."""
    keep = np.asarray(keep, dtype=bool)
    nan = f" — {nan_rows} NaN row{'s' * (nan_rows != 1)}" if nan_rows else ""
    return weights_chart(
        w,
        keep,
        title=f"Weights, plain softmax{nan}",
        labels=query_labels(keep),
        height=height,
        caption="Plain torch.softmax of the logits above. Rows that are not NaN sum to 1. × "
        "marks a forbidden cell: colour under a × is weight that leaked through the mask. Grey "
        "'NaN' cells come from a row whose logits are all −inf (0/0) or that holds a +inf "
        "score (inf/inf).",
    )


def safe_weights_chart(w: Any, keep: Any, *, height: int = 400) -> Chart:
    """attn_core's safe path on the same scores: boolean mask, zeros for an empty row."""
    keep = np.asarray(keep, dtype=bool)
    nan = int(np.isnan(to_numpy(w)).any(-1).sum())
    caveat = (
        f" Except {nan} row{'s' * (nan != 1)} holding a score that is already +inf in this "
        "precision (the logits overflowed before any mask): inf − inf is NaN on any path."
        if nan
        else ""
    )
    return weights_chart(
        w,
        keep,
        title="Weights, safe path (attn_core)",
        labels=query_labels(keep),
        height=height,
        caption="The same scores masked with the boolean mask (−inf) and a stable softmax that "
        "gives a row with no allowed key all zeros: no NaN and no leak, whatever the fill."
        + caveat,
    )
