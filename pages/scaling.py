"""Why √d_k: break attention with one switch and watch every stage of the failure."""

import math

import numpy as np
import streamlit as st
import torch

import figures.scaling as fs
import ui
from attn_core import DTYPES, INITS, parse_dtype, softmax_jacobian
from attn_core.lessons import scaling as core
from attn_core.lessons import training
from figures.parts import sci
from ui.controls import log_values, open_step
from ui.exercises import figures as figures_of

FILE = "pages/scaling.py"
W = ui.Words("scaling")
TEMPERATURES = log_values(0.05, 20, (1.0, 8.0))
# the four metrics' labels: short enough for four columns at 1400 px
SPREAD, SAT_ROWS, JACOBIAN = "Logit SD (this sequence)", "Rows saturated", "Median Jacobian norm"
LEAD = "Winner's typical lead"
STAGES = ("raw_scores", "logits", "weights", "max_weight", "entropy_frac", "jacobian_norm", "lead")
TRAIN_DKS = (4, 512)  # the training lab's d_k slider runs over these powers of two
TRAIN_STEP = 50  # the step of the training lab's loss curve that the initialisation text quotes
LESSON_D_K = 64  # the head size of the lesson's two-key numbers (gap 24 unscaled, 3 scaled)
SATURATION = core.SATURATION


@ui.frozen
class Draw:
    """How q and k are drawn: all that the d_k sweep's samples depend on."""

    init: str
    seed: int


@ui.frozen
class Settings:
    """The sidebar's controls, read by every step."""

    d_k: int
    tokens: int
    scaled: bool
    temperature: float
    init: str
    dtype: str
    seed: int

    @property
    def draw(self) -> Draw:
        return self.seq.draw

    @property
    def seq(self) -> "Seq":
        return Seq(self.tokens, self.dtype, self.init, self.seed)


@ui.frozen
class Seq:
    """The sequence without its d_k, scaling and temperature: what the "Try this" numbers,
    the two-key chart and the exercises depend on (they choose those three themselves)."""

    tokens: int
    dtype: str
    init: str
    seed: int

    @property
    def draw(self) -> Draw:
        return Draw(self.init, self.seed)

    def at(self, d_k: int, scaled: bool, temperature: float, dtype: str = "") -> Settings:
        """These tokens at a given head size, scaling, temperature (and precision)."""
        return Settings(
            d_k, self.tokens, scaled, temperature, self.init, dtype or self.dtype, self.seed
        )


def two_key_gaps() -> torch.Tensor:
    return torch.linspace(0, 30, 601, dtype=torch.float64)  # steps of 0.05


# ---------------------------------------------------------------- computed views


@ui.cache_data(max_entries=64, show_spinner=False)
def sample(s: Settings) -> dict:
    """One sequence of `tokens` random tokens: every stage, computed in `dtype`, as numpy."""
    x = core.scaling_sample(
        s.tokens,
        s.d_k,
        scaled=s.scaled,
        temperature=s.temperature,
        init=s.init,
        seed=s.seed,
        dtype=parse_dtype(s.dtype),
        device=ui.device(),
    )
    return {f: getattr(x, f).double().cpu().numpy() for f in STAGES} | {"nonfinite": x.nonfinite}


@ui.cache_resource(max_entries=4, show_spinner="Sampling 32 × 64 × 64 dot products per d_k…")
def sweep_scores(draw: Draw):
    """Raw q·k for d_k = 1 … 1024, drawn once per (init, seed) and shared read-only.

    Temperature, precision and token count only re-slice these samples."""
    return core.sweep_raw_scores(init=draw.init, seed=draw.seed)


