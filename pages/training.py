"""Training lab: the same model trained with and without √d_k, side by side, live."""

import json
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
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
    PairSettings,
    SweepSettings,
    found_share,
    head_sweep,
    top_two_gap,
)
from figures import training as tf
from figures.parts import sci
from ui.controls import log_values

FILE = "pages/training.py"
# The page's settings, defined in attn_core: a class defined in this script is new on every
# rerun, and a dataclass equals only its own class's instances, so the finished runs kept on
# the server under last run's settings would never be found again.
Settings = PairSettings
W = ui.Words("training")
STEPS = ui.lesson("training").steps  # a prediction before the step that shows it
ANSWER_FILE = Path(__file__).resolve().parent.parent / "assets" / "training_answer.json"
AUTO = 0.0  # the lr slider's first stop, shown (and linked) as "auto": the optimizer's default
LR_OPTIONS = [AUTO, *log_values(1e-4, 10.0)]
UPDATE_S = 0.5  # live redraw interval while training (the issue asks for ≤ 0.5 s)
OPT_NAMES = {"sgd": "SGD", "adam": "Adam"}
CURVES = ("loss_curves", "accuracy_curves", "attention_shape_curves", "gradient_curves")
KEEP_FINISHED = 32  # finished pairs of runs kept on the server
# the controls' defaults (lr AUTO: the optimizer's own)
DEFAULTS = dict(d_k=64, optimizer="sgd", lr=AUTO, steps=400, init_std=1.0, seed=0)
DEAD_J = 1e-6  # a row whose softmax Jacobian norm is at most this passes no usable gradient
BIG_LEAD = 10.0  # a lead of the best score over the runner-up that counts as far out
LOSS_BAND = 0.02  # within 2 % of ln(n_symbols) counts as "guessing"


def settings_of(kw: dict) -> Settings:
    """These train_pair settings on this server's device: the key of their finished runs."""
    return Settings(**kw, device=str(ui.device()))


# Everything below is shared read-only across sessions (st.cache_resource: no copy, no
# pickling on a hit). A rerun that only moves the learning rate or the step count then
# rebuilds nothing: the plotly figures come back as they were and the browser, seeing the
# same spec, redraws nothing either. Few chart entries: a figure is thousands of small Python
# objects, which Streamlit's full garbage collection after every rerun walks through.
charts = ui.cache_resource(max_entries=8, show_spinner=False)


@ui.cache_resource(max_entries=64, show_spinner=False)
def step0(d_k: int, init_std: float, seed: int):
    """Both runs at initialisation: one joint step records every curve's first value."""
    return train_pair(d_k, steps=1, init_std=init_std, seed=seed, device=ui.device())


@ui.cache_resource(max_entries=1)
def board() -> dict:
    """Runs on this server: `running` (in progress, so a second Run on the same settings
    watches the first) and `finished` (settings -> (scaled, unscaled), oldest dropped first)."""
    return {"lock": threading.Lock(), "running": {}, "finished": OrderedDict()}


def lookup(key, store=board):
    """Finished runs for these settings, from any session, or None."""
    b = store()
    with b["lock"]:
        return b["finished"].get(key)


def keep(key, runs, store=board, limit: int = KEEP_FINISHED):
    """Keep finished runs for everyone, the oldest dropped past `limit`."""
    b = store()
    with b["lock"]:
        b["finished"][key] = runs
        while len(b["finished"]) > limit:
            b["finished"].popitem(last=False)
    return runs


def current(s: Settings):
    """(runs, partial): the finished runs, else this session's stopped ones, else None."""
    if (runs := lookup(s)) is not None:
        return runs, False
    if st.session_state.get("train_partial_args") == s:
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
def finished_charts(s: Settings, _runs) -> dict:
    """end_charts of the finished runs of `s`, built once per setting."""
    return end_charts(_runs, s.steps)


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


def watch(s: Settings, slots: dict, bar):
    """Another session trains exactly these settings: draw its curves until it ends."""
    b, tick = board(), iter(range(1 << 30))
    bar.progress(0.0, text="Another session is training exactly these settings; watching it…")
    while s in b["running"]:
        if (runs := b["running"].get(s)) is not None:
            draw_curves(slots, *runs, s.steps, next(tick), "watch")
            bar.progress(min(runs[0].done, s.steps) / s.steps, text="Watching another session…")
        time.sleep(UPDATE_S)  # the page's own st calls above let Stop interrupt
    return lookup(s)


