"""Softmax and values: an example you edit, shift invariance, stability, temperature, dropout."""

import dataclasses
import math

import pandas as pd
import streamlit as st
import torch

import ui
from attn_core import (
    DTYPES,
    LESSON_WEIGHTS,
    SOFTMAX_EXAMPLES,
    STABILITY_SCORES,
    ExampleError,
    convex_hull,
    dropout_stats,
    exp_limits,
    mix_values,
    parse_example,
    shifted_weights,
    softmax_steps,
    stability_demo,
    sum_normalised_steps,
    temperature_sweep,
)
from attn_core.lessons.softmax import (
    AGREE_TOL,
    naive_offset_band,
    naive_outcome,
    shift_or_scale,
    softmax_quiz,
)
from figures import softmax as fs

FILE = "pages/softmax.py"
Q_COLS, K_COLS, V_COLS = ["q 1", "q 2", "q 3"], ["k 1", "k 2", "k 3"], ["v x", "v y"]
START = (  # the example radio's help: its options are short so that links stay readable
    "**lesson**: the lesson's values [2, 0], [0, 4], [1, 1] and q = [1, 2, 0]. "
    "**negative**: one key points away from the query, so its score is negative. "
    "**peaked**: four tokens, one key matches the query far better than the rest."
)
TABLES = ("q_table", "kv_table")  # the two st.data_editor keys
LAST = "softmax_last_valid"  # session_state: (names, q, k, v) of the last fully valid table
BASE = "softmax_editor_base"  # session_state: the (names, q, k, v) the editors were built from
TAU_MIN, TAU_MAX = 0.05, 20.0  # the temperature slider's ends
STEPS = ("Example", "Shift", "Stability", "Temperature", "Dropout", "Check yourself")
USES_EXAMPLE = ("Example", "Shift", "Temperature", "Check yourself")  # the sidebar's example
BF16_OFFSET = 700  # the stability offset where bfloat16 can no longer tell the scores apart


def _numpy(dc):
    """A compute dataclass with its tensors as numpy: cheap for st.cache_data to pickle."""
    t = {f.name: getattr(dc, f.name) for f in dataclasses.fields(dc)}
    return dataclasses.replace(dc, **{k: v.numpy() for k, v in t.items() if torch.is_tensor(v)})


@st.cache_data(max_entries=64, show_spinner=False)
def example_compute(q: tuple, k: tuple, v: tuple, sumnorm: bool):
    rows = [a + b for a, b in zip(k, v, strict=True)]
    ex = parse_example(q, rows, q_columns=Q_COLS, k_columns=K_COLS, v_columns=V_COLS)
    soft = softmax_steps(ex)
    steps = sum_normalised_steps(ex) if sumnorm else soft  # ValueError when Σ raw = 0
    return _numpy(steps), _numpy(soft), convex_hull(ex.v).numpy()


@st.cache_data(max_entries=64, show_spinner=False)
def stability(offset: int, dtype: str, device: str):
    return stability_demo([s + offset for s in STABILITY_SCORES], dtype, device)


@st.cache_data(max_entries=64, show_spinner=False)
def sweep(scores: tuple, taus: tuple | None = None):
    """Weights and entropy at the given τ; by default a log sweep from 0.01 to 100."""
    tau = torch.logspace(-2, 2, 161, dtype=torch.float64) if taus is None else torch.tensor(taus)
    return _numpy(temperature_sweep(torch.tensor(scores, dtype=torch.float64), tau))


@st.cache_data(max_entries=64, show_spinner=False)
def dropout(p: float, training: bool, seed: int):
    return _numpy(dropout_stats(p, training, seed))


def _shipped(start: str) -> tuple:
    names, q, k, v = SOFTMAX_EXAMPLES[start]
    return (list(names), q, k, v)


def _forget_edits() -> None:
    """Undo: the editors start again from the example as shipped."""
    for key in (*TABLES, BASE):
        st.session_state.pop(key, None)
    if (start := st.session_state.get("softmax_start")) in SOFTMAX_EXAMPLES:
        st.session_state[LAST] = _shipped(start)