@ui.cache_data(max_entries=32, show_spinner=False)
def try_numbers(seq: Seq, temperature: float) -> dict:
    """What each "Try this" experiment shows, at the reader's other settings (see try_this)."""
    off = sample(seq.at(128, False, temperature))
    on = sample(seq.at(128, True, temperature))
    soft = sample(seq.at(64, True, 8.0))  # ÷ √64 and temperature 8
    half = sample(seq.at(1024, False, temperature, "float16"))
    w16 = torch.from_numpy(half["weights"]).half()  # exact: these weights were float16
    zero = softmax_jacobian(w16) == 0  # (T, T, T): exact zeros of every row's Jacobian
    gaps = two_key_gaps()
    return dict(
        T=seq.tokens,
        clip=float(np.mean(np.abs(off["logits"]) > fs.LOGIT_CLIP)),
        n_sat=int(np.sum(off["max_weight"] > SATURATION)),
        drop=core.median_ratio(
            torch.from_numpy(on["jacobian_norm"]), torch.from_numpy(off["jacobian_norm"])
        ),
        ent_min=float(soft["entropy_frac"].min()),
        w_max=float(soft["max_weight"].max()),
        zero_rows=int(zero.flatten(1).any(-1).sum()),
        zero_cells0=int(zero[0].sum()),
        zero_gap=core.first_exact_zero(gaps, core.two_key_gradient_in(gaps, torch.float16)),
    )


def training_dk(d_k: int) -> int:
    """The training lab's d_k nearest to this page's (its slider runs from 4 to 512)."""
    return min(max(d_k, TRAIN_DKS[0]), TRAIN_DKS[1])


@ui.cache_data(
    max_entries=16,
    show_spinner=f"Training both models for {TRAIN_STEP} steps, as the training lab does…",
)
def training_start(d_k: int):
    """The training lab's own numbers for d_k at its defaults: the same attn_core.train_pair
    calls with the same arguments as pages/training.py (its step-0 cache, its Run button).

    0.6 s of CPU at d_k = 64, 2.7 s at 512 (one thread): run only when the "Two keys" step
    is open, once per server and d_k, in a worker process (ui.jobs.call) like every heavy
    job, so that it never holds the server's other sessions up.
    """
    dev = ui.device()
    kw = dict(optimizer="sgd", lr=training.DEFAULT_LR["sgd"], init_std=1.0, seed=0, device=dev)
    train = training.train_pair
    a, b = ui.jobs.call(train, d_k, steps=TRAIN_STEP + 1, **kw)  # its Run's first 51 steps
    _, b3 = ui.jobs.call(train, d_k, steps=1, init_std=3.0, seed=0, device=dev)  # step0(d_k, 3, 0)
    step = min(TRAIN_STEP, a.done - 1, b.done - 1)  # earlier only if a run diverged
    return dict(
        d_k=d_k,
        optimizer=a.optimizer,
        lr=a.lr,
        init_std=a.init_std,
        seed=a.seed,
        n_symbols=a.n_symbols,
        chance=a.chance,
        threshold=training.SATURATED,
        step=step,
        sat0_s=a.saturated[0],
        sat0_u=b.saturated[0],
        ratio=b.qk_grad_norm[0] / a.qk_grad_norm[0],
        loss0_s=a.loss[0],
        loss0_u=b.loss[0],
        loss_s=a.loss[step],
        loss_u=b.loss[step],
        sat_u=b.saturated[step],
        sat0_std3=b3.saturated[0],
        gap=max(core.LESSON_GAPS),
        grad=float(core.two_key_gradient(max(core.LESSON_GAPS))),
    )


@ui.cache_data(max_entries=64, show_spinner=False)
def check_numbers(seq: Seq) -> dict:
    """Everything the "check yourself" questions reveal, for the seed's d_k, as plain floats."""
    d_k = core.exercise_d_k(seq.seed)
    raw = sweep_scores(seq.draw)[d_k]  # (n_seq, T, T) q·k before any scaling, float64
    kw = dict(init=seq.init, seed=seq.seed, dtype=parse_dtype(seq.dtype), device=ui.device())
    on = core.scaling_sample(seq.tokens, d_k, scaled=True, **kw)
    off = core.scaling_sample(seq.tokens, d_k, scaled=False, **kw)
    median = core.row_median
    return dict(
        d_k=d_k,
        sd=float(raw.std()),
        n_pairs=raw.numel(),
        max_on=median(on.max_weight),
        max_off=median(off.max_weight),
        gap_off=median(core.top_two_gap(off.logits)),
        norm_on=median(on.jacobian_norm),
        norm_off=median(off.jacobian_norm),
        drop=core.median_ratio(on.jacobian_norm, off.jacobian_norm),
        saturated_on=float((on.max_weight > SATURATION).double().mean()),
        saturated_off=float((off.max_weight > SATURATION).double().mean()),
    )