def train_live(s: Settings, slots: dict, bar):
    """Train (or watch another session train) these settings; None if it ended unfinished."""
    b, steps, t0 = board(), s.steps, time.monotonic()
    tick = iter(range(1 << 30))
    with b["lock"]:
        watching = s in b["running"]
        b["running"].setdefault(s, None)
    if watching:
        return watch(s, slots, bar)
    due = 0.0

    def on_step(step, ra, rb):
        nonlocal due
        b["running"][s] = st.session_state["train_partial"] = (ra, rb)
        st.session_state["train_partial_args"] = s
        if (now := time.monotonic()) >= due or step == steps:
            bar.progress(step / steps, text=f"Step {step} of {steps} · {now - t0:.1f} s")
            draw_curves(slots, ra, rb, steps, next(tick), "live", last=step == steps)
            # redraw every UPDATE_S, but never spend more time drawing than training
            due = now + max(UPDATE_S, 2 * (time.monotonic() - now))
        return job.should_stop()  # the server's per-job budget (ui.jobs)

    st.session_state.pop("train_budget", None)
    kw = s.kw()
    try:
        # one heavy job at a time on the server: wait in line (the bar shows where), then train
        with ui.jobs.slot(
            "training", f"d_k {s.d_k}, {steps} steps", show=lambda m: bar.progress(0.0, text=m)
        ) as job:
            t0 = time.monotonic()  # the clock starts with the training, not in the queue
            runs = ui.jobs.call(
                train_pair, kw.pop("d_k"), on_step=on_step, device=ui.device(), **kw
            )
        if job.stopped:  # out of time: the runs stay this session's partial ones, not kept
            st.session_state["train_budget"] = (s, job.stopped_text(runs[0].done, steps))
            return None
        bar.progress(1.0, text=f"Both runs done in {time.monotonic() - t0:.1f} s")
        st.session_state.pop("train_partial_args", None)  # finished: nothing partial to show
        return keep(s, runs)
    except ui.jobs.GaveUpError as e:  # waited in line past the server's cap
        bar.warning(str(e), icon=":material/hourglass_disabled:")
        return None
    finally:
        with b["lock"]:
            b["running"].pop(s, None)


def verdict(a, b) -> None:
    for run, name in ((a, "scaled"), (b, "unscaled")):
        if run.stopped == "nan":
            st.error(W("lab.diverged", name=name, at=run.stopped_at), icon=":material/error:")
    cols = st.columns(4)
    tail = [r.tail_loss() if r.loss else float("nan") for r in (a, b)]
    helps = "Mean loss over the last 50 steps (or all steps, if fewer)."
    cols[0].metric("Final loss, scaled", f"{tail[0]:.3g}", help=helps)
    cols[1].metric("Final loss, unscaled", f"{tail[1]:.3g}", help=helps)
    found = [found_share(r.probe_end, r.probe_position) for r in (a, b) if r.probe_end is not None]
    if len(found) == 2:
        helpf = f"Share of the {N_PROBE} probe examples whose largest weight is on the right pair."
        cols[2].metric("Right pair after, scaled", f"{found[0]:.0%}", help=helpf)
        cols[3].metric("Right pair after, unscaled", f"{found[1]:.0%}", help=helpf)


def run_state(s: Settings, runs, partial: bool) -> None:
    """Why the curves end early (out of time, or Stop), then the verdict of the runs."""
    cut = st.session_state.get("train_budget")  # (settings, why) of a run out of time
    if partial and cut and cut[0] == s:
        st.warning(W("lab.out_of_time", why=cut[1]), icon=":material/timer_off:")
    elif partial:
        st.warning(
            W("lab.stopped", done=runs[0].done, steps=s.steps), icon=":material/stop_circle:"
        )
    verdict(*runs)


def lab(s: Settings) -> None:
    """Run/Stop, progress, the curves, then where the probe queries look.

    No st.fragment here on purpose: a click on Stop must request a full rerun, which
    interrupts a run in progress (a fragment rerun would wait for it to finish).
    """
    left, right, note = st.columns([1, 0.8, 5], vertical_alignment="center")
    run_clicked = left.button("Run both", type="primary", icon=":material/play_arrow:", key="run")
    right.button("Stop", icon=":material/stop:", help="Stops the training; keeps what is drawn.")
    bar = st.empty()
    slots = {n: st.empty() for n in ("verdict", *CURVES)}
    runs, partial = current(s)
    if runs is None:
        note.caption(W("lab.hint", steps=s.steps))
    if runs is None and run_clicked:
        slots["verdict"].info(W("lab.training"), icon=":material/model_training:")
        runs = train_live(s, slots, bar.progress(0.0, text="Starting…"))
        runs, partial = current(s)
    with slots["verdict"].container():
        if runs is not None:
            run_state(s, runs, partial)
    done = None
    if runs is not None:
        done = end_charts(runs, s.steps) if partial else finished_charts(s, runs)
        for name in CURVES:
            with slots[name].container():
                ui.show(done[name], key=f"{name}-final")
    if done is not None and "probe" in done:
        ui.show(done["probe"])
    else:
        ui.show(start_charts(s.d_k, s.init_std, s.seed)[1])