def current_example(start: str) -> tuple:
    """(names, q, k, v) every step reads: the last valid edit of `start`, else `start`."""
    if st.session_state.get("softmax_start") != start or LAST not in st.session_state:
        st.session_state["softmax_start"] = start  # a new starting point: old edits go
        _forget_edits()
    return st.session_state[LAST]


def example_scores(start: str) -> tuple[list, tuple]:
    """(names, scaled softmax scores) of the current example, for the later steps."""
    names, q, k, v = current_example(start)
    _, soft, _ = example_compute(q, k, v, False)
    return names, tuple(soft.scores.tolist())


def edit_example(start: str) -> tuple:
    """The two editable tables; returns (names, q, k, v) of the last valid example.

    The editors start from BASE: the last valid example when they were last (re)built.
    Leaving the step drops their widget state, so coming back rebuilds them from the edits
    made before; while they stay on screen BASE is fixed, since an editor's state is a list
    of changes to the table it was given."""
    current_example(start)
    if BASE not in st.session_state or any(key not in st.session_state for key in TABLES):
        for key in TABLES:
            st.session_state.pop(key, None)  # both rebuild together, from the same base
        st.session_state[BASE] = st.session_state[LAST]
    names, q, k, v = st.session_state[BASE]
    columns = ["token", *Q_COLS, *K_COLS, *V_COLS]
    cfg = {c: st.column_config.TextColumn(c, width=58) for c in columns}
    cfg["token"] = st.column_config.TextColumn("token", width=70, max_chars=12)
    st.markdown("**Query q** (d_k = 3)")
    q_df = pd.DataFrame([[f"{x:g}" for x in q]], columns=Q_COLS)
    q_out = st.data_editor(q_df, key="q_table", hide_index=True, column_config=cfg)
    st.markdown(
        "**Tokens**: a key k and a 2-D value v each; 3 to 6 rows "
        "(type into the empty last row to add one)."
    )
    rows = [[n, *(f"{x:g}" for x in a + b)] for n, a, b in zip(names, k, v, strict=True)]
    kv_df = pd.DataFrame(rows, columns=["token", *K_COLS, *V_COLS])
    kv_out = st.data_editor(
        kv_df, key="kv_table", num_rows="dynamic", hide_index=True, column_config=cfg
    )
    try:
        q_cells = q_out.iloc[0].tolist() if len(q_out) else []
        cells = kv_out[K_COLS + V_COLS].values.tolist()
        ex = parse_example(q_cells, cells, q_columns=Q_COLS, k_columns=K_COLS, v_columns=V_COLS)
        labels = fs.token_labels(kv_out["token"].tolist())
        as_tuples = (tuple(map(tuple, t.tolist())) for t in (ex.k, ex.v))
        st.session_state[LAST] = (labels, tuple(ex.q.tolist()), *as_tuples)
    except ExampleError as e:
        where = [f"row {e.row}" if e.row else "", f"column **{e.column}**" if e.column else ""]
        cell = f" `{ui.safe_text(e.cell)}`" if e.cell is not None else ""
        st.error(
            f"{', '.join(w for w in where if w) or 'The table'}:{cell} — {e.reason}. "
            "The charts keep showing the last valid example.",
            icon=":material/table_edit:",
        )
    st.button("Undo my edits", on_click=_forget_edits, icon=":material/undo:")
    return st.session_state[LAST]