# ---------------------------------------------------------------- the lesson's sentences


def try_this(c: dict) -> list[tuple[str, str]]:
    """The page's three experiments, each with what it shows at the reader's own settings.

    `c` holds numbers the page computed with attn_core for exactly the settings
    each experiment asks for (everything else as the reader has it): T, the
    d_k = 128 unscaled share of clipped logits (`clip`), rows above the
    threshold (`n_sat`), median Jacobian norm scaled over unscaled (`drop`);
    d_k = 64 scaled at temperature 8: least entropy share and largest weight
    (`ent_min`, `w_max`); d_k = 1024 unscaled in float16: rows with exact zeros
    in their Jacobian (`zero_rows`), exact zeros in row 0's (`zero_cells0`), and
    where float16's two-key gradient becomes exactly 0 (`zero_gap`, or None).
    """
    T, drop = c["T"], c["drop"]
    if math.isinf(drop):
        change = W("try.change.zero")
    else:
        change = (
            W("try.change.smaller", x=drop) if drop >= 1 else W("try.change.larger", x=1 / drop)
        )
    zeros = (
        W("try.zeros", rows=c["zero_rows"], T=T, cells=c["zero_cells0"], n_cells=T * T)
        if c["zero_rows"]
        else W("try.zeros.none")
    )
    curve = W("try.curve", gap=c["zero_gap"]) if c["zero_gap"] is not None else W("try.curve.none")
    return W.pairs(
        "try",
        clip=c["clip"],
        limit=fs.LOGIT_CLIP,
        n_sat=c["n_sat"],
        T=T,
        threshold=SATURATION,
        change=change,
        ent_min=c["ent_min"],
        w_max=c["w_max"],
        uniform=1 / T,
        zeros=zeros,
        curve=curve,
    )


def iid_sentence(ratio: float, rel_se: float, n_seq: int) -> str:
    """What the measured / predicted variance says about independence, given its sampling error."""
    c = core.iid_check(ratio, rel_se)
    key = "spread.iid.beyond" if c.dependent else "spread.iid.within"
    return W(key, off=c.off, noise=c.noise, k=core.NOISE_SE, n_seq=n_seq)


def rows_sentence(nrm: np.ndarray, sat: np.ndarray) -> str:
    """Both kinds of row in numbers: median norm of the responsive, largest of the saturated."""
    n_sat, n_resp = int(sat.sum()), int((~sat).sum())
    if n_sat == 0:
        return W("jacobian.rows.none_saturated", n=n_resp, median=np.median(nrm))
    top = float(nrm[sat].max())
    if n_resp == 0:
        return W("jacobian.rows.all_saturated", n=n_sat, top=top)
    resp = float(np.median(nrm[~sat]))
    times = " " + W("jacobian.rows.times", x=resp / top) if top > 0 else ""
    return W("jacobian.rows", n_resp=n_resp, resp=resp, n_sat=n_sat, top=top, times=times)


def points_sentence(points) -> str:
    """The lesson's two gaps in numbers: their gradients, how far apart, against float32's eps."""
    lo, hi = min(points), max(points)
    glo, ghi = float(core.two_key_gradient(lo)), float(core.two_key_gradient(hi))
    eps = W("two_keys.points.eps", x=fs.FLOAT32_EPS / ghi) if ghi < fs.FLOAT32_EPS else ""
    orders = math.log10(glo / ghi)
    return W("two_keys.points", lo=lo, glo=glo, hi=hi, ghi=ghi, orders=orders, eps=eps)


