"""Training lab: the same model trained with and without √d_k, side by side, live."""

import json
import math
import threading
import time
from collections import OrderedDict
from pathlib import Path

import streamlit as st
import torch

import ui
from attn_core import DEFAULT_LR, train_pair, two_key_gradient
from attn_core.lessons.training import (
    ANSWER_SETTINGS,
    D_MODEL,
    FAILURE,
    N_PAIRS,
    N_PROBE,
    N_SYMBOLS,
    SATURATED,
    head_sweep,
    top_two_gap,
)
from figures import training as tf
from figures.training import sci
from ui.controls import log_values

FILE = "pages/training.py"
ANSWER_FILE = Path(__file__).resolve().parent.parent / "assets" / "training_answer.json"
AUTO = 0.0  # the lr slider's first stop, shown (and linked) as "auto": the optimizer's default
LR_OPTIONS = [AUTO, *log_values(1e-4, 10.0)]
UPDATE_S = 0.5  # live redraw interval while training (the issue asks for ≤ 0.5 s)
OPT_NAMES = {"sgd": "SGD", "adam": "Adam"}
STEPS = ("Train", "Predict", "Rows", "Heads")  # a prediction before the step that shows it
CURVES = ("loss_curves", "accuracy_curves", "attention_shape_curves", "gradient_curves")
KEEP_FINISHED = 32  # finished pairs of runs kept on the server
# the controls' defaults, in the order of the settings tuple (lr AUTO: the optimizer's own)
DEFAULTS = dict(d_k=64, optimizer="sgd", lr=AUTO, steps=400, init_std=1.0, seed=0)
CONTROL_KEYS = tuple(DEFAULTS)
DEAD_J = 1e-6  # a row whose softmax Jacobian norm is at most this passes no usable gradient
BIG_LEAD = 10.0  # a lead of the best score over the runner-up that counts as far out

# Everything below is shared read-only across sessions (st.cache_resource: no copy, no
# pickling on a hit). A rerun that only moves the learning rate or the step count then
# rebuilds nothing: the plotly figures come back as they were and the browser, seeing the
# same spec, redraws nothing either. Few chart entries: a figure is thousands of small Python
# objects, which Streamlit's full garbage collection after every rerun walks through.
charts = st.cache_resource(max_entries=8, show_spinner=False)


@st.cache_resource(max_entries=64, show_spinner=False)
def step0(d_k: int, init_std: float, seed: int):
    """Both runs at initialisation: one joint step records every curve's first value."""
    return train_pair(d_k, steps=1, init_std=init_std, seed=seed, device=ui.device())


@st.cache_resource
def board() -> dict:
    """Runs on this server: `running` (in progress, so a second Run on the same settings
    watches the first) and `finished` (settings -> (scaled, unscaled), oldest dropped first)."""
    return {"lock": threading.Lock(), "running": {}, "finished": OrderedDict()}


def lookup(args: tuple):
    """Finished runs for these settings, from any session, or None."""
    b = board()
    with b["lock"]:
        return b["finished"].get(args)


def keep(args: tuple, runs) -> tuple:
    b = board()
    with b["lock"]:
        b["finished"][args] = runs
        while len(b["finished"]) > KEEP_FINISHED:
            b["finished"].popitem(last=False)
    return runs


def current(args: tuple):
    """(runs, partial): the finished runs, else this session's stopped ones, else None."""
    if (runs := lookup(args)) is not None:
        return runs, False
    if st.session_state.get("train_partial_args") == args:
        return st.session_state["train_partial"], True
    return None, False


@charts
def start_charts(d_k: int, init_std: float, seed: int):
    """(Jacobian histogram at step 0, probe rows before training)."""
    a0, b0 = step0(d_k, init_std, seed)
    return (
        tf.row_jacobian_histogram(a0.probe_jacobian_start, b0.probe_jacobian_start),
        tf.probe_rows((a0.probe_start, b0.probe_start), None, a0.probe_position),
    )


def end_charts(runs, steps: int) -> dict:
    """The four curves, the Jacobian histogram after training, probe rows before and after."""
    a, b = runs
    out = {name: getattr(tf, name)(a, b, steps=steps) for name in CURVES}
    if a.probe_end is not None and b.probe_end is not None:
        out["histogram"] = tf.row_jacobian_histogram(
            a.probe_jacobian_end, b.probe_jacobian_end, when="after training"
        )
        out["probe"] = tf.probe_rows(
            (a.probe_start, b.probe_start), (a.probe_end, b.probe_end), a.probe_position
        )
    return out


@charts
def finished_charts(args: tuple, steps: int, _runs) -> dict:
    """end_charts of the finished runs of `args`, built once per setting."""
    return end_charts(_runs, steps)


def draw_curves(slots: dict, a, b, steps: int, n: int, tag: str, *, last: bool = False) -> None:
    """Redraw number `n` of the curve charts while training; `tag` keeps plotly keys unique.

    The two line charts every time, the two two-panel charts (slower to build here and to
    draw in the browser, and the browser shares the CPU with the training) every third
    time and at the end.
    """
    names = CURVES if last or n % 3 == 0 else CURVES[:2]
    for name in names:
        with slots[name].container():
            ui.show(getattr(tf, name)(a, b, steps=steps), key=f"{name}-{tag}{n}")


