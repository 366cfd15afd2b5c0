"""Masks: every mask shape, what the fill value does, and the broadcast that fails silently."""

import zlib
from functools import partial

import numpy as np
import streamlit as st
import torch

import ui
from attn_core import (
    DTYPES,
    FILLS,
    MASK_KINDS,
    apply_fill,
    batch_lengths,
    broadcast_lab,
    build_mask,
    causal_cost,
    cross_attention_demo,
    demo_qkv,
    empty_rows,
    fill_outcomes,
    fit_segments,
    parse_custom,
    parse_lengths,
    replace_fill_error,
    stored_fill,
    toggle_cell,
)
from attn_core.lessons.masks import broadcast_verdict, empty_row_weights, min_fill_overflow
from figures import masks as fig
from ui.chrome import PLOTLY_CONFIG

FILE = "pages/masks.py"
CAPTIONS = {
    "none": "Every query reads every key: an encoder with no padding.",
    "causal": "Row i may read keys 0…i: no peeking at tokens that come later.",
    "padding": "This example's filler keys (past its length) are blocked for every query.",
    "sliding-window": "A causal band: each query reads its last `window` keys, itself included.",
    "prefix-LM": "The prefix reads itself both ways; the rest is causal and reads the prefix.",
    "block-diagonal": "Packed documents: a token reads its own segment only, not a neighbour's.",
    "custom": "Starts from causal; every listed cell is flipped. ∅ marks a row with no key.",
}
CUSTOM_CHARS = 3000
LENGTHS = "5,3,7"
LEAK_FILL, LEAK_SIZE = "-1e4", 10000.0  # the leak suggestion: a small fill, large logits
T_Q = 6  # the default query length, and the default batch size of the broadcasting bug
STEPS = ("Mask", "Weights", "Fill", "Cross attention", "Broadcasting bug", "Cost")
LENGTH_KINDS = ("padding", "block-diagonal")  # the masks built from the lengths per example
# the sidebar's controls; each step's own controls show their notes inside the step
MAIN_CONTROLS = ("mask", "tokens", "window", "prefix", "lengths", "causal", "custom", "example",
                 "fill", "dtype", "logit_size")  # fmt: skip


def quote(x) -> str:
    return f"`{ui.safe_text(x, 20)}`"


@st.cache_data(max_entries=48, show_spinner=False)
def main_view(spec: tuple, fill: str, dtype: str, logit_size: float, example: int) -> dict:
    """Mask, filled logits, plain and safe weights of one batch element, as numpy."""
    keep = build_mask(spec[0], spec[1], **dict(spec[2]), device=ui.device())  # (B, T, T)
    q, k, v = demo_qkv(keep.shape[0], spec[1], spec[1], device=ui.device())
    r = apply_fill(q, k, v, keep, fill, DTYPES[dtype], logit_size=logit_size)
    b = min(example, keep.shape[0] - 1)
    return dict(
        keep=keep[b].cpu().numpy(),
        logits=r.logits[b].double().cpu().numpy(),
        weights=r.weights[b].float().cpu().numpy(),
        safe=r.safe_weights[b].float().cpu().numpy(),
        stored=r.stored,
        nan_rows=int(r.nan_rows[b].sum()),
        leak=r.max_leak,
        empty=empty_rows(keep[b]),
        diff=float(r.out_diff[b].nan_to_num(0).max()),
        overflow=int(r.logits[b][keep[b]].isinf().sum()),  # scores already ±inf in dtype
        empty_nan=int((r.nan_rows[b] & r.empty[b]).sum()),  # empty rows the softmax made NaN
        row_leak=r.leaked[b].cpu().numpy(),  # (T_q,) weight on forbidden keys, NaN where NaN
        outrun=r.outrun[b].cpu().numpy(),  # (T_q,) a forbidden logit is the row's largest
        partial=((~keep[b]).any(-1) & keep[b].any(-1)).cpu().numpy(),  # rows with both kinds
    )


@st.cache_data(max_entries=24, show_spinner=False)
def outcomes(spec: tuple, logit_size: float) -> list:
    keep = build_mask(spec[0], spec[1], **dict(spec[2]))
    q, k, v = demo_qkv(keep.shape[0], spec[1], spec[1])
    return fill_outcomes(q, k, v, keep, DTYPES, logit_size=logit_size)


