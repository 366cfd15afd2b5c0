"""Masks: every mask shape, what the fill value does, and the broadcast that fails silently."""

import zlib
from functools import partial

import numpy as np
import streamlit as st
import torch

import ui
from attn_core import DTYPES
from attn_core.lessons import masks as core
from figures import masks as fig
from figures.parts import fmt_value

FILE = "pages/masks.py"
W = ui.Words("masks")
STEPS = ui.lesson("masks").steps
CUSTOM_CHARS = 3000
LENGTHS = "5,3,7"
LEAK_FILL, LEAK_SIZE = "-1e4", 10000.0  # the leak suggestion: a small fill, large logits
T_Q = 6  # the default query length, and the default batch size of the broadcasting bug
LENGTH_KINDS = ("padding", "block-diagonal")  # the masks built from the lengths per example
BUG_CODE = (
    "keep = torch.arange(T_k) < lengths[:, None]   # (B, T_k): looks harmless\n"
    "scores.masked_fill(~keep, float('-inf'))       # scores: (B, h, T_q, T_k)\n"
    "# broadcasting lines shapes up from the right: keep acts as (1, 1, B, T_k)"
)
DIFF_HELP = "Largest |plain output − safe output| over the rows that are not NaN."
FILL_HELP = (
    "finfo.min is the precision's most negative finite number, e.g. "
    f"{torch.finfo(torch.float16).min:,.0f} in float16."
).replace("-", "−")
LEAK_HELP = "Weight that a row with allowed keys puts on forbidden ones (empty rows excluded)."
BCAST_SHOWN = {"raises": "RuntimeError", "right": "no error", "wrong": "no error"}  # after it


@ui.frozen
class MaskSpec:
    """One mask: its kind, T and build_mask's options as sorted (name, value) pairs."""

    kind: str
    T: int
    opts: tuple = ()

    def build(self, device=None) -> torch.Tensor:
        return core.build_mask(self.kind, self.T, **dict(self.opts), device=device)  # (B, T, T)


@ui.frozen
class View:
    """What the mask, weights and fill views are computed from."""

    spec: MaskSpec
    fill: str
    dtype: str
    logit_size: float
    example: int


@ui.frozen
class Settings:
    """The sidebar's controls, read by every step."""

    spec: MaskSpec
    lengths: tuple[int, ...]  # per example, each in [1, T]
    example: int
    fill: str
    dtype: str
    logit_size: float
    custom: str = ""  # the flipped cells' text (custom mask only)

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def T(self) -> int:
        return self.spec.T

    @property
    def view(self) -> View:
        return View(self.spec, self.fill, self.dtype, self.logit_size, self.example)


def quote(x) -> str:
    return f"`{ui.safe_text(x, 20)}`"


def quoted(items) -> str:
    """The user's first five items, each quoted safely, and `…` when there were more."""
    head = ", ".join(quote(x) for x in list(items)[:5])
    return head + (" …" if len(items) > 5 else "")


def length_notes(p: core.ParsedLengths, T: int) -> list[str]:
    """One sentence per kind of repair parse_lengths made, in content/masks.md's words."""
    fields = {
        "non_numeric": lambda: dict(items=quoted(p.non_numeric)),
        "too_long": lambda: dict(items=quoted(p.too_long), T=T),
        "not_positive": lambda: dict(items=quoted(p.not_positive)),
        "dropped_extra": lambda: dict(most=core.MAX_EXAMPLES, n=p.dropped_extra),
        "used_default": lambda: dict(lengths=", ".join(map(str, p.lengths))),
    }
    return [W(f"note.lengths.{k}", **kw()) for k, kw in fields.items() if getattr(p, k)]


def cell_notes(p: core.ParsedCells, T: int) -> list[str]:
    """One sentence per kind of custom cell that parse_custom ignored."""
    fields = {"bad": {}, "outside": dict(T=T)}
    return [
        W(f"note.custom.{k}", items=quoted(getattr(p, k)), **kw)
        for k, kw in fields.items()
        if getattr(p, k)
    ]