def section_example(start: str, sumnorm: bool) -> tuple:
    """The worked example you edit: the hull, the sum, the table of every step, the bars."""
    left, right = st.columns([1, 1.05], gap="large")
    with left:
        names, q, k, v = edit_example(start)
    try:
        steps, soft, hull = example_compute(q, k, v, sumnorm)
    except ValueError as e:
        st.error(f"Sum normalisation is impossible here: {e}. Showing softmax instead.")
        steps, soft, hull = example_compute(q, k, v, False)
    with right:
        other = (soft.output, "softmax output, for comparison") if sumnorm else (None, "")
        ui.show(fs.hull_plot(names, v, hull, steps, other_output=other[0], other_label=other[1]))
        if not steps.inside_hull:
            st.error(
                "With weights from the sum of raw scores, the output **left the convex hull**"
                f" (weights {', '.join(f'{w:.3g}' for w in steps.weights)})."
            )
        elif sumnorm and (steps.weights < 0).any():
            st.info("A weight is negative, yet this output happens to stay inside the hull.")
    terms = " + ".join(
        f"{w:.3f}·[{a:g}, {b:g}]" for w, (a, b) in zip(steps.weights, v, strict=True)
    )
    st.latex(rf"z = \sum_i w_i v_i = {terms} = [{steps.output[0]:.3f},\ {steps.output[1]:.3f}]")
    st.table(fs.steps_table(list(map(ui.escape, names)), steps, d_k=len(q)))  # cells are markdown
    ui.show(fs.steps_bars(names, steps, d_k=len(q)))
    return names, tuple(soft.scores.tolist())


@st.fragment
def section_shift(names: list, scores: tuple) -> None:
    st.subheader("Shift invariance: adding a constant changes nothing")
    left, right = st.columns([1, 2.4], gap="large")
    with left:
        c = ui.slider("shift", "c, added to every score", -50.0, 50.0, 5.0, step=0.5)
        s = torch.tensor(scores, dtype=torch.float64)  # (T,)
        w, w_c = (t.numpy() for t in shifted_weights(s, c))
        change = float(abs(w_c - w).max())
        st.metric("Largest change in any weight", f"{change:.1e}")
        eps = torch.finfo(torch.float64).eps  # float64's step just above 1
        st.caption(
            f"Zero but for float64 rounding: that is {change / eps:.2g} × float64's eps "
            f"({eps:.1e}), the spacing of its numbers near 1."
        )
    with right:
        ui.show(fs.shift_bars(names, s.numpy(), c, w, w_c))
    st.table(fs.shift_table(list(map(ui.escape, names)), s.numpy(), c, w, w_c))


@st.fragment
def section_stability() -> None:
    st.subheader("Numerical stability: exp overflows, subtracting the max does not")
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
    if r.naive_agrees:
        st.success(
            "Naive and stable softmax agree: every e^s and their sum are finite and non-zero, "
            f"and no weight differs by {AGREE_TOL:g} or more."
        )
    elif r.naive_ok:
        why = (
            f"some e^s fell below {lim.smallest_normal:.3g}, {dtype}'s smallest normal "
            "number, where few digits are left (or none: 0)"
            if r.tiny_exp
            else f"rounding in {dtype} changed them"
        )
        st.warning(
            f"Naive softmax gives finite weights, but wrong ones: "
            f"{fs.fmt_list(r.naive)} against the stable {fs.fmt_list(r.stable)}: {why}."
        )
    elif top > lim.overflow_at or r.logsumexp > lim.overflow_at:
        st.error(
            f"Naive softmax broke: e^s or their sum (ln Σ e^s = {r.logsumexp:.2f}) passed "
            f"{lim.max_finite:.3g}, the largest {dtype}, and became inf; inf ÷ inf is NaN."
        )
    else:
        st.error(
            f"Naive softmax broke the other way: every e^s rounded to 0 in {dtype} "
            f"(e^x is 0 for x below {lim.underflow_at:.2f}); 0 ÷ 0 is NaN."
        )
    if len(set(r.scores)) < len(r.scores):
        st.info(f"{dtype} cannot even store these scores apart: they round to {r.scores}.")
    st.table(fs.stability_table(r))
    ui.show(fs.exp_range([exp_limits(d) for d in DTYPES], r.scores, dtype))


@st.fragment
def section_temperature(names: list, scores: tuple) -> None:
    st.subheader("Temperature: one knob from argmax to uniform")
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


@st.fragment
def section_dropout() -> None:
    st.subheader("Dropout on the weights: rows sum to 1 only on average")
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