def share_sentence(p: float, n: int, T: int) -> str:
    """How common the lesson's large gap really is at d_k = 64 unscaled, from the page's sample."""
    verdict = W("two_keys.share.rare" if p < 0.05 else "two_keys.share.common")
    return W("two_keys.share", hi=max(core.LESSON_GAPS), n=n, T=T, p=p, verdict=verdict)


def init_story(t: dict) -> str:
    """The story of the start, told with the training lab's own measurements.

    `t` holds what pages/training.py shows for one setting (training_start), and
    `asked`, the d_k this page is set to."""
    d_k, asked, ratio = t["d_k"], t["asked"], t["ratio"]
    if asked == d_k:
        where = W("init.where", d_k=d_k)
    else:
        where = W("init.where.nearest", d_k=d_k, asked=asked)
    others = W("init.rest.every" if t["sat0_u"] == 0 else "init.rest.other")
    end = W("init.rest.larger") if ratio > 1 else "."
    rest = "" if t["sat0_u"] == 1 else " " + W("init.rest", others=others, ratio=ratio, end=end)
    takes_off = t["loss_u"] < min(t["loss0_u"], t["chance"])
    pushed = W(
        "init.pushed" if t["sat_u"] > t["sat0_u"] else "init.pushed.not",
        step=t["step"],
        sat_u=t["sat_u"],
        thr=t["threshold"],
        sat0_u=t["sat0_u"],
    )
    return W(
        "explain.init",
        where=where,
        opt="SGD" if t["optimizer"] == "sgd" else "Adam",
        lr=t["lr"],
        init_std=t["init_std"],
        seed=t["seed"],
        thr=t["threshold"],
        sat0_u=t["sat0_u"],
        sat0_s=t["sat0_s"],
        rest=rest,
        loss=W("init.loss.takes_off" if takes_off else "init.loss.goes"),
        loss0_u=t["loss0_u"],
        loss_u=t["loss_u"],
        step=t["step"],
        below=W("init.below" if t["loss_u"] < t["chance"] else "init.not_below"),
        n_symbols=t["n_symbols"],
        chance=t["chance"],
        loss0_s=t["loss0_s"],
        loss_s=t["loss_s"],
        pushed=pushed,
        gap=t["gap"],
        grad=t["grad"],
        sat0_std3=t["sat0_std3"],
    )


def iid_excess() -> dict:
    """The caveat's numbers: how much more than d_k LayerNorm-style vectors give."""
    return {f"excess{d}": core.layernorm_excess(d) for d in (2, 4, 32, 1024)}


# ---------------------------------------------------------------- charts

# Charts are cached too (st.cache_resource hands back the same figure objects, which
# st.plotly_chart only reads): a rerun that changes nothing they depend on rebuilds none.
# Few entries: a cached figure is thousands of objects the garbage collector re-scans.
charts = ui.cache_resource(max_entries=8, show_spinner=False)


@charts
def stage_charts(s: Settings):
    v = sample(s)
    return [
        fs.raw_scores_map(v["raw_scores"], s.d_k),
        fs.logits_map(v["logits"], scaled=s.scaled, temperature=s.temperature),
        fs.weights_map(v["weights"]),
        fs.row_summary(v["max_weight"], v["entropy_frac"], SATURATION),
    ]