@ui.cache_data(max_entries=48, show_spinner=False)
def main_view(v: View) -> dict:
    """Mask, filled logits, plain and safe weights of one batch element, as numpy."""
    keep = v.spec.build(device=ui.device())  # (B, T, T)
    T = v.spec.T
    q, k, vv = core.demo_qkv(keep.shape[0], T, T, device=ui.device())
    r = core.apply_fill(q, k, vv, keep, v.fill, DTYPES[v.dtype], logit_size=v.logit_size)
    b = min(v.example, keep.shape[0] - 1)
    return dict(
        keep=keep[b].cpu().numpy(),
        logits=r.logits[b].double().cpu().numpy(),
        weights=r.weights[b].float().cpu().numpy(),
        safe=r.safe_weights[b].float().cpu().numpy(),
        stored=r.stored,
        nan_rows=int(r.nan_rows[b].sum()),
        leak=r.max_leak,
        empty=core.empty_rows(keep[b]),
        diff=float(r.out_diff[b].nan_to_num(0).max()),
        overflow=int(r.logits[b][keep[b]].isinf().sum()),  # scores already ±inf in dtype
        empty_nan=int((r.nan_rows[b] & r.empty[b]).sum()),  # empty rows the softmax made NaN
        row_leak=r.leaked[b].cpu().numpy(),  # (T_q,) weight on forbidden keys, NaN where NaN
        outrun=r.outrun[b].cpu().numpy(),  # (T_q,) a forbidden logit is the row's largest
        partial=((~keep[b]).any(-1) & keep[b].any(-1)).cpu().numpy(),  # rows with both kinds
    )


@ui.cache_data(max_entries=24, show_spinner=False)
def outcomes(spec: MaskSpec, logit_size: float) -> list:
    keep = spec.build()
    q, k, v = core.demo_qkv(keep.shape[0], spec.T, spec.T)
    return core.fill_outcomes(q, k, v, keep, DTYPES, logit_size=logit_size)


# Building a plotly figure costs ~30 ms; these caches hand back the same read-only Chart
# objects (cache_resource: no pickling), bounded, keyed only by the controls they use.
@ui.cache_resource(max_entries=8, show_spinner=False)
def mask_chart(spec: MaskSpec, example: int):
    keep = spec.build()  # (B, T, T)
    keep = keep[min(example, keep.shape[0] - 1)].numpy()
    who = f" — example {example}" if spec.kind == "padding" else ""
    click = " " + W("caption.click") if spec.kind == "custom" else ""
    return fig.mask_chart(
        keep,
        title=f"Mask: {spec.kind}{who}",
        caption=W(f"caption.{spec.kind}") + click,
        clickable=spec.kind == "custom",
    )


@ui.cache_resource(max_entries=8, show_spinner=False)
def logits_chart(v: View):
    m = main_view(v)
    return fig.logits_chart(m["logits"], m["keep"], stored_fill=m["stored"], dtype=v.dtype)


@ui.cache_resource(max_entries=8, show_spinner=False)
def weight_charts(v: View):
    m = main_view(v)
    return (
        fig.plain_weights_chart(m["weights"], m["keep"], nan_rows=m["nan_rows"]),
        fig.safe_weights_chart(m["safe"], m["keep"]),
    )


@ui.cache_resource(max_entries=8, show_spinner=False)
def fill_chart(spec: MaskSpec, logit_size: float, fill: str, dtype: str):
    return fig.fill_grid(outcomes(spec, logit_size), fill=fill, dtype=dtype)


@ui.cache_resource(max_entries=8, show_spinner=False)
def cross_chart(T_q: int, T: int, lengths: tuple, example: int):
    keep, w, used = core.cross_attention_demo(T_q, T, lengths, device=ui.device())
    b = min(example, len(used) - 1)
    return fig.cross_chart(
        w[b].float().cpu().numpy(), keep[b].cpu().numpy(), example=b, length=used[b], T_q=T_q, T_k=T
    )


@ui.cache_resource(max_entries=8, show_spinner=False)
def bug_lab(batch: int, T_q: int, T: int, lengths: tuple, example: int):
    """The bug lab: its messages and (when the bare mask runs silently) its two charts."""
    lab = core.broadcast_lab(batch, T_q, T, lengths)
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
        lambda _job: ui.jobs.call(core.causal_cost, T, device=device), kind="timing",
        what=f"causal flag vs mask at T {T}", show=show,
    )  # fmt: skip
    return cost