def rows_step(s: Settings) -> None:
    """Step 0 in numbers, and who still passes gradient back, before and after training."""
    a0, b0 = step0(s.d_k, s.init_std, s.seed)
    st.header("Row by row: who still passes gradient back")
    cols = st.columns(4)
    help0 = "Measured on the first training batch, before any update."
    cols[0].metric("Step 0 largest weight, scaled", f"{a0.max_weight[0]:.2f}", help=help0)
    cols[1].metric("Step 0 largest weight, unscaled", f"{b0.max_weight[0]:.2f}", help=help0)
    cols[2].metric("Step 0 rows > 0.99, scaled", f"{a0.saturated[0]:.0%}", help=help0)
    cols[3].metric("Step 0 rows > 0.99, unscaled", f"{b0.saturated[0]:.0%}", help=help0)
    runs, partial = current(s)  # a stopped run has no after-training snapshot
    done = finished_charts(s, runs) if runs is not None and not partial else {}
    c1, c2 = st.columns(2)
    with c1:
        ui.show(start_charts(s.d_k, s.init_std, s.seed)[0])
    with c2:
        if "histogram" in done:
            ui.show(done["histogram"])
        else:
            st.info(W("rows.after_hint"))
    ui.explain("Back to the two-key curve on the √d_k page", two_key_text(s, a0, b0))


# ----------------------------------------------------------------------------- predict, then reveal
def sat_exercise(a0, b0, inst: str, setting: str, init_std: float) -> None:
    spread = math.sqrt(a0.d_k) * init_std**2  # std of a raw score q·k
    slack = 1 / SATURATED - 1  # what the rivals' weights may add up to, relative to the top
    rivals = b0.n_pairs - 1
    rest = W("exercise.sat.rest.some" if b0.saturated[0] < 0.9 else "exercise.sat.rest.most")
    why = W(
        "exercise.sat.why", std=init_std, spread=spread, std2=init_std**2, sat=SATURATED,
        slack=slack, lead_one=math.log(1 / slack), rivals=rivals,
        lead_all=math.log(rivals / slack), u_sat=b0.saturated[0], rest=rest,
        s_sat=a0.saturated[0],
    )  # fmt: skip
    ui.predict_number(
        f"train-sat-{inst}",
        W("exercise.sat.q", setting=setting, sat=SATURATED),
        100 * b0.saturated[0],
        why,
        rel_tol=0.25, abs_tol=5.0, fmt="{:.0f} %", lo=0.0, hi=100.0,
    )  # fmt: skip


def grad_exercise(a0, b0, inst: str, setting: str) -> None:
    ui.predict_number(
        f"train-grad-{inst}",
        W("exercise.grad.q", setting=setting),
        b0.qk_grad_norm[0] / a0.qk_grad_norm[0],
        W("exercise.grad.why", root=math.sqrt(a0.d_k)),
        rel_tol=0.25, fmt="{:.3g}", lo=0.0,
    )  # fmt: skip


def loss_exercise(a0, b0, inst: str, setting: str) -> None:
    chance, n = b0.chance, b0.n_symbols
    choices = W.choices("exercise.loss.choices", band=100 * LOSS_BAND)
    gap = b0.loss[0] / chance - 1  # relative distance from guessing
    answer = "below" if gap < -LOSS_BAND else "within" if gap <= LOSS_BAND else "above"
    ui.predict_choice(
        f"train-loss-{inst}",
        W("exercise.loss.q", setting=setting, n=n, chance=chance),
        list(choices.values()), choices[answer],
        W("exercise.loss.why", pairs=b0.n_pairs, n=n),
        truth=W("exercise.loss.truth", u=b0.loss[0], s=a0.loss[0], n=n, chance=chance),
    )  # fmt: skip


def exercises(a0, b0, d_k: int, init_std: float, seed: int) -> None:
    """Predictions about the start, answered from the cached step-0 runs (no training)."""
    inst = f"{d_k}-{init_std:g}-{seed}"
    setting = W("exercise.setting", d_k=d_k, std=init_std, seed=seed)
    c1, c2 = st.columns(2)
    with c1:
        sat_exercise(a0, b0, inst, setting, init_std)
    with c2:
        grad_exercise(a0, b0, inst, setting)
    loss_exercise(a0, b0, inst, setting)


def predict_step(s: Settings) -> None:
    """Three questions about the start, answered from the cached step-0 runs."""
    a0, b0 = step0(s.d_k, s.init_std, s.seed)
    st.header("Before any training: predict, then reveal")
    st.caption(W("predict.caption"))
    if a0.done and b0.done:  # step 0 recorded (it always is, unless the first loss blew up)
        exercises(a0, b0, s.d_k, s.init_std, s.seed)
    else:
        st.info(W("predict.diverged"))


