"""Beyond the dot product: other scoring functions, attention as a kernel smoother,
and why attention weights are not explanations."""

import math

import numpy as np
import streamlit as st

import ui
from attn_core.cost import format_bytes
from attn_core.lessons import alternatives as core
from figures import alternatives as fa

FILE = "pages/alternatives.py"
W = ui.Words("alternatives")
STEPS = ui.lesson("alternatives").steps
LABELS = [str(i) for i in range(1, 9)]  # eight tokens
TAUS = np.logspace(-2, 1, 61)
T_OPTIONS = (256, 4096)  # slider range for the largest T of the timing sweeps


@ui.frozen
class Settings:
    """The sidebar: τ and the seed of the Scoring and Cosine steps (the same tokens)."""

    tau: float
    seed: int


@ui.frozen
class Timing:
    """One timing sweep: its sequence lengths on one device (shared between sessions)."""

    Ts: tuple[int, ...]
    device: str


def _key(*parts) -> str:
    """An exercise key naming its instance, so a new instance starts unrevealed."""
    return "-".join(f"{p:g}" if isinstance(p, float) else str(p) for p in parts).replace(".", "_")


# Charts are cached as resources (shared, only ever read) keyed by the controls they use,
# so a plain rerun neither computes nor builds a figure.


@ui.cache_resource(max_entries=32, show_spinner=False)
def scoring_view(s: Settings):
    """The five scorings of one set of tokens: their grids and the numbers the step reports."""
    c = core.compare_scorings(core.scoring_setup(len(LABELS), seed=s.seed), s.tau)
    return dict(
        grids=fa.scoring_grids(c.scores, c.weights, c.mean_entropy, LABELS),
        gap=c.absorption.max_abs_diff,
        top=c.absorption.max_abs_score,
        cos_range=(float(c.scores["cosine"].min()), float(c.scores["cosine"].max())),
        mean_entropy=c.mean_entropy,
        sharpest=core.sharpest_scoring(c),
    )


@ui.cache_resource(max_entries=32, show_spinner=False)
def cosine_view(s: Settings):
    """Cosine's temperature curve for the same tokens, and the loud-key example."""
    setup = core.scoring_setup(len(LABELS), seed=s.seed)
    c = core.compare_scorings(setup, s.tau)
    ent = core.cosine_entropy_vs_tau(setup.q, setup.k, TAUS).numpy()  # the same q, k (T, d_k)
    lk = core.loud_key_example(s.tau)
    scaled = c.mean_entropy["scaled dot"]
    return dict(
        entropy=fa.cosine_entropy_chart(
            TAUS, ent, scaled, len(LABELS), s.tau, here=c.mean_entropy["cosine"]
        ),
        loud=fa.loud_key_chart(lk.labels, lk.dot_weights, lk.cosine_weights, s.tau),
        cos_row_max=core.typical_row_max(c.weights["cosine"]),
    )


def score_speed(t: Timing):
    def work(job):
        rows = ui.jobs.call(  # in a worker process, stopped by the job's budget
            core.time_dot_vs_additive, t.Ts, device=t.device, hook="should_stop",
            should_stop=job.should_stop,
        )  # fmt: skip
        return [(r.T, r.dot_s, r.additive_s) for r in rows]

    return _timed("time_scores", t, work)


def attn_speed(t: Timing):
    def work(job):
        rows = ui.jobs.call(
            core.time_softmax_vs_linear, t.Ts, device=t.device, hook="should_stop",
            should_stop=job.should_stop,
        )  # fmt: skip
        return [(r.T, r.softmax_s, r.linear_s) for r in rows]

    return _timed("time_linear", t, work)


def _timed(name: str, t: Timing, work) -> tuple[list, str | None]:
    """(rows, why they stop short or None): timed once per server in a heavy-job slot
    (ui.jobs). A timing cut short by the server's per-job budget is kept for this session
    only, until its button is pressed again."""
    cut = st.session_state.get(f"_alt_cut_{name}")
    if cut is not None and cut[0] == t:
        return cut[1], cut[2]
    box = st.empty()
    with st.spinner(f"Timing T = {t.Ts[0]} … {t.Ts[-1]} on this device: {len(t.Ts)} lengths…"):
        rows, job = ui.jobs.shared(
            ui.jobs.results(name, 8), t, work, kind=name, what=f"{name} to T {t.Ts[-1]}",
            show=lambda s: box.info(s, icon=":material/hourglass:"),
        )  # fmt: skip
    box.empty()
    if job is None or not job.stopped:
        return rows, None
    why = job.stopped_text(len(rows), len(t.Ts), "sequence lengths")
    st.session_state[f"_alt_cut_{name}"] = (t, rows, why)
    return rows, why


