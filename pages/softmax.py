"""Softmax and values: an example you edit, shift invariance, stability, temperature, dropout."""

import dataclasses
import math

import pandas as pd
import streamlit as st
import torch

import ui
from attn_core import DTYPES
from attn_core.lessons import softmax as core
from figures import softmax as fs
from figures.parts import fmt

FILE = "pages/softmax.py"
W = ui.Words("softmax")
STEPS = ui.lesson("softmax").steps
Q_COLS, K_COLS, V_COLS = ["q 1", "q 2", "q 3"], ["k 1", "k 2", "k 3"], ["v x", "v y"]
START = (  # the example radio's help: its options are short so that links stay readable
    "**lesson**: the lesson's values [2, 0], [0, 4], [1, 1] and q = [1, 2, 0]. "
    "**negative**: one key points away from the query, so its score is negative. "
    "**peaked**: four tokens, one key matches the query far better than the rest."
)
TABLES = ("q_table", "kv_table")  # the two st.data_editor keys
LAST = "softmax_last_valid"  # session_state: the Example of the last fully valid table
BASE = "softmax_editor_base"  # session_state: the Example the editors were built from
TAU_MIN, TAU_MAX = 0.05, 20.0  # the temperature slider's ends
USES_EXAMPLE = ("Example", "Shift", "Temperature", "Check yourself")  # the sidebar's example
BF16_OFFSET = 700  # the stability offset where bfloat16 can no longer tell the scores apart


@ui.frozen
class Settings:
    """The sidebar's control, read by the steps that use the worked example."""

    start: str  # the example the editors start from (a key of SOFTMAX_EXAMPLES)


@ui.frozen
class Example:
    """A worked example as every step reads it: token names, the query, keys and values."""

    names: tuple[str, ...]
    q: tuple[float, ...]  # (d_k,)
    k: tuple[tuple[float, ...], ...]  # (T, d_k)
    v: tuple[tuple[float, ...], ...]  # (T, d_v)


@ui.frozen
class Scores:
    """The current example's names and scaled softmax scores, for the later steps."""

    names: list
    scores: tuple


def _numpy(dc):
    """A compute dataclass with its tensors as numpy: cheap for st.cache_data to pickle."""
    t = {f.name: getattr(dc, f.name) for f in dataclasses.fields(dc)}
    return dataclasses.replace(dc, **{k: v.numpy() for k, v in t.items() if torch.is_tensor(v)})


# ---------------------------------------------------------------- cached compute


@ui.cache_data(max_entries=64, show_spinner=False)
def example_compute(q: tuple, k: tuple, v: tuple, sumnorm: bool):
    rows = [a + b for a, b in zip(k, v, strict=True)]
    ex = core.parse_example(q, rows, q_columns=Q_COLS, k_columns=K_COLS, v_columns=V_COLS)
    soft = core.softmax_steps(ex)
    steps = core.sum_normalised_steps(ex) if sumnorm else soft  # ValueError when Σ raw = 0
    return _numpy(steps), _numpy(soft), core.convex_hull(ex.v).numpy()


@ui.cache_data(max_entries=64, show_spinner=False)
def stability(offset: int, dtype: str, device: str):
    return core.stability_demo([s + offset for s in core.STABILITY_SCORES], dtype, device)


@ui.cache_data(max_entries=64, show_spinner=False)
def sweep(scores: tuple, taus: tuple | None = None):
    """Weights and entropy at the given τ; by default a log sweep from 0.01 to 100."""
    tau = torch.logspace(-2, 2, 161, dtype=torch.float64) if taus is None else torch.tensor(taus)
    return _numpy(core.temperature_sweep(torch.tensor(scores, dtype=torch.float64), tau))


@ui.cache_data(max_entries=64, show_spinner=False)
def dropout(p: float, training: bool, seed: int):
    return _numpy(core.dropout_stats(p, training, seed))


@ui.cache_data(max_entries=64, show_spinner=False)
def quiz_stability(scores: tuple, dtype: str):
    """The naive-softmax question's answer: run on the CPU, where every dtype exists."""
    demo = core.stability_demo(list(scores), dtype, "cpu")
    return demo, core.naive_outcome(demo)