@st.cache_data(max_entries=64, show_spinner=False)
def quiz_stability(scores: tuple, dtype: str):
    """The naive-softmax question's answer: run on the CPU, where every dtype exists."""
    demo = stability_demo(list(scores), dtype, "cpu")
    return demo, naive_outcome(demo)


@st.fragment
def section_check(names: list, scores: tuple) -> None:
    st.subheader("Check yourself")
    left, right = st.columns([1, 3], gap="large", vertical_alignment="bottom")
    with left:
        quiz = ui.number("quiz", "Question seed", 0, 9999, 0)
    right.caption("Commit to an answer, then reveal the computed one. A new seed, new numbers.")
    z = softmax_quiz(quiz)
    r = shift_or_scale(torch.tensor(scores, dtype=torch.float64), z.c)
    instance = "_".join(f"{s:.6g}" for s in scores)
    ui.predict_choice(
        f"softmax-scale-{quiz}-{instance}",
        fs.shift_or_scale_question(list(map(ui.escape, names)), scores, z.c),
        fs.SHIFT_OR_SCALE,
        fs.shift_or_scale_answer(r.add_change, r.mul_change),
        fs.shift_or_scale_why(z.c),
        truth=fs.shift_or_scale_truth(r),
        # what multiplying does (the current weights and the shift's rounding are on show)
        secret=[f"{r.mul_change:.3g}", f"{float(r.multiplied[int(r.weights.argmax())]):.3f}"],
    )
    demo, outcome = quiz_stability(tuple(z.scores), z.dtype)
    ui.predict_choice(
        f"softmax-naive-{quiz}",
        fs.stability_question(z.scores, z.dtype),
        list(fs.NAIVE_OUTCOMES.values()),
        fs.NAIVE_OUTCOMES[outcome],
        fs.stability_why(demo, outcome, {d: exp_limits(d) for d in DTYPES}),
        truth=fs.stability_truth(demo, z.scores),
        secret=[fs.naive_weights_text(demo)],  # the stable weights are the page's own
    )
    d = dropout(z.dropout_p, True, quiz)
    ui.predict_number(
        f"softmax-dropout-{quiz}",
        fs.dropout_question(z.dropout_p),
        float(d.mean_row_sums.mean()),
        fs.dropout_why(z.dropout_p, d),
        rel_tol=0.0,
        abs_tol=0.05,
        fmt="{:.3f}",  # three decimals: this draw's mean, not the "1" every row averages
        lo=0.0,
    )


def _lesson_with(token: int, column: int, value: float):
    """The lesson's example with one key entry changed: (q, keys, values) as tuples."""
    _, q, k, v = SOFTMAX_EXAMPLES["lesson"]
    k = [list(row) for row in k]
    k[token][column] = value
    return q, tuple(map(tuple, k)), v