# ----------------------------------------------------------------------------- predict, then reveal
# Truths come from attn_core for the instance the controls pick (T, fill, precision, logit size,
# T_q, lengths); each exercise key holds all of them, so a new instance starts unrevealed.
@ui.cache_data(max_entries=32, show_spinner=False)
def empty_row_truth(T: int, fill: str, dtype: str, logit_size: float) -> tuple[str, list]:
    return core.empty_row_weights(T, fill, DTYPES[dtype], logit_size=logit_size)


@ui.cache_data(max_entries=16, show_spinner=False)
def broadcast_truth(n: int, T: int, lengths: tuple) -> tuple[str, int]:
    return core.broadcast_verdict(n, n, T, lengths)


def empty_row_exercise(s: Settings) -> bool:
    T, fill, dtype, size = s.T, s.fill, s.dtype, s.logit_size
    verdict, row = empty_row_truth(T, fill, dtype, size)
    choices = W.choices("exercise.empty.choices")
    shown = ", ".join(f"{x:.3g}" for x in row[:8]) + (", …" if len(row) > 8 else "")
    stored = fmt_value(core.stored_fill(fill, DTYPES[dtype]))
    return ui.predict_choice(
        f"mask-empty-{T}-{fill}-{dtype}-{size:g}",
        W("exercise.empty.q", T=T, fill=fill, dtype=dtype, size=f"{size:g}"),
        list(choices.values()),
        choices[verdict],
        W("exercise.empty.why"),
        truth=W("exercise.empty.truth", shown=shown, fill=fill, stored=stored, dtype=dtype),
        secret=[f"[{shown}]"],  # and the fill grid, which waits for the reveal
    )


