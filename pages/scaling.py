"""Why √d_k: break attention with one switch and watch every stage of the failure."""

import math

import numpy as np
import streamlit as st
import torch

import figures.scaling as fs
import ui
from attn_core import (
    DEFAULT_LR,
    DTYPES,
    INITS,
    LESSON_GAPS,
    SATURATION,
    first_exact_zero,
    logit_distribution,
    logit_scale,
    parse_dtype,
    row_jacobian,
    saturation_sweep,
    scaling_sample,
    softmax_jacobian,
    sweep_raw_scores,
    train_pair,
    two_key_gradient,
    two_key_gradient_in,
    variance_sweep,
)
from attn_core.lessons.scaling import (
    exercise_d_k,
    median_ratio,
    row_median,
    score_rows,
    top_two_gap,
    variance_rel_se,
)
from attn_core.lessons.training import SATURATED
from figures.training import sci
from ui.controls import log_values

FILE = "pages/scaling.py"
TEMPERATURES = log_values(0.05, 20, (1.0, 8.0))
MAIN_CONTROLS = ("d_k", "tokens", "scaled", "temperature", "init", "dtype", "seed")
# the four metrics' labels: short enough for four columns at 1400 px
SPREAD, SAT_ROWS, JACOBIAN = "Logit SD (this sequence)", "Rows saturated", "Median Jacobian norm"
LEAD = "Winner's typical lead"
STEPS = ("Scores to weights", "Spread", "Saturation", "Jacobian", "Two keys", "Check yourself")
STAGES = ("raw_scores", "logits", "weights", "max_weight", "entropy_frac", "jacobian_norm", "lead")
TRAIN_DKS = (4, 512)  # the training lab's d_k slider runs over these powers of two
TRAIN_STEP = 50  # the step of the training lab's loss curve that the initialisation text quotes


@st.cache_data(max_entries=64, show_spinner=False)
def sample(d_k, tokens, scaled, temperature, init, seed, dtype):
    """One sequence of `tokens` random tokens: every stage, computed in `dtype`, as numpy."""
    s = scaling_sample(
        tokens,
        d_k,
        scaled=scaled,
        temperature=temperature,
        init=init,
        seed=seed,
        dtype=parse_dtype(dtype),
        device=ui.device(),
    )
    return {f: getattr(s, f).double().cpu().numpy() for f in STAGES} | {"nonfinite": s.nonfinite}


@st.cache_resource(max_entries=4, show_spinner="Sampling 32 × 64 × 64 dot products per d_k…")
def sweep_scores(init, seed):
    """Raw q·k for d_k = 1 … 1024, drawn once per (init, seed) and shared read-only.

    Temperature, precision and token count only re-slice these samples."""
    return sweep_raw_scores(init=init, seed=seed)


def controls():
    with ui.controls_area():
        st.subheader("Controls", divider="gray")
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
    return d_k, tokens, scaled, temperature, init, dtype, seed


# Charts are cached too (st.cache_resource hands back the same figure objects, which
# st.plotly_chart only reads): a rerun that changes nothing they depend on rebuilds none.
# Few entries: a cached figure is thousands of objects the garbage collector re-scans.
charts = st.cache_resource(max_entries=8, show_spinner=False)


@charts
def stage_charts(d_k, tokens, scaled, temperature, init, seed, dtype):
    v = sample(d_k, tokens, scaled, temperature, init, seed, dtype)
    return [
        fs.raw_scores_map(v["raw_scores"], d_k),
        fs.logits_map(v["logits"], scaled=scaled, temperature=temperature),
        fs.weights_map(v["weights"]),
        fs.row_summary(v["max_weight"], v["entropy_frac"], SATURATION),
    ]


@charts
def distribution_charts(d_k, scaled, temperature, init, seed):
    scale = logit_scale(d_k, scaled=scaled, temperature=temperature)
    label = f"d_k = {d_k}, {'÷ √d_k' if scaled else 'unscaled'}, temperature {temperature:g}"
    raw = sweep_scores(init, seed)
    h = logit_distribution(raw[d_k], scale)
    v = variance_sweep(raw)
    return [
        fs.logit_histogram(
            h.edges,
            h.density,
            d_k=d_k,
            measured_var=h.variance,
            theory_var=d_k * scale * scale,  # the iid argument's prediction, whatever `init` is
            n=h.n,
            label=label,
            rel_se=variance_rel_se(raw[d_k]),  # sampling error of that measured variance
            n_seq=raw[d_k].shape[0],
        ),
        fs.variance_vs_dk(
            v.d_ks,
            v.unscaled,
            v.scaled,
            d_k=d_k,
            current_var=h.variance,
            label=label,
            slopes=(v.slope_unscaled, v.slope_scaled),
            init=init,
        ),
    ]