@charts
def distribution_charts(d_k: int, scaled: bool, temperature: float, draw: Draw):
    scale = core.logit_scale(d_k, scaled=scaled, temperature=temperature)
    label = f"d_k = {d_k}, {'÷ √d_k' if scaled else 'unscaled'}, temperature {temperature:g}"
    raw = sweep_scores(draw)
    h = core.logit_distribution(raw[d_k], scale)
    v = core.variance_sweep(raw)
    theory_var = d_k * scale * scale  # the iid argument's prediction, whatever `init` is
    # the sampling error of that measured variance decides what the caption may claim
    verdict = iid_sentence(h.variance / theory_var, core.variance_rel_se(raw[d_k]), len(raw[d_k]))
    return [
        fs.logit_histogram(
            h.edges,
            h.density,
            d_k=d_k,
            measured_var=h.variance,
            theory_var=theory_var,
            n=h.n,
            label=label,
            verdict=verdict,
        ),
        fs.variance_vs_dk(
            v.d_ks,
            v.unscaled,
            v.scaled,
            d_k=d_k,
            current_var=h.variance,
            label=label,
            slopes=(v.slope_unscaled, v.slope_scaled),
            init=draw.init,
        ),
    ]


@charts
def saturation_charts(s: Settings):
    x = core.saturation_sweep(
        sweep_scores(s.draw), s.tokens, temperature=s.temperature, dtype=parse_dtype(s.dtype)
    )
    common = dict(d_k=s.d_k, scaled_now=s.scaled, T=s.tokens)
    return [
        fs.saturation_vs_dk(
            x.d_ks,
            x.saturated_unscaled,
            x.saturated_scaled,
            n_rows=x.n_rows,
            threshold=x.threshold,
            **common,
        ),
        fs.entropy_vs_dk(x.d_ks, x.entropy_unscaled, x.entropy_scaled, **common),
    ]


@charts
def jacobian_charts(s: Settings, row: int):
    v = sample(s)
    w = torch.from_numpy(v["weights"]).to(parse_dtype(s.dtype))  # exact: computed in dtype
    J = core.row_jacobian(w, row)
    norms = v["jacobian_norm"]
    return [
        fs.jacobian_map(J, row=row, dtype_name=s.dtype, threshold=SATURATION),
        fs.jacobian_norms_chart(
            norms,
            v["max_weight"],
            row=row,
            rows_text=rows_sentence(norms, v["max_weight"] > SATURATION),
        ),
    ]


@charts
def two_key_chart(seq: Seq, typical_gap: float):
    gaps = two_key_gaps()
    computed = core.two_key_gradient_in(gaps, parse_dtype(seq.dtype))  # backprop in dtype
    # how often a row of `tokens` keys at the lesson's d_k, unscaled, leads by its large gap
    raw = sweep_scores(seq.draw)[LESSON_D_K]
    lead = core.top_two_gap(core.score_rows(raw, seq.tokens))  # (N,)
    share = float((lead >= max(core.LESSON_GAPS)).double().mean())
    return fs.two_key_curve(
        gaps,
        core.two_key_gradient(gaps),
        computed,
        dtype_name=seq.dtype,
        zero_gap=core.first_exact_zero(gaps, computed),
        typical_gap=typical_gap,
        typical_label=W("two_keys.star"),
        lesson_points=core.LESSON_GAPS,
        lesson_text=points_sentence(core.LESSON_GAPS),
        share_text=share_sentence(share, lead.numel(), seq.tokens),
    )


# ---------------------------------------------------------------- the page


def controls() -> Settings:
    """The sidebar; its link notes (and an overflow's) show on the page right below it."""
    with ui.controls_area():
        st.header("Controls", divider="gray")
        d_k = ui.pow2_slider("d_k", "d_k — width of each query and key", 1, 1024, 64)
        tokens = ui.slider("tokens", "Tokens in the sequence (T)", 2, 64, 12)
        scaled = ui.toggle("scaled", "Divide the scores by √d_k", True)
        temperature = ui.select_slider(
            "temperature",
            "Temperature (divides the logits as well)",
            TEMPERATURES,
            1.0,
            fmt=lambda x: f"{x:g}",
            expected="a value from 0.05 to 20 on the slider's scale",
        )
        init = ui.radio(
            "init",
            "How q and k are drawn",
            INITS,
            "gaussian",
            horizontal=True,
            help="gaussian: independent N(0, 1) components, the derivation's assumption. "
            "layernorm: each vector then centred and scaled to unit variance, like a "
            "LayerNorm output (its components are no longer independent).",
        )
        dtype = ui.selectbox("dtype", "Precision of the computation", list(DTYPES), "float32")
        seed = ui.number("seed", "Random seed", 0, 10_000, 0)
        s = Settings(d_k, tokens, scaled, temperature, init, dtype, seed)
        if n := sample(s)["nonfinite"]:
            ui.note(W("note.nonfinite", n=n, dtype=dtype))
    return s


