"""Beyond the dot product: other scoring functions, attention as a kernel smoother,
and why attention weights are not explanations."""

import math

import numpy as np
import streamlit as st

import ui
from attn_core import (
    ADDITIVE_BUDGET_BYTES,
    additive_intermediate_bytes,
    additive_T_cap,
    compare_scorings,
    cosine_entropy_vs_tau,
    format_bytes,
    growth_exponent,
    kernel_smoother_demo,
    loud_key_example,
    scoring_setup,
    time_dot_vs_additive,
    time_softmax_vs_linear,
    weights_vs_contributions,
)
from attn_core.lessons.alternatives import (
    SCORINGS,
    SPEED_D,
    cosine_max_weight_bound,
    keys_holding,
    sharpest_scoring,
    typical_row_max,
)
from figures import alternatives as fa

FILE = "pages/alternatives.py"
LABELS = [str(i) for i in range(1, 9)]  # eight tokens
TAUS = np.logspace(-2, 1, 61)
T_OPTIONS = (256, 4096)  # slider range for the largest T of the timing sweeps
STEPS = ("Scoring", "Cosine", "Speed", "Smoother", "Linear attention", "Contribution")


def _key(*parts) -> str:
    """An exercise key naming its instance, so a new instance starts unrevealed."""
    return "-".join(f"{p:g}" if isinstance(p, float) else str(p) for p in parts).replace(".", "_")


# Charts are cached as resources (shared, only ever read) keyed by the controls they use,
# so a plain rerun neither computes nor builds a figure.


@st.cache_resource(max_entries=32, show_spinner=False)
def scoring_view(tau: float, seed: int):
    """The five scorings of one set of tokens: their grids and the numbers the step reports."""
    c = compare_scorings(scoring_setup(len(LABELS), seed=seed), tau)
    return dict(
        grids=fa.scoring_grids(c.scores, c.weights, c.mean_entropy, LABELS),
        gap=c.absorption.max_abs_diff,
        top=c.absorption.max_abs_score,
        cos_range=(float(c.scores["cosine"].min()), float(c.scores["cosine"].max())),
        mean_entropy=c.mean_entropy,
        sharpest=sharpest_scoring(c),
    )


@st.cache_resource(max_entries=32, show_spinner=False)
def cosine_view(tau: float, seed: int):
    """Cosine's temperature curve for the same tokens, and the loud-key example."""
    s = scoring_setup(len(LABELS), seed=seed)
    c = compare_scorings(s, tau)
    ent = cosine_entropy_vs_tau(s.q, s.k, TAUS).numpy()  # the same q, k (T, d_k) as above
    lk = loud_key_example(tau)
    return dict(
        entropy=fa.cosine_entropy_chart(TAUS, ent, c.mean_entropy["scaled dot"], len(LABELS), tau),
        loud=fa.loud_key_chart(lk.labels, lk.dot_weights, lk.cosine_weights, tau),
        cos_row_max=typical_row_max(c.weights["cosine"]),
    )


def score_speed(Ts: tuple[int, ...], device: str):
    def work(job):
        rows = ui.jobs.call(  # in a worker process, stopped by the job's budget
            time_dot_vs_additive, Ts, device=device, hook="should_stop", should_stop=job.should_stop
        )
        return [(r.T, r.dot_s, r.additive_s) for r in rows]

    return _timed("time_scores", Ts, device, work)


def attn_speed(Ts: tuple[int, ...], device: str):
    def work(job):
        rows = ui.jobs.call(
            time_softmax_vs_linear,
            Ts,
            device=device,
            hook="should_stop",
            should_stop=job.should_stop,
        )
        return [(r.T, r.softmax_s, r.linear_s) for r in rows]

    return _timed("time_linear", Ts, device, work)