# ----------------------------------------------------------------------------- the controls
def _lr_label(x) -> str:
    return "auto" if x == AUTO else f"{x:g}"


def controls() -> Settings:
    """The two runs' settings, in the sidebar (presenter mode: a closed box on the page)."""
    with ui.controls_area():
        st.markdown("### Both runs")
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
        st.caption(W("controls.lr_used", lr=lr_value, opt=OPT_NAMES[optimizer]))
    kw = dict(d_k=d_k, optimizer=optimizer, lr=lr_value, steps=steps, init_std=init_std, seed=seed)
    return settings_of(kw)


def show_failure() -> None:
    """The one-click setting: the defaults with a saturated start (the URL follows)."""
    st.session_state.update(DEFAULTS, **FAILURE)


# ----------------------------------------------------------------------------- the answer
@ui.cache_data(max_entries=1, show_spinner=False)
def measured_answer() -> dict:
    """bench/training_answer.py's runs of the two reference settings, one per seed (CPU)."""
    return json.loads((ANSWER_FILE).read_text())


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _two_digits(x: float) -> str:
    """Two significant digits: 270, not 2.7e+02."""
    return f"{float(f'{x:.2g}'):,g}"


def _span(xs: list[float], fmt: Callable[[float], str]) -> str:
    """Measured values as a range in a sentence: "91–99%", or one value ("100%") when the
    lowest and highest read the same."""
    lo, hi = fmt(min(xs)), fmt(max(xs))
    return hi if lo == hi else f"{lo.removesuffix('%')}–{hi}"


def _seeds(seeds: list[int]) -> str:
    """Seeds 0, 1, …, 7 as "0–7"; any other list as written."""
    if seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 1:
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _reaches_99(runs: list[dict]) -> str:
    """When these runs (one, or one per seed) first answer a batch 99 % right, in words."""
    at = [r["first_99"] for r in runs]
    hit = [i for i in at if i is not None]
    if not hit:
        return W("answer.99.never")
    if len(hit) == len(at):
        return W("answer.99.by", at=max(hit))
    return W("answer.99.some", at=max(hit), k=len(hit), n=len(at))


def answer_text(figs: dict) -> str:
    """The answer from `figs[name]`: a list of (scaled, unscaled) summaries per setting, one
    run or one per seed; every figure is quoted as the range over them."""
    (s, u), (fs_, fu) = (list(zip(*figs[n], strict=True)) for n in ANSWER_SETTINGS)
    ratio = [b["tail_loss"] / a["tail_loss"] for a, b in figs["default"]]
    f_ratio = [b["tail_loss"] / a["tail_loss"] for a, b in figs["failure"]]
    return W(
        "answer", u_acc=_span([r["tail_accuracy"] for r in u], _pct),
        s_acc=_span([r["tail_accuracy"] for r in s], _pct), ratio=_span(ratio, _two_digits),
        d_k=FAILURE["d_k"], std=FAILURE["init_std"], sat=SATURATED,
        sat_start=_span([r["saturated_start"] for r in fu], _pct),
        fs_99=_reaches_99(fs_), fu_99=_reaches_99(fu),
        fu_acc=_span([r["tail_accuracy"] for r in fu], _pct), fu_steps=fu[0]["steps"],
        fu_ratio=_span(f_ratio, _two_digits),
    )  # fmt: skip


def answer(refs: dict) -> None:
    """The page's question answered before anyone presses Run, every figure measured: this
    server's runs of the two reference settings where it has them (one run each, seed 0),
    else bench/training_answer.py's CPU runs, one per seed, quoted as ranges. A button sets
    the failing one."""
    shipped, figs, here = measured_answer(), {}, []
    for name in ANSWER_SETTINGS:
        if refs.get(name) is not None:
            figs[name] = [tuple(r.summary() for r in refs[name])]
            here.append(name)
        else:
            figs[name] = [(r["scaled"], r["unscaled"]) for r in shipped[name]["runs"]]
    box, side = st.columns([5, 2.1], vertical_alignment="center")
    box.info(answer_text(figs), icon=":material/fact_check:")
    side.button(
        "Show the failure", on_click=show_failure, icon=":material/warning:", key="failure",
        help=f"Sets d_k = {FAILURE['d_k']} and initial std {FAILURE['init_std']:g}, the rest at "
        "the defaults (the link follows); then press Run both.",
    )  # fmt: skip
    where = {(): "none", ("default",): "default", ("failure",): "failure"}.get(tuple(here), "both")
    seeds, seed = _seeds(shipped["seeds"]), ANSWER_SETTINGS["default"]["seed"]
    fields = {"none": dict(seeds=seeds, torch=shipped["torch"]), "both": dict(seed=seed)}
    side.caption(W(f"answer.where.{where}", **fields.get(where, dict(seed=seed, seeds=seeds))))