@st.cache_data(max_entries=1, show_spinner=False)
def example_tries() -> dict[str, list[tuple[str, str]]]:
    """The Example and Temperature steps' suggestions on the lesson's example, computed."""
    _, lesson, _ = example_compute(*SOFTMAX_EXAMPLES["lesson"][1:], False)
    _, low, _ = example_compute(*_lesson_with(1, 1, -3.0), False)  # t2's k 2 = -3
    neg, _, _ = example_compute(*SOFTMAX_EXAMPLES["negative"][1:], True)
    cold = sweep(tuple(lesson.scores.tolist()), (TAU_MIN,))
    _, tie, _ = example_compute(*_lesson_with(2, 0, 1.7), False)  # t3's k 1 = 1.7
    tied = sweep(tuple(tie.scores.tolist()), (TAU_MIN,))
    hot = sweep(tuple(lesson.scores.tolist()), (TAU_MAX,))
    n = len(lesson.weights)
    return {
        "example": [
            (
                "Type -3 into k 2 of token t2",
                f"its score drops, its weight collapses from {lesson.weights[1]:.3f} to "
                f"{low.weights[1]:.2g} and the star slides away from v(t2), "
                + ("still inside the hull." if low.inside_hull else "out of the hull."),
            ),
            (
                "Start from 'negative' and switch sum normalisation on",
                f"t1 gets weight {fs.fmt(float(neg.weights[0]), 3)} and the star jumps "
                + (
                    "outside the shaded hull; softmax (open star) stays inside."
                    if not neg.inside_hull
                    else "around, yet stays inside the hull."
                ),
            ),
            (
                "Set the query to 0 0 0",
                "every score is 0, every weight 1/T: the star sits on "
                "the grey diamond, the plain mean.",
            ),
        ],
        "temperature": [
            (
                f"Drag τ down to {TAU_MIN:g}",
                f"one bar takes all but {1 - cold.weights[0].max():.1e} of the weight; entropy "
                f"falls to {cold.entropy[0]:.1e} nats.",
            ),
            (
                f"Drag τ up to {TAU_MAX:g}",
                f"the bars level out; entropy reaches {hot.entropy[0]:.3f} nats, near "
                f"ln {n} = {math.log(n):.3f}.",
            ),
            (
                f"Type 1.7 into k 1 of t3 (t2 and t3 now tie), then drag τ to {TAU_MIN:g}",
                f"entropy stops at {tied.entropy[0]:.3f} nats — ln 2 — not 0: the argmax "
                "limit splits between the tie.",
            ),
        ],
    }


@st.cache_data(max_entries=1, show_spinner=False)
def stability_tries() -> list[tuple[str, str]]:
    """The Stability step's suggestions, each offset and edge measured (CPU)."""
    top = max(STABILITY_SCORES)
    _, hi = naive_offset_band("float32")
    broken = stability_demo([s + hi + 1 for s in STABILITY_SCORES], "float32")
    lo16, _ = naive_offset_band("float16")
    f16, bf16 = exp_limits("float16"), exp_limits("bfloat16")
    fine = -round(top)  # the stable softmax's own move: the top score lands on 0
    merged = stability_demo([s + BF16_OFFSET for s in STABILITY_SCORES], "bfloat16").scores
    return [
        (
            f"float32, offset {hi} and then {hi + 1}",
            f"at {hi} both agree; at {hi + 1} the largest e^s overflows and the naive weights "
            f"turn into {fs.fmt_list(broken.naive)}.",
        ),
        (
            "Pick float16",
            f"e^x is finite and non-zero only for x between about {f16.underflow_at:.2f} and "
            f"{f16.overflow_at:.2f}: try offset {fine} (scores up to 0: fine) and {lo16 - 1} "
            "(every e^s underflows to 0, and 0 ÷ 0 is NaN).",
        ),
        (
            f"Pick bfloat16 and offset {BF16_OFFSET}",
            f"the scores cannot even be stored apart ({fs.fmt_list(merged)}): bfloat16 keeps "
            f"only {bf16.significant_bits} significant bits.",
        ),
    ]


def example_step(start: str) -> None:
    st.subheader("A worked example you can edit")
    sumnorm = ui.toggle(
        "sumnorm",
        "Normalise by the sum of raw scores instead",
        False,
        help="w_i = (q·k_i) / Σ_j (q·k_j): no exp.",
    )
    section_example(start, sumnorm)
    ui.try_this(example_tries()["example"])
    values = torch.tensor(SOFTMAX_EXAMPLES["lesson"][3], dtype=torch.float64)  # (T, d_v)
    lesson = mix_values(torch.tensor(LESSON_WEIGHTS, dtype=torch.float64), values)
    mean = values.mean(0)  # (d_v,): every weight 1/T
    ui.explain(
        "Why softmax, and not some other normalisation?",
        "Softmax gives weights that are **never negative** and **add up to 1**, so the output is "
        "a weighted average of the values: it lies in their convex hull and cannot blow up, "
        "whatever the scores. Dividing raw scores by their sum also adds up to 1, but a "
        "negative score becomes a negative weight and the output can land outside the values "
        "(and a zero sum has no answer at all). Softmax is also smooth, so gradients reach "
        "every score, and **shift invariant** (the Shift step), which is what makes it safe to "
        "compute (the Stability step).\n\n"
        f"With the lesson's weights {list(LESSON_WEIGHTS)} the values [2, 0], [0, 4], [1, 1] "
        f"mix to **[{lesson[0]:.3f}, {lesson[1]:.3f}]**; equal weights give the plain mean "
        f"[{mean[0]:.4g}, {mean[1]:.4g}]. The keys here are chosen so that the weights land "
        "close to the lesson's.",
    )