def _timed(name: str, Ts: tuple[int, ...], device: str, work) -> tuple[list, str | None]:
    """(rows, why they stop short or None): timed once per server in a heavy-job slot
    (ui.jobs). A timing cut short by the server's per-job budget is kept for this session
    only, until its button is pressed again."""
    cut = st.session_state.get(f"_alt_cut_{name}")
    if cut is not None and cut[0] == (Ts, device):
        return cut[1], cut[2]
    box = st.empty()
    with st.spinner(f"Timing T = {Ts[0]} … {Ts[-1]} on this device: {len(Ts)} lengths…"):
        rows, job = ui.jobs.shared(
            ui.jobs.results(name, 8), (Ts, device), work, kind=name,
            what=f"{name} to T {Ts[-1]}", show=lambda s: box.info(s, icon=":material/hourglass:"),
        )  # fmt: skip
    box.empty()
    if job is None or not job.stopped:
        return rows, None
    why = job.stopped_text(len(rows), len(Ts), "sequence lengths")
    st.session_state[f"_alt_cut_{name}"] = ((Ts, device), rows, why)
    return rows, why


def _gave_up(button_key: str, e: Exception) -> None:
    """The press waited past the server's cap: say so, and forget it (press again)."""
    st.session_state.pop(f"_alt_{button_key}", None)
    st.warning(str(e), icon=":material/hourglass_disabled:")


@st.cache_resource(max_entries=32, show_spinner=False)
def smoother_view(bandwidth: float):
    d = kernel_smoother_demo(bandwidth)
    return (
        fa.smoother_chart(
            d.x, d.y, d.x_query, d.truth, d.fits, bandwidth, d.probe, d.max_gap_softmax
        ),
        fa.probe_weights_chart(d.x, d.probe_weights, d.probe, bandwidth),
        (d.probe, keys_holding(d.probe_weights["softmax attention"], 0.9), len(d.x)),
    )


@st.cache_resource(max_entries=32, show_spinner=False)
def contribution_view(value_scale: float):
    c = weights_vs_contributions(value_scale)
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


def scoring_controls() -> tuple[float, int]:
    """τ and the seed, in the sidebar: they drive the first two steps, which show the same
    tokens (each later step has its own controls, inside it)."""
    with ui.controls_area():
        st.markdown("#### Scoring and Cosine")
        ui.used_by("step", STEPS, ("Scoring", "Cosine"))
        tau = ui.log_slider(
            "tau", "τ — cosine temperature", 0.01, 10.0, 1.0,
            help="Cosine scores are divided by τ before softmax. Small τ sharpens.",
        )  # fmt: skip
        seed = ui.number("seed", "Random seed (tokens and matrices)", 0, 10_000, 0)
    ui.show_notes(keys=("tau", "seed"))  # above the tabs, so on every step
    return tau, seed


def sharpest_exercise(v: dict, tau: float, seed: int) -> bool:
    """Which scoring is sharpest? True once revealed (the grids and their titles tell)."""
    ent = " · ".join(f"{n} {v['mean_entropy'][n]:.2f}" for n in SCORINGS)
    return ui.predict_choice(
        _key("alt-sharp", seed, tau),
        f"Seed {seed}, τ = {tau:g}: which scoring gives the **sharpest** weights, i.e. the "
        "lowest mean row entropy?",
        SCORINGS, v["sharpest"],
        "Softmax only reacts to *differences* between the scores in a row, so sharpness is "
        "set by how widely a row's scores spread, not by the formula behind them. With "
        "unit-variance q and k the raw dot product spreads by about √d_k = 4; bilinear is a "
        "dot product with W folded into W_q, so it spreads about as much, and the two swap "
        "first place from seed to seed. Scaled dot divides the spread by 4 on purpose. "
        "Additive's spread depends on the size of v_a. Cosine scores can never be more than "
        "2/τ apart, so cosine only wins once τ is small.",
        truth=f"Mean row entropy in nats (uniform over 8 keys: ln 8 = 2.08): {ent}.",
        secret=[f"{v['mean_entropy'][n]:.2f}" for n in SCORINGS],  # the grids' titles
    )  # fmt: skip