def two_key_text(s: Settings, a0, b0) -> str:
    """The two-key curve, then where this setting's probe rows sit on it (all measured)."""
    std = s.init_std
    raw = a0.probe_scores_start.double()  # (N_PROBE, n_pairs) q·k, shared by both runs at step 0
    lead = top_two_gap(raw)  # (N_PROBE,) best score minus the runner-up
    med = float(lead.median())
    g3, g24, g_med, g_big = two_key_gradient([3.0, 24.0, med, BIG_LEAD]).tolist()
    j_s, j_u = a0.probe_jacobian_start.double(), b0.probe_jacobian_start.double()
    dead_s, dead_u = (float((j <= DEAD_J).double().mean()) for j in (j_s, j_u))
    return W(
        "explain.two_key", g3=sci(g3), g24=sci(g24), eps=sci(torch.finfo(torch.float32).eps),
        std=std, spread=math.sqrt(s.d_k) * std**2, n_probe=N_PROBE,
        measured=float(raw.std()), n_keys=raw.shape[-1], med=med,
        still=W("explain.two_key.still" if g_med >= 0.01 else "explain.two_key.only"),
        g_med=sci(g_med), big_lead=BIG_LEAD, g_big=sci(g_big),
        big=float((lead >= BIG_LEAD).double().mean()), max_lead=float(lead.max()),
        root=math.sqrt(s.d_k), j_s=sci(float(j_s.median())), j_u=sci(float(j_u.median())),
        dead_u=dead_u, dead_s=dead_s, dead_j=sci(DEAD_J), after=std**2,
        where=W("explain.two_key.steep" if std**2 <= 1 else "explain.two_key.large"),
    )  # fmt: skip


# ----------------------------------------------------------------------------- numbers in words
def _times(x: float) -> str:
    """A ratio for a sentence: 3 significant digits, 1,600 rather than 1.6e+03."""
    return f"{float(f'{x:.3g}'):,.0f}" if x >= 1000 else f"{x:.3g}"


def _lead(ratio: float) -> str:
    """A loss ratio (unscaled / scaled) in words, with its number unless the two are level."""
    if ratio >= 1.5:
        return W("lead.more", x=_times(ratio))
    if ratio <= 1 / 1.5:
        return W("lead.less", x=ratio)
    return W("lead.level")


def _first(xs: list[float], at_least: float) -> int | None:
    """The first recorded step whose value reaches `at_least`, or None."""
    return next((i for i, x in enumerate(xs) if x >= at_least), None)


def _step(i: int | None, steps: int) -> str:
    return W("step.at", i=i) if i is not None else W("step.never", steps=steps)


def _setting(kw: dict) -> str:
    return W(
        "setting", d_k=kw["d_k"], opt=OPT_NAMES[kw["optimizer"]], lr=kw["lr"],
        std=kw["init_std"], steps=kw["steps"], seed=kw["seed"],
    )  # fmt: skip


# ----------------------------------------------------------------------------- the story's runs
# Fixed settings (the page's defaults and a few changes), so a class pressing Run both on one
# of them and the Measure button share runs.
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


def references() -> dict:
    """The story's finished runs on this server (None where nobody has trained them yet)."""
    return {name: lookup(settings_of(kw)) for name, kw in REFS.items()}


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
                keep(settings_of(REFS[name]), runs)
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


def _then(text: str, runs_text: str | None) -> str:
    """A sentence, then what the story's runs add to it (or how to measure them)."""
    return f"{text} {runs_text if runs_text is not None else W('press')}"


def try_small(refs: dict) -> tuple[str, str]:
    base, small = REF_BASE, REFS["small"]
    _, b8 = step0(small["d_k"], small["init_std"], base["seed"])
    _, b256 = step0(256, base["init_std"], base["seed"])
    see = W(
        "try.small", d_k=small["d_k"], sat_small=b8.saturated[0], sat=SATURATED,
        sat_256=b256.saturated[0], std=base["init_std"], seed=base["seed"],
    )  # fmt: skip
    more = None
    if refs["small"] and refs["small_slow"]:
        (s, u), (s2, u2) = refs["small"], refs["small_slow"]
        more = W(
            "try.small.runs", d_k=small["d_k"], lr=small["lr"],
            lead=_lead(u.tail_loss() / s.tail_loss()), lr_slow=REFS["small_slow"]["lr"],
            lead_slow=_lead(u2.tail_loss() / s2.tail_loss()), u_slow=u2.tail_loss(),
            s_slow=s2.tail_loss(),
        )  # fmt: skip
    return W("try.small.do", d_k=small["d_k"]), _then(see, more)