def train_live(args: tuple, kw: dict, slots: dict, bar):
    """Train (or watch another session train) these settings; None if it ended unfinished."""
    b, steps, t0 = board(), kw["steps"], time.monotonic()
    tick = iter(range(1 << 30))
    with b["lock"]:
        watching = args in b["running"]
        b["running"].setdefault(args, None)
    if watching:
        bar.progress(0.0, text="Another session is training exactly these settings; watching it…")
        while args in b["running"]:
            if (runs := b["running"].get(args)) is not None:
                draw_curves(slots, *runs, steps, next(tick), "watch")
                bar.progress(min(runs[0].done, steps) / steps, text="Watching another session…")
            time.sleep(UPDATE_S)  # the page's own st calls above let Stop interrupt
        return lookup(args)
    due = 0.0

    def on_step(step, ra, rb):
        nonlocal due
        b["running"][args] = st.session_state["train_partial"] = (ra, rb)
        st.session_state["train_partial_args"] = args
        if (now := time.monotonic()) >= due or step == steps:
            bar.progress(step / steps, text=f"Step {step} of {steps} · {now - t0:.1f} s")
            draw_curves(slots, ra, rb, steps, next(tick), "live", last=step == steps)
            # redraw every UPDATE_S, but never spend more time drawing than training
            due = now + max(UPDATE_S, 2 * (time.monotonic() - now))
        return job.should_stop()  # the server's per-job budget (ui.jobs)

    st.session_state.pop("train_budget", None)
    try:
        # one heavy job at a time on the server: wait in line (the bar shows where), then train
        with ui.jobs.slot(
            "training", f"d_k {kw['d_k']}, {steps} steps", show=lambda s: bar.progress(0.0, text=s)
        ) as job:
            t0 = time.monotonic()  # the clock starts with the training, not in the queue
            runs = ui.jobs.call(
                train_pair, kw.pop("d_k"), on_step=on_step, device=ui.device(), **kw
            )
        if job.stopped:  # out of time: the runs stay this session's partial ones, not kept
            st.session_state["train_budget"] = (args, job.stopped_text(runs[0].done, steps))
            return None
        bar.progress(1.0, text=f"Both runs done in {time.monotonic() - t0:.1f} s")
        st.session_state.pop("train_partial_args", None)  # finished: nothing partial to show
        return keep(args, runs)
    except ui.jobs.GaveUpError as e:  # waited in line past the server's cap
        bar.warning(str(e), icon=":material/hourglass_disabled:")
        return None
    finally:
        with b["lock"]:
            b["running"].pop(args, None)


def verdict(a, b) -> None:
    for run, name in ((a, "scaled"), (b, "unscaled")):
        if run.stopped == "nan":
            st.error(
                f"The **{name}** run diverged at step {run.stopped_at}: its loss became NaN or "
                "exploded, so it stopped there (the curves end where it did). Lower the "
                "learning rate.",
                icon=":material/error:",
            )
    cols = st.columns(4)
    tail = [r.tail_loss() if r.loss else float("nan") for r in (a, b)]
    helps = "Mean loss over the last 50 steps (or all steps, if fewer)."
    cols[0].metric("Final loss, scaled", f"{tail[0]:.3g}", help=helps)
    cols[1].metric("Final loss, unscaled", f"{tail[1]:.3g}", help=helps)
    found = [
        tf.found_share(r.probe_end, r.probe_position) for r in (a, b) if r.probe_end is not None
    ]
    if len(found) == 2:
        helpf = f"Share of the {N_PROBE} probe examples whose largest weight is on the right pair."
        cols[2].metric("Right pair after, scaled", f"{found[0]:.0%}", help=helpf)
        cols[3].metric("Right pair after, unscaled", f"{found[1]:.0%}", help=helpf)


def lab(args: tuple, kw: dict) -> None:
    """Run/Stop, progress, the curves, then where the probe queries look.

    No st.fragment here on purpose: a click on Stop must request a full rerun, which
    interrupts a run in progress (a fragment rerun would wait for it to finish).
    """
    left, right, note = st.columns([1, 1, 4], vertical_alignment="center")
    run_clicked = left.button("Run both", type="primary", icon=":material/play_arrow:", key="run")
    right.button("Stop", icon=":material/stop:", help="Stops the training; keeps what is drawn.")
    bar = st.empty()
    slots = {n: st.empty() for n in ("verdict", *CURVES)}
    runs, partial = current(args)
    if runs is None:
        note.caption(
            f"**Run both** trains the scaled and the unscaled model together ({kw['steps']} "
            "steps each). Below: where the two look before any learning."
        )
    if runs is None and run_clicked:
        slots["verdict"].info(
            "Training both runs, step by step. **Stop** ends them early and keeps the curves.",
            icon=":material/model_training:",
        )
        runs = train_live(args, dict(kw), slots, bar.progress(0.0, text="Starting…"))
        runs, partial = current(args)
    with slots["verdict"].container():
        if runs is not None:
            cut = st.session_state.get("train_budget")  # (args, why) of a run out of time
            if partial and cut and cut[0] == args:
                st.warning(
                    f"{cut[1]} The curves show the run so far; fewer steps finish in time.",
                    icon=":material/timer_off:",
                )
            elif partial:
                st.warning(
                    f"Stopped at step {runs[0].done} of {kw['steps']}: the curves show the run "
                    "so far. Press **Run both** to train these settings from the start.",
                    icon=":material/stop_circle:",
                )
            verdict(*runs)
    done = None
    if runs is not None:
        done = (
            end_charts(runs, kw["steps"]) if partial else finished_charts(args, kw["steps"], runs)
        )
        for name in CURVES:
            with slots[name].container():
                ui.show(done[name], key=f"{name}-final")
    if done is not None and "probe" in done:
        ui.show(done["probe"])
    else:
        ui.show(start_charts(kw["d_k"], kw["init_std"], kw["seed"])[1])


def rows(args: tuple, kw: dict) -> None:
    """Step 0 in numbers, and who still passes gradient back, before and after training."""
    a0, b0 = step0(kw["d_k"], kw["init_std"], kw["seed"])
    st.subheader("Row by row: who still passes gradient back")
    cols = st.columns(4)
    help0 = "Measured on the first training batch, before any update."
    cols[0].metric("Step 0 largest weight, scaled", f"{a0.max_weight[0]:.2f}", help=help0)
    cols[1].metric("Step 0 largest weight, unscaled", f"{b0.max_weight[0]:.2f}", help=help0)
    cols[2].metric("Step 0 rows > 0.99, scaled", f"{a0.saturated[0]:.0%}", help=help0)
    cols[3].metric("Step 0 rows > 0.99, unscaled", f"{b0.saturated[0]:.0%}", help=help0)
    runs, partial = current(args)  # a stopped run has no after-training snapshot
    done = finished_charts(args, kw["steps"], runs) if runs is not None and not partial else {}
    c1, c2 = st.columns(2)
    with c1:
        ui.show(start_charts(kw["d_k"], kw["init_std"], kw["seed"])[0])
    with c2:
        if "histogram" in done:
            ui.show(done["histogram"])
        else:
            st.info(
                "The same picture after training appears here once both runs have ended "
                "(press **Run both** in the Train step)."
            )
    ui.explain("Back to the two-key curve on the √d_k page", two_key_text(kw, a0, b0))


LOSS_BAND = 0.02  # within 2 % of ln(n_symbols) counts as "guessing"
LOSS_CHOICES = (
    "below guessing: the peaked rows already find some answers",
    f"within {100 * LOSS_BAND:g} % of guessing",
    f"more than {100 * LOSS_BAND:g} % above guessing",
)