# ---------------------------------------------------------------- the editable example


def _shipped(start: str) -> Example:
    names, q, k, v = core.SOFTMAX_EXAMPLES[start]
    return Example(tuple(names), q, k, v)


def _undo() -> None:
    """The Undo button: the user's move (a following student explores), then undo."""
    ui.moved("q_table")
    _forget_edits()


def _forget_edits() -> None:
    """Undo: the editors start again from the example as shipped."""
    for key in (*TABLES, BASE):
        st.session_state.pop(key, None)
    if (start := st.session_state.get("softmax_start")) in core.SOFTMAX_EXAMPLES:
        st.session_state[LAST] = _shipped(start)


def current_example(start: str) -> Example:
    """The example every step reads: the last valid edit of `start`, else `start`.

    A teacher's example is the class's (ui.publish: a following student's page takes it
    with the teacher's other values, before anything of this run is drawn)."""
    if st.session_state.get("softmax_start") != start or LAST not in st.session_state:
        st.session_state["softmax_start"] = start  # a new starting point: old edits go
        _forget_edits()
    return _shared(start)


def _shared(start: str) -> Example:
    ui.publish("softmax_start", start)
    ui.publish(LAST, st.session_state[LAST])
    return st.session_state[LAST]


def example_scores(s: Settings) -> Scores:
    """The current example's names and scaled softmax scores, for the later steps."""
    ex = current_example(s.start)
    _, soft, _ = example_compute(ex.q, ex.k, ex.v, False)
    return Scores(list(ex.names), tuple(soft.scores.tolist()))


# ---------------------------------------------------------------- what the editors may send
# Each editor's state is cut to its table before the editors are drawn (ui.bound_editor):
# the query keeps its one row, the tokens table at most MAX_TOKENS rows.

KV_COLS = ["token", *K_COLS, *V_COLS]


def clean_tables() -> ui.EditorCut:
    """Cut both editors' states to their tables; before the editors are drawn or read."""
    base = st.session_state.get(BASE)
    if base is None:  # the editors are rebuilt from a new base: their states go anyway
        return ui.EditorCut()
    q = ui.bound_editor("q_table", rows=1, columns=Q_COLS)
    rows = len(base.names)
    return q + ui.bound_editor("kv_table", rows=rows, columns=KV_COLS, max_rows=core.MAX_TOKENS)


def _editors(base: Example):
    """The query table and the tokens table, built from `base`; their edited frames."""
    columns = ["token", *Q_COLS, *K_COLS, *V_COLS]
    cfg = {c: st.column_config.TextColumn(c, width=58) for c in columns}
    cfg["token"] = st.column_config.TextColumn("token", width=70, max_chars=12)
    st.markdown("**Query q** (d_k = 3)")
    q_df = pd.DataFrame([[f"{x:g}" for x in base.q]], columns=Q_COLS)
    q_out = ui.editor("q_table", q_df, hide_index=True, column_config=cfg)
    st.markdown(W("example.tokens"))
    rows = [
        [n, *(f"{x:g}" for x in a + b)] for n, a, b in zip(base.names, base.k, base.v, strict=True)
    ]
    kv_df = pd.DataFrame(rows, columns=KV_COLS)
    kv_out = ui.editor("kv_table", kv_df, num_rows="dynamic", hide_index=True, column_config=cfg)
    return q_out, kv_out


def _bad_cell(e: core.ExampleError) -> str:
    """Where a table's bad cell is and what is wrong with it."""
    where = [
        W("example.bad_cell.row", row=e.row) if e.row else "",
        W("example.bad_cell.column", column=e.column) if e.column else "",
    ]
    cell = f" `{ui.safe_text(e.cell)}`" if e.cell is not None else ""
    place = ", ".join(w for w in where if w) or W("example.bad_cell.table")
    return W("example.bad_cell", where=place, cell=cell, reason=e.reason)