@charts
def saturation_charts(d_k, tokens, scaled, temperature, init, seed, dtype):
    s = saturation_sweep(
        sweep_scores(init, seed), tokens, temperature=temperature, dtype=parse_dtype(dtype)
    )
    common = dict(d_k=d_k, scaled_now=scaled, T=tokens)
    return [
        fs.saturation_vs_dk(
            s.d_ks,
            s.saturated_unscaled,
            s.saturated_scaled,
            n_rows=s.n_rows,
            threshold=s.threshold,
            **common,
        ),
        fs.entropy_vs_dk(s.d_ks, s.entropy_unscaled, s.entropy_scaled, **common),
    ]


@charts
def jacobian_charts(d_k, tokens, scaled, temperature, init, seed, dtype, row):
    v = sample(d_k, tokens, scaled, temperature, init, seed, dtype)
    w = torch.from_numpy(v["weights"]).to(parse_dtype(dtype))  # exact: w was computed in dtype
    return [
        fs.jacobian_map(row_jacobian(w, row), row=row, dtype_name=dtype, threshold=SATURATION),
        fs.jacobian_norms_chart(v["jacobian_norm"], v["max_weight"], row=row),
    ]


LESSON_D_K = 64  # the head size of the lesson's two-key numbers (gap 24 unscaled, 3 scaled)


@charts
def two_key_chart(dtype, typical_gap, tokens, init, seed):
    gaps = torch.linspace(0, 30, 601, dtype=torch.float64)  # steps of 0.05
    computed = two_key_gradient_in(gaps, parse_dtype(dtype))  # what backprop gets in dtype
    # how often a row of `tokens` keys at the lesson's d_k, unscaled, leads by its large gap
    lead = top_two_gap(score_rows(sweep_scores(init, seed)[LESSON_D_K], tokens))  # (N,)
    share = float((lead >= max(LESSON_GAPS)).double().mean())
    return fs.two_key_curve(
        gaps,
        two_key_gradient(gaps),
        computed,
        dtype_name=dtype,
        zero_gap=first_exact_zero(gaps, computed),
        typical_gap=typical_gap,
        typical_label="your setting's typical lead",
        lesson_points=LESSON_GAPS,
        lesson_share=(share, lead.numel(), tokens),
    )


@st.cache_data(max_entries=32, show_spinner=False)
def try_numbers(tokens, temperature, init, seed, dtype):
    """What each "Try this" experiment shows, at the reader's other settings (see fs.try_this)."""
    off = sample(128, tokens, False, temperature, init, seed, dtype)
    on = sample(128, tokens, True, temperature, init, seed, dtype)
    soft = sample(64, tokens, True, 8.0, init, seed, dtype)  # ÷ √64 and temperature 8
    half = sample(1024, tokens, False, temperature, init, seed, "float16")
    w16 = torch.from_numpy(half["weights"]).half()  # exact: these weights were float16
    zero = softmax_jacobian(w16) == 0  # (T, T, T): exact zeros of every row's Jacobian
    gaps = torch.linspace(0, 30, 601, dtype=torch.float64)  # the two-key chart's gaps
    return dict(
        T=tokens,
        threshold=SATURATION,
        clip=float(np.mean(np.abs(off["logits"]) > fs.LOGIT_CLIP)),
        n_sat=int(np.sum(off["max_weight"] > SATURATION)),
        drop=median_ratio(
            torch.from_numpy(on["jacobian_norm"]), torch.from_numpy(off["jacobian_norm"])
        ),
        ent_min=float(soft["entropy_frac"].min()),
        w_max=float(soft["max_weight"].max()),
        zero_rows=int(zero.flatten(1).any(-1).sum()),
        zero_cells0=int(zero[0].sum()),
        zero_gap=first_exact_zero(gaps, two_key_gradient_in(gaps, torch.float16)),
    )