# Building a plotly figure costs ~30 ms; these caches hand back the same read-only Chart
# objects (cache_resource: no pickling), bounded, keyed only by the controls they use.
@st.cache_resource(max_entries=8, show_spinner=False)
def mask_chart(spec: tuple, example: int):
    kind = spec[0]
    keep = build_mask(kind, spec[1], **dict(spec[2]))  # (B, T, T)
    keep = keep[min(example, keep.shape[0] - 1)].numpy()
    who = f" — example {example}" if kind == "padding" else ""
    return fig.mask_chart(
        keep, title=f"Mask: {kind}{who}", caption=CAPTIONS[kind], clickable=kind == "custom"
    )


@st.cache_resource(max_entries=8, show_spinner=False)
def logits_chart(spec: tuple, fill: str, dtype: str, logit_size: float, example: int):
    m = main_view(spec, fill, dtype, logit_size, example)
    return fig.logits_chart(m["logits"], m["keep"], stored_fill=m["stored"], dtype=dtype)


@st.cache_resource(max_entries=8, show_spinner=False)
def weight_charts(spec: tuple, fill: str, dtype: str, logit_size: float, example: int):
    m = main_view(spec, fill, dtype, logit_size, example)
    return (
        fig.plain_weights_chart(m["weights"], m["keep"], nan_rows=m["nan_rows"]),
        fig.safe_weights_chart(m["safe"], m["keep"]),
    )


@st.cache_resource(max_entries=8, show_spinner=False)
def fill_chart(spec: tuple, logit_size: float, fill: str, dtype: str):
    return fig.fill_grid(outcomes(spec, logit_size), fill=fill, dtype=dtype)


@st.cache_resource(max_entries=8, show_spinner=False)
def cross_chart(T_q: int, T: int, lengths: tuple, example: int):
    keep, w, used = cross_attention_demo(T_q, T, lengths, device=ui.device())
    b = min(example, len(used) - 1)
    return fig.cross_chart(
        w[b].float().cpu().numpy(), keep[b].cpu().numpy(), example=b, length=used[b], T_q=T_q, T_k=T
    )


@st.cache_resource(max_entries=8, show_spinner=False)
def bug_lab(batch: int, T_q: int, T: int, lengths: tuple, example: int):
    """The bug lab: its messages and (when the bare mask runs silently) its two charts."""
    lab = broadcast_lab(batch, T_q, T, lengths)
    charts = []
    if lab.wrong_keep is not None and batch > 1:
        ex = min(example, batch - 1)
        right, wrong = lab.right_keep[ex].numpy(), lab.wrong_keep[ex].numpy()
        charts = [
            fig.broadcast_masks(
                right, wrong, example=ex, row_source=lab.row_source, lengths=lab.lengths
            ),
            fig.broadcast_diff(lab.diff.numpy()),
        ]
    return (lab.torch_error, lab.core_error), charts


def cost_view(T: int, show):
    """Timed once per server in a heavy-job slot (ui.jobs), so a class's timings take turns."""
    device = ui.device()
    cost, _ = ui.jobs.shared(
        ui.jobs.results("masks-cost", 4), (T, str(device)),
        lambda _job: ui.jobs.call(causal_cost, T, device=device), kind="timing",
        what=f"causal flag vs mask at T {T}", show=show,
    )  # fmt: skip
    return cost


# ----------------------------------------------------------------------------- predict, then reveal
# Truths come from attn_core for the instance the controls pick (T, fill, precision, logit size,
# T_q, lengths); each exercise key holds all of them, so a new instance starts unrevealed.
@st.cache_data(max_entries=32, show_spinner=False)
def empty_row_truth(T: int, fill: str, dtype: str, logit_size: float) -> tuple[str, list]:
    return empty_row_weights(T, fill, DTYPES[dtype], logit_size=logit_size)


@st.cache_data(max_entries=16, show_spinner=False)
def broadcast_truth(n: int, T: int, lengths: tuple) -> tuple[str, int]:
    return broadcast_verdict(n, n, T, lengths)