def edit_example(start: str) -> Example:
    """The two editable tables; returns the last valid example.

    The editors start from BASE: the last valid example when they were last (re)built.
    Leaving the step drops their widget state, so coming back rebuilds them from the edits
    made before; while they stay on screen BASE is fixed, since an editor's state is a list
    of changes to the table it was given."""
    current_example(start)
    cut = clean_tables()
    # A following student's tables show the teacher's example: rebuilt from it whenever
    # the class's example moved (the student's own edit would have made them explore).
    moved = ui.following() and st.session_state.get(BASE) != st.session_state[LAST]
    if moved or BASE not in st.session_state or any(key not in st.session_state for key in TABLES):
        for key in TABLES:
            st.session_state.pop(key, None)  # both rebuild together, from the same base
        st.session_state[BASE] = st.session_state[LAST]
    if ui.presenting():  # a projector reads a large table; the editors wait in a box
        shown = st.container()
        with st.expander(W("example.edit_box"), icon=":material/table_edit:"):
            q_out, kv_out = _editors(st.session_state[BASE])
    else:
        shown = None
        q_out, kv_out = _editors(st.session_state[BASE])
    ui.editor_note(cut, W, "example.cut", min=core.MIN_TOKENS, max=core.MAX_TOKENS)
    try:
        q_cells = q_out.iloc[0].tolist() if len(q_out) else []
        cells = kv_out[K_COLS + V_COLS].values.tolist()
        ex = core.parse_example(
            q_cells, cells, q_columns=Q_COLS, k_columns=K_COLS, v_columns=V_COLS
        )
        labels = fs.token_labels(kv_out["token"].tolist())
        k, v = (tuple(map(tuple, t.tolist())) for t in (ex.k, ex.v))
        st.session_state[LAST] = Example(tuple(labels), tuple(ex.q.tolist()), k, v)
    except core.ExampleError as e:
        st.error(_bad_cell(e), icon=":material/table_edit:")
    st.button("Undo my edits", on_click=_undo, icon=":material/undo:")
    if shown is not None:
        _projected(shown, st.session_state[LAST])
    return _shared(start)


def _projected(where, ex: Example) -> None:
    """The example as plain tables in the projector's type (the editors draw on a canvas
    in the theme's 14 px, which no page style reaches)."""
    where.markdown("**Query q** (d_k = 3)")
    where.table(pd.DataFrame([[f"{x:g}" for x in ex.q]], columns=Q_COLS), hide_index=True)
    where.markdown(W("example.tokens_shown"))
    rows = [[n, *(f"{x:g}" for x in a + b)] for n, a, b in zip(ex.names, ex.k, ex.v, strict=True)]
    where.table(pd.DataFrame(rows, columns=KV_COLS), hide_index=True)


def _hull(ex: Example, steps, soft, hull, sumnorm: bool) -> None:
    """Where the output lands, and what the page says when it leaves the hull."""
    other = (soft.output, "softmax output, for comparison") if sumnorm else (None, "")
    names = list(ex.names)
    ui.show(fs.hull_plot(names, ex.v, hull, steps, other_output=other[0], other_label=other[1]))
    if not steps.inside_hull:
        st.error(W("example.left_hull", weights=", ".join(f"{w:.3g}" for w in steps.weights)))
    elif sumnorm and (steps.weights < 0).any():
        st.info(W("example.negative_inside"))


def section_example(start: str, sumnorm: bool) -> None:
    """The worked example you edit: the hull, the sum, the table of every step, the bars."""
    left, right = st.columns([1, 1.05], gap="large")
    with left:
        ex = edit_example(start)
    try:
        steps, soft, hull = example_compute(ex.q, ex.k, ex.v, sumnorm)
    except ValueError as e:
        st.error(W("example.sumnorm_impossible", error=e))
        steps, soft, hull = example_compute(ex.q, ex.k, ex.v, False)
    with right:
        _hull(ex, steps, soft, hull, sumnorm)
    terms = " + ".join(
        f"{w:.3f}·[{a:g}, {b:g}]" for w, (a, b) in zip(steps.weights, ex.v, strict=True)
    )
    st.latex(rf"z = \sum_i w_i v_i = {terms} = [{steps.output[0]:.3f},\ {steps.output[1]:.3f}]")
    names = list(ex.names)
    st.table(fs.steps_table(list(map(ui.escape, names)), steps, d_k=len(ex.q)))  # markdown cells
    ui.show(fs.steps_bars(names, steps, d_k=len(ex.q)))