def metrics(s: Settings) -> None:
    """The four numbers every step sits under: spread, saturation, gradient, lead. On the
    Check yourself step they wait for its three reveals: at the questions' d_k, unscaled,
    they are the answers (logit SD, saturated rows, the unscaled Jacobian norm)."""
    opened = (open_step() or ("", (), ""))[2]
    if opened == "Check yourself" and not all(map(ui.revealed, check_keys(s.seq))):
        ui.until_reveal(W("check.hidden"))
        return
    view = sample(s)
    scale = core.logit_scale(s.d_k, scaled=s.scaled, temperature=s.temperature)
    m = st.columns(4)
    m[0].metric(
        SPREAD,
        f"{view['logits'].std():.3g}",
        help=W("metric.spread.help", theory=math.sqrt(s.d_k) * scale),
    )
    m[1].metric(
        SAT_ROWS,
        f"{(view['max_weight'] > SATURATION).mean():.0%}",
        help=W("metric.saturated.help", threshold=SATURATION),
    )
    m[2].metric(
        JACOBIAN,
        sci(float(np.median(view["jacobian_norm"])), 3),
        help=W("metric.jacobian.help"),
    )
    m[3].metric(LEAD, f"{typical_gap(s):.3g}", help=W("metric.lead.help"))


def typical_gap(s: Settings) -> float:
    """Winner minus runner-up in the median row of this sequence."""
    return float(np.median(sample(s)["lead"]))


def scores_step(s: Settings) -> None:
    st.header("From scores to weights, one sequence")
    for col, chart in zip(st.columns([1, 1, 1, 0.8]), stage_charts(s), strict=True):
        with col:
            ui.show(chart)
    ui.try_this(try_this(try_numbers(s.seq, s.temperature)))


def spread_step(s: Settings) -> None:
    histogram, variance = distribution_charts(s.d_k, s.scaled, s.temperature, s.draw)
    st.header("How wide are the logits?")
    ui.show(histogram)
    ui.explain(W("explain.variance.title"), W("explain.variance"))
    st.header("Variance against d_k")
    ui.show(variance)
    ui.explain(W("explain.iid.title"), W("explain.iid", **iid_excess()))


def saturation_step(s: Settings) -> None:
    st.header("…and softmax saturates")
    for col, chart in zip(st.columns(2), saturation_charts(s), strict=True):
        with col:
            ui.show(chart)


@st.fragment
def jacobian_section(s: Settings) -> None:
    """Its own fragment: moving the row slider redraws only these two charts."""
    left, right = st.columns(2)
    with left, ui.noting():
        row = ui.slider(
            "row",
            "Query row shown in the Jacobian map",
            0,
            s.tokens - 1,
            0,
            help="Pick a saturated (orange) row on the right to see its Jacobian go dark.",
        )
    jacobian, norms = jacobian_charts(s, row)
    with left:
        ui.show(jacobian)
    with right:
        ui.show(norms)


def jacobian_step(s: Settings) -> None:
    st.header("The gradient dies: softmax's Jacobian")
    jacobian_section(s)
    ui.explain(W("explain.saturated.title"), W("explain.saturated"))


def two_keys_step(s: Settings) -> None:
    st.header("Two keys, in numbers")
    ui.show(two_key_chart(s.seq, typical_gap(s)))
    t = training_start(training_dk(s.d_k)) | {"asked": s.d_k}
    ui.explain(W("explain.init.title"), init_story(t))