def training_dk(d_k: int) -> int:
    """The training lab's d_k nearest to this page's (its slider runs from 4 to 512)."""
    return min(max(d_k, TRAIN_DKS[0]), TRAIN_DKS[1])


@st.cache_data(
    max_entries=16,
    show_spinner=f"Training both models for {TRAIN_STEP} steps, as the training lab does…",
)
def training_start(d_k: int):
    """The training lab's own numbers for d_k at its defaults: the same attn_core.train_pair
    calls with the same arguments as pages/training.py (its step-0 cache, its Run button).

    ~0.2 s at d_k = 64 on a CPU, 0.7 s at 512: run only when the "Two keys" step is open.
    """
    dev = ui.device()
    kw = dict(optimizer="sgd", lr=DEFAULT_LR["sgd"], init_std=1.0, seed=0, device=dev)
    a, b = train_pair(d_k, steps=TRAIN_STEP + 1, **kw)  # its Run button's first 51 steps
    _, b3 = train_pair(d_k, steps=1, init_std=3.0, seed=0, device=dev)  # its step0(d_k, 3, 0)
    step = min(TRAIN_STEP, a.done - 1, b.done - 1)  # earlier only if a run diverged
    return dict(
        d_k=d_k,
        optimizer=a.optimizer,
        lr=a.lr,
        init_std=a.init_std,
        seed=a.seed,
        n_symbols=a.n_symbols,
        chance=a.chance,
        threshold=SATURATED,
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
        gap=max(LESSON_GAPS),
        grad=float(two_key_gradient(max(LESSON_GAPS))),
    )


@st.cache_data(max_entries=64, show_spinner=False)
def check_numbers(tokens, init, seed, dtype):
    """Everything the "check yourself" questions reveal, for the seed's d_k, as plain floats."""
    d_k = exercise_d_k(seed)
    raw = sweep_scores(init, seed)[d_k]  # (n_seq, T, T) q·k before any scaling, float64
    kw = dict(init=init, seed=seed, dtype=parse_dtype(dtype), device=ui.device())
    on = scaling_sample(tokens, d_k, scaled=True, **kw)
    off = scaling_sample(tokens, d_k, scaled=False, **kw)
    return dict(
        d_k=d_k,
        sd=float(raw.std()),
        n_pairs=raw.numel(),
        max_on=row_median(on.max_weight),
        max_off=row_median(off.max_weight),
        gap_off=row_median(top_two_gap(off.logits)),
        norm_on=row_median(on.jacobian_norm),
        norm_off=row_median(off.jacobian_norm),
        drop=median_ratio(on.jacobian_norm, off.jacobian_norm),
        saturated_on=float((on.max_weight > SATURATION).double().mean()),
        saturated_off=float((off.max_weight > SATURATION).double().mean()),
    )


def check_yourself(tokens, init, seed, dtype):
    """Predict, then reveal: three questions about the seed's d_k, answered by attn_core."""
    c = check_numbers(tokens, init, seed, dtype)
    d_k, inst = c["d_k"], f"{seed}-{tokens}-{init}-{dtype}"
    ui.predict_number(
        f"scaling-sd-{seed}-{init}",
        fs.sd_question(d_k, init, seed),
        c["sd"],
        fs.sd_why(d_k, init, c["sd"], c["n_pairs"]),
        rel_tol=0.15,
        lo=0.0,
    )
    ui.predict_number(
        f"scaling-max-{inst}",
        fs.max_weight_question(d_k, tokens, seed, dtype),
        c["max_off"],
        fs.max_weight_why(
            d_k, tokens, c["gap_off"], c["max_on"], c["max_off"], c["saturated_off"], SATURATION
        ),
        rel_tol=0.0,
        abs_tol=0.05,
        fmt="{:.4g}",
        lo=0.0,
        hi=1.0,
    )
    ui.predict_choice(
        f"scaling-jac-{inst}",
        fs.jacobian_question(d_k, tokens, seed, dtype, c["norm_on"]),
        fs.JACOBIAN_DROPS,
        fs.jacobian_drop_label(c["drop"]),
        fs.jacobian_why(c["saturated_off"], c["saturated_on"], SATURATION),
        truth=fs.jacobian_truth(c["norm_off"], c["drop"], dtype),
    )