def _lesson_with(token: int, column: int, value: float):
    """The lesson's example with one key entry changed: (q, keys, values) as tuples."""
    _, q, k, v = core.SOFTMAX_EXAMPLES["lesson"]
    k = [list(row) for row in k]
    k[token][column] = value
    return q, tuple(map(tuple, k)), v


@ui.cache_data(max_entries=1, show_spinner=False)
def example_tries() -> dict[str, list[tuple[str, str]]]:
    """The Example and Temperature steps' suggestions on the lesson's example, computed."""
    _, lesson, _ = example_compute(*core.SOFTMAX_EXAMPLES["lesson"][1:], False)
    _, low, _ = example_compute(*_lesson_with(1, 1, -3.0), False)  # t2's k 2 = -3
    neg, _, _ = example_compute(*core.SOFTMAX_EXAMPLES["negative"][1:], True)
    cold = sweep(tuple(lesson.scores.tolist()), (TAU_MIN,))
    _, tie, _ = example_compute(*_lesson_with(2, 0, 1.7), False)  # t3's k 1 = 1.7
    tied = sweep(tuple(tie.scores.tolist()), (TAU_MIN,))
    hot = sweep(tuple(lesson.scores.tolist()), (TAU_MAX,))
    n = len(lesson.weights)
    example = W.pairs(
        "try.example",
        before=lesson.weights[1],
        after=low.weights[1],
        where=W("try.example.inside" if low.inside_hull else "try.example.outside"),
        negative=fmt(float(neg.weights[0]), 3),
        jumps=W("try.example.jumps_in" if neg.inside_hull else "try.example.jumps_out"),
    )
    temperature = W.pairs(
        "try.temperature",
        tau_min=TAU_MIN,
        rest=1 - cold.weights[0].max(),
        cold=cold.entropy[0],
        tau_max=TAU_MAX,
        hot=hot.entropy[0],
        T=n,
        ln_T=math.log(n),
        tied=tied.entropy[0],
    )
    return {"example": example, "temperature": temperature}


def example_step(s: Settings) -> None:
    st.header("A worked example you can edit")
    sumnorm = ui.toggle(
        "sumnorm",
        "Normalise by the sum of raw scores instead",
        False,
        help="w_i = (q·k_i) / Σ_j (q·k_j): no exp.",
    )
    section_example(s.start, sumnorm)
    ui.try_this(example_tries()["example"])
    values = torch.tensor(core.SOFTMAX_EXAMPLES["lesson"][3], dtype=torch.float64)  # (T, d_v)
    lesson = core.mix_values(torch.tensor(core.LESSON_WEIGHTS, dtype=torch.float64), values)
    mean = values.mean(0)  # (d_v,): every weight 1/T
    ui.explain(
        "Why softmax, and not some other normalisation?",
        W(
            "explain.why_softmax",
            weights=list(core.LESSON_WEIGHTS),
            z1=lesson[0],
            z2=lesson[1],
            m1=mean[0],
            m2=mean[1],
        ),
    )


def from_example(names: list) -> None:
    """Say where a later step's scores come from."""
    st.caption(W("from_example", names=", ".join(map(ui.escape, names))))


# ---------------------------------------------------------------- shift invariance


@st.fragment
def section_shift(names: list, scores: tuple) -> None:
    st.header("Shift invariance: adding a constant changes nothing")
    left, right = st.columns([1, 2.4], gap="large")
    with left:
        c = ui.slider("shift", "c, added to every score", -50.0, 50.0, 5.0, step=0.5)
        s = torch.tensor(scores, dtype=torch.float64)  # (T,)
        w, w_c = (t.numpy() for t in core.shifted_weights(s, c))
        change = float(abs(w_c - w).max())
        st.metric("Largest change in any weight", f"{change:.1e}")
        eps = torch.finfo(torch.float64).eps  # float64's step just above 1
        st.caption(W("shift.rounding", ratio=change / eps, eps=eps))
    with right:
        ui.show(fs.shift_bars(names, s.numpy(), c, w, w_c))
    st.table(fs.shift_table(list(map(ui.escape, names)), s.numpy(), c, w, w_c))