def _gave_up(button_key: str, e: Exception) -> None:
    """The press waited past the server's cap: say so, and forget it (press again)."""
    st.session_state.pop(f"_alt_{button_key}", None)
    st.warning(str(e), icon=":material/hourglass_disabled:")


@ui.cache_resource(max_entries=32, show_spinner=False)
def smoother_view(bandwidth: float):
    d = core.kernel_smoother_demo(bandwidth)
    return (
        fa.smoother_chart(
            d.x, d.y, d.x_query, d.truth, d.fits, bandwidth, d.probe, d.max_gap_softmax
        ),
        fa.probe_weights_chart(d.x, d.probe_weights, d.probe, bandwidth),
        (d.probe, core.keys_holding(d.probe_weights["softmax attention"], 0.9), len(d.x)),
    )


@ui.cache_resource(max_entries=32, show_spinner=False)
def contribution_view(value_scale: float):
    c = core.weights_vs_contributions(value_scale)
    columns = {
        "weight α": c.weights,
        "‖v‖": c.value_norms,
        "‖α v‖": c.contributions,
        "‖Δo‖ deleted": c.renorm_change,
        "turn (°) deleted": c.renorm_angle_deg,
    }
    table = {"token": c.tokens} | {k: [f"{x:.3g}" for x in v.tolist()] for k, v in columns.items()}
    return c, fa.contributions_chart(c.tokens, c.weights, c.contributions), table


# Each step is a function. From Speed on, its fixed prose comes first, then an
# @st.fragment with the step's own controls, charts and exercise, then its fixed "Try this"
# and explanations: moving a control reruns only the fragment, so the browser redraws only
# what the control changes (long markdown is re-rendered on every rerun that sends it).


def controls() -> Settings:
    """τ and the seed, in the sidebar: they drive the first two steps, which show the same
    tokens (each later step has its own controls, inside it); their notes show above the
    steps, so on every step."""
    with ui.controls_area():
        st.markdown("### Scoring and Cosine")
        ui.used_by("step", STEPS, ("Scoring", "Cosine"))
        tau = ui.log_slider(
            "tau", "τ — cosine temperature", 0.01, 10.0, 1.0,
            help="Cosine scores are divided by τ before softmax. Small τ sharpens.",
        )  # fmt: skip
        seed = ui.number("seed", "Random seed (tokens and matrices)", 0, 10_000, 0)
    return Settings(tau, seed)


# ----------------------------------------------------------------------------- Scoring
def sharpest_exercise(v: dict, s: Settings) -> bool:
    """Which scoring is sharpest? True once revealed (the grids and their titles tell)."""
    ent = " · ".join(f"{n} {v['mean_entropy'][n]:.2f}" for n in core.SCORINGS)
    return ui.predict_choice(
        _key("alt-sharp", s.seed, s.tau),
        W("exercise.sharp.q", seed=s.seed, tau=s.tau),
        core.SCORINGS,
        v["sharpest"],
        W("exercise.sharp.why"),
        truth=W("exercise.sharp.truth", entropies=ent),
        secret=[f"{v['mean_entropy'][n]:.2f}" for n in core.SCORINGS],  # the grids' titles
    )


def scoring_metrics(v: dict, tau: float) -> None:
    c1, c2, _ = st.columns([1, 1, 2])
    c1.metric(
        "Bilinear − absorbed dot",
        f"{v['gap']:.1e}",
        help=f"Largest |difference| between qᵀWk and x(W_qW)·xW_k over all pairs. Scores "
        f"reach {v['top']:.3g}; the difference is float64 rounding only.",
    )
    c2.metric(
        "Largest |cos(q, k)/τ|",
        f"{max(abs(x) for x in v['cos_range']):.3g}",
        help=f"Cosine scores lie in [−1/τ, 1/τ] = [−{1 / tau:.3g}, {1 / tau:.3g}].",
    )