def try_adam(refs: dict) -> tuple[str, str]:
    if not refs["adam"]:
        return W("try.adam.do"), _then(W("try.adam.none"), None)
    s, u = refs["adam"]
    see = W(
        "try.adam", u50=u.loss[49], s50=s.loss[49], lead=_lead(u.tail_loss() / s.tail_loss()),
        times=_times(u.loss[49] / s.loss[49]),
    )  # fmt: skip
    return W("try.adam.do"), see


def try_cold(refs: dict) -> tuple[str, str]:
    cold = REFS["cold"]
    a_c, b_c = step0(cold["d_k"], cold["init_std"], REF_BASE["seed"])
    n = a_c.n_pairs
    see = W("try.cold", u_top=b_c.max_weight[0], s_top=a_c.max_weight[0], n=n, flat=1 / n)
    more = None
    if refs["cold"]:
        s, u = refs["cold"]
        more = W(
            "try.cold.runs", u_loss=u.tail_loss(), s_loss=s.tail_loss(),
            u_99=_step(_first(u.accuracy, 0.99), u.steps),
            s_99=_step(_first(s.accuracy, 0.99), s.steps),
        )  # fmt: skip
    return W("try.cold.do", std=cold["init_std"]), _then(see, more)


def try_items(refs: dict) -> list[tuple[str, str]]:
    """Three experiments; first-batch numbers always, the ends once the story is measured."""
    return [try_small(refs), try_adam(refs), try_cold(refs)]


def honest_agrees(refs: dict, a0, b0) -> str:
    text = W(
        "honest.agrees", setting=_setting(REF_BASE), u_top=b0.max_weight[0],
        s_top=a0.max_weight[0], u_sat=b0.saturated[0], sat=SATURATED, s_sat=a0.saturated[0],
    )  # fmt: skip
    if not refs["default"]:
        return _then(text, None)
    s, u = refs["default"]
    learned = (
        W("honest.agrees.learned")
        if u.tail_accuracy() >= 0.9
        else W("honest.agrees.not_learned", steps=u.steps)
    )
    runs = W(
        "honest.agrees.runs", s_99=_step(_first(s.accuracy, 0.99), s.steps),
        lead=_lead(u.tail_loss() / s.tail_loss()), u_loss=u.tail_loss(), s_loss=s.tail_loss(),
        u_acc=u.tail_accuracy(), s_acc=s.tail_accuracy(), verdict=learned,
    )  # fmt: skip
    return _then(text, runs)


def honest_steps(refs: dict) -> str:
    """Why the unscaled run's steps are too big: measured at the defaults and at small d_k."""
    d_k = REF_BASE["d_k"]
    text = W("honest.not.steps", d_k=d_k)
    if refs["default"]:
        s, u = refs["default"]
        u50, s50 = u.loss[-50:], s.loss[-50:]
        text += W(
            "honest.not.steps.runs", u_sat_end=u.saturated[-1], sat=SATURATED, u_lo=min(u50),
            u_hi=max(u50), s_lo=min(s50), s_hi=max(s50),
        )  # fmt: skip
    else:
        text += ". " + W("press")
    if refs["small"] and refs["small_slow"]:
        (s, u), (s2, u2) = refs["small"], refs["small_slow"]
        text += " " + W(
            "honest.not.small", d_k=REFS["small"]["d_k"], lr=REFS["small"]["lr"],
            lead=_lead(u.tail_loss() / s.tail_loss()), u=u.tail_loss(), s=s.tail_loss(),
            lr_slow=REFS["small_slow"]["lr"], lead_slow=_lead(u2.tail_loss() / s2.tail_loss()),
            u_slow=u2.tail_loss(), s_slow=s2.tail_loss(), base_d_k=d_k,
        )  # fmt: skip
    return text


def honest_hot(refs: dict) -> str:
    """The lesson's flat loss: the limit of a hot start, measured on the probe rows."""
    _, h0 = step0(REFS["hot"]["d_k"], REFS["hot"]["init_std"], REF_BASE["seed"])
    j, w = h0.probe_jacobian_start.double(), h0.probe_start  # (N_PROBE,), (N_PROBE, n_pairs)
    text = W(
        "honest.hot", hot_std=REFS["hot"]["init_std"], dead=float((j <= DEAD_J).double().mean()),
        dead_j=sci(DEAD_J),
        zero=float((j == 0).double().mean()),  # as the float32 weights give it
        whole=float((w.amax(-1) == 1.0).double().mean()),  # the winner's weight rounds to 1
        one_hot=float((w.topk(2, dim=-1).values[:, 1] == 0).double().mean()),  # the rest are 0
    )  # fmt: skip
    more = None
    if refs["hot"]:
        s, u = refs["hot"]
        more = W(
            "honest.hot.runs",
            u_step=_step(_first([-x / u.chance for x in u.loss], -0.9), u.steps),
            s_step=_step(_first([-x / u.chance for x in s.loss], -0.9), s.steps),
            std2=REFS["hot"]["init_std"] ** 2, lead=_lead(u.tail_loss() / s.tail_loss()),
        )  # fmt: skip
    return _then(text, more)