def shift_step(s: Settings) -> None:
    ex = example_scores(s)
    section_shift(ex.names, ex.scores)
    from_example(ex.names)
    ui.try_this(W.pairs("try.shift"))
    ui.explain("Why is it invariant?", W("explain.shift"))


# ---------------------------------------------------------------- numerical stability


def stability_verdict(r, dtype: str) -> None:
    """Whether the naive softmax survived these scores, and if not, how it broke."""
    lim, top = r.limits, max(r.scores)
    if r.naive_agrees:
        st.success(W("stability.agree", tol=core.AGREE_TOL))
    elif r.naive_ok:
        why = (
            W("stability.wrong.tiny", tiny=lim.smallest_normal, dtype=dtype)
            if r.tiny_exp
            else W("stability.wrong.rounding", dtype=dtype)
        )
        naive, stable = fs.fmt_list(r.naive), fs.fmt_list(r.stable)
        st.warning(W("stability.wrong", naive=naive, stable=stable, why=why))
    elif top > lim.overflow_at or r.logsumexp > lim.overflow_at:
        lse = r.logsumexp
        st.error(W("stability.overflow", lse=lse, max_finite=lim.max_finite, dtype=dtype))
    else:
        st.error(W("stability.underflow", dtype=dtype, under=lim.underflow_at))


@st.fragment
def section_stability() -> None:
    st.header("Numerical stability: exp overflows, subtracting the max does not")
    left, right = st.columns([1, 2], gap="large")
    with left:
        offset = ui.slider("offset", "Offset added to the scores [100, 101, 102]", -850, 750, 0)
        dtype = ui.radio("dtype", "Precision", list(DTYPES), "float32")
    r = stability(offset, dtype, str(ui.device()))
    lim, top = r.limits, max(r.scores)
    with left:
        st.metric(f"e^x overflows above, in {dtype}", f"{lim.overflow_at:.2f}")
        st.metric(f"Largest finite {dtype}", f"{lim.max_finite:.3g}")
        st.metric("Largest score now", f"{top:g}", f"{lim.overflow_at - top:+.1f} to the limit")
    with right:
        ui.show(fs.naive_vs_stable(r))
    stability_verdict(r, dtype)
    if len(set(r.scores)) < len(r.scores):
        st.info(W("stability.merged", dtype=dtype, scores=r.scores))
    st.table(fs.stability_table(r))
    ui.show(fs.exp_range([core.exp_limits(d) for d in DTYPES], r.scores, dtype))


@ui.cache_data(max_entries=1, show_spinner=False)
def stability_tries() -> list[tuple[str, str]]:
    """The Stability step's suggestions, each offset and edge measured (CPU)."""
    scores = core.STABILITY_SCORES
    _, hi = core.naive_offset_band("float32")
    broken = core.stability_demo([s + hi + 1 for s in scores], "float32")
    lo16, _ = core.naive_offset_band("float16")
    f16, bf16 = core.exp_limits("float16"), core.exp_limits("bfloat16")
    merged = core.stability_demo([s + BF16_OFFSET for s in scores], "bfloat16").scores
    return W.pairs(
        "try.stability",
        hi=hi,
        hi1=hi + 1,
        broken=fs.fmt_list(broken.naive),
        under=f16.underflow_at,
        over=f16.overflow_at,
        fine=-round(max(scores)),  # the stable softmax's own move: the top score lands on 0
        zero=lo16 - 1,
        offset=BF16_OFFSET,
        merged=fs.fmt_list(merged),
        bits=bf16.significant_bits,
    )


def stability_step(s: Settings) -> None:
    section_stability()
    ui.try_this(stability_tries())
    ui.explain("How the stable version works", W("explain.stability"))


# ---------------------------------------------------------------- temperature and dropout