def exercises(a0, b0, d_k: int, init_std: float, seed: int) -> None:
    """Predictions about the start, answered from the cached step-0 runs (no training)."""
    inst = f"{d_k}-{init_std:g}-{seed}"
    setting = f"d_k = **{d_k}**, initial std **{init_std:g}**, seed **{seed}**"
    spread = math.sqrt(d_k) * init_std**2  # std of a raw score q·k
    slack = 1 / SATURATED - 1  # what the rivals' weights may add up to, relative to the top
    rivals = b0.n_pairs - 1
    rest = (
        "The other rows still pass gradient, and because W_q and W_k are shared, they keep the "
        "whole model learning."
        if b0.saturated[0] < 0.9
        else "Nearly every row starts saturated here: this is the lesson's limit."
    )
    c1, c2 = st.columns(2)
    with c1:
        ui.predict_number(
            f"train-sat-{inst}",
            f"Before any training ({setting}): in what percentage of the **unscaled** model's "
            f"attention rows does a single key already hold more than {SATURATED:.0%} of the "
            "weight?",
            100 * b0.saturated[0],
            f"A raw score q·k sums d_k products of two numbers of size about {init_std:g}, so "
            f"its spread is about √d_k · {init_std:g}² = {spread:.3g} here, against "
            f"{init_std**2:.3g} once divided by √d_k. A row's largest weight passes {SATURATED:g} "
            f"only when e^(s_j − s_max) summed over its rivals stays below 1/{SATURATED:g} − 1 ≈ "
            f"{slack:.3g}: a lead of at least ln(1/{slack:.3g}) ≈ {math.log(1 / slack):.2g} "
            f"over every rival, and ln({rivals}/{slack:.3g}) ≈ {math.log(rivals / slack):.2g} if "
            f"all {rivals} rivals sat at the same distance. So the share grows with d_k and with "
            f"the initial std; here it is {b0.saturated[0]:.0%}. {rest} "
            "The lesson's flat loss needs *every* row to start saturated — try an initial std "
            f"of 3. (Scaled model, same start: {a0.saturated[0]:.0%}.)",
            rel_tol=0.25, abs_tol=5.0, fmt="{:.0f} %", lo=0.0, hi=100.0,
        )  # fmt: skip
    with c2:
        ui.predict_number(
            f"train-grad-{inst}",
            f"Same start ({setting}): the gradient that reaches W_q and W_k on the first "
            "batch, ‖(∂L/∂W_q, ∂L/∂W_k)‖. How many times larger is the **unscaled** run's "
            "than the scaled run's? (A number below 1 means smaller.)",
            b0.qk_grad_norm[0] / a0.qk_grad_norm[0],
            "Saturated rows send back almost nothing, so it is tempting to expect the unscaled "
            "model to get the weaker gradient. Add it up over the whole batch instead: without "
            "the division every score, and with it every derivative of a score with respect to "
            f"W_q and W_k, is √d_k = {math.sqrt(d_k):.3g} times larger. Rows that still have "
            "slack pass that bigger gradient on in full; only the saturated ones drop out. So "
            "the ratio is close to √d_k when hardly any row is saturated (an initial std of "
            "0.1 gives it almost exactly) and falls below it as more rows saturate. What the "
            "missing √d_k breaks is not the size of the total gradient but where it comes "
            "from — only the unsaturated rows — and how far each step moves the scores, "
            "which is too far for a learning rate tuned to the scaled model.",
            rel_tol=0.25, fmt="{:.3g}", lo=0.0,
        )  # fmt: skip
    chance = b0.chance
    gap = b0.loss[0] / chance - 1  # relative distance from guessing
    verdict = LOSS_CHOICES[0 if gap < -LOSS_BAND else 1 if gap <= LOSS_BAND else 2]
    ui.predict_choice(
        f"train-loss-{inst}",
        f"Same start ({setting}). Before a single update, the **unscaled** model's "
        f"cross-entropy on its first batch is… (guessing among {b0.n_symbols} symbols costs "
        f"ln {b0.n_symbols} ≈ {chance:.3g})",
        LOSS_CHOICES, verdict,
        "Untrained attention lands on pairs that have nothing to do with the query, so the "
        "value it brings back carries no information about the answer: no run can start "
        "below guessing except by luck of the batch. What changes is how *confident* the "
        f"uninformed guess is. A spread-out row averages {b0.n_pairs} unrelated value vectors, "
        "which mostly cancel, so the output is small and the prediction nearly even — a loss "
        f"close to ln {b0.n_symbols}. The more a row piles its weight on one key, the more of "
        "that single value survives: the output grows, the logits spread and the model bets "
        "firmly on some wrong symbol; "
        "cross-entropy punishes confident mistakes, so the loss starts *above* guessing. "
        "Peaked attention at initialisation is not a head start: it is a confident guess "
        "with nothing behind it.",
        truth=f"Step-0 loss: unscaled {b0.loss[0]:.3f}, scaled {a0.loss[0]:.3f} "
        f"(ln {b0.n_symbols} = {chance:.3f}).",
    )  # fmt: skip


def _lr_label(x) -> str:
    return "auto" if x == AUTO else f"{x:g}"


def controls() -> tuple[tuple, dict]:
    """The two runs' settings, in the sidebar (presenter mode: a closed box on the page)."""
    with ui.controls_area():
        st.markdown("#### Both runs")
        d_k = ui.pow2_slider(
            "d_k", "d_k — width of each query and key", 4, 512, DEFAULTS["d_k"],
            help="The lesson's story is about d_k = 64; try 8 and 256 too. The Heads step "
            "does not use it: it splits a fixed d_model into heads.",
        )  # fmt: skip
        # plain option names: the URL carries what the radio shows (sgd, adam)
        optimizer = ui.radio("optimizer", "Optimizer", ["sgd", "adam"], DEFAULTS["optimizer"])
        auto = ", ".join(f"{OPT_NAMES[o]} {lr:g}" for o, lr in DEFAULT_LR.items())
        lr = ui.select_slider(
            "lr", "Learning rate", LR_OPTIONS, DEFAULTS["lr"], fmt=_lr_label,
            help=f"auto = the usual value for the optimizer ({auto}).",
            expected=f"auto or a value from {LR_OPTIONS[1]:g} to {LR_OPTIONS[-1]:g} on the "
            "slider's scale",
        )  # fmt: skip
        steps = ui.slider("steps", "Training steps", 50, 2000, DEFAULTS["steps"], step=50)
        init_std = ui.log_slider(
            "init_std", "Initial std of q and k components", 0.1, 4.0, DEFAULTS["init_std"],
            help="1 is what LayerNorm and a standard init give: the derivation's premise.",
        )  # fmt: skip
        seed = ui.number("seed", "Random seed", 0, 10_000, DEFAULTS["seed"])
        lr_value = DEFAULT_LR[optimizer] if lr == AUTO else float(lr)
        st.caption(
            f"Learning rate used: **{lr_value:g}** ({OPT_NAMES[optimizer]}). Finished runs are "
            "kept on the server, so a class pressing Run on the same settings trains once."
        )
    kw = dict(d_k=d_k, optimizer=optimizer, lr=lr_value, steps=steps, init_std=init_std, seed=seed)
    return (*kw.values(), str(ui.device())), kw