def honest_text(refs: dict) -> str:
    """Where the toy agrees with the lesson's story and where not, every number measured."""
    base = REF_BASE
    a0, b0 = step0(base["d_k"], base["init_std"], base["seed"])
    saturated = W(
        "honest.not.saturated", pairs=b0.n_pairs, d_k=base["d_k"], below=1 - b0.saturated[0],
        sat=SATURATED, ratio=b0.qk_grad_norm[0] / a0.qk_grad_norm[0],
        u_grad=b0.qk_grad_norm[0], s_grad=a0.qk_grad_norm[0],
    )  # fmt: skip
    parts = [
        honest_agrees(refs, a0, b0), W("honest.not"), saturated, honest_steps(refs),
        honest_hot(refs),
    ]  # fmt: skip
    return "\n\n".join(parts)


def adam_text(refs: dict) -> str:
    text = W("explain.adam")
    if refs["adam"]:
        s, u = refs["adam"]
        text += W(
            "explain.adam.runs", setting=_setting(REFS["adam"]), u50=u.loss[49], s50=s.loss[49],
            s_acc50=s.accuracy[49], u_loss=u.tail_loss(),
            lead=_lead(u.tail_loss() / s.tail_loss()), s_loss=s.tail_loss(),
        )  # fmt: skip
    else:
        text += ". " + W("press")
    return text + " " + W("explain.adam.end")


def story() -> None:
    """Try this and the two explanations, measured from the story's fixed-setting runs."""
    refs = references()
    missing = [name for name, runs in refs.items() if runs is None]
    if missing:
        box = st.empty()  # the button and its note go once the story is measured
        left, right = box.container().columns([1, 3], vertical_alignment="center")
        pressed = left.button("Measure the story", icon=":material/science:", key="measure")
        steps = 2 * sum(REFS[n]["steps"] for n in missing)
        right.caption(W("story.missing", missing=len(missing), total=len(REFS), steps=steps))
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


def train_step(s: Settings) -> None:
    st.header(W("header.train"))
    answer(references())
    lab(s)
    story()


# ----------------------------------------------------------------------------- head width
SWEEP_D_KS = (8, 16, 32, 64)  # head widths compared; h = d_model / d_k heads
SWEEP_D_MODELS = (D_MODEL, 2 * D_MODEL)
# At most this many steps per head count, so the four runs stay near ten seconds on a
# 2-core CPU with one torch thread (d_model 128 costs about 2.5 times d_model 64 per step).
SWEEP_MAX_STEPS = {D_MODEL: 1000, 2 * D_MODEL: 400}
SMALL_D_K = 32  # the lesson: "d_k below about 32 starts to hurt"
KEEP_SWEEPS = 8


@ui.cache_resource(max_entries=1)
def sweep_store() -> dict:
    """Finished head-width sweeps on this server: settings -> list of runs, oldest dropped."""
    return {"lock": threading.Lock(), "finished": OrderedDict()}