@st.fragment
def section_temperature(names: list, scores: tuple) -> None:
    st.header("Temperature: one knob from argmax to uniform")
    left, right = st.columns([2, 1], gap="large", vertical_alignment="bottom")
    with left:
        tau = ui.log_slider("temperature", "Temperature τ: softmax(s ÷ τ)", TAU_MIN, TAU_MAX, 1.0)
    sw, now, one = sweep(scores), sweep(scores, (tau,)), sweep(scores, (1.0,))
    h_now = float(now.entropy[0])
    right.metric("Entropy of the weights", f"{h_now:.3f} nats")
    left, right = st.columns(2, gap="large")
    with left:
        ui.show(fs.temperature_bars(names, now.weights[0], one.weights[0], tau))
    with right:
        ui.show(fs.entropy_curve(sw, tau, h_now))


def temperature_step(s: Settings) -> None:
    ex = example_scores(s)
    section_temperature(ex.names, ex.scores)
    from_example(ex.names)
    ui.try_this(example_tries()["temperature"])


@st.fragment
def section_dropout() -> None:
    st.header("Dropout on the weights: rows sum to 1 only on average")
    a, b, c = st.columns([2, 1.2, 1], gap="large")
    with a:
        p = ui.slider("dropout", "Dropout probability p", 0.0, 0.9, 0.1, step=0.05)
    with b:
        mode = ui.radio(
            "mode",
            "Mode",
            ["train", "eval"],
            "train",
            help="train: dropout is on, as under model.train(); eval: it is off.",
        )
    with c:
        seed = ui.number("seed", "Dropout seed", 0, 9999, 0)
    d = dropout(p, mode == "train", seed)
    a, b, c = st.columns(3, gap="large")
    a.metric("Survivors are multiplied by", f"{d.survivor_scale:.3f}")
    b.metric("Entries zeroed in this draw", f"{d.zeroed_fraction:.0%}")
    c.metric("Largest |row sum − 1|, this draw", f"{abs(d.sample_row_sums - 1).max():.2g}")
    left, right = st.columns(2, gap="large")
    with left:
        ui.show(fs.dropout_heatmap(d.sample, mode == "train", p))
    with right:
        ui.show(fs.row_sums_chart(d, mode == "train"))


def dropout_step(s: Settings) -> None:
    section_dropout()
    ui.try_this(W.pairs("try.dropout"))
    ui.explain("Why a 'rows sum to 1' test must run in eval mode", W("explain.dropout"))


# ---------------------------------------------------------------- check yourself
# Every number in the questions is computed with attn_core; the words are content's.


def scale_exercise(quiz: int, c: float, names: list, scores: tuple) -> None:
    """Adding c or multiplying by c: which one changes the weights?"""
    r = core.shift_or_scale(torch.tensor(scores, dtype=torch.float64), c)
    choices = W.choices("exercise.scale.choices")
    tol = 1e-9
    answer = {
        (True, False): "add",
        (False, True): "multiply",
        (True, True): "both",
        (False, False): "neither",
    }[(r.add_change > tol, r.mul_change > tol)]
    top = int(r.weights.argmax())
    pairs = ", ".join(f"{n}: {x:.3g}" for n, x in zip(map(ui.escape, names), scores, strict=True))
    ui.predict_choice(
        f"softmax-scale-{quiz}",  # one question for the class, whatever a student's example
        W("exercise.scale.q", pairs=pairs, c=c),
        list(choices.values()),
        choices[answer],
        W("exercise.scale.why", c=c, tau=1 / c),
        truth=W(
            "exercise.scale.truth",
            add=r.add_change,
            mul=r.mul_change,
            before=float(r.weights[top]),
            after=float(r.multiplied[top]),
        ),
        # what multiplying does (the current weights and the shift's rounding are on show)
        secret=[f"{r.mul_change:.3g}", f"{float(r.multiplied[top]):.3f}"],
        instance="_".join(f"{x:.6g}" for x in scores),  # an edited example asks again
    )