def show_failure() -> None:
    """The one-click setting: the defaults with a saturated start (the URL follows)."""
    st.session_state.update(DEFAULTS, **FAILURE)


@st.cache_data(max_entries=1, show_spinner=False)
def measured_answer() -> dict:
    """bench/training_answer.py's figures for the two reference settings (CPU)."""
    return json.loads((ANSWER_FILE).read_text())


def answer(refs: dict) -> None:
    """The page's question answered before anyone presses Run, every figure measured: this
    server's runs of the two reference settings where it has them, else the CPU figures of
    bench/training_answer.py. A button sets the failing one."""
    shipped, figs, here = measured_answer(), {}, []
    for name in ANSWER_SETTINGS:
        if refs.get(name) is not None:
            figs[name] = tuple(r.summary() for r in refs[name])
            here.append(name)
        else:
            figs[name] = (shipped[name]["scaled"], shipped[name]["unscaled"])
    (s, u), (fs_, fu) = figs["default"], figs["failure"]
    left = f"step {fu['left_chance']}" if fu["left_chance"] is not None else "the end"
    text = (
        f"**Measured: not at the defaults.** Without √d_k the model still learns: "
        f"{u['tail_accuracy']:.0%} of its last 50 batches right (scaled "
        f"{s['tail_accuracy']:.0%}); its loss is just higher and jumpier ({u['tail_loss']:.2g} "
        f"against {s['tail_loss']:.2g}). **It fails when the scores start saturated** (d_k = "
        f"{FAILURE['d_k']}, initial std {FAILURE['init_std']:g}: {fu['saturated_start']:.0%} "
        f"of the unscaled rows above {SATURATED:g}). The scaled run leaves chance at "
        f"{_step(fs_['left_chance'], fs_['steps'])} and answers 99 % right at "
        f"{_step(fs_['first_99'], fs_['steps'])}; the unscaled loss stays within 10 % of chance "
        f"until {left} and ends at {fu['tail_accuracy']:.0%} right after {fu['steps']} steps "
        f"(loss {fu['tail_loss']:.2g} against {fs_['tail_loss']:.2g}). It crawls rather than "
        "stopping dead as in the lesson."
    )
    box, button = st.columns([5, 1.3], vertical_alignment="center")
    box.info(text, icon=":material/fact_check:")
    button.button(
        "Show the failure", on_click=show_failure, icon=":material/warning:", key="failure",
        help=f"Sets d_k = {FAILURE['d_k']} and initial std {FAILURE['init_std']:g}, the rest at "
        "the defaults (the link follows); then press Run both.",
    )  # fmt: skip
    where = {
        (): f"Figures measured on a CPU when this app was built (bench/training_answer.py, "
        f"torch {shipped['torch']}); Run both measures them here.",
        ("default",): "The defaults' figures are this server's run; the failure's were measured "
        "on a CPU when this app was built (Run both on it measures them here).",
        ("failure",): "The failure's figures are this server's run; the defaults' were measured "
        "on a CPU when this app was built.",
    }
    box.caption(where.get(tuple(here), "Both measured on this server."))


def two_key_text(kw: dict, a0, b0) -> str:
    """The two-key curve, then where this setting's probe rows sit on it (all measured)."""
    d_k, std = kw["d_k"], kw["init_std"]
    raw = a0.probe_scores_start.double()  # (N_PROBE, n_pairs) q·k, shared by both runs at step 0
    lead = top_two_gap(raw)  # (N_PROBE,) best score minus the runner-up
    med = float(lead.median())
    g3, g24, g_med, g_big = two_key_gradient([3.0, 24.0, med, BIG_LEAD]).tolist()
    eps = torch.finfo(torch.float32).eps
    spread = math.sqrt(d_k) * std**2  # the derivation's standard deviation of q·k
    j_s, j_u = a0.probe_jacobian_start.double(), b0.probe_jacobian_start.double()
    dead_s, dead_u = (float((j <= DEAD_J).double().mean()) for j in (j_s, j_u))
    big = float((lead >= BIG_LEAD).double().mean())
    still = "still " if g_med >= 0.01 else "only "
    after = std**2  # the scores' standard deviation once divided by √d_k
    where = (
        "where the two-key curve is still steep"
        if after <= 1
        else "which is still large: the division removes the √d_k, not a too-large initial std"
    )
    return f"""
The √d_k page draws softmax over just two keys: as the gap between their scores grows, the
weight on the losing key shrinks like e^(−gap) and so does the gradient α(1 − α). At a gap of
3 it is {sci(g3)}; at a gap of 24 it is {sci(g24)}, far below what float32 can add to a weight
of order 1 (its epsilon is {sci(eps)}).

Here q and k components start with standard deviation {std:g}, so a raw score q·k has standard
deviation √d_k · {std:g}² = {spread:.3g} (measured over the {N_PROBE} probe rows:
{float(raw.std()):.3g}). Over {raw.shape[-1]} keys the best raw score leads the runner-up by
{med:.3g} in the median row, where the two-key gradient is {still}{sci(g_med)}; the lead is
{BIG_LEAD:g} or more (gradient {sci(g_big)} or less) in {big:.1%} of the rows, and the
largest lead of all is {float(lead.max()):.3g}. The unscaled softmax sees these leads as they
are; the scaled one divides them by √d_k = {math.sqrt(d_k):.3g}.

The histogram above is the same curve seen row by row: the median row's Jacobian norm is
{sci(float(j_s.median()))} scaled and {sci(float(j_u.median()))} unscaled, and
{dead_u:.0%} of the unscaled rows (scaled: {dead_s:.0%}) start at or below {sci(DEAD_J)}, with
no usable gradient. Dividing by √d_k brings the scores' standard deviation from {spread:.3g} back
to {std:g}² = {after:.3g}, {where}.
"""