def scoring_step(tau: float, seed: int) -> None:
    st.subheader("Five ways to score a query against a key")
    words, ask = st.columns([1, 1.2], gap="large")  # the question beside what it asks about
    words.markdown(
        "Attention needs one number per (query, key) pair before softmax. The transformer's "
        "choice, the dot product, is not the only one. Here the same eight random tokens "
        "are scored five ways:\n\n- **dot** qᵀk\n- **scaled dot** qᵀk/√d_k\n- **additive** "
        "v_aᵀ tanh(W₁q + W₂k), a tiny neural network per pair (the original 2014 attention)\n"
        "- **cosine** cos(q, k)/τ\n- **bilinear** qᵀWk with an extra learned matrix W"
    )
    v = scoring_view(tau, seed)
    with ask:
        shown = sharpest_exercise(v, tau, seed)
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
    if shown:  # the weight grids show which is sharpest, and their titles its entropy
        ui.show(v["grids"])
    else:
        ui.until_reveal("The five grids of scores and weights")
    st.markdown(
        "**Bilinear is redundant.** With q = xW_q, the bilinear score (xW_q)W(xW_k)ᵀ is the "
        "plain dot product of x(W_qW) and xW_k. A learned W_q can become W_qW, so the extra "
        "matrix adds parameters and no expressive power — the metric *Bilinear − absorbed "
        "dot* above is that identity, checked live."
    )
    ui.try_this(
        [
            ("Leave τ at 1", "the cosine panel of weights is almost a flat colour: every row "
             "is close to uniform, entropy near ln 8 = 2.08."),
            ("Lower τ to 0.05", "cosine's weights turn as sharp as the dot product's; the "
             "Cosine step shows why."),
            ("Change the seed", "patterns change, but bilinear always matches the absorbed "
             "dot product to about 1e-15, and dot is always sharper than scaled dot."),
        ]
    )  # fmt: skip


def cosine_step(tau: float, seed: int) -> None:
    st.subheader("Cosine's bound: flat weights, and deaf to length")
    st.markdown(
        "Cosine scoring divides the length out of both vectors, so every score lies in "
        "[−1/τ, 1/τ]. Two consequences: the weights stay flat unless the temperature τ is "
        "small, and a key can no longer ask for attention by being long."
    )
    v = cosine_view(tau, seed)
    c1, c2 = st.columns(2, gap="large")
    with c1:
        ui.show(v["entropy"])
    with c2:
        ui.show(v["loud"])
    bound = cosine_max_weight_bound(tau, len(LABELS))
    ui.predict_number(
        _key("alt-cosmax", seed, tau),
        f"Cosine scoring at τ = {tau:g}, seed {seed}, eight keys: how big is the largest "
        "weight in a typical row? (Take each row's largest weight and average over the rows.)",
        v["cos_row_max"],
        f"Even in the most lopsided row possible — cosine +1 for one key, −1 for the other "
        f"seven — softmax at τ = {tau:g} could give that key at most {bound:.3g}. Real rows "
        "are far from that extreme: random vectors in 16 dimensions are close to "
        "perpendicular, so their cosines bunch up near 0 and the row stays close to uniform "
        "(1/8 = 0.125) unless τ is small. Removing the length also removed most of the "
        "spread, which is why cosine attention needs a small, usually learned, temperature.",
        rel_tol=0.15, abs_tol=0.03, fmt="{:.3f}", lo=0.0, hi=1.0,
    )  # fmt: skip
    ui.try_this(
        [
            ("Leave τ at 1", "the entropy sits close to ln 8 = 2.08, the uniform row."),
            ("Lower τ to 0.05", "cosine becomes as sharp as the dot product, and the aligned "
             "short key takes nearly all the weight in the bar chart."),
        ]
    )  # fmt: skip
    ui.explain(
        "Why keep the length? Why not always normalise?",
        "The dot product is ‖q‖‖k‖cos θ. The angle says *what* a key is about; the length "
        "lets a key say *how strongly* it should be read. Models learn to use that — a key "
        "with a large norm gets attention from many queries. Cosine divides the length away, "
        "which makes scores bounded and stable but throws that channel out, and it needs a "
        "temperature (usually learned) before softmax can be decisive at all.",
    )