def scoring_step(s: Settings) -> None:
    st.header("Five ways to score a query against a key")
    words, ask = st.columns([1, 1.2], gap="large")  # the question beside what it asks about
    words.markdown(W("scoring.intro"))
    v = scoring_view(s)
    with ask:
        shown = sharpest_exercise(v, s)
    scoring_metrics(v, s.tau)
    if shown:  # the weight grids show which is sharpest, and their titles its entropy
        ui.show(v["grids"])
    else:
        ui.until_reveal(W("scoring.hidden"))
    st.markdown(W("scoring.bilinear"))
    ui.try_this(W.pairs("try.scoring"))


# ----------------------------------------------------------------------------- Cosine
def cosine_step(s: Settings) -> None:
    st.header("Cosine's bound: flat weights, and deaf to length")
    st.markdown(W("cosine.intro"))
    v = cosine_view(s)
    bound = core.cosine_max_weight_bound(s.tau, len(LABELS))
    shown = ui.predict_number(
        _key("alt-cosmax", s.seed, s.tau),
        W("exercise.cosmax.q", tau=s.tau, seed=s.seed),
        v["cos_row_max"],
        W("exercise.cosmax.why", tau=s.tau, bound=bound),
        rel_tol=0.15, abs_tol=0.03, fmt="{:.3f}", lo=0.0, hi=1.0,
    )  # fmt: skip
    c1, c2 = st.columns(2, gap="large")
    with c1:  # how flat the rows are at each τ answers the question: after the reveal
        if shown:
            ui.show(v["entropy"])
        else:
            ui.until_reveal(W("cosine.entropy_hidden"))
    with c2:
        ui.show(v["loud"])
    ui.try_this(W.pairs("try.cosine"))
    ui.explain("Why keep the length? Why not always normalise?", W("explain.cosine"))


# ----------------------------------------------------------------------------- the timings
def timing_T(*, cap_note: bool) -> tuple[int, ...]:
    """The T slider of the timing sweeps (the same widget in the Speed and Linear attention
    steps), its note below it; returns the sweep's T = 128, 256 … T."""
    with ui.noting():
        T = ui.pow2_slider(
            "T", "T — longest sequence to time", *T_OPTIONS, 1024,
            help="The timings run over T = 128, 256 … up to this value, with d = 64.",
        )  # fmt: skip
        cap = core.additive_T_cap(core.SPEED_D)
        if cap_note and cap < T:
            need = format_bytes(core.additive_intermediate_bytes(T, T, core.SPEED_D))
            budget = format_bytes(core.ADDITIVE_BUDGET_BYTES)
            ui.note(W("note.additive_cap", T=T, need=need, cap=cap, budget=budget))
    return tuple(2**i for i in range(7, int(math.log2(T)) + 1))  # 128 … T


@ui.cache_resource(max_entries=8, show_spinner=False)
def memory_view(Ts: tuple[int, ...]):
    nbytes = [core.additive_intermediate_bytes(t, t, core.SPEED_D) for t in Ts]
    return fa.memory_chart(Ts, nbytes, core.ADDITIVE_BUDGET_BYTES)


def _measured(button_key: str, label: str, Ts: tuple[int, ...]) -> tuple[int, ...] | None:
    """A button that runs a timing. Returns the lengths to show: these Ts once timed, else
    the last ones this session timed (kept on screen until the new range is measured), else
    None."""
    took = ui.jobs.limiter().typical_s(button_key, 0.0)  # this server's recent timings
    if took >= 0.5:
        label += f" (about {took:.0f} s here last time)"
    if st.button(label, key=button_key, icon=":material/timer:"):
        st.session_state[f"_alt_{button_key}"] = Ts
        st.session_state.pop(f"_alt_cut_{button_key}", None)  # a new press times afresh
    done = st.session_state.get(f"_alt_{button_key}")
    if done == Ts:
        return Ts
    key = Timing(done, str(ui.device())) if done else None
    cut = st.session_state.get(f"_alt_cut_{button_key}")
    if key not in ui.jobs.results(button_key, 8) and not (cut and cut[0] == key):
        done = None  # shown only while kept: showing must never start a timing
    meanwhile = " " + W("timing.meanwhile", first=done[0], last=done[-1]) if done else ""
    st.caption(W("timing.not_yet", first=Ts[0], last=Ts[-1]) + meanwhile)
    return done