def _times(x: float) -> str:
    """A ratio for a sentence: 3 significant digits, 1,600 rather than 1.6e+03."""
    return f"{float(f'{x:.3g}'):,.0f}" if x >= 1000 else f"{x:.3g}"


def _lead(ratio: float) -> str:
    """A loss ratio (unscaled / scaled) in words, with its number unless the two are level."""
    if ratio >= 1.5:
        return f"{_times(ratio)} times the scaled run's"
    if ratio <= 1 / 1.5:
        return f"{ratio:.2g} times the scaled run's: lower"
    return "level with the scaled run's"


def _first(xs: list[float], at_least: float) -> int | None:
    """The first recorded step whose value reaches `at_least`, or None."""
    return next((i for i, x in enumerate(xs) if x >= at_least), None)


def _step(i: int | None, steps: int) -> str:
    return f"step {i}" if i is not None else f"never within {steps} steps"


# The story's runs: fixed settings (the page's defaults and a few changes), in the order of the
# settings tuple, so a class pressing Run both on one of them and the Measure button share runs.
REF_BASE = dict(DEFAULTS, lr=DEFAULT_LR[DEFAULTS["optimizer"]])
REFS = {
    "default": REF_BASE,
    "small": dict(REF_BASE, d_k=8),
    "small_slow": dict(REF_BASE, d_k=8, lr=0.1),
    "hot": dict(REF_BASE, init_std=3.0),
    "cold": dict(REF_BASE, init_std=0.1),
    "adam": dict(REF_BASE, optimizer="adam", lr=DEFAULT_LR["adam"]),
    "failure": dict(REF_BASE, **FAILURE),  # the saturated start the answer box quotes
}


def ref_args(kw: dict) -> tuple:
    return (*kw.values(), str(ui.device()))


def references() -> dict:
    """The story's finished runs on this server (None where nobody has trained them yet)."""
    return {name: lookup(ref_args(kw)) for name, kw in REFS.items()}


def measure(names: list[str], bar) -> None:
    """Train the story's missing runs quietly (no live charts) and keep them for everyone."""
    total = sum(REFS[n]["steps"] for n in names)
    done, due, t0, kept = 0, 0.0, time.monotonic(), 0
    try:  # one heavy job at a time on the server (ui.jobs): wait in line, then train
        with ui.jobs.slot(
            "story", f"{len(names)} pairs", show=lambda s: bar.progress(0.0, text=s)
        ) as job:
            t0 = time.monotonic()
            for name in names:
                kw = dict(REFS[name])
                what = f"Measuring {_setting(kw)}"

                def on_step(step, ra, rb, what=what, done=done):
                    nonlocal due
                    if (now := time.monotonic()) >= due:
                        bar.progress((done + step) / total, text=f"{what} · {now - t0:.1f} s")
                        due = now + UPDATE_S
                    return job.should_stop()

                runs = ui.jobs.call(
                    train_pair, kw.pop("d_k"), on_step=on_step, device=ui.device(), **kw
                )
                if job.stopped:  # out of time: this pair is unfinished, so it is not kept
                    break
                keep(ref_args(REFS[name]), runs)
                done, kept = done + REFS[name]["steps"], kept + 1
    except ui.jobs.GaveUpError as e:
        bar.warning(str(e), icon=":material/hourglass_disabled:")
        return
    if job.stopped:
        bar.warning(
            job.stopped_text(kept, len(names), "pairs of runs")
            + " The finished pairs are kept: press again to train the rest.",
            icon=":material/timer_off:",
        )
        return
    bar.progress(1.0, text=f"Measured in {time.monotonic() - t0:.1f} s")


def _setting(kw: dict) -> str:
    return (
        f"d_k = {kw['d_k']}, {OPT_NAMES[kw['optimizer']]} at lr {kw['lr']:g}, initial std "
        f"{kw['init_std']:g}, {kw['steps']} steps, seed {kw['seed']}"
    )


PRESS = "**Measure the story** (above) adds how the runs end."


def try_items(refs: dict) -> list[tuple[str, str]]:
    """Three experiments; first-batch numbers always, the ends once the story is measured."""
    base = REF_BASE
    start = {name: step0(REFS[name]["d_k"], REFS[name]["init_std"], base["seed"]) for name in REFS}
    _, b8 = start["small"]
    _, b256 = step0(256, base["init_std"], base["seed"])
    a_c, b_c = start["cold"]
    n = a_c.n_pairs
    small = (
        f"at {REFS['small']['d_k']}, {b8.saturated[0]:.0%} of the unscaled rows start above "
        f"{SATURATED:g}; at 256, {b256.saturated[0]:.0%} do (first batch, initial std "
        f"{base['init_std']:g}, seed {base['seed']})."
    )
    if refs["small"] and refs["small_slow"]:
        (s, u), (s2, u2) = refs["small"], refs["small_slow"]
        small += (
            f" At {REFS['small']['d_k']} and lr {REFS['small']['lr']:g} the unscaled run's "
            f"final loss is still {_lead(u.tail_loss() / s.tail_loss())} — its steps are too "
            f"big; at lr {REFS['small_slow']['lr']:g} it is "
            f"{_lead(u2.tail_loss() / s2.tail_loss())} ({u2.tail_loss():.2g} against "
            f"{s2.tail_loss():.2g})."
        )
    else:
        small += " " + PRESS
    if refs["adam"]:
        s, u = refs["adam"]
        adam = (
            f"at step 50 the unscaled loss is still {u.loss[49]:.2g} while the scaled run's is "
            f"{s.loss[49]:.2g}; over the last 50 steps the unscaled loss is "
            f"{_lead(u.tail_loss() / s.tail_loss())} (at step 50: "
            f"{_times(u.loss[49] / s.loss[49])} times)."
        )
    else:
        adam = "watch how far the unscaled run lags in the first steps. " + PRESS
    cold = (
        f"both runs start almost flat: the largest weight in a row averages "
        f"{b_c.max_weight[0]:.2f} unscaled and {a_c.max_weight[0]:.2f} scaled (flat: 1/{n} = "
        f"{1 / n:.2g})."
    )
    if refs["cold"]:
        s, u = refs["cold"]
        ks, ku = _first(s.accuracy, 0.99), _first(u.accuracy, 0.99)
        cold += (
            f" Both learn: final losses {u.tail_loss():.2g} unscaled and {s.tail_loss():.2g} "
            f"scaled; 99 % batch accuracy at {_step(ku, u.steps)} unscaled and "
            f"{_step(ks, s.steps)} scaled. The trouble is the size of the scores, which √d_k "
            "controls, not the division as such."
        )
    else:
        cold += " " + PRESS
    return [
        (f"Compare d_k = {REFS['small']['d_k']} with d_k = 256", small),
        ("Switch SGD to Adam", adam),
        (f"Set the initial std to {REFS['cold']['init_std']:g}", cold),
    ]