def empty_row_exercise(c: dict) -> bool:
    T, fill, dtype, size = c["T"], c["fill"], c["dtype"], c["logit_size"]
    verdict, row = empty_row_truth(T, fill, dtype, size)
    choices = dict(zip(("nan", "zeros", "spread"), EMPTY_CHOICES, strict=True))
    shown = ", ".join(f"{x:.3g}" for x in row[:8]) + (", …" if len(row) > 8 else "")
    return ui.predict_choice(
        f"mask-empty-{T}-{fill}-{dtype}-{size:g}",
        EMPTY_Q.format(T=T, fill=fill, dtype=dtype, size=f"{size:g}"),
        list(choices.values()),
        choices[verdict],
        EMPTY_WHY,
        truth=f"Row 0 came out [{shown}]; {fill} is stored as "
        f"{fig.fmt_value(stored_fill(fill, DTYPES[dtype]))} in {dtype}.",
        secret=[f"[{shown}]"],  # and the fill grid, which waits for the reveal
    )


def broadcast_exercises(n: int, T: int, given: tuple) -> bool:
    """The two questions about B = T_q = n; True once both are revealed."""
    lengths = batch_lengths(given, n, T)  # what the batch of n examples holds
    verdict, wrong = broadcast_truth(n, T, given)
    choices = dict(zip(("raises", "right", "wrong"), BCAST_CHOICES, strict=True))
    case = f"{n}-{T}-{'.'.join(map(str, given))}"
    setting = BCAST_SETTING.format(n=n, T=T, lengths=", ".join(map(str, lengths)))
    what = ui.predict_choice(
        f"mask-bcast-{case}",
        setting + " Run the line above. What happens?",
        list(choices.values()),
        choices[verdict],
        BCAST_WHY,
        truth=BCAST_TRUTH[verdict],
        secret=[BCAST_SHOWN[verdict]],
    )
    many = ui.predict_number(
        f"mask-wrong-{case}",
        setting + f" Of the {n} × {n} = {n * n} (example, query row) pairs, how many come "
        "out different from the correct (B, 1, 1, T_k) mask?",
        wrong,
        WRONG_WHY,
        abs_tol=0.5,
        rel_tol=0.0,
        fmt="{:.0f}",
        lo=0.0,
        hi=float(n * n),
        secret=[f"{wrong} of the {n * n}"],
    )
    return what and many


def flip_cell(grid_key: str, T: int) -> None:
    """Click callback: the clicked (query, key) flips, and the URL's `custom` follows."""
    points = st.session_state[grid_key].selection.points
    if points:
        i, j = round(points[0]["y"]), round(points[0]["x"])  # y = query row, x = key column
        cells = parse_custom(st.session_state.get("custom", ""), T).cells
        text = toggle_cell(cells, i, j)
        if len(text) <= CUSTOM_CHARS:  # past that the link would be refused: ignore the click
            st.session_state["custom"] = text


def controls() -> dict:
    """The controls every step reads; a step's own controls sit inside that step."""
    c: dict = {}
    with ui.controls_area():
        st.subheader("Mask")
        ui.used_by("step", STEPS, [s for s in STEPS if s != "Cost"])
        c["kind"] = kind = ui.selectbox("mask", "Mask type", MASK_KINDS, "causal")
        c["T"] = T = ui.slider("tokens", "Tokens T", 2, 48, 8)
        opts: dict = {}
        if kind == "sliding-window":
            opts["window"] = ui.slider("window", "Window: keys each query sees", 1, 48, 3)
        if kind == "prefix-LM":
            opts["prefix"] = ui.slider("prefix", "Prefix length", 0, 48, 3)
            if opts["prefix"] > T:
                ui.note(f"A prefix of {opts['prefix']} is longer than T = {T}; using {T}.")
                opts["prefix"] = T
        raw = ui.text("lengths", "Lengths per example, e.g. 5,3,7", LENGTHS)
        parsed = parse_lengths(raw, T)
        for message in parsed.problems(T, quote) if raw != LENGTHS else []:
            ui.note(message)  # the default clipped to a small T is no mistake: no warning
        c["lengths"] = tuple(parsed.lengths)
        readers = "" if kind in LENGTH_KINDS else (
            f" The {kind} mask ignores them; the Cross attention and Broadcasting bug steps "
            "read them."
        )  # fmt: skip
        st.caption(f"In use: {', '.join(map(str, c['lengths']))} (each at most T = {T}).{readers}")
        if kind == "block-diagonal":
            opts["segments_causal"] = ui.toggle("causal", "Causal inside each segment", False)
            opts["lengths"] = tuple(fit_segments(c["lengths"], T))
        if kind == "padding":
            opts["lengths"] = c["lengths"]
        if kind == "custom":
            c["custom"] = ui.text("custom", "Flipped cells (query-key)", "", max_chars=CUSTOM_CHARS)
            cells = parse_custom(c["custom"], T)
            for message in cells.problems(T, quote):
                ui.note(message)
            opts["cells"] = tuple(sorted(cells.cells))
        c["example"] = ui.radio("example", "Example shown", range(len(c["lengths"])), 0)
        c["example"] = min(c["example"], len(c["lengths"]) - 1)
        c["spec"] = (kind, T, tuple(sorted(opts.items())))
        st.subheader("Fill and precision")
        ui.used_by("step", STEPS, ("Mask", "Weights", "Fill"))
        c["fill"] = ui.radio("fill", "Fill for forbidden logits", FILLS, "-inf", help=FILL_HELP)
        c["dtype"] = ui.radio("dtype", "Precision", list(DTYPES), "float32")
        c["logit_size"] = ui.log_slider("logit_size", "Logit size (std of scores)", 1, 30000, 1)
    return c