def timing_T(*, cap_note: bool) -> tuple[int, ...]:
    """The T slider of the timing sweeps (the same widget in the Speed and Linear attention
    steps); returns the sweep's T = 128, 256 … T."""
    T = ui.pow2_slider(
        "T", "T — longest sequence to time", *T_OPTIONS, 1024,
        help="The timings run over T = 128, 256 … up to this value, with d = 64.",
    )  # fmt: skip
    cap = additive_T_cap(SPEED_D)
    if cap_note and cap < T:
        need = format_bytes(additive_intermediate_bytes(T, T, SPEED_D))
        ui.note(
            f"At T = {T} additive scoring would build a {need} intermediate; additive is "
            f"timed only up to T = {cap} ({format_bytes(ADDITIVE_BUDGET_BYTES)} cap). "
            f"The other timings go up to {T}."
        )
    ui.show_notes(keys=("T",))
    return tuple(2**i for i in range(7, int(math.log2(T)) + 1))  # 128 … T


@st.cache_resource(max_entries=8, show_spinner=False)
def memory_view(Ts: tuple[int, ...]):
    nbytes = [additive_intermediate_bytes(t, t, SPEED_D) for t in Ts]
    return fa.memory_chart(Ts, nbytes, ADDITIVE_BUDGET_BYTES)


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
    key = (done, str(ui.device()))
    cut = st.session_state.get(f"_alt_cut_{button_key}")
    if key not in ui.jobs.results(button_key, 8) and not (cut and cut[0] == key):
        done = None  # shown only while kept: showing must never start a timing
    st.caption(
        f"Not measured yet for T = {Ts[0]} … {Ts[-1]}: timings run only when asked, then stay "
        "cached."
        + (f" Shown meanwhile: the last timing, T = {done[0]} … {done[-1]}." if done else "")
    )
    return done


def score_speed_view(Ts: tuple[int, ...], device: str):
    """(rows, chart or None: fewer than two rows, why the rows stop short or None)."""
    rows, cut = score_speed(Ts, device)
    return rows, score_speed_chart(tuple(rows)) if len(rows) >= 2 else None, cut


@st.cache_resource(max_entries=8, show_spinner=False)
def score_speed_chart(rows: tuple):
    return fa.speed_chart(*zip(*rows, strict=True))


def speed_step() -> None:
    st.subheader("Why the dot product won: speed, measured here")
    st.markdown(
        "On paper additive and dot-product scores cost the same: O(T²·d) multiply-adds. In "
        "practice the dot product is **one matrix multiply**, the operation hardware is built "
        "for, while additive scoring must write a T×T×d tensor, apply tanh to every entry and "
        "read it back."
    )
    speed_live()
    ui.try_this(
        [
            ("Press the button at T = 1024", "additive takes many times longer than the dot "
             "product for the same T² pairs, at every T in the sweep."),
            ("Drag T to 4096", "the bars turn red: additive would need 4 GiB for one head of "
             "one layer, so the page refuses to time it and says so."),
        ]
    )  # fmt: skip