def broadcast_exercises(n: int, T: int, given: tuple) -> bool:
    """The two questions about B = T_q = n; True once both are revealed."""
    lengths = core.batch_lengths(given, n, T)  # what the batch of n examples holds
    verdict, wrong = broadcast_truth(n, T, given)
    choices = W.choices("exercise.bcast.choices")
    case = f"{n}-{T}-{'.'.join(map(str, given))}"
    setting = W("exercise.bcast.setting", n=n, T=T, lengths=", ".join(map(str, lengths)))
    what = ui.predict_choice(
        f"mask-bcast-{case}",
        W("exercise.bcast.q", setting=setting),
        list(choices.values()),
        choices[verdict],
        W("exercise.bcast.why"),
        truth=W.choices("exercise.bcast.truth")[verdict],
        secret=[BCAST_SHOWN[verdict], choices[verdict]],  # what the line did, in its words
    )
    many = ui.predict_number(
        f"mask-wrong-{case}",
        W("exercise.wrong.q", setting=setting, n=n, pairs=n * n),
        wrong,
        W("exercise.wrong.why"),
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
        cells = core.parse_custom(st.session_state.get("custom", ""), T).cells
        text = core.toggle_cell(cells, i, j)
        if len(text) <= CUSTOM_CHARS:  # past that the link would be refused: ignore the click
            st.session_state["custom"] = text


# ----------------------------------------------------------------------------- the controls
def lengths_control(kind: str, T: int) -> tuple[int, ...]:
    """The lengths per example, repaired to [1, T] (with a note), and which steps read them."""
    raw = ui.text("lengths", "Lengths per example, e.g. 5,3,7", LENGTHS)
    parsed = core.parse_lengths(raw, T)
    for message in length_notes(parsed, T) if raw != LENGTHS else []:
        ui.note(message)  # the default clipped to a small T is no mistake: no warning
    lengths = tuple(parsed.lengths)
    in_use = W("lengths.in_use", lengths=", ".join(map(str, lengths)), T=T)
    readers = "" if kind in LENGTH_KINDS else " " + W("lengths.ignored", kind=kind)
    st.caption(in_use + readers)
    return lengths


def mask_options(kind: str, T: int, lengths: tuple[int, ...]) -> tuple[dict, str]:
    """build_mask's options for this kind (drawing their controls), and the custom cells."""
    opts: dict = {}
    custom = ""
    if kind == "block-diagonal":
        opts["segments_causal"] = ui.toggle("causal", "Causal inside each segment", False)
        opts["lengths"] = tuple(core.fit_segments(lengths, T))
    if kind == "padding":
        opts["lengths"] = lengths
    if kind == "custom":
        custom = ui.text("custom", "Flipped cells (query-key)", "", max_chars=CUSTOM_CHARS)
        cells = core.parse_custom(custom, T)
        for message in cell_notes(cells, T):
            ui.note(message)
        opts["cells"] = tuple(sorted(cells.cells))
    return opts, custom


def shape_options(kind: str, T: int) -> dict:
    """The window or prefix of the two masks that have one."""
    opts: dict = {}
    if kind == "sliding-window":
        opts["window"] = ui.slider("window", "Window: keys each query sees", 1, 48, 3)
    if kind == "prefix-LM":
        opts["prefix"] = ui.slider("prefix", "Prefix length", 0, 48, 3)
        if opts["prefix"] > T:
            ui.note(W("note.prefix", prefix=opts["prefix"], T=T))
            opts["prefix"] = T
    return opts


def controls() -> Settings:
    """The controls every step reads; a step's own controls sit inside that step."""
    with ui.controls_area():
        st.header("Mask")
        ui.used_by("step", STEPS, [s for s in STEPS if s != "Cost"])
        kind = ui.selectbox("mask", "Mask type", core.MASK_KINDS, "causal")
        T = ui.slider("tokens", "Tokens T", 2, 48, 8)
        opts = shape_options(kind, T)
        lengths = lengths_control(kind, T)
        more, custom = mask_options(kind, T, lengths)
        example = ui.radio("example", "Example shown", range(len(lengths)), 0)
        st.header("Fill and precision")
        ui.used_by("step", STEPS, ("Mask", "Weights", "Fill"))
        fill = ui.radio("fill", "Fill for forbidden logits", core.FILLS, "-inf", help=FILL_HELP)
        dtype = ui.radio("dtype", "Precision", list(DTYPES), "float32")
        logit_size = ui.log_slider("logit_size", "Logit size (std of scores)", 1, 30000, 1)
    return Settings(
        spec=MaskSpec(kind, T, tuple(sorted((opts | more).items()))),
        lengths=lengths,
        example=min(example, len(lengths) - 1),
        fill=fill,
        dtype=dtype,
        logit_size=logit_size,
        custom=custom,
    )


def query_length() -> int:
    """T_q, shown by two steps: the same widget (same key and arguments) in whichever is open."""
    return ui.slider("T_q", "Query length T_q", 1, 48, T_Q)


# ----------------------------------------------------------------------------- sentences
def row_notices(s: Settings, m: dict) -> None:
    if m["overflow"]:
        big = fmt_value(float(torch.finfo(DTYPES[s.dtype]).max))
        st.info(
            W("notice.overflow", n=m["overflow"], dtype=s.dtype, big=big),
            icon=":material/warning:",
        )
    if m["empty"]:
        text = W(
            "notice.empty", rows=_rows(m["empty"]), fill=s.fill, stored=fmt_value(m["stored"]),
            dtype=s.dtype, did=empty_did(len(m["empty"]), m["empty_nan"]),
        )  # fmt: skip
        st.info(text, icon=":material/block:")


def empty_did(n: int, k: int) -> str:
    """What the plain softmax did to the n empty rows, k of which came out NaN."""
    if k == n:
        return W("notice.empty.all_nan")
    if k == 0:
        return W("notice.empty.no_nan")
    return W("notice.empty.some_nan", k=k)


def _rows(rows) -> str:
    return ", ".join(map(str, rows))


def leak_try(T: int, dtype: str) -> tuple[str, str]:
    """The leak suggestion, measured on the causal mask at this T and precision."""
    m = main_view(View(MaskSpec("causal", T), LEAK_FILL, dtype, LEAK_SIZE, 0))
    rows = np.flatnonzero(m["partial"])  # rows with forbidden and allowed keys
    leak, out = m["row_leak"][rows], m["outrun"][rows]
    shift = f"{-m['stored']:g}"  # how far the fill pushes a forbidden logit down
    do = W("try.leak.do", fill=LEAK_FILL, size=f"{LEAK_SIZE:g}")
    n, k = len(rows), int(out.sum())
    if k == 0:
        top = float(np.nanmax(leak)) if n else 0.0
        leaks = W("try.leak.none.some", top=top) if top else W("try.leak.none.nothing")
        return do, W("try.leak.none", T=T, n=n, leaks=leaks, shift=shift)
    hit, rest = leak[out], leak[~out]
    lo, hi = f"{np.nanmin(hit):.0%}", f"{np.nanmax(hit):.0%}"
    most = float(np.nanmax(rest)) if n > k else 0.0
    others = ""
    if n > k:
        others = (
            W("try.leak.others", n=n - k, most=most)
            if most
            else W("try.leak.others.nothing", n=n - k)
        )
    share = lo if lo == hi else f"{lo}–{hi}"
    see = W("try.leak.some", T=T, k=k, n=n, rows=_rows(rows[out]), share=share, others=others,
            shift=shift)  # fmt: skip
    return do, see


def try_fill(s: Settings) -> list[tuple[str, str]]:
    stored = fmt_value(core.stored_fill("-1e9", DTYPES["float16"]))
    raises = core.replace_fill_error("-1e9", DTYPES["float16"]) is not None
    tail = " " + W("try.fill.raises") if raises else "."
    return [*W.pairs("try.fill", stored=stored, tail=tail), leak_try(s.T, s.dtype)]


# ----------------------------------------------------------------------------- the steps
def mask_step(s: Settings) -> None:
    st.header("The mask and the masked logits")
    m = main_view(s.view)
    mask = mask_chart(s.spec, s.example)
    left, right = st.columns(2)
    with left:
        if s.kind == "custom":  # a fresh key per mask: the new chart starts unselected
            key = f"grid_{s.T}_{zlib.crc32(s.custom.encode())}"
            on_select = partial(flip_cell, key, s.T)
            # ui.show: its words too, like every chart (they were missing here)
            ui.show(mask, key=key, on_select=on_select, selection_mode="points")
        else:
            ui.show(mask)
    with right:
        ui.show(logits_chart(s.view))
    row_notices(s, m)
    ui.try_this(W.pairs("try.mask"))


def weights_step(s: Settings) -> None:
    st.header("The weights: a plain softmax against the safe path")
    m = main_view(s.view)
    a, b, d, e = st.columns(4)
    a.metric(f"Fill as {s.dtype} stores it", fmt_value(m["stored"]))
    b.metric("Rows that came out NaN", m["nan_rows"])
    d.metric("Largest leaked weight", f"{m['leak']:.3g}", help=LEAK_HELP)
    e.metric("Output error vs safe", f"{m['diff']:.3g}", help=DIFF_HELP)
    err = core.replace_fill_error(s.fill, DTYPES[s.dtype])
    if err:
        st.error(
            W("weights.replace_error", fill=s.fill, dtype=s.dtype, err=err),
            icon=":material/error:",
        )
    plain, safe = weight_charts(s.view)
    left, right = st.columns(2)
    with left:
        ui.show(plain)
    with right:
        ui.show(safe)
    row_notices(s, m)
    ui.try_this(try_fill(s))


def explain_fill() -> str:
    f16_edge = f"{core.min_fill_overflow(torch.float16):g}".replace("-", "−")
    return W("explain.fill", f16_max=f"{torch.finfo(torch.float16).max:,.0f}", f16_edge=f16_edge)


def fill_step(s: Settings) -> None:
    st.header("The fill value: −inf, −1e9, finfo.min or −1e4?")
    if empty_row_exercise(s):  # the grid shows what every fill gives: the answer
        ui.show(fill_chart(s.spec, s.logit_size, s.fill, s.dtype))
        ui.explain(W("explain.fill.title"), explain_fill())  # it says why: an answer too
    else:
        ui.until_reveal(W("fill.hidden"))


@st.fragment
def cross_step(s: Settings) -> None:
    """Its own fragment: T_q reruns this step only."""
    st.header("Cross-attention: padding on the keys only")
    left, right = st.columns([3, 2], vertical_alignment="center")
    with right:
        with ui.noting():
            T_q = query_length()
        st.markdown(ui.where(W("cross")))
    with left:
        ui.show(cross_chart(T_q, s.T, s.lengths, s.example))


def bug_outcome(B: int, T_q: int, s: Settings, answered: bool, bug: list) -> None:
    """What the bare mask did when PyTorch did not refuse: right by luck, or silently wrong."""
    if B == 1:
        st.success(W("bug.one"))
    elif not answered:  # B = T_q: the outcome, and the pairs it breaks, are the answers
        ui.until_reveal(W("bug.hidden", B=B))
    else:
        wrong = broadcast_truth(T_q, s.T, s.lengths)[1]
        st.info(  # not st.warning: warnings are the link's notes, and nothing is wrong with it
            W("bug.wrong", B=B, wrong=wrong, pairs=B * B)
            if wrong
            else W("bug.lucky", B=B, pairs=B * B),
            icon=":material/visibility_off:",
        )
        st.markdown(W("bug.loud", T_q=T_q))
        for chart in bug:
            ui.show(chart)


@st.fragment
def bug_step(s: Settings) -> None:
    """Its own fragment: B and T_q rerun this step only."""
    st.header("The broadcasting bug: a (B, T_k) mask on (B, h, T_q, T_k) scores")
    code, knobs = st.columns([1.4, 1], vertical_alignment="center")  # the line, and its shapes
    with ui.noting():
        with knobs:
            # B starts equal to T_q: the step opens on the silent bug, its point; any other
            # B gives PyTorch's shape error, the loud contrast.
            k1, k2 = st.columns(2)
            with k1:
                B = ui.slider("batch", "Batch size B", 1, 48, T_Q)
            with k2:
                T_q = query_length()
        code.code(BUG_CODE, language="python", wrap_lines=True)
    (torch_error, core_error), bug = bug_lab(B, T_q, s.T, s.lengths, s.example)
    answered = broadcast_exercises(T_q, s.T, s.lengths)
    if torch_error:
        head = W("bug.raises.head.answered" if answered else "bug.raises.head", B=B, T_q=T_q)
        st.error(
            W("bug.raises", head=head, torch_error=torch_error, core_error=core_error),
            icon=":material/error:",
        )
        st.markdown(W("bug.raises.next" if answered else "bug.raises.ask", T_q=T_q))
    else:
        bug_outcome(B, T_q, s, answered, bug)
    if answered:  # the experiments and the explanation say what B = T_q does: the answers
        ui.try_this(W.pairs("try.shapes"))
        ui.explain("Shapes: (B, 1, 1, T_k) for padding, (T_q, T_k) for causal", W("explain.shapes"))
    else:
        ui.until_reveal(W("bug.try.hidden"))


def cost_metrics(cost) -> None:
    a, b, d = st.columns(3)
    a.metric("Max |difference| of the outputs", f"{cost.max_diff:.3g}")
    b.metric("Time: flag / mask", f"{cost.ms_is_causal:.3g} / {cost.ms_mask:.3g} ms")
    if cost.peak_mask is not None:
        peaks = f"{cost.peak_is_causal / 2**20:.3g} / {cost.peak_mask / 2**20:.3g} MiB"
        d.metric("Peak memory: flag / mask", peaks)
    else:
        extra = f"{cost.mask_bytes / 2**20:.3g} MiB"
        d.metric("Extra memory for the mask", extra, help="Counted: T × T booleans.")


@st.fragment
def cost_step(_: Settings) -> None:
    """Its own fragment: the timing's T and its button rerun this step only."""
    st.header("`is_causal=True` or a materialised causal mask?")
    left, _ = st.columns([2, 3])
    with ui.noting(), left:
        T = ui.select_slider("T_time", "T for the timing", [256, 512, 1024, 2048], 1024)
    st.markdown(W("cost.body", T=T, mib=T * T / 2**20))
    if not st.button(f"Measure both at T = {T} on this device", icon=":material/timer:"):
        st.caption(W("cost.hint"))
        return
    box = st.empty()
    try:
        with st.spinner("Timing on this device…"):
            cost = cost_view(T, lambda s: box.info(s, icon=":material/hourglass:"))
        box.empty()
    except ui.jobs.GaveUpError as e:
        box.warning(str(e), icon=":material/hourglass_disabled:")
        return
    cost_metrics(cost)
    ui.show(fig.causal_cost_chart(cost))
    ui.try_this(W.pairs("try.cost"))


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls()
    ui.steps(
        {
            "Mask": mask_step,
            "Weights": weights_step,
            "Fill": fill_step,
            "Cross attention": cross_step,
            "Broadcasting bug": bug_step,
            "Cost": cost_step,
        },
        s,
    )
    ui.prev_next(FILE)


run()