def honest_text(refs: dict) -> str:
    """Where the toy agrees with the lesson's story and where not, every number measured."""
    base = REF_BASE
    a0, b0 = step0(base["d_k"], base["init_std"], base["seed"])
    _, h0 = step0(REFS["hot"]["d_k"], REFS["hot"]["init_std"], base["seed"])
    d_k = base["d_k"]
    out = [
        f"**Where it agrees.** At the page's defaults ({_setting(base)}) the unscaled rows "
        f"start far more peaked — mean largest weight {b0.max_weight[0]:.2f} against "
        f"{a0.max_weight[0]:.2f} — and {b0.saturated[0]:.0%} of them are already above "
        f"{SATURATED:g} (scaled: {a0.saturated[0]:.0%})."
    ]
    if refs["default"]:
        s, u = refs["default"]
        out[0] += (
            f" The scaled run first answers 99 % of a batch right at "
            f"{_step(_first(s.accuracy, 0.99), s.steps)}; over the last 50 steps the unscaled "
            f"run's loss is {_lead(u.tail_loss() / s.tail_loss())} ({u.tail_loss():.2g} "
            f"against {s.tail_loss():.2g}). Its *accuracy* tells a milder story: "
            f"{u.tail_accuracy():.1%} of its last 50 batches right, against "
            f"{s.tail_accuracy():.1%}. "
            + (
                "It learned the task; its loss is higher because its confident mistakes cost a "
                "lot, and it jumps about."
                if u.tail_accuracy() >= 0.9
                else f"It has not learned the task in {u.steps} steps."
            )
        )
    else:
        out[0] += " " + PRESS
    ratio0 = b0.qk_grad_norm[0] / a0.qk_grad_norm[0]
    out.append(
        "**Where it does not.** The loss does not flatline from step one. Two reasons, both "
        "visible here:"
    )
    out.append(
        f"- *Most rows are not saturated yet.* With {b0.n_pairs} keys at d_k = {d_k}, "
        f"{1 - b0.saturated[0]:.0%} of the unscaled rows start below {SATURATED:g}. They still "
        "pass gradient, and W_q and W_k are shared by every row, so those rows keep the weights "
        "learning for all of them. The total gradient reaching W_q and W_k at step 0 is "
        f"{ratio0:.3g} times the scaled run's ({b0.qk_grad_norm[0]:.2g} against "
        f"{a0.qk_grad_norm[0]:.2g}), because nothing divides it by √d_k."
    )
    steps_text = (
        f"- *The unscaled run takes much bigger steps.* Without the division, one SGD step "
        f"changes the scores about d_k = {d_k} times more than with it (√d_k from the larger "
        "gradient, √d_k again from the larger scores), so the same learning rate is far too "
        "large for the unscaled model"
    )
    if refs["default"]:
        s, u = refs["default"]
        u50, s50 = u.loss[-50:], s.loss[-50:]
        steps_text += (
            f": it overshoots, its rows snap to one-hot ({u.saturated[-1]:.0%} above "
            f"{SATURATED:g} at the end) and its loss jumps about (from {min(u50):.2g} to "
            f"{max(u50):.2g} over the last 50 steps, against {min(s50):.2g} to {max(s50):.2g} "
            "for the scaled run). That matches the early instability a Q&A reader reported at "
            "head dimension 128."
        )
    else:
        steps_text += ". " + PRESS
    if refs["small"] and refs["small_slow"]:
        (s, u), (s2, u2) = refs["small"], refs["small_slow"]
        steps_text += (
            " The same reader saw little difference at small d_k. Here that holds only with a "
            f"gentler learning rate: at d_k = {REFS['small']['d_k']} and lr "
            f"{REFS['small']['lr']:g} the unscaled run's final loss is still "
            f"{_lead(u.tail_loss() / s.tail_loss())} ({u.tail_loss():.2g} against "
            f"{s.tail_loss():.2g}); at lr {REFS['small_slow']['lr']:g} it is "
            f"{_lead(u2.tail_loss() / s2.tail_loss())} ({u2.tail_loss():.2g} against "
            f"{s2.tail_loss():.2g}). √{REFS['small']['d_k']} is a milder factor than √{d_k}, "
            "but not mild enough for a learning rate tuned to the scaled model."
        )
    out.append(steps_text)
    j, w = h0.probe_jacobian_start.double(), h0.probe_start  # (N_PROBE,), (N_PROBE, n_pairs)
    whole = float((w.amax(-1) == 1.0).double().mean())  # the winner's weight rounds to 1
    one_hot = float((w.topk(2, dim=-1).values[:, 1] == 0).double().mean())  # the rest are 0
    zero = float((j == 0).double().mean())  # as the float32 weights give it
    hot = (
        "The lesson's “flat to four decimal places” is the limit where *every* row starts "
        f"saturated. Set the initial std to {REFS['hot']['init_std']:g} and "
        f"{float((j <= DEAD_J).double().mean()):.0%} of the unscaled probe rows start with a "
        f"Jacobian norm at or below {sci(DEAD_J)}: no usable gradient. Exactly none is rarer: "
        f"the norm computed from the float32 weights is exactly 0 in {zero:.0%} of the rows "
        f"(the largest weight rounds to exactly 1 in {whole:.0%}, its rivals' tiny weights still "
        f"count), and only {one_hot:.0%} are exactly one-hot, every other weight exactly 0, so "
        "that their Jacobian is 0 in exact arithmetic too."
    )
    if refs["hot"]:
        s, u = refs["hot"]
        chance = u.chance
        hot += (
            " The unscaled loss first drops below 90 % of chance at "
            f"{_step(_first([-x / chance for x in u.loss], -0.9), u.steps)} (the scaled run's "
            f"at {_step(_first([-x / chance for x in s.loss], -0.9), s.steps)}: with q and k "
            "this large its scores, even divided by √d_k, start with standard deviation "
            f"{REFS['hot']['init_std'] ** 2:g}), and over the last 50 steps it is "
            f"{_lead(u.tail_loss() / s.tail_loss())}."
        )
    else:
        hot += " " + PRESS
    out.append(hot)
    return "\n\n".join(out)


