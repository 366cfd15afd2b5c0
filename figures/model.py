"""Pictures for the real-model page: every head on the student's sentence, one head large,
the heads' roles, relation heads against simple guesses, weights beside
contributions, what the knobs do, the next-token guess and the pruning curve.

Numpy/tensors in, `Chart` out; no streamlit. Tokens come from the user's text, so they
pass through `plot_label` (printable, escaped, short) before plotly sees them. The
lesson's words are in content/model.md; what stays here is each chart's title, axes,
hover and the caption computed from the numbers drawn.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from plotly.colors import get_colorscale

from .describe import Grid
from .parts import BLUE, GREY, ORANGE, VERMILION, fast_figure, hline_labelled, vline_labelled
from .style import (
    NUM_FMT,
    SEQUENTIAL,
    WEIGHT_COLORAXIS,
    Chart,
    escape,
    line_layout,
    plot_label,
    to_numpy,
)

ROLE_NAMES = {
    "previous": "previous token",
    "next": "next token",
    "self": "itself",
    "first": "first token",
    "last": "last token",
    "entropy": "spread (entropy)",
}
TITLE = dict(x=0.0, xanchor="left", font=dict(size=17))


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def _title(text: str) -> dict:
    return dict(TITLE, text=text)


def _colorbar(title: str = "weight", **kw) -> dict:
    bar = dict(WEIGHT_COLORAXIS["colorbar"], title=dict(text=title), **kw)
    return dict(WEIGHT_COLORAXIS, colorbar=bar)


def _tokens(tokens: Sequence[str], limit: int = 10) -> list[str]:
    return [plot_label(t, limit) for t in tokens]


def _token_axis(labels: list[str], title: str) -> dict:
    T = len(labels)
    step = 1 if T <= 32 else 2
    return dict(
        title=dict(text=title),
        tickmode="array",
        tickvals=list(range(0, T, step)),
        ticktext=labels[::step],
        tickfont=dict(size=11 if T <= 24 else 9),
        showgrid=False,
        zeroline=False,
    )


# ------------------------------------------------------------------------------ maps


def _spot(l: int, h: int, per_row: int, rows: int) -> tuple[int, int]:
    """(tile row, tile column) of head h of layer l: a layer takes `rows` tile rows of
    `per_row` heads (one row of all its heads, but on a phone)."""
    return l * rows + h // per_row, h % per_row


def _tiles(w: np.ndarray, per_row: int | None = None) -> tuple[np.ndarray, int]:
    """(z, span of one tile) of the mosaic: the (L, H, T, T) maps laid out layers down,
    heads across (at most `per_row` a row: a layer then wraps onto more rows), blank
    (NaN) cells between tiles."""
    L, H, T, _ = w.shape
    per = min(per_row or H, H)
    rows = -(-H // per)
    g = max(1, round(0.15 * T))  # the gap between tiles, in cells
    span = T + g
    z = np.full((L * rows * span - g, per * span - g), np.nan, dtype=np.float32)
    for l in range(L):
        for h in range(H):
            r, c = _spot(l, h, per, rows)
            z[r * span : r * span + T, c * span : c * span + T] = w[l, h]
    return z, span


def _rgb(color: str) -> tuple[int, int, int]:
    """'#440154' or 'rgb(68, 1, 84)' -> (68, 1, 84)."""
    if color.startswith("#"):
        return tuple(int(color[i : i + 2], 16) for i in (1, 3, 5))
    return tuple(int(float(c)) for c in color[color.index("(") + 1 : -1].split(","))


@lru_cache(maxsize=4)
def _lut(name: str = SEQUENTIAL) -> np.ndarray:
    """(256, 3) uint8: the colour scale sampled at 256 levels, as the heatmaps draw it."""
    stops = get_colorscale(name)
    at = np.array([p for p, _ in stops])
    rgb = np.array([_rgb(c) for _, c in stops], dtype=float)  # (stops, 3)
    x = np.linspace(0, 1, 256)
    return np.stack([np.interp(x, at, rgb[:, i]) for i in range(3)], -1).round().astype(np.uint8)


def _png(z: np.ndarray) -> str:
    """The 0–1 map z as a PNG data URI in the weight colour scale (NaN: white)."""
    from PIL import Image

    idx = (np.clip(np.nan_to_num(z, nan=0.0), 0, 1) * 255).round().astype(np.uint8)
    rgb = _lut()[idx]
    rgb[np.isnan(z)] = 255
    buf = io.BytesIO()
    Image.fromarray(rgb, "RGB").save(buf, format="PNG", optimize=False, compress_level=1)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _mosaic_axes(L: int, H: int, T: int, span: int, shape, per: int) -> tuple[dict, dict]:
    axis = dict(showgrid=False, zeroline=False, ticks="", tickmode="array")
    rows = -(-H // per)
    if rows == 1:  # every head of a layer in one row: heads across, layers down
        x_text, y_text = [f"H{h}" for h in range(H)], [f"L{l}" for l in range(L)]
        titles = ("head", "layer")
    else:  # a phone: each tile row names its layer and heads; columns count on from them
        x_text = [f"+{c}" for c in range(per)]
        y_text = [f"L{l} H{r * per}–{min(H, (r + 1) * per) - 1}"
                  for l in range(L) for r in range(rows)]  # fmt: skip
        titles = ("head (the row's first + column)", "layer and heads")
    x_axis = dict(axis, title=dict(text=titles[0]), range=[-0.5, shape[1] - 0.5],
                  tickvals=[c * span + (T - 1) / 2 for c in range(len(x_text))],
                  ticktext=x_text)  # fmt: skip
    y_axis = dict(axis, title=dict(text=titles[1]), range=[shape[0] - 0.5, -0.5],
                  tickvals=[r * span + (T - 1) / 2 for r in range(len(y_text))],
                  ticktext=y_text)  # fmt: skip
    return x_axis, y_axis


def head_mosaic(
    weights: Any,
    selected: tuple[int, int] | None = None,
    model: str = "",
    per_row: int | None = None,
    tokens: Sequence[str] | None = None,
) -> Chart:
    """Every head's (T, T) map in one picture: layers down, heads across, a blank cell
    between tiles; the selected head outlined. `per_row`: at most this many heads a row
    (a phone: 4; a layer then takes several rows, each named by its heads).

    Drawn as one image (a PNG in the weight colour scale, the large map's colour bar)
    under plotly's axes: measured in headless Chromium, a heatmap mosaic with its colour
    bar made a knob's rerun ~0.08 s slower, the image ~0.03 s. The weights go to the CSV
    through `table`, never to the browser; the large map below has the hover."""
    w = to_numpy(weights)  # (L, H, T, T)
    L, H, T, _ = w.shape
    per = min(per_row or H, H)
    rows = -(-H // per)
    z, span = _tiles(w, per)
    x_axis, y_axis = _mosaic_axes(L, H, T, span, z.shape, per)
    shapes = []
    if selected is not None:
        r, c = _spot(*selected, per, rows)
        shapes.append(dict(type="rect", xref="x", yref="y", line=dict(color=VERMILION, width=3),
                           x0=c * span - 0.9, x1=c * span + T - 0.1,
                           y0=r * span - 0.9, y1=r * span + T - 0.1))  # fmt: skip
    traces = [
        dict(type="image", source=_png(z), x0=0, y0=0, dx=1, dy=1, hoverinfo="skip",
             name="every head"),
    ]  # fmt: skip
    layout = dict(
        title=_title(f"Every head of {model or 'the model'} on your sentence"),
        font=dict(size=13),
        height=130 + (62 if rows == 1 else 80) * L * rows,
        xaxis=x_axis,
        yaxis=y_axis,
        shapes=shapes,
        plot_bgcolor="#FFFFFF",
    )
    fig = fast_figure(traces, layout, margin=dict(l=50, r=10, t=50, b=40))
    table = fast_figure([dict(type="heatmap", z=z, name="weights, tiled (blank between tiles)")],
                        dict(title=_title("Every head, tiled")))  # fmt: skip
    caption = (
        f"{L} layers × {H} heads, each a {T} × {T} map: row i is where token i looks, "
        "so every row of a tile sums to 1; dark purple is 0 and yellow 1, as in the large "
        "map below. "
        + (f"{head_name(*selected)} is outlined; it is drawn large below. " if selected else "")
        + "Tiles with a bright line just below or above the diagonal follow the previous "
        "or next token; a bright first or last column is a sink that many tokens dump weight on."
    )
    alt = "Grid of attention maps, one per layer and head"
    return Chart(fig, caption, alt=alt, table=table, words=_mosaic_words(w, tokens))


def _mosaic_words(w: np.ndarray, tokens: Sequence[str] | None) -> tuple:
    """Every head's map in words, named by its head and its tokens, whatever the layout."""
    labels = _tokens(tokens) if tokens is not None else None
    L, H = w.shape[:2]
    return tuple(
        Grid(w[l, h], "query", "key", labels, labels, name=head_name(l, h))
        for l in range(L)
        for h in range(H)
    )


def top_links(w: np.ndarray, tokens: Sequence[str], special: set[int], n: int = 3) -> list:
    """The `n` strongest (query, key, weight) links of a map, special tokens left out."""
    T = w.shape[0]
    keep = [i for i in range(T) if i not in special]
    cells = [(float(w[i, j]), i, j) for i in keep for j in keep if i != j]
    cells.sort(reverse=True)
    return [(i, j, x) for x, i, j in cells[:n]]


def head_map(weights: Any, tokens: Sequence[str], layer: int, head: int, special=()) -> Chart:
    """One head's map, large, with the tokens on both axes."""
    w = to_numpy(weights)  # (T, T)
    T = w.shape[0]
    labels = _tokens(tokens)
    trace = dict(
        type="heatmap",
        z=w,
        coloraxis="coloraxis",
        xgap=1,
        ygap=1,
        customdata=np.array([[f"{labels[i]} → {labels[j]}" for j in range(T)] for i in range(T)]),
        hovertemplate=f"%{{customdata}}<br>weight %{{z:{NUM_FMT}}}<extra></extra>",
    )
    if T <= 14:
        trace.update(texttemplate="%{z:.2f}", textfont=dict(size=11))
    x_axis = _token_axis(labels, "key (attended to)")
    x_axis["tickangle"] = -60
    y_axis = dict(_token_axis(labels, "query (attending)"), autorange="reversed")
    size = min(720, 260 + 22 * T)
    layout = dict(
        title=_title(f"{head_name(layer, head)}: where each token looks"),
        font=dict(size=14),
        height=size + 60,
        xaxis=x_axis,
        yaxis=y_axis,
        coloraxis=_colorbar(),
        plot_bgcolor="#FFFFFF",
    )
    fig = fast_figure([trace], layout, margin=dict(l=110, r=10, t=60, b=110))
    links = top_links(w, tokens, set(special))
    said = "; ".join(
        f"{escape(tokens[i], 10)} → {escape(tokens[j], 10)} {x:.2f}" for i, j, x in links
    )
    special_share = float(w[:, sorted(special)].sum(-1).mean()) if special else 0.0
    caption = (
        f"Row i: how token i spreads its attention over the {T} tokens (each row sums to 1). "
        + (f"Strongest links between words: {said}. " if links else "")
        + (
            f"On average a row puts {special_share:.0%} of its weight on the special tokens "
            "([CLS], [SEP])."
            if special
            else ""
        )
    )
    # in words, every row and column by its token (the axes name every other one past 32)
    words = (Grid(w, "query (attending)", "key (attended to)", labels, labels),)
    return Chart(fig, caption.strip(), words=words)


# ------------------------------------------------------------------------------ roles


def role_maps(roles: dict[str, Any]) -> Chart:
    """Each head's share of attention on the previous / next token, itself, the first
    and last token, and its spread: one small layers × heads grid per role."""
    names = list(ROLE_NAMES)
    grids = [to_numpy(roles[r]) for r in names]  # (L, H) each
    L, H = grids[0].shape
    z = np.full((L, len(names) * (H + 1) - 1), np.nan, dtype=np.float32)
    hover = np.full(z.shape, "", dtype=object)
    for k, g in enumerate(grids):
        x = k * (H + 1)
        z[:, x : x + H] = g
        for l in range(L):
            for h in range(H):
                hover[l, x + h] = f"{head_name(l, h)} · {ROLE_NAMES[names[k]]}"
    trace = dict(
        type="heatmap",
        z=z,
        customdata=hover,
        coloraxis="coloraxis",
        xgap=1,
        ygap=1,
        hovertemplate=f"%{{customdata}}<br>%{{z:{NUM_FMT}}}<extra></extra>",
    )
    x_axis = dict(tickmode="array", tickvals=[k * (H + 1) + (H - 1) / 2 for k in range(len(names))],
                  ticktext=[ROLE_NAMES[r] for r in names], showgrid=False, zeroline=False,
                  title=dict(text=f"role (in each block: heads 0 → {H - 1})"))  # fmt: skip
    y_axis = dict(tickmode="array", tickvals=list(range(L)), ticktext=[f"L{l}" for l in range(L)],
                  autorange="reversed", title=dict(text="layer"), showgrid=False)  # fmt: skip
    layout = dict(
        title=_title("What each head does on your sentence"),
        font=dict(size=13),
        height=200 + 34 * L,
        xaxis=x_axis,
        yaxis=y_axis,
        plot_bgcolor="#FFFFFF",
        coloraxis=_colorbar("share", thickness=12),
    )
    fig = fast_figure([trace], layout, margin=dict(l=50, r=10, t=60, b=70))
    best = {
        r: np.unravel_index(np.nanargmax(g), g.shape) for r, g in zip(names, grids, strict=True)
    }
    said = "; ".join(
        f"{ROLE_NAMES[r]}: {head_name(*map(int, best[r]))} ({grids[k][best[r]]:.2f})"
        for k, r in enumerate(names[:5])
    )
    caption = (
        "Each cell is one head: the mean weight a token puts on that target (for spread, its "
        "entropy as a share of the most it could be, 1 = uniform). The strongest head per "
        f"role: {said}."
    )
    words = _role_words(names, grids)
    return Chart(fig, caption, alt="Six layer-by-head grids, one per role", words=words)


def _role_words(names: list[str], grids: list[np.ndarray]) -> tuple:
    """One layers × heads grid per role, named by the role (the role blocks of one mosaic)."""
    L, H = grids[0].shape
    rows, cols = [f"L{l}" for l in range(L)], [f"H{h}" for h in range(H)]
    return tuple(
        Grid(g, "layer", "head", rows, cols, name=ROLE_NAMES[r])
        for r, g in zip(names, grids, strict=True)
    )


GUESS_NAMES = {
    "first_subject": "the first subject",
    "nearest_subject": "the nearest subject",
    "first_noun": "the first noun",
    "nearest_noun": "the nearest noun",
}


def _ordinal(n: int) -> str:
    tail = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{tail}"


def guess_name(guess: Any) -> str:
    """A simple guess (attn_core's Guess: name, at) in words: "the next word", "always the
    2nd word", "the first subject"."""
    if guess.name == "offset":
        k = int(guess.at)
        if abs(k) == 1:
            return "the next word" if k > 0 else "the word before"
        return f"the word {abs(k)} {'ahead' if k > 0 else 'back'}"
    if guess.name == "position":
        return f"always the {_ordinal(int(guess.at) + 1)} word"
    return GUESS_NAMES[guess.name]


def heads_label(heads: Sequence[tuple[int, int]]) -> str:
    """Heads tied at the top, as "L1H3 = L3H1"."""
    return " = ".join(head_name(*h) for h in heads)


def relation_bars(scores: dict[str, Any]) -> Chart:
    """Per relation: the best head's accuracy next to its strongest simple guess's."""
    rel = list(scores)
    best = [scores[r].best_accuracy for r in rel]
    base = [scores[r].strongest.accuracy for r in rel]
    heads = [heads_label(scores[r].best_heads) for r in rel]
    guesses = [guess_name(scores[r].strongest) for r in rel]
    traces = [
        dict(
            type="bar",
            name="best head",
            x=rel,
            y=best,
            marker=dict(color=BLUE),
            text=[f"{h} {b:.2f}" for h, b in zip(heads, best, strict=True)],
            textposition="outside",
            hovertemplate="%{x}<br>best head %{text}<extra></extra>",
        ),
        dict(
            type="bar",
            name="strongest simple guess",
            x=rel,
            y=base,
            marker=dict(color=GREY),
            text=[f"{g} {b:.2f}" for g, b in zip(guesses, base, strict=True)],
            textposition="outside",
            hovertemplate="%{x}<br>%{text}<extra></extra>",
        ),
    ]
    layout = line_layout(
        "Relation heads against simple guesses",
        "relation (from → to)",
        "share of pairs found",
        height=430,
        barmode="group",
        yaxis=dict(title=dict(text="share of pairs found"), range=[0, 1.12]),
    )
    fig = fast_figure(traces, layout, margin=dict(l=60, r=10, t=90, b=60))
    lines = [
        f"{r}: {h} {b:.2f} against {g} {a:.2f} ({scores[r].n} pairs)"
        for r, h, b, g, a in zip(rel, heads, best, guesses, base, strict=True)
    ]
    caption = (
        'A head "finds" a pair when the word it attends to most from the first word is the '
        "second (word-level weights, [CLS] and [SEP] left out). The grey bar is the best of "
        "the simple guesses that never look at the model: a fixed distance, a fixed place in "
        "the sentence, the first or nearest subject or noun (from the other relations' "
        "marks). " + "; ".join(lines) + "."
    )
    return Chart(fig, caption)


# ------------------------------------------------------------------------------ contribution


def weights_and_contributions(
    weights: Any, contrib: Any, tokens: Sequence[str], name: str, special=()
) -> Chart:
    """Two maps side by side: the weights α_ij, and ‖α_ij v_j W_O‖ as a share of its row."""
    w, c = to_numpy(weights), to_numpy(contrib)
    T = w.shape[0]
    share = c / np.maximum(c.sum(-1, keepdims=True), 1e-30)
    labels = _tokens(tokens, 8)
    traces = [
        dict(
            type="heatmap",
            z=m,
            coloraxis="coloraxis",
            xaxis=x,
            yaxis="y",
            hovertemplate=f"query %{{y}} → key %{{x}}<br>{what} %{{z:{NUM_FMT}}}<extra></extra>",
        )
        for m, x, what in ((w, "x", "weight"), (share.astype(np.float32), "x2", "share"))
    ]
    ax = _token_axis(labels, "key")
    ax["tickangle"] = -60
    layout = dict(
        title=_title(f"{name}: attention weight (left) and what each key adds (right)"),
        font=dict(size=13),
        height=min(700, 300 + 16 * T),
        xaxis=dict(ax, domain=[0, 0.47], title=dict(text="key: weight α_ij")),
        xaxis2=dict(ax, domain=[0.53, 1], title=dict(text="key: share of ‖α_ij v_j W_O‖")),
        yaxis=dict(_token_axis(labels, "query"), autorange="reversed"),
        coloraxis=_colorbar("share of row"),
        plot_bgcolor="#FFFFFF",
    )
    fig = fast_figure(traces, layout, margin=dict(l=90, r=10, t=60, b=100))
    sp = sorted(special)
    w_sp = float(w[:, sp].sum(-1).mean()) if sp else 0.0
    c_sp = float(share[:, sp].sum(-1).mean()) if sp else 0.0
    caption = (
        "Left: the weights, as every attention map shows them. Right: the length of what each "
        "key actually adds to the query's output, α_ij v_j W_O, as a share of the row. "
        + (
            f"The special tokens ([CLS], [SEP]) get {w_sp:.0%} of the weight but "
            f"{c_sp:.0%} of what is added: their value vectors are short."
            if sp and c_sp < w_sp
            else f"The special tokens get {w_sp:.0%} of the weight and {c_sp:.0%} of what is added."
            if sp
            else ""
        )
    )
    # in words, the two maps named for what each holds (both share the query and key axes)
    words = (
        Grid(w, "query", "key", labels, labels, name="weight α_ij (left)"),
        Grid(share, "query", "key", labels, labels, name="share of ‖α_ij v_j W_O‖ (right)"),
    )
    return Chart(fig, caption.strip(), words=words)


# ------------------------------------------------------------------------------ knobs


def knob_bars(default: dict[str, float], now: dict[str, float], labels: dict[str, str]) -> Chart:
    """The same measures with the model's own settings and with the knobs as set."""
    keys = list(labels)
    names = [labels[k] for k in keys]
    traces = [
        dict(
            type="bar",
            name=n,
            x=names,
            y=[d[k] for k in keys],
            marker=dict(color=col),
            text=[f"{d[k]:.3f}" for k in keys],
            textposition="outside",
            hovertemplate="%{x}<br>" + n + " %{y:.3f}<extra></extra>",
        )
        for n, d, col in (("model as trained", default, GREY), ("your knobs", now, ORANGE))
    ]
    layout = line_layout(
        "What the knobs do to attention and to the model's job",
        "measure",
        "value (0 to 1)",
        height=430,
        barmode="group",
        yaxis=dict(title=dict(text="value (0 to 1)"), range=[0, 1.15]),
    )
    fig = fast_figure(traces, layout, margin=dict(l=60, r=10, t=90, b=90))
    moved = [
        f"{labels[k]} {default[k]:.3f} → {now[k]:.3f}"
        for k in keys
        if abs(now[k] - default[k]) >= 5e-4
    ]
    caption = "Grey: every knob at the model's own setting; orange: as you set them. " + (
        "What moved: " + "; ".join(moved) + "."
        if moved
        else "Nothing moved: every knob is at the model's own setting."
    )
    return Chart(fig, caption)


def next_token_bars(guesses: Sequence[tuple[str, float]], base=None) -> Chart:
    """A decoder's top-10 next tokens (and, greyed, the model's own top-10 probabilities)."""
    labels = [plot_label(t.replace("Ġ", "␣"), 14) for t, _ in guesses]
    p = [float(x) for _, x in guesses]
    traces = [
        dict(
            type="bar",
            x=p,
            y=labels,
            orientation="h",
            marker=dict(color=BLUE),
            text=[f"{x:.3f}" for x in p],
            textposition="outside",
            hovertemplate="%{y}: %{x:.3f}<extra></extra>",
            name="your knobs",
        )
    ]
    layout = line_layout(
        "What the model would write next",
        "probability",
        "next token",
        height=420,
        yaxis=dict(autorange="reversed", title=dict(text="next token")),
        xaxis=dict(range=[0, min(1.0, max(p, default=1) * 1.25)], title=dict(text="probability")),
    )
    fig = fast_figure(traces, layout, margin=dict(l=110, r=10, t=60, b=60))
    top = escape(guesses[0][0].replace("Ġ", "␣"), 14) if guesses else "?"
    caption = f"The ten likeliest next tokens; the top one, {top}, has probability {p[0]:.3f}."
    return Chart(fig, caption)


# ------------------------------------------------------------------------------ pruning


def pruning_chart(
    curve: Sequence[float],
    can_go: int,
    order: Sequence[tuple[int, int]],
    yours: tuple[int, float] | None = None,
) -> Chart:
    """The pair-ranking score as heads are removed, least important first."""
    k = np.arange(len(curve))
    names = ["none"] + [head_name(*p) for p in order]
    traces = [
        dict(
            type="scatter",
            mode="lines+markers",
            x=k,
            y=np.asarray(curve, np.float32),
            line=dict(color=BLUE, width=2),
            marker=dict(size=5),
            name="removed in order",
            customdata=names,
            hovertemplate="%{x} heads off (last: %{customdata})<br>score %{y:.3f}<extra></extra>",
        )
    ]
    if yours is not None:
        traces.append(
            dict(
                type="scatter",
                mode="markers",
                x=[yours[0]],
                y=[yours[1]],
                marker=dict(color=VERMILION, size=13, symbol="diamond"),
                name="your switched-off heads",
                hovertemplate="your %{x} heads off<br>score %{y:.3f}<extra></extra>",
            )
        )
    floor = curve[0] * 0.95
    h_line, h_note = hline_labelled(floor, "5 % below all heads on", side="right")
    v_line, v_note = vline_labelled(can_go, f"{can_go} heads")
    layout = line_layout(
        "Pruning a real model, one head at a time",
        "heads switched off",
        "pair-ranking score",
        height=440,
        shapes=[h_line, v_line],
        annotations=[h_note, v_note],
        yaxis=dict(title=dict(text="pair-ranking score"), range=[0.4, 1.02]),
    )
    fig = fast_figure(traces, layout, margin=dict(l=60, r=10, t=90, b=60))
    caption = (
        f"All {len(curve) - 1} heads on: {curve[0]:.3f}. Heads are removed least important "
        f"first (the score with each off alone, measured once). {can_go} can go before the "
        f"score falls 5 % below that; with all removed it is {curve[-1]:.3f} (0.5 is chance)."
    )
    return Chart(fig, caption)