def check_keys(seq: Seq) -> tuple[str, str, str]:
    """The Check yourself step's three exercises: standard deviation, max weight, Jacobian."""
    inst = f"{seq.seed}-{seq.tokens}-{seq.init}-{seq.dtype}"
    return f"scaling-sd-{seq.seed}-{seq.init}", f"scaling-max-{inst}", f"scaling-jac-{inst}"


def sd_exercise(seq: Seq, c: dict) -> None:
    d_k = c["d_k"]
    why = W("exercise.sd.why", d_k=d_k, root=math.sqrt(d_k), n=c["n_pairs"], sd=c["sd"])
    if seq.init == "layernorm":
        var = d_k * d_k / (d_k - 1)
        why += " " + W("exercise.sd.why.layernorm", var=var, sd=math.sqrt(var))
    question = W("exercise.sd.q", d_k=d_k, draw=W(f"draw.{seq.init}"), seed=seq.seed)
    ui.predict_number(check_keys(seq)[0], question, c["sd"], why, rel_tol=0.15, lo=0.0)


def max_weight_exercise(seq: Seq, c: dict) -> None:
    d_k, T = c["d_k"], seq.tokens
    softer = W("exercise.max.softer") if c["max_on"] < c["max_off"] else ""
    why = W(
        "exercise.max.why",
        d_k=d_k,
        root=math.sqrt(d_k),
        T=T,
        gap=c["gap_off"],
        ratio=math.exp(min(c["gap_off"], 700.0)),
        unscaled_max=c["max_off"],
        saturated_off=c["saturated_off"],
        threshold=SATURATION,
        scaled_max=c["max_on"],
        softer=softer,
    )
    ui.predict_number(
        check_keys(seq)[1],
        W("exercise.max.q", T=T, seed=seq.seed, d_k=d_k, dtype=seq.dtype),
        c["max_off"],
        why,
        rel_tol=0.0,
        abs_tol=0.05,
        fmt="{:.4g}",
        lo=0.0,
        hi=1.0,
    )


def jacobian_truth(norm: float, ratio: float, dtype: str) -> str:
    if norm == 0:
        return W("exercise.jac.truth.zero", dtype=dtype)
    if ratio < 1:
        return W("exercise.jac.truth.larger", norm=norm, x=1 / ratio)
    return W("exercise.jac.truth.smaller", norm=norm, x=ratio)


def jacobian_exercise(seq: Seq, c: dict) -> None:
    drops = tuple(W.choices("exercise.jac.choices").values())
    why = W(
        "exercise.jac.why",
        saturated_off=c["saturated_off"],
        threshold=SATURATION,
        saturated_on=c["saturated_on"],
    )
    question = W(
        "exercise.jac.q",
        d_k=c["d_k"],
        T=seq.tokens,
        seed=seq.seed,
        dtype=seq.dtype,
        scaled_norm=c["norm_on"],
    )
    correct = drops[core.jacobian_drop_bucket(c["drop"])]
    truth = jacobian_truth(c["norm_off"], c["drop"], seq.dtype)
    ui.predict_choice(
        check_keys(seq)[2],
        question,
        drops,
        correct,
        why,
        truth=truth,
        secret=[*(figures_of(truth) or [truth]), correct],  # the norm, the ratio, the choice
    )


def check_step(s: Settings) -> None:
    """Predict, then reveal: three questions about the seed's d_k, answered by attn_core."""
    st.header("Check yourself")
    st.caption(W("check.caption"))
    seq = s.seq
    c = check_numbers(seq)
    sd_exercise(seq, c)
    max_weight_exercise(seq, c)
    jacobian_exercise(seq, c)


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls()
    strip = st.container()  # the four numbers, drawn once the open step's reveals are known
    ui.steps(
        {
            "Scores to weights": scores_step,
            "Spread": spread_step,
            "Saturation": saturation_step,
            "Jacobian": jacobian_step,
            "Two keys": two_keys_step,
            "Check yourself": check_step,
        },
        s,
    )
    with strip:
        metrics(s)
    ui.prev_next(FILE)


run()