@st.fragment
def jacobian_section(setting):
    """Its own fragment: moving the row slider redraws only these two charts."""
    left, right = st.columns(2)
    with left:
        row = ui.slider(
            "row",
            "Query row shown in the Jacobian map",
            0,
            setting[1] - 1,  # tokens - 1
            0,
            help="Pick a saturated (orange) row on the right to see its Jacobian go dark.",
        )
        ui.show_notes(keys=("row",))
    jacobian, norms = jacobian_charts(*setting, row)
    with left:
        ui.show(jacobian)
    with right:
        ui.show(norms)


def run() -> None:
    ui.page_header(
        FILE,
        "Queries and keys at initialisation are random vectors. Their dot product adds up d_k "
        "random terms, so its spread grows like √d_k — and softmax, fed numbers that large, "
        "turns more and more rows into a near-hard maximum, whose gradient is close to zero. "
        "Follow the chain step by step below; the controls are in the sidebar and "
        "every chart updates live.",
    )
    d_k, tokens, scaled, temperature, init, dtype, seed = controls()
    setting = (d_k, tokens, scaled, temperature, init, seed, dtype)
    view = sample(*setting)
    if view["nonfinite"]:
        ui.note(
            f"{view['nonfinite']} logits or weights overflowed to inf/NaN in {dtype}; "
            "choose float32 or a larger temperature."
        )
    ui.show_notes(keys=MAIN_CONTROLS)
    typical_gap = float(np.median(view["lead"]))  # winner minus runner-up, median row

    m = st.columns(4)
    theory_sd = math.sqrt(d_k) * logit_scale(d_k, scaled=scaled, temperature=temperature)
    m[0].metric(
        SPREAD,
        f"{view['logits'].std():.3g}",
        help=f"The standard deviation of this sequence's logits. Theory: {theory_sd:.3g}",
    )
    m[1].metric(
        SAT_ROWS,
        f"{(view['max_weight'] > SATURATION).mean():.0%}",
        help=f"Rows whose largest weight is above {SATURATION:g}: a near-hard maximum.",
    )
    m[2].metric(
        JACOBIAN,
        sci(float(np.median(view["jacobian_norm"])), 3),
        help="The median over rows of the norm of softmax's Jacobian: how much gradient a row "
        "passes back to its logits.",
    )
    m[3].metric(
        LEAD,
        f"{typical_gap:.3g}",
        help="Largest minus second-largest logit of a row, median over rows. This gap caps how "
        "one-hot a row can be: the winner's weight is at most 1 / (1 + e^(−lead)).",
    )

    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            st.subheader("From scores to weights, one sequence")
            for col, chart in zip(st.columns([1, 1, 1, 0.8]), stage_charts(*setting), strict=True):
                with col:
                    ui.show(chart)
            ui.try_this(fs.try_this(try_numbers(tokens, temperature, init, seed, dtype)))
    with tabs[1]:
        if tabs[1].open:
            histogram_chart, variance_chart = distribution_charts(
                d_k, scaled, temperature, init, seed
            )
            st.subheader("How wide are the logits?")
            ui.show(histogram_chart)
            ui.explain("Why Var(q·k) = d_k", fs.VARIANCE_ARGUMENT)
            st.subheader("Variance against d_k")
            ui.show(variance_chart)
            ui.explain("Caveat: the iid assumption after a few layers", fs.IID_CAVEAT)
    with tabs[2]:
        if tabs[2].open:
            st.subheader("…and softmax saturates")
            for col, chart in zip(st.columns(2), saturation_charts(*setting), strict=True):
                with col:
                    ui.show(chart)
    with tabs[3]:
        if tabs[3].open:
            st.subheader("The gradient dies: softmax's Jacobian")
            jacobian_section(setting)
            ui.explain("Why a saturated softmax stops learning", fs.SATURATED_GRADIENT)
    with tabs[4]:
        if tabs[4].open:
            st.subheader("Two keys, in numbers")
            ui.show(two_key_chart(dtype, typical_gap, tokens, init, seed))
            t = training_start(training_dk(d_k)) | {"asked": d_k}
            ui.explain(fs.AT_INIT_TITLE, fs.at_init(t))
    with tabs[5]:
        if tabs[5].open:
            st.subheader("Check yourself")
            st.caption(
                "Commit to an answer, then reveal the computed one. A new seed asks new questions."
            )
            check_yourself(tokens, init, seed, dtype)
    ui.prev_next(FILE)


run()