@st.fragment
def speed_live() -> None:
    left, right = st.columns([1, 2.5], gap="medium")
    with left:
        Ts = timing_T(cap_note=True)
    with right:
        ui.show(memory_view(Ts))
    timed = tuple(t for t in Ts if t <= additive_T_cap(SPEED_D))
    b, m1, m2 = st.columns([2, 1, 1], vertical_alignment="center")
    with b:
        shown = _measured("time_scores", "Time dot product vs additive on this device", timed)
    if not shown:
        return
    try:  # a heavy job: queued for a server slot, stopped at the per-job budget (ui.jobs)
        rows, chart, cut = score_speed_view(shown, str(ui.device()))
    except ui.jobs.GaveUpError as e:
        return _gave_up("time_scores", e)
    if cut:
        st.warning(cut, icon=":material/timer_off:")
    if not rows:
        return
    T_last, dot_s, add_s = rows[-1]
    m1.metric(f"Additive ÷ dot at T = {T_last}", f"{add_s / dot_s:.3g}×")
    m2.metric(
        f"Intermediate at T = {T_last}",
        format_bytes(additive_intermediate_bytes(T_last, T_last, SPEED_D)),
    )
    if chart is not None:
        ui.show(chart)


def smoother_step() -> None:
    st.subheader("Attention is a kernel smoother")
    st.markdown(
        "Forget tokens for a moment. Keys are positions x_j on a line, values are noisy "
        "measurements y_j, and a query at x asks for *the y around here*. The classic answer "
        "(Nadaraya–Watson, 1964) is a weighted average of the y_j, with weights from a kernel "
        "that falls off with distance — which is exactly the shape of attention."
    )
    st.markdown(
        "Three smoothers of the same 80 samples: **Gaussian kernel** K = exp(−(x − x_j)²/2h²) · "
        "**softmax attention** with query [x, 1]/h² and key [x_j, −x_j²/2] · **linear "
        "attention**, φ(q)·φ(k) with φ = elu + 1 applied to 24 features of x (minus the "
        "squared distance to 24 evenly spaced anchors, over h²)."
    )
    smoother_live()
    ui.try_this(
        [
            ("Set the bandwidth to 5", "every curve flattens towards the mean of the samples: "
             "each query now averages almost everything."),
            ("Set it to 0.1", "the curves chase the noise. Linear attention turns lumpy: its 24 "
             "anchors are 0.43 apart, too coarse for so narrow a kernel."),
            ("Look for the softmax-attention curve", "you cannot see it: it lies exactly on "
             "the Gaussian curve at every bandwidth."),
        ]
    )  # fmt: skip
    ui.explain(
        "Why is softmax attention *exactly* the Gaussian kernel here?",
        "Expand the exponent: −(x − x_j)²/2h² = (x·x_j − x_j²/2)/h² − x²/2h². The last term "
        "is the same for every key, and softmax ignores anything added to a whole row. What "
        "is left is a dot product between the query [x, 1]/h² and the key [x_j, −x_j²/2]. So "
        "softmax(q·k) is a normalised kernel; in a transformer the kernel is learned (through "
        "W_q and W_k) and need not be symmetric.\n\n"
        "**Linear attention** swaps exp(q·k) for φ(q)·φ(k) with a positive feature map φ "
        "(here elu + 1). Then Σ_j φ(q)·φ(k_j) v_j = φ(q)ᵀ(Σ_j φ(k_j)v_jᵀ): the sum over keys "
        "is computed once, and each query costs O(d²) instead of O(T·d). The price is that "
        "the kernel must be written with a fixed, finite number of features. The *Linear "
        "attention* step times the two.",
    )


@st.fragment
def smoother_live() -> None:
    left, right = st.columns([1, 3.5], gap="medium")
    with left:
        bandwidth = ui.log_slider(
            "bandwidth", "bandwidth h — kernel width", 0.1, 5.0, 0.5,
            help="How far from the query a sample still gets weight.",
        )  # fmt: skip
        ui.show_notes(keys=("bandwidth",))
    fit, probe, (x_probe, n90, n) = smoother_view(bandwidth)
    with right:
        ui.show(fit)
        ui.show(probe)
    guess = min(n, n / 10 * 2 * 1.645 * bandwidth)  # samples per unit × the central 90 % width
    ui.predict_number(
        _key("alt-window", bandwidth),
        f"Bandwidth h = {bandwidth:g}: the query at x = {x_probe:g} averages the {n} samples. "
        "Taking the heaviest first, how many samples carry 90 % of its softmax-attention "
        "weight?",
        n90,
        "Softmax attention here *is* a Gaussian kernel of width h, so a sample's weight falls "
        "off with its distance from the query, and about 90 % of a Gaussian's mass lies "
        f"within ±1.64 h. The {n} samples are spread over [0, 10], about {n / 10:g} per unit, "
        f"so a rough count is {n / 10:g} × 3.3 h ≈ {guess:.0f} — capped at {n} once the "
        "window is wider than the data. A narrow window averages a handful of noisy samples "
        "and follows the noise; a wide one averages nearly everything and flattens the curve.",
        rel_tol=0.25, abs_tol=2, fmt="{:.0f}", lo=1, hi=n,
    )  # fmt: skip