def adam_text(refs: dict) -> str:
    text = (
        "Adam divides each parameter's gradient by a running estimate of its own typical size, "
        "so a gradient many times too small or too large still produces a step of about the "
        "usual size. That undoes part of what the missing √d_k did to the gradient's *scale*. "
        "It does not undo the *shape* problem — saturated rows still send back almost nothing, "
        "and the scores are still √d_k times too large"
    )
    if refs["adam"]:
        s, u = refs["adam"]
        text += (
            f". With Adam at the defaults ({_setting(REFS['adam'])}) the unscaled loss at step "
            f"50 is {u.loss[49]:.2g}, when the scaled run's is {s.loss[49]:.2g} (it answers "
            f"{s.accuracy[49]:.0%} of that batch right); over the last 50 steps the unscaled "
            f"loss is {u.tail_loss():.2g}, {_lead(u.tail_loss() / s.tail_loss())} "
            f"({s.tail_loss():.2g})."
        )
    else:
        text += ". " + PRESS
    return text + " The √d_k fixes the cause; Adam only compensates for one of its symptoms."


def story(kw: dict) -> None:
    """Try this and the two explanations, measured from the story's fixed-setting runs."""
    refs = references()
    missing = [name for name, runs in refs.items() if runs is None]
    if missing:
        box = st.empty()  # the button and its note go once the story is measured
        left, right = box.container().columns([1, 3], vertical_alignment="center")
        pressed = left.button("Measure the story", icon=":material/science:", key="measure")
        steps = 2 * sum(REFS[n]["steps"] for n in missing)
        right.caption(
            f"The boxes below quote runs at fixed settings. {len(missing)} of their "
            f"{len(REFS)} pairs of runs are not on this server yet: the button trains them "
            f"({steps} training steps in all) and keeps them for everyone."
        )
        if pressed:
            measure(missing, st.progress(0.0, text="Starting…"))
            refs = references()
            box.empty()
    ui.try_this(try_items(refs))
    ui.explain(
        "Where this toy agrees with the lesson's story — and where it does not",
        honest_text(refs),
    )
    ui.explain("Why Adam partly rescues the unscaled run", adam_text(refs))


def predict(kw: dict) -> None:
    """Three questions about the start, answered from the cached step-0 runs."""
    a0, b0 = step0(kw["d_k"], kw["init_std"], kw["seed"])
    st.subheader("Before any training: predict, then reveal")
    st.caption(
        "Each answer is measured on the first batch of the setting above; a new d_k, initial "
        "std or seed asks the questions again."
    )
    if a0.done and b0.done:  # step 0 recorded (it always is, unless the first loss blew up)
        exercises(a0, b0, kw["d_k"], kw["init_std"], kw["seed"])
    else:
        st.info("The first training step already diverged here, so there is nothing to ask.")


SWEEP_D_KS = (8, 16, 32, 64)  # head widths compared; h = d_model / d_k heads
SWEEP_D_MODELS = (D_MODEL, 2 * D_MODEL)
# At most this many steps per head count, so the four runs stay near ten seconds on a
# 2-core CPU with one torch thread (d_model 128 costs about 2.5 times d_model 64 per step).
SWEEP_MAX_STEPS = {D_MODEL: 1000, 2 * D_MODEL: 400}
SMALL_D_K = 32  # the lesson: "d_k below about 32 starts to hurt"
KEEP_SWEEPS = 8


@st.cache_resource
def sweep_store() -> dict:
    """Finished head-width sweeps on this server: settings -> list of runs, oldest dropped."""
    return {"lock": threading.Lock(), "done": OrderedDict()}


def sweep_lookup(key: tuple):
    store = sweep_store()
    with store["lock"]:
        return store["done"].get(key)


def sweep_keep(key: tuple, runs: list) -> list:
    store = sweep_store()
    with store["lock"]:
        store["done"][key] = runs
        while len(store["done"]) > KEEP_SWEEPS:
            store["done"].popitem(last=False)
    return runs


def train_sweep(key: tuple, d_model: int, kw: dict, bar):
    """Train every head count (quietly, with a progress bar); None if it was stopped."""
    total, due, t0 = len(SWEEP_D_KS) * kw["steps"], 0.0, time.monotonic()

    def on_step(i, step, run):
        nonlocal due
        if (now := time.monotonic()) >= due:
            bar.progress(
                (i * kw["steps"] + step) / total,
                text=f"d_k = {run.d_k} ({run.heads} heads): step {step} of {kw['steps']} · "
                f"{now - t0:.1f} s",
            )
            due = now + UPDATE_S
        return job.should_stop()  # the server's per-job budget (ui.jobs)

    try:  # one heavy job at a time on the server: wait in line, then train
        with ui.jobs.slot(
            "head sweep", f"d_model {d_model}", show=lambda s: bar.progress(0.0, text=s)
        ) as job:
            t0 = time.monotonic()
            runs = ui.jobs.call(
                head_sweep, d_model, SWEEP_D_KS, on_step=on_step, device=ui.device(), **kw
            )
    except ui.jobs.GaveUpError as e:
        bar.warning(str(e), icon=":material/hourglass_disabled:")
        return None
    if job.stopped:  # out of time: an unfinished sweep is not kept
        done = sum(r.done for r in runs)
        bar.warning(job.stopped_text(done, total), icon=":material/timer_off:")
        return None
    bar.progress(1.0, text=f"{len(runs)} head counts trained in {time.monotonic() - t0:.1f} s")
    return sweep_keep(key, runs)