def naive_why(demo, outcome: str) -> str:
    """Why the naive softmax did what it did, from the formats' own numbers."""
    lim, top = demo.limits, max(demo.scores)
    f16, f32, bf16 = (core.exp_limits(d) for d in ("float16", "float32", "bfloat16"))
    return W(
        "exercise.naive.why",
        dtype=lim.dtype,
        under=lim.underflow_at,
        over=lim.overflow_at,
        situation=W(f"exercise.naive.why.{outcome}", top=top),
        bits=lim.exponent_bits,
        f16_bits=f16.exponent_bits,
        f32_bits=f32.exponent_bits,
        bf16_sig=bf16.significant_bits,
        f32_sig=f32.significant_bits,
        gaps=", ".join(fmt(s - top, 3).replace("-", "−") for s in demo.scores),
    )


def naive_exercise(quiz: int, asked: list, dtype: str) -> None:
    """What a naive softmax gives for these scores in this precision."""
    demo, outcome = quiz_stability(tuple(asked), dtype)
    choices = W.choices("exercise.naive.choices")
    naive = W("exercise.naive.weights", weights=fs.fmt_list(demo.naive))
    stored = ""
    if any(abs(a - b) > 1e-3 for a, b in zip(demo.scores, asked, strict=True)):  # not float32's
        stored = fs.fmt_list(demo.scores, 5)
        stored = " " + W("exercise.naive.truth.stored", dtype=dtype, scores=stored)
    ui.predict_choice(
        f"softmax-naive-{quiz}",
        W("exercise.naive.q", dtype=dtype, scores=fs.fmt_list(asked, 4)),
        list(choices.values()),
        choices[outcome],
        naive_why(demo, outcome),
        truth=W(
            "exercise.naive.truth",
            dtype=dtype,
            naive=naive,
            stable=fs.fmt_list(demo.stable),
            stored=stored,
        ),
        secret=[naive],  # the stable weights are the page's own
    )


def dropout_exercise(quiz: int, p: float) -> None:
    """What one row of dropped-out weights adds up to, on average."""
    d = dropout(p, True, quiz)
    sums = d.sample_row_sums
    mean = float(d.mean_row_sums.mean())
    why = W(
        "exercise.dropout.why",
        keep=1 - p,
        scale=1 / (1 - p),
        mean=mean,
        n=d.n_samples,
        lo=float(sums.min()),
        hi=float(sums.max()),
    )
    ui.predict_number(
        f"softmax-dropout-{quiz}",
        W("exercise.dropout.q", p=p),
        mean,
        why,
        rel_tol=0.0,
        abs_tol=0.05,
        fmt="{:.3f}",  # three decimals: this draw's mean, not the "1" every row averages
        lo=0.0,
    )


@st.fragment
def section_check(names: list, scores: tuple) -> None:
    st.header("Check yourself")
    left, right = st.columns([1, 3], gap="large", vertical_alignment="bottom")
    with left:
        quiz = ui.number("quiz", "Question seed", 0, 9999, 0)
    right.caption(W("check.caption"))
    z = core.softmax_quiz(quiz)
    scale_exercise(quiz, z.c, names, scores)
    naive_exercise(quiz, z.scores, z.dtype)
    dropout_exercise(quiz, z.dropout_p)


def check_step(s: Settings) -> None:
    ex = example_scores(s)
    section_check(ex.names, ex.scores)


# ---------------------------------------------------------------- the page


def controls() -> Settings:
    with ui.controls_area():
        start = ui.radio("example", "Start from", list(core.SOFTMAX_EXAMPLES), "lesson", help=START)
        ui.used_by("step", STEPS, USES_EXAMPLE)
    return Settings(start=start)


def run() -> None:
    ui.page_header(FILE, W("intro"))
    notes = st.container()  # every control's note, the open step's too, above the tabs
    with notes:
        s = controls()
    ui.steps(
        {
            "Example": example_step,
            "Shift": shift_step,
            "Stability": stability_step,
            "Temperature": temperature_step,
            "Dropout": dropout_step,
            "Check yourself": check_step,
        },
        s,
    )
    with notes:
        ui.show_notes()
    ui.prev_next(FILE)


run()