def attn_speed_view(Ts: tuple[int, ...], device: str):
    """(rows, chart or None: fewer than two rows, why the rows stop short or None)."""
    rows, cut = attn_speed(Ts, device)
    return rows, attn_speed_chart(tuple(rows)) if len(rows) >= 2 else None, cut


@st.cache_resource(max_entries=8, show_spinner=False)
def attn_speed_chart(rows: tuple):
    T_, soft, lin = zip(*rows, strict=True)
    exps = (growth_exponent(T_, soft), growth_exponent(T_, lin))
    return fa.attn_speed_chart(T_, soft, lin, exps)


def linear_step() -> None:
    st.subheader("Softmax against linear attention, timed")
    st.markdown(
        "Softmax attention builds the T×T weights, so its cost grows like T². Linear "
        "attention (the third curve of the *Smoother* step) sums φ(k_j)v_jᵀ over the keys "
        "once and never forms them, so its cost grows like T. Both are timed here with "
        "d = 64, at T = 128, 256 … up to the slider's T."
    )
    linear_live()
    ui.try_this(
        [
            ("Press the button, then drag T to 4096 and press again", "the lines part as T "
             "grows: softmax's time rises with a slope near 2 on the log–log plot, linear's "
             "near 1 (the caption gives both)."),
        ]
    )  # fmt: skip


@st.fragment
def linear_live() -> None:
    left, b, m1 = st.columns([1, 2, 1], vertical_alignment="center")
    with left:
        Ts = timing_T(cap_note=False)
    with b:
        shown = _measured("time_linear", "Time softmax vs linear attention on this device", Ts)
    if not shown:
        return
    try:  # a heavy job: queued for a server slot, stopped at the per-job budget (ui.jobs)
        rows, chart, cut = attn_speed_view(shown, str(ui.device()))
    except ui.jobs.GaveUpError as e:
        return _gave_up("time_linear", e)
    if cut:
        st.warning(cut, icon=":material/timer_off:")
    if not rows:
        return
    T_last, soft, lin = rows[-1]
    m1.metric(f"Softmax ÷ linear at T = {T_last}", f"{soft / lin:.3g}×")
    if chart is not None:
        ui.show(chart)