def query_length() -> int:
    """T_q, shown by two steps: the same widget (same key and arguments) in whichever is open."""
    return ui.slider("T_q", "Query length T_q", 1, 48, T_Q)


def row_notices(c: dict, m: dict) -> None:
    if m["overflow"]:
        big = fig.fmt_value(float(torch.finfo(DTYPES[c["dtype"]]).max))
        st.info(
            f"{m['overflow']} allowed scores are already ±inf: {c['dtype']} stops at {big}, and "
            "these logits are larger. A row holding +inf comes out NaN whatever the fill; "
            "lower the logit size.",
            icon=":material/warning:",
        )
    if m["empty"]:
        rows = ", ".join(map(str, m["empty"]))
        st.info(
            f"Query row {rows} may attend to **no key at all** (∅). {empty_text(c, m)}",
            icon=":material/block:",
        )


def empty_text(c: dict, m: dict) -> str:
    """What the plain softmax did to the empty rows, for this fill and precision."""
    n, k = len(m["empty"]), m["empty_nan"]
    stored = fig.fmt_value(m["stored"])
    if k == n:
        did = "returns NaN there"
    elif k == 0:
        did = "quietly spreads the row's weight over forbidden keys"
    else:
        did = f"returns NaN in {k} of these rows and spreads the weight of the rest"
    return (
        f"Softmax over nothing is undefined: with the fill {c['fill']} (stored as {stored} in "
        f"{c['dtype']}) the plain softmax {did}. attn_core's safe path gives such a query zero "
        "weights, so its output is a zero vector."
    )


def _rows(rows) -> str:
    return ", ".join(map(str, rows))


def leak_try(T: int, dtype: str) -> tuple[str, str]:
    """The leak suggestion, measured on the causal mask at this T and precision."""
    m = main_view(("causal", T, ()), LEAK_FILL, dtype, LEAK_SIZE, 0)
    rows = np.flatnonzero(m["partial"])  # rows with forbidden and allowed keys
    leak, out = m["row_leak"][rows], m["outrun"][rows]
    shift = f"{-m['stored']:g}"  # how far the fill pushes a forbidden logit down
    do = f"Causal mask, fill {LEAK_FILL}, logit size {LEAK_SIZE:g}"
    n, k = len(rows), int(out.sum())
    if k == 0:
        top = float(np.nanmax(leak)) if n else 0.0
        leaks = f"leaks more than {top:.1g} of its weight" if top else "leaks anything"
        return do, (
            f"at T = {T} no row with forbidden keys ({n} of them) {leaks}: no future score "
            f"beats its row's best allowed one by {shift}. Raise T for more rows, and more "
            "chances."
        )
    hit, rest = leak[out], leak[~out]
    lo, hi = f"{np.nanmin(hit):.0%}", f"{np.nanmax(hit):.0%}"
    share = lo if lo == hi else f"{lo}–{hi}"
    most = float(np.nanmax(rest)) if n > k else 0.0
    others = f"; the other {n - k} leak " + (f"at most {most:.1g}" if most else "nothing")
    others = others if n > k else ""
    return do, (
        f"at T = {T}, {k} of the {n} rows with forbidden keys (query {_rows(rows[out])}) put "
        f"{share} of their weight on future keys{others}. In each of those {k} rows a future "
        f"score beats the best allowed one by more than {shift}, so even after the fill it is "
        "the row's largest logit. −inf never leaks."
    )