def from_example(names: list) -> None:
    """Say where a later step's scores come from."""
    st.caption(
        f"Scores of the example from the Example step ({', '.join(map(ui.escape, names))}); "
        "edit it there and this step follows."
    )


def shift_step(start: str) -> None:
    names, scores = example_scores(start)
    section_shift(names, scores)
    from_example(names)
    ui.try_this(
        [
            ("Move c to 50, then to −50", "the left bars travel; the right bars do not budge."),
            ("Watch the 'difference' column", "it stays at the level of float64 rounding."),
        ]
    )
    ui.explain(
        "Why is it invariant?",
        "e^(s+c) = e^c · e^s: every numerator and the denominator gain the same factor e^c, "
        "which cancels. Only the *gaps* between scores matter, never their level.",
    )


def stability_step() -> None:
    section_stability()
    ui.try_this(stability_tries())
    ui.explain(
        "How the stable version works",
        "Subtract the largest score before exp: by shift invariance the weights are the same, "
        "but now every exponent is ≤ 0, so each e^x lies in (0, 1] and the largest is exactly "
        "1: nothing overflows, and the sum is at least 1, so it never is 0. PyTorch's "
        "`torch.softmax` does this internally; hand-written `exp(x) / exp(x).sum()` does not.",
    )


def temperature_step(start: str) -> None:
    names, scores = example_scores(start)
    section_temperature(names, scores)
    from_example(names)
    ui.try_this(example_tries()["temperature"])


def dropout_step() -> None:
    section_dropout()
    ui.try_this(
        [
            (
                "Raise p to 0.5 in training mode",
                "rows wander far from 1 in one draw; the "
                "diamonds (means) still sit at 1; survivors are doubled.",
            ),
            ("Change the seed", "a different set of zeros, the same average."),
            ("Switch to eval", "no zeros, no scaling, every row sums to 1."),
        ]
    )
    ui.explain(
        "Why a 'rows sum to 1' test must run in eval mode",
        "Attention dropout acts on the weights *after* softmax: it zeroes each weight with "
        "probability p and multiplies the rest by 1/(1 − p), so each row sums to 1 only on "
        "average. That noise is the point (the model cannot lean on one attention edge), but "
        "it means a check that every row sums to 1 fails at random in training mode. Run it "
        "under `model.eval()` (or with dropout p = 0), where dropout is switched off.",
    )


def check_step(start: str) -> None:
    names, scores = example_scores(start)
    section_check(names, scores)


def run() -> None:
    ui.page_header(
        FILE,
        "Softmax turns a query's scores into weights that are positive and add up to 1; the "
        "output is those weights applied to the value vectors. Step by step below: every "
        "number of that journey for a small example you can edit, then the properties that "
        "make softmax the right choice and the numerical traps around it.",
    )
    with ui.controls_area():
        start = ui.radio("example", "Start from", list(SOFTMAX_EXAMPLES), "lesson", help=START)
        ui.used_by("step", STEPS, USES_EXAMPLE)
    notes = st.container()  # filled at the end, once the open step's controls exist
    tabs = ui.tabs("step", STEPS)
    bodies = (
        lambda: example_step(start),
        lambda: shift_step(start),
        stability_step,
        lambda: temperature_step(start),
        dropout_step,
        lambda: check_step(start),
    )
    for tab, body in zip(tabs, bodies, strict=True):
        with tab:
            if tab.open:
                body()
    with notes:
        ui.show_notes()
    ui.prev_next(FILE)


run()