def sweep_table(runs: list) -> str:
    rows = [
        "| d_k | heads h | final loss | final accuracy | first batch ≥ 90 % right |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in runs:
        rows.append(
            f"| {r.d_k} | {r.heads} | {r.tail_loss():.3g} | {r.tail_accuracy():.1%} | "
            f"{_step(_first(r.accuracy, 0.9), r.steps)} |"
        )
    return "\n".join(rows)


def sweep_verdict(runs: list) -> str:
    """What the sweep shows about d_k below SMALL_D_K, in measured numbers."""
    diverged = [r for r in runs if r.stopped == "nan"]
    if diverged:
        names = ", ".join(f"d_k = {r.d_k}" for r in diverged)
        return (
            f"**No verdict:** the run at {names} diverged (its loss blew up), so this learning "
            "rate compares nothing. Lower it."
        )
    small = min(runs, key=lambda r: r.d_k)
    wide = [r for r in runs if r.d_k >= SMALL_D_K]
    best = min(wide, key=lambda r: r.tail_loss())
    acc_gap = best.tail_accuracy() - small.tail_accuracy()
    ratio = small.tail_loss() / best.tail_loss()
    k_small, k_best = _first(small.accuracy, 0.9), _first(best.accuracy, 0.9)
    speed = (
        f"d_k = {small.d_k} first answers 90 % of a batch right at "
        f"{_step(k_small, small.steps)}, d_k = {best.d_k} at {_step(k_best, best.steps)}"
    )
    figures = (
        f"d_k = {small.d_k} ends at {small.tail_accuracy():.1%} accuracy and loss "
        f"{small.tail_loss():.3g} over its last 50 steps, d_k = {best.d_k} (the best of "
        f"d_k ≥ {SMALL_D_K}) at {best.tail_accuracy():.1%} and {best.tail_loss():.3g}"
    )
    slower = k_best is not None and (k_small is None or k_small >= 1.5 * k_best)
    if acc_gap > 0.02:
        return (
            f"**At these settings small d_k hurts the answer:** {figures}; {speed}. With more "
            "steps the small heads may still catch up — the step count is part of the verdict."
        )
    if slower or ratio >= 2:
        return (
            f"**At these settings small d_k costs speed, not the answer:** {figures} (a loss "
            f"{ratio:.2g} times as large); {speed}."
        )
    return f"**At these settings small d_k does not hurt:** {figures}; {speed}."


def heads(kw: dict) -> None:
    """The lesson's 'd_k below about 32 hurts', tested on this task at a fixed d_model."""
    st.subheader(f"Head width: does d_k below {SMALL_D_K} hurt?")
    d_model = ui.radio(
        "d_model", "d_model — fixed; it is cut into h = d_model / d_k heads", SWEEP_D_MODELS,
        D_MODEL, help="The width of the embeddings and of the value path, shared by all heads.",
    )  # fmt: skip
    ui.show_notes(keys=("d_model",))
    steps = min(kw["steps"], SWEEP_MAX_STEPS[d_model])
    sweep_kw = dict(
        optimizer=kw["optimizer"], lr=kw["lr"], steps=steps, init_std=kw["init_std"],
        seed=kw["seed"],
    )  # fmt: skip
    capped = (
        f" (the step slider says {kw['steps']}; the sweep stops at {steps} at d_model = "
        f"{d_model} to keep its {len(SWEEP_D_KS)} runs short)"
        if steps < kw["steps"]
        else ""
    )
    widths = ", ".join(str(d) for d in SWEEP_D_KS)
    st.markdown(
        f"The lesson says that d_k below about {SMALL_D_K} starts to hurt, because each head "
        "has too little room for a useful similarity function. Test it on this lookup: the "
        f"usual scaled model (÷√d_k) at d_model = {d_model}, cut into h = d_model / d_k heads "
        f"of width d_k = {widths}. W_q and W_k are d_model × d_model whatever h is, so every "
        "head count starts from the same weights and sees the same batches, at the optimizer, "
        f"learning rate, initial std and seed set above; each trains {steps} steps{capped}. "
        "The d_k control plays no part here."
    )
    key = (d_model, *sweep_kw.values(), str(ui.device()))
    runs = sweep_lookup(key)
    pressed = st.button(
        f"Train the {len(SWEEP_D_KS)} head counts", type="primary", key="sweep",
        icon=":material/play_arrow:",
        disabled=runs is not None, help="Finished sweeps are kept on the server.",
    )  # fmt: skip
    if runs is None and pressed:
        runs = train_sweep(key, d_model, sweep_kw, st.progress(0.0, text="Starting…"))
    if runs is None:
        st.info(
            f"Press **Train the {len(SWEEP_D_KS)} head counts** to train them one after the "
            f"other ({len(SWEEP_D_KS) * steps} training steps in all).",
            icon=":material/model_training:",
        )
        return
    ui.show(tf.head_sweep_curves(runs, steps=steps))
    st.markdown(sweep_table(runs))
    st.caption(
        "Final loss and accuracy: means over each run's last 50 training batches (every batch "
        "is fresh, so they are held-out numbers too)."
    )
    st.markdown(sweep_verdict(runs))
    st.markdown(
        "**What this measures.** The similarity this task needs is an exact match: a query "
        f"must find the one key, among {runs[0].n_pairs}, that is the same symbol as itself. "
        "The lesson's claim is about room: a head in a language model scores many kinds of "
        "relation at once, and a single exact-match lookup cannot test that. What the sweep "
        "does measure is how fast, and how well, each split of the same weights learns this "
        "one lookup. And at a fixed d_model a smaller d_k also means more heads, each reading a "
        "value only d_model / h wide: the sweep cannot tell those two apart."
    )


def run() -> None:
    ui.page_header(
        FILE,
        "The lesson opens with a model that stopped learning because one division by √d_k "
        "was missing. Rerun that experiment here in seconds. The task is a lookup: each example "
        f"lists {N_PAIRS} key→value pairs of symbols (out of {N_SYMBOLS}), then repeats one key "
        "as the query; the model must answer with that key's value. The query alone gives no "
        f"hint, so without attention the best loss is guessing, ln {N_SYMBOLS} ≈ "
        f"{math.log(N_SYMBOLS):.3g}. One attention layer learns it **twice, together**: with "
        "the scores divided by √d_k and without, from the same initial weights and on the same "
        "batches.",
    )
    args, kw = controls()
    ui.show_notes(keys=CONTROL_KEYS)  # the Heads step shows its own control's note
    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            answer(references())
            lab(args, kw)
            story(kw)
    with tabs[1]:  # before Rows, whose step-0 metrics answer its questions
        if tabs[1].open:
            predict(kw)
    with tabs[2]:
        if tabs[2].open:
            rows(args, kw)
    with tabs[3]:
        if tabs[3].open:
            heads(kw)
    ui.prev_next(FILE)


run()