def try_fill(c: dict) -> list[tuple[str, str]]:
    stored = fig.fmt_value(stored_fill("-1e9", DTYPES["float16"]))
    raises = replace_fill_error("-1e9", DTYPES["float16"]) is not None
    return [
        (
            "Choose custom and flip cell 0-0 (click it on the Mask step), keep −inf",
            "row 0 has no key left: "
            "the plain weights turn NaN, while the safe path shows a row of zeros.",
        ),
        (
            "Then switch the fill to −1e9 and the precision to float16",
            f"−1e9 is stored as {stored}, so NaN again"
            + (" — and the masked_fill style raises an overflow error instead." if raises else "."),
        ),
        leak_try(c["T"], c["dtype"]),
    ]


def mask_step(c: dict) -> None:
    st.subheader("The mask and the masked logits")
    setting = (c["spec"], c["fill"], c["dtype"], c["logit_size"], c["example"])
    m = main_view(*setting)
    mask = mask_chart(c["spec"], c["example"])
    left, right = st.columns(2)
    with left:
        if c["kind"] == "custom":  # a fresh key per mask: the new chart starts unselected
            key = f"grid_{c['T']}_{zlib.crc32(c['custom'].encode())}"
            on_select = partial(flip_cell, key, c["T"])
            st.plotly_chart(
                mask.fig,
                key=key,
                on_select=on_select,
                selection_mode="points",
                config=PLOTLY_CONFIG,
            )
            st.caption(mask.caption + " **Click a cell to flip it**; the link keeps your mask.")
        else:
            ui.show(mask)
    with right:
        ui.show(logits_chart(*setting))
    row_notices(c, m)
    ui.try_this(TRY_MASK)


def weights_step(c: dict) -> None:
    st.subheader("The weights: a plain softmax against the safe path")
    setting = (c["spec"], c["fill"], c["dtype"], c["logit_size"], c["example"])
    m = main_view(*setting)
    a, b, d, e = st.columns(4)
    a.metric(f"Fill as {c['dtype']} stores it", fig.fmt_value(m["stored"]))
    b.metric("Rows that came out NaN", m["nan_rows"])
    d.metric("Largest leaked weight", f"{m['leak']:.3g}", help=LEAK_HELP)
    e.metric("Output error vs safe", f"{m['diff']:.3g}", help=DIFF_HELP)
    err = replace_fill_error(c["fill"], DTYPES[c["dtype"]])
    if err:
        st.error(
            f"The other common style, `scores.masked_fill(~keep, {c['fill']})` in {c['dtype']}, "
            f"fails loudly instead: *RuntimeError: {err}*. A float mask tensor, as used here, "
            "overflows to −inf without a word.",
            icon=":material/error:",
        )
    plain, safe = weight_charts(*setting)
    left, right = st.columns(2)
    with left:
        ui.show(plain)
    with right:
        ui.show(safe)
    row_notices(c, m)
    ui.try_this(try_fill(c))


def fill_step(c: dict) -> None:
    st.subheader("The fill value: −inf, −1e9, finfo.min or −1e4?")
    if empty_row_exercise(c):  # the grid shows what every fill gives: the answer
        ui.show(fill_chart(c["spec"], c["logit_size"], c["fill"], c["dtype"]))
    else:
        ui.until_reveal("The grid of what every fill and precision gives")
    ui.explain("Why −inf, and why not always −inf?", EXPLAIN_FILL)


@st.fragment
def cross_step(T: int, lengths: tuple, example: int) -> None:
    """Its own fragment: T_q reruns this step only."""
    st.subheader("Cross-attention: padding on the keys only")
    left, right = st.columns([3, 2], vertical_alignment="center")
    with right:
        T_q = query_length()
        ui.show_notes(keys=("T_q",))
        st.markdown(ui.where(CROSS))
    with left:
        ui.show(cross_chart(T_q, T, lengths, example))