def contribution_step() -> None:
    st.subheader("Attention weights are not explanations")
    st.markdown(
        'A constructed example. The query is "good"; most of its weight goes to **[SEP]**, a '
        "separator whose value vector is nearly zero, while **not** gets the least weight but "
        "carries a long value. The output is Σ α_j v_j, so what a token *adds* is α_j v_j."
    )
    contribution_live()
    ui.try_this(
        [
            ("Drag the value length to 0", "[SEP] keeps 58 % of the weight and contributes "
             "exactly nothing; knocking it out changes nothing."),
            ("Drag it to 1", "now [SEP] is a normal token and does contribute the most: the "
             "weights tell the truth only when the values are comparable."),
            ("Open the table", "deleting [SEP] outright changes the output's length a lot but "
             "turns it by only a few degrees: it was a place to park weight, not a source."),
        ]
    )  # fmt: skip
    ui.explain(
        "What should I look at instead of the weights?",
        "At least the contribution ‖α_j v_j‖, after the value projection — better, what "
        "the output projection and the rest of the network do with it. Attention maps show "
        "where a head *reads*, not what it *uses*. Heads often park weight on separators, "
        "punctuation or the first token, whose values are close to zero: a no-op that looks "
        "like intense interest on a heat map. Removal tests (ablations) and gradient-based "
        "attributions measure use more directly, and they often disagree with the weights.",
    )


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
        f"[SEP]'s value vector has length {VALUE_SCALE:g}. Knock out one token's term α_j v_j "
        "while the other weights stay as they are: which token's removal moves the output "
        "the most?",
        options, options[int(c.knockout_change.argmax())],
        "Knocking out token j moves the output by exactly α_j v_j, so what counts is the "
        "weight *times* the length of the value, not the weight alone. [SEP] holds most of "
        "the weight, but while its value is short it adds next to nothing; “not” gets little "
        "weight, yet its value is five times longer than the others. A map of the weights "
        "cannot tell these two cases apart — only the product can.",
        truth=f"How far the output moves, ‖α_j v_j‖: {moved}.",
        secret=[f"{x:.3f}" for x in c.knockout_change.tolist()],  # the metrics and table
    )  # fmt: skip


@st.fragment
def contribution_live() -> None:
    if not knock_exercise():
        ui.until_reveal("The slider, each token's contribution and the knock-out table")
        return
    left, right = st.columns([1, 3], gap="medium")
    with left:
        value_scale = ui.slider(
            "value_scale", "Length of [SEP]'s value vector", 0.0, 2.0, VALUE_SCALE, step=0.01,
            help="Every other value has length 1, except 'not' (length 5).",
        )  # fmt: skip
        ui.show_notes(keys=("value_scale",))
        c, chart, table = contribution_view(value_scale)
        st.markdown("**How far the output moves when one token's term is knocked out:**")
        for j in (c.top, c.light):
            st.metric(
                f"without “{c.tokens[j]}” (α = {c.weights[j]:.2f})",
                f"{c.knockout_change[j]:.3f}",
                help="‖o − o without α_j v_j‖, the other weights unchanged. "
                f"For scale: ‖o‖ = {float(c.output.norm()):.3f}.",
            )
    with right:
        ui.show(chart)
    with st.expander("Every token, and two ways of removing it", icon=":material/table:"):
        # A static table, not st.dataframe: its grid widget is re-rendered on every move
        # of the slider (expander closed or not), at a noticeable cost in the browser.
        st.table(table, hide_index=True)
        turn = c.renorm_angle_deg
        st.caption(
            "‖α v‖ is what a token adds, and exactly how far the output moves if its term is "
            "knocked out. *Deleted* means removed from the sequence so that softmax re-spreads "
            "its weight: the output is rescaled by 1/(1 − α_j) as well, so ‖Δo‖ can be large "
            f"while its direction barely moves. Here deleting [SEP] turns the output by "
            f"{turn[c.top]:.0f}°, deleting “not” by {turn[c.light]:.0f}° "
            f"(‖o‖ = {float(c.output.norm()):.3f})."
        )


def run() -> None:
    ui.page_header(
        FILE,
        "Scaled dot-product attention is one design among several. This page tests the usual "
        "arguments for it — other scores are no better and much slower — and two readings "
        "of what attention *is*: a kernel smoother, and (wrongly) an explanation. One idea "
        "per step below: τ and the seed of the Scoring and Cosine steps are in the sidebar, "
        "the other steps carry their own controls.",
    )
    tau, seed = scoring_controls()
    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            scoring_step(tau, seed)
    with tabs[1]:
        if tabs[1].open:
            cosine_step(tau, seed)
    # the later steps carry their own controls, inside fragments
    later = (speed_step, smoother_step, linear_step, contribution_step)
    for tab, section in zip(tabs[2:], later, strict=True):
        with tab:
            if tab.open:
                section()
    ui.prev_next(FILE)


run()