def _timed_rows(button_key: str, shown: tuple[int, ...] | None, view) -> tuple | None:
    """(rows, chart or None) of the timing shown, or None: nothing asked, nothing timed, or
    the press waited past the server's cap (said so). A timing cut short says why."""
    if not shown:
        return None
    try:  # a heavy job: queued for a server slot, stopped at the per-job budget (ui.jobs)
        rows, chart, cut = view(Timing(shown, str(ui.device())))
    except ui.jobs.GaveUpError as e:
        _gave_up(button_key, e)
        return None
    if cut:
        st.warning(cut, icon=":material/timer_off:")
    return (rows, chart) if rows else None


# ----------------------------------------------------------------------------- Speed
def score_speed_view(t: Timing):
    """(rows, chart or None: fewer than two rows, why the rows stop short or None)."""
    rows, cut = score_speed(t)
    return rows, score_speed_chart(tuple(rows)) if len(rows) >= 2 else None, cut


@ui.cache_resource(max_entries=8, show_spinner=False)
def score_speed_chart(rows: tuple):
    return fa.speed_chart(*zip(*rows, strict=True))


def speed_step(_: Settings) -> None:
    st.header("Why the dot product won: speed, measured here")
    st.markdown(W("speed.intro"))
    speed_live()
    ui.try_this(W.pairs("try.speed"))


@st.fragment
def speed_live() -> None:
    left, right = st.columns([1, 2.5], gap="medium")
    with left:
        Ts = timing_T(cap_note=True)
    with right:
        ui.show(memory_view(Ts))
    timed = tuple(t for t in Ts if t <= core.additive_T_cap(core.SPEED_D))
    b, m1, m2 = st.columns([2, 1, 1], vertical_alignment="center")
    with b:
        shown = _measured("time_scores", "Time dot product vs additive on this device", timed)
    if (got := _timed_rows("time_scores", shown, score_speed_view)) is None:
        return
    rows, chart = got
    T_last, dot_s, add_s = rows[-1]
    m1.metric(f"Additive ÷ dot at T = {T_last}", f"{add_s / dot_s:.3g}×")
    m2.metric(
        f"Intermediate at T = {T_last}",
        format_bytes(core.additive_intermediate_bytes(T_last, T_last, core.SPEED_D)),
    )
    if chart is not None:
        ui.show(chart)


# ----------------------------------------------------------------------------- Smoother
def smoother_step(_: Settings) -> None:
    st.header("Attention is a kernel smoother")
    st.markdown(W("smoother.intro"))
    st.markdown(W("smoother.three"))
    smoother_live()
    ui.try_this(W.pairs("try.smoother"))
    ui.explain(
        "Why is softmax attention *exactly* the Gaussian kernel here?", W("explain.smoother")
    )


@st.fragment
def smoother_live() -> None:
    left, right = st.columns([1, 3.5], gap="medium")
    with left, ui.noting():
        bandwidth = ui.log_slider(
            "bandwidth", "bandwidth h — kernel width", 0.1, 5.0, 0.5,
            help="How far from the query a sample still gets weight.",
        )  # fmt: skip
    fit, probe, (x_probe, n90, n) = smoother_view(bandwidth)
    with right:
        ui.show(fit)
        ui.show(probe)
    guess = min(n, n / 10 * 2 * 1.645 * bandwidth)  # samples per unit × the central 90 % width
    ui.predict_number(
        _key("alt-window", bandwidth),
        W("exercise.window.q", bandwidth=bandwidth, x_probe=x_probe, n=n),
        n90,
        W("exercise.window.why", n=n, per_unit=n / 10, guess=guess),
        rel_tol=0.25, abs_tol=2, fmt="{:.0f}", lo=1, hi=n,
    )  # fmt: skip


# ----------------------------------------------------------------------------- Linear attention
def attn_speed_view(t: Timing):
    """(rows, chart or None: fewer than two rows, why the rows stop short or None)."""
    rows, cut = attn_speed(t)
    return rows, attn_speed_chart(tuple(rows)) if len(rows) >= 2 else None, cut