@st.fragment
def bug_step(T: int, lengths: tuple, example: int) -> None:
    """Its own fragment: B and T_q rerun this step only."""
    st.subheader("The broadcasting bug: a (B, T_k) mask on (B, h, T_q, T_k) scores")
    code, knobs = st.columns([1.4, 1], vertical_alignment="center")  # the line, and its shapes
    with knobs:
        # B starts equal to T_q: the step opens on the silent bug, its point; any other
        # B gives PyTorch's shape error, the loud contrast.
        k1, k2 = st.columns(2)
        with k1:
            B = ui.slider("batch", "Batch size B", 1, 48, T_Q)
        with k2:
            T_q = query_length()
    code.code(BUG_CODE, language="python", wrap_lines=True)
    ui.show_notes(keys=("batch", "T_q"))
    (torch_error, core_error), bug = bug_lab(B, T_q, T, lengths, example)
    answered = broadcast_exercises(T_q, T, lengths)
    if torch_error:
        st.error(
            f"B = {B} ≠ T_q = {T_q}, so PyTorch refuses — the lucky case.\n\n"
            f"**RuntimeError:** {torch_error}\n\nattn_core's own check: {core_error}",
            icon=":material/error:",
        )
        st.markdown(f"Now set **B = T_q = {T_q}**: the same line runs without a word.")
    elif B == 1:
        st.success("B = 1: the bare mask acts as (1, 1, 1, T_k), which is right by luck.")
    elif not answered:  # B = T_q: the outcome, and the pairs it breaks, are the answers
        ui.until_reveal(f"What the line does at B = T_q = {B}, and the pairs it gets wrong")
    else:
        wrong = broadcast_truth(T_q, T, lengths)[1]
        st.info(  # not st.warning: warnings are the link's notes, and nothing is wrong with it
            f"B = T_q = {B}: **no error**, yet query row i of every example is masked with "
            f"example i's padding: {wrong} of the {B * B} (example, query row) pairs come "
            "out different from the right mask."
            if wrong
            else f"B = T_q = {B}: **no error**, and all {B * B} (example, query row) pairs come "
            "out right, by luck: every example has the same padding mask here, so borrowing "
            "another example's changes nothing. Give the examples different lengths.",
            icon=":material/visibility_off:",
        )
        st.markdown(
            f"Set **B** to anything but {T_q} and the same line fails loudly: PyTorch refuses "
            "the shapes with a RuntimeError. That is the lucky case; this one trains on the "
            "wrong context without a word."
        )
        for chart in bug:
            ui.show(chart)
    ui.try_this(TRY_SHAPES)
    ui.explain("Shapes: (B, 1, 1, T_k) for padding, (T_q, T_k) for causal", EXPLAIN_SHAPES)


@st.fragment
def cost_step() -> None:
    """Its own fragment: the timing's T and its button rerun this step only."""
    st.subheader("`is_causal=True` or a materialised causal mask?")
    left, _ = st.columns([2, 3])
    with left:
        T = ui.select_slider("T_time", "T for the timing", [256, 512, 1024, 2048], 1024)
    ui.show_notes(keys=("T_time",))
    st.markdown(COST.format(T=T, mib=T * T / 2**20))
    if not st.button(f"Measure both at T = {T} on this device", icon=":material/timer:"):
        st.caption("A few calls of each (about a second on a CPU); the result is cached.")
        return
    box = st.empty()
    try:
        with st.spinner("Timing on this device…"):
            cost = cost_view(T, lambda s: box.info(s, icon=":material/hourglass:"))
        box.empty()
    except ui.jobs.GaveUpError as e:
        box.warning(str(e), icon=":material/hourglass_disabled:")
        return
    a, b, d = st.columns(3)
    a.metric("Max |difference| of the outputs", f"{cost.max_diff:.3g}")
    b.metric("Time: flag / mask", f"{cost.ms_is_causal:.3g} / {cost.ms_mask:.3g} ms")
    if cost.peak_mask is not None:
        peaks = f"{cost.peak_is_causal / 2**20:.3g} / {cost.peak_mask / 2**20:.3g} MiB"
        d.metric("Peak memory: flag / mask", peaks)
    else:
        extra = f"{cost.mask_bytes / 2**20:.3g} MiB"
        d.metric("Extra memory for the mask", extra, help="Counted: T × T booleans.")
    ui.show(fig.causal_cost_chart(cost))
    ui.try_this(TRY_COST)