def train_sweep(sweep: SweepSettings, bar):
    """Train every head count (quietly, with a progress bar); None if it was stopped."""
    steps = sweep.steps
    total, due, t0 = len(SWEEP_D_KS) * steps, 0.0, time.monotonic()

    def on_step(i, step, run):
        nonlocal due
        if (now := time.monotonic()) >= due:
            bar.progress(
                (i * steps + step) / total,
                text=f"d_k = {run.d_k} ({run.heads} heads): step {step} of {steps} · "
                f"{now - t0:.1f} s",
            )
            due = now + UPDATE_S
        return job.should_stop()  # the server's per-job budget (ui.jobs)

    try:  # one heavy job at a time on the server: wait in line, then train
        with ui.jobs.slot(
            "head sweep", f"d_model {sweep.d_model}", show=lambda s: bar.progress(0.0, text=s)
        ) as job:
            t0 = time.monotonic()
            runs = ui.jobs.call(
                head_sweep, sweep.d_model, SWEEP_D_KS, on_step=on_step, device=ui.device(),
                **sweep.kw(),
            )  # fmt: skip
    except ui.jobs.GaveUpError as e:
        bar.warning(str(e), icon=":material/hourglass_disabled:")
        return None
    if job.stopped:  # out of time: an unfinished sweep is not kept
        done = sum(r.done for r in runs)
        bar.warning(job.stopped_text(done, total), icon=":material/timer_off:")
        return None
    bar.progress(1.0, text=f"{len(runs)} head counts trained in {time.monotonic() - t0:.1f} s")
    return keep(sweep, runs, sweep_store, KEEP_SWEEPS)


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
        return W("sweep.diverged", names=", ".join(f"d_k = {r.d_k}" for r in diverged))
    small = min(runs, key=lambda r: r.d_k)
    wide = [r for r in runs if r.d_k >= SMALL_D_K]
    best = min(wide, key=lambda r: r.tail_loss())
    acc_gap = best.tail_accuracy() - small.tail_accuracy()
    ratio = small.tail_loss() / best.tail_loss()
    k_small, k_best = _first(small.accuracy, 0.9), _first(best.accuracy, 0.9)
    speed = W(
        "sweep.speed", small=small.d_k, k_small=_step(k_small, small.steps), best=best.d_k,
        k_best=_step(k_best, best.steps),
    )  # fmt: skip
    figures = W(
        "sweep.figures", small=small.d_k, small_acc=small.tail_accuracy(),
        small_loss=small.tail_loss(), best=best.d_k, floor=SMALL_D_K,
        best_acc=best.tail_accuracy(), best_loss=best.tail_loss(),
    )  # fmt: skip
    slower = k_best is not None and (k_small is None or k_small >= 1.5 * k_best)
    if acc_gap > 0.02:
        return W("sweep.hurts", figures=figures, speed=speed)
    if slower or ratio >= 2:
        return W("sweep.slower", figures=figures, ratio=ratio, speed=speed)
    return W("sweep.same", figures=figures, speed=speed)


def sweep_intro(sweep: SweepSettings, asked: int) -> str:
    """What the sweep trains, and where its step count stops short of the slider's."""
    capped = ""
    if sweep.steps < asked:
        capped = " " + W(
            "heads.capped", asked=asked, steps=sweep.steps, d_model=sweep.d_model,
            n=len(SWEEP_D_KS),
        )  # fmt: skip
    return W(
        "heads.intro", small=SMALL_D_K, d_model=sweep.d_model,
        widths=", ".join(str(d) for d in SWEEP_D_KS), steps=sweep.steps, capped=capped,
    )  # fmt: skip


def sweep_results(runs: list, steps: int) -> None:
    ui.show(tf.head_sweep_curves(runs, steps=steps))
    st.markdown(sweep_table(runs))
    st.caption(W("heads.table_note"))
    st.markdown(sweep_verdict(runs))
    st.markdown(W("heads.measures", pairs=runs[0].n_pairs))


def heads_step(s: Settings) -> None:
    """The lesson's 'd_k below about 32 hurts', tested on this task at a fixed d_model."""
    st.header(f"Head width: does d_k below {SMALL_D_K} hurt?")
    with ui.noting():
        d_model = ui.radio(
            "d_model", "d_model — fixed; it is cut into h = d_model / d_k heads",
            SWEEP_D_MODELS, D_MODEL,
            help="The width of the embeddings and of the value path, shared by all heads.",
        )  # fmt: skip
    sweep = SweepSettings(
        d_model=d_model, optimizer=s.optimizer, lr=s.lr,
        steps=min(s.steps, SWEEP_MAX_STEPS[d_model]), init_std=s.init_std, seed=s.seed,
        device=str(ui.device()),
    )  # fmt: skip
    st.markdown(sweep_intro(sweep, s.steps))
    runs = lookup(sweep, sweep_store)
    pressed = st.button(
        f"Train the {len(SWEEP_D_KS)} head counts", type="primary", key="sweep",
        icon=":material/play_arrow:",
        disabled=runs is not None, help="Finished sweeps are kept on the server.",
    )  # fmt: skip
    if runs is None and pressed:
        runs = train_sweep(sweep, st.progress(0.0, text="Starting…"))
    if runs is None:
        total = len(SWEEP_D_KS) * sweep.steps
        st.info(W("heads.press", n=len(SWEEP_D_KS), total=total), icon=":material/model_training:")
        return
    sweep_results(runs, sweep.steps)


def run() -> None:
    chance = math.log(N_SYMBOLS)
    ui.page_header(FILE, W("intro", n_pairs=N_PAIRS, n_symbols=N_SYMBOLS, chance=chance))
    s = controls()
    ui.steps(
        {"Train": train_step, "Predict": predict_step, "Rows": rows_step, "Heads": heads_step}, s
    )
    ui.prev_next(FILE)


run()