@ui.cache_resource(max_entries=8, show_spinner=False)
def attn_speed_chart(rows: tuple):
    T_, soft, lin = zip(*rows, strict=True)
    exps = (core.growth_exponent(T_, soft), core.growth_exponent(T_, lin))
    return fa.attn_speed_chart(T_, soft, lin, exps)


def linear_step(_: Settings) -> None:
    st.header("Softmax against linear attention, timed")
    st.markdown(W("linear.intro"))
    linear_live()
    ui.try_this(W.pairs("try.linear"))


@st.fragment
def linear_live() -> None:
    left, b, m1 = st.columns([1, 2, 1], vertical_alignment="center")
    with left:
        Ts = timing_T(cap_note=False)
    with b:
        shown = _measured("time_linear", "Time softmax vs linear attention on this device", Ts)
    if (got := _timed_rows("time_linear", shown, attn_speed_view)) is None:
        return
    rows, chart = got
    T_last, soft, lin = rows[-1]
    m1.metric(f"Softmax ÷ linear at T = {T_last}", f"{soft / lin:.3g}×")
    if chart is not None:
        ui.show(chart)


# ----------------------------------------------------------------------------- Contribution
def contribution_step(_: Settings) -> None:
    st.header("Attention weights are not explanations")
    st.markdown(W("contribution.intro"))
    contribution_live()
    ui.try_this(W.pairs("try.contribution"))
    ui.explain("What should I look at instead of the weights?", W("explain.contribution"))


VALUE_SCALE = 0.02  # the slider's default, and the length the exercise asks about


def knock_exercise() -> bool:
    """Which knock-out moves the output most, at [SEP]'s default value length; True once
    revealed. Asked before the slider, metrics and chart, which all show the answer."""
    c = contribution_view(VALUE_SCALE)[0]
    options = [f"{t} (α = {a:.2f})" for t, a in zip(c.tokens, c.weights.tolist(), strict=True)]
    moved = " · ".join(
        f"{t} {x:.3f}" for t, x in zip(c.tokens, c.knockout_change.tolist(), strict=True)
    )
    return ui.predict_choice(
        _key("alt-knock", VALUE_SCALE),
        W("exercise.knock.q", value_scale=VALUE_SCALE),
        options,
        options[int(c.knockout_change.argmax())],
        W("exercise.knock.why"),
        truth=W("exercise.knock.truth", moved=moved),
        secret=[f"{x:.3f}" for x in c.knockout_change.tolist()],  # the metrics and table
    )


def knock_metrics(c) -> None:
    """How far the output moves without the heaviest and the lightest token's term."""
    st.markdown(W("contribution.moves"))
    for j in (c.top, c.light):
        st.metric(
            f"without “{c.tokens[j]}” (α = {c.weights[j]:.2f})",
            f"{c.knockout_change[j]:.3f}",
            help="‖o − o without α_j v_j‖, the other weights unchanged. "
            f"For scale: ‖o‖ = {float(c.output.norm()):.3f}.",
        )


@st.fragment
def contribution_live() -> None:
    if not knock_exercise():
        ui.until_reveal(W("contribution.hidden"))
        return
    left, right = st.columns([1, 3], gap="medium")
    with left:
        with ui.noting():
            value_scale = ui.slider(
                "value_scale", "Length of [SEP]'s value vector", 0.0, 2.0, VALUE_SCALE,
                step=0.01, help="Every other value has length 1, except 'not' (length 5).",
            )  # fmt: skip
        c, chart, table = contribution_view(value_scale)
        knock_metrics(c)
    with right:
        ui.show(chart)
    with st.expander("Every token, and two ways of removing it", icon=":material/table:"):
        # A static table, not st.dataframe: its grid widget is re-rendered on every move
        # of the slider (expander closed or not), at a noticeable cost in the browser.
        st.table(table, hide_index=True)
        turn = c.renorm_angle_deg
        st.caption(W(
            "contribution.table", top_turn=turn[c.top], light_turn=turn[c.light],
            norm=float(c.output.norm()),
        ))  # fmt: skip


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls()
    ui.steps(
        {
            "Scoring": scoring_step,
            "Cosine": cosine_step,
            "Speed": speed_step,  # the later steps carry their own controls, in fragments
            "Smoother": smoother_step,
            "Linear attention": linear_step,
            "Contribution": contribution_step,
        },
        s,
    )
    ui.prev_next(FILE)


run()