def run() -> None:
    ui.page_header(FILE, INTRO)
    c = controls()
    ui.show_notes(keys=MAIN_CONTROLS)
    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            mask_step(c)
    with tabs[1]:
        if tabs[1].open:
            weights_step(c)
    with tabs[2]:
        if tabs[2].open:
            fill_step(c)
    with tabs[3]:
        if tabs[3].open:
            cross_step(c["T"], c["lengths"], c["example"])
    with tabs[4]:
        if tabs[4].open:
            bug_step(c["T"], c["lengths"], c["example"])
    with tabs[5]:
        if tabs[5].open:
            cost_step()
    ui.prev_next(FILE)


INTRO = (
    "A mask decides which keys each query may read. Before softmax every forbidden score is "
    "replaced by −∞ (or a very negative number), so it gets zero weight. Masks enforce "
    "causality, ignore padding, limit attention to a window and keep packed documents apart. "
    "They also fail **quietly**: a fill that is too small, or a mask of the wrong shape, still "
    "gives numbers — just wrong ones. This page makes each failure visible, one step at a time "
    "below; the mask, fill and precision controls in the sidebar apply to every step."
)
DIFF_HELP = "Largest |plain output − safe output| over the rows that are not NaN."
FILL_HELP = (
    "finfo.min is the precision's most negative finite number, e.g. "
    f"{torch.finfo(torch.float16).min:,.0f} in float16."
).replace("-", "−")
LEAK_HELP = "Weight that a row with allowed keys puts on forbidden ones (empty rows excluded)."
TRY_MASK = [
    (
        "Pick sliding-window and set the window to 1",
        "each query reads only itself: the mask is a diagonal, and every masked logit row "
        "keeps a single coloured cell.",
    ),
    (
        "Pick padding, then switch the example shown",
        "the grey columns on the right move: each example blocks the keys past its own length, "
        "for every query alike.",
    ),
    (
        "Pick block-diagonal and turn on causal inside each segment",
        "each packed document becomes its own small causal triangle.",
    ),
]
CROSS = (
    "In an encoder–decoder, decoder queries (T_q of them) read encoder keys (T_k = T). Only the "
    "**keys** are padded, so the mask is (B, 1, 1, T_k): it broadcasts over heads and over every "
    "query row. T_q ≠ T_k is no problem, and no query row is ever empty as long as each example "
    "keeps at least one real key. Pick the example in the sidebar."
)
BUG_CODE = (
    "keep = torch.arange(T_k) < lengths[:, None]   # (B, T_k): looks harmless\n"
    "scores.masked_fill(~keep, float('-inf'))       # scores: (B, h, T_q, T_k)\n"
    "# broadcasting lines shapes up from the right: keep acts as (1, 1, B, T_k)"
)
TRY_SHAPES = [
    (
        "Set the batch size B to one less than T_q",
        "PyTorch refuses with a RuntimeError: the loud case. Set it back to T_q and the "
        "error disappears while the picture fills with vermillion and orange cells: wrong "
        "rows, no warning.",
    ),
    (
        "With B = T_q, type lengths 4,4,4",
        "every example has the same padding, so the bug changes "
        "nothing — which is how it survives tests on tidy batches.",
    ),
    ("Set B = 1", "the bare mask is right by accident: there is only one example to confuse."),
]
TRY_COST = [
    ("Measure at T = 256, then at 2048", "on most machines the mask's extra time grows with T: "
     "reading T × T entries is work the flag never does."),
    ("Read the max difference", "0, or at the level of float32 rounding: the two ways give "
     "the same attention, so there is no accuracy reason to build the mask yourself."),
]  # fmt: skip
COST = (
    "Both hand PyTorch's fused attention the same causal structure. The flag lets the kernel "
    "skip the upper triangle without reading anything; the mask is a T × T tensor it must build "
    "and read ({mib:.3g} MiB of booleans at T = {T}, every call)."
)
EMPTY_Q = (
    "Take the causal mask at T = {T} and flip cell `0-0` (a custom mask): query 0 now may read "
    "**no key at all**. With this page's fill **{fill}** in **{dtype}** (logit size {size}), "
    "what does the plain softmax give row 0?"
)
EMPTY_CHOICES = (
    "NaN in every entry",
    "All zeros: the row reads nothing",
    "Weights that still add up to 1, on keys it must not read",
)
EMPTY_WHY = (
    "Softmax divides each exp by the row's total. If every logit is −∞, every exp is 0 and the "
    "row is 0/0 — NaN (torch.softmax first subtracts the row's maximum, and −∞ − (−∞) is "
    "already NaN). A finite fill cannot empty a row: it lowers every logit of the row by the "
    "same amount, and softmax ignores a shift shared by the whole row, so the weights land on "
    "the very keys the mask forbids (evenly, when the fill swamps the scores in rounding). A "
    "finite fill that overflows to −∞ in this precision behaves like −∞. Zeros never come out "
    "of softmax by itself: they need code that spots empty rows, as attn_core's safe path does."
)
BCAST_SETTING = (
    "Suppose **B = T_q = {n}**, T_k = {T}, key lengths {lengths} (the sidebar's lengths, "
    "repeated and clipped to T), and the bare (B, T_k) mask goes into `masked_fill`."
)
BCAST_CHOICES = (
    "It raises a shape error",
    "It runs and masks every example correctly",
    "It runs without a word, but query rows get another example's padding",
)
BCAST_TRUTH = {
    "raises": "On these shapes PyTorch raised a RuntimeError.",
    "right": "On these shapes no error was raised, and every output matched the correct mask.",
    "wrong": "On these shapes no error was raised, and some outputs differ from the correct mask.",
}
BCAST_SHOWN = {"raises": "RuntimeError", "right": "no error", "wrong": "no error"}  # after it
BCAST_WHY = (
    "Broadcasting compares shapes from the **last** axis backwards. (B, T_k) against "
    "(B, h, T_q, T_k) pairs T_k with T_k and then B with T_q; the missing leading axes become "
    "1. When B and T_q differ (and B is not 1) that pairing fails loudly. When they are equal it "
    "fits, so PyTorch has no reason to complain, and example i's padding is applied to query "
    "row i of *every* example. Only when all lengths in the batch are equal, or B = 1, does the "
    "wrong reading happen to give the right mask."
)
WRONG_WHY = (
    "The bare mask is read as (1, 1, B, T_k): query row i of example b is masked with example "
    "i's padding instead of example b's. That pair comes out right only if examples i and b "
    "happen to have the same length. So count, over all n × n pairs, those whose two lengths "
    "differ; a batch of equal lengths hides the bug completely, which is why tidy test batches "
    "never catch it."
)
EXPLAIN_FILL = (
    "exp(−∞) is exactly 0, so a −∞ logit gets exactly zero weight in any precision. The one "
    "trap: when *every* key of a row is forbidden the row maximum is −∞ and −∞ − (−∞) is NaN. "
    "Code either guarantees each query keeps a key (a causal mask always keeps the diagonal) or "
    "zeroes such rows afterwards, as attn_core does.\n\n"
    "A finite fill avoids that NaN only while it stays finite, and trades it for other trouble: "
    "it only *shifts* a forbidden logit, so logits as large as the fill leak through, and a row "
    "with nothing allowed spreads its weight over keys it must not see. −1e9 is beyond any sane "
    "logit in float32, but float16 tops out at {f16_max}, so −1e9 becomes −∞ there and an empty "
    "row turns NaN exactly as with −∞ (the grid above shows it). Half-precision code therefore "
    "falls back to −1e4 or to the dtype's minimum — and in float16 that minimum itself overflows "
    "to −∞ as soon as a score of {f16_edge} or below is added to it."
).format(
    f16_max=f"{torch.finfo(torch.float16).max:,.0f}",
    f16_edge=f"{min_fill_overflow(torch.float16):g}".replace("-", "−"),
)
EXPLAIN_SHAPES = (
    "Broadcasting lines shapes up **from the right**. A causal mask (T_q, T_k) therefore applies "
    "to every example and head, as intended. A padding mask differs per example, so its batch "
    "axis must stay first: reshape it to (B, 1, 1, T_k), which broadcasts over heads and queries. "
    "Left as (B, T_k), its B lines up with T_q: different sizes give a shape error; equal sizes "
    "give every query row another example's padding, and the model trains on the wrong context "
    "without a warning. Expand masks to four dimensions explicitly, and test on batches of "
    "*unequal* lengths."
)


run()
