"""Every numeric sentence on /scaling, recomputed here with attn_core and found on the page.

Each test computes its numbers straight from attn_core (never through the page's
caches) and checks that the page shows exactly those, so a sentence that drifts
from the computation fails here.
"""

import math

import numpy as np
import pytest
import torch

import attn_core
from attn_core import (
    DK_SWEEP,
    saturation_sweep,
    scaling_sample,
    softmax_jacobian,
    sweep_raw_scores,
    train_pair,
    two_key_gradient,
    two_key_gradient_in,
)
from attn_core.lessons import training
from attn_core.lessons.scaling import (
    first_exact_zero,
    iid_check,
    layernorm_excess,
    row_median,
    score_rows,
    variance_rel_se,
)
from figures.parts import sci
from tests.support.apptest import no_exception, plotly_specs, reveal, run_page, verdicts
from ui.content import Words

W = Words("scaling")


def _device() -> torch.device:
    """The device the pages compute on (ui.device's choice), so both sides round alike."""
    try:
        return attn_core.pick_device()
    except ValueError:
        return torch.device("cpu")


DEV = _device()
PAGE = "pages/scaling.py"
TRAINING = "pages/training.py"
LEAD = "Winner's typical lead"


def iid_verdict(ratio: float, rel_se: float, n_seq: int) -> str:
    """The histogram caption's verdict, as the page words it from attn_core's check."""
    c = iid_check(ratio, rel_se)
    key = "spread.iid.beyond" if c.dependent else "spread.iid.within"
    return W(key, off=c.off, noise=c.noise, k=3.0, n_seq=n_seq)


def texts(at) -> str:
    """Every caption and markdown block the run shows (expanders included)."""
    return "\n".join([c.value for c in at.caption] + [m.value for m in at.markdown])


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def lead_of(logits: torch.Tensor) -> torch.Tensor:
    """Winner minus runner-up of each row, computed here by sorting (not via attn_core's topk)."""
    s = logits.double().sort(-1, descending=True).values  # (..., T)
    return s[..., 0] - s[..., 1]


# ---------------------------------------------------------------- 1. the star on the two-key chart


@pytest.mark.parametrize(
    "d_k,scaled", [(64, True), (64, False), (512, False)], ids=["defaults", "d64-off", "d512-off"]
)
def test_the_star_is_the_runner_up_lead_and_agrees_with_the_measured_jacobian(d_k, scaled):
    """The star reads α(1 − α) at the median row's lead over its runner-up.

    Why that is the right gap: for a row whose winner has weight a and leads the
    runner-up by g, a ≤ σ(g) whatever the other keys do, so for a ≥ 1/2 (where
    x(1 − x) decreases) a(1 − a) ≥ σ(g)(1 − σ(g)) = two_key(g); and 1 − a ≤
    (T − 1)e^(−g) ≤ 4(T − 1)·two_key(g). So the row's α_max(1 − α_max) sits
    between two_key(g) and 4(T − 1)·two_key(g), and its Jacobian norm between
    a(1 − a) and 1 − a² (≤ 3a(1 − a) for a ≥ 1/2): the lead fixes the Jacobian
    to within a known factor (checked row by row in the next test). For the
    medians shown on the page this becomes: the star, the median α_max(1 − α_max)
    and the page's median Jacobian norm agree within an order of magnitude. The
    old star (largest minus smallest logit) misses the Jacobian by many orders
    of magnitude once unscaled, so this test tells the two apart.
    """
    params = {"d_k": str(d_k), "step": "Two keys"} | ({} if scaled else {"scaled": "false"})
    at = run_page(PAGE, **params)
    no_exception(at)
    s = scaling_sample(12, d_k, scaled=scaled, seed=0, device=DEV)  # page defaults: T 12
    lead = row_median(lead_of(s.logits))
    star_y = float(two_key_gradient(lead))
    m = metrics(at)
    assert m[LEAD] == f"{lead:.3g}"
    star = plotly_specs(at)[-1]["data"][3]
    assert star["name"] == "your setting"
    assert star["x"][0] == pytest.approx(min(lead, 30.0))
    assert f"α(1 − α) = {star_y:.3g}" in star["hovertemplate"]
    # the measured side, computed here: median α_max(1 − α_max) and median ‖J‖_F of the rows
    a = s.max_weight
    med_aa = row_median(a * (1 - a))
    med_J = row_median(s.jacobian_norm)
    assert m["Median Jacobian norm"] == sci(med_J, 3)
    assert 0.1 <= med_aa / star_y <= 10, (med_aa, star_y)
    assert 0.1 <= med_J / star_y <= 10, (med_J, star_y)
    caption = texts(at)
    assert f"leads the runner-up by {lead:.3g}, where α(1 − α) = {star_y:.2g}" in caption
    if not scaled:  # the full-range gap would put the star orders of magnitude too low
        full = s.logits.double().amax(-1) - s.logits.double().amin(-1)
        assert med_J / float(two_key_gradient(row_median(full))) > 1e6


@pytest.mark.parametrize("T", [2, 12, 64])
@pytest.mark.parametrize("d_k,scaled", [(1, True), (64, True), (64, False), (1024, False)])
def test_the_lead_bounds_each_rows_weight_and_jacobian(T, d_k, scaled):
    """The per-row inequalities behind the star (see the test above), in float64.

    1 − a is taken as the sum of the other weights (no cancellation, so rows
    whose winner rounds to 1.0 keep their tiny remainder), and the Jacobian's
    lower bound uses only its off-diagonal entries a·α_j, which carry no
    cancellation either: ‖J‖² ≥ 2a²Σ_j α_j² ≥ 2a²(1 − a)²/(T − 1).
    """
    for seed in range(3):
        s = scaling_sample(T, d_k, scaled=scaled, seed=seed, dtype=torch.float64)
        g, J = lead_of(s.logits), s.jacobian_norm
        w = s.weights.sort(-1, descending=True).values  # (T, T), each row largest first
        a, rest = w[:, 0], w[:, 1:].sum(-1)  # the winner's weight and 1 − a
        h = two_key_gradient(g)  # (T,) α(1 − α) of two keys that far apart
        rel = 1 + 1e-9
        assert bool((a <= torch.sigmoid(g) * rel).all())  # the lead caps the winner
        half = a >= 0.5
        assert bool((h[half] <= a[half] * rest[half] * rel).all())
        assert bool((a * rest <= 4 * (T - 1) * h * rel).all())
        assert bool((a * rest * math.sqrt(2 / (T - 1)) <= J * rel).all())
        assert bool((rest * (1 + a) * rel + 1e-15 >= J).all())  # the caption's ‖J‖ ≤ 1 − a²


# ---------------------------------------------------------------- 2. one story with /training


def training_numbers(d_k: int):
    """/training's own calls at its defaults: SGD, lr 0.5, initial std 1, seed 0."""
    kw = dict(seed=0, device=DEV)
    a, b = train_pair(d_k, steps=51, optimizer="sgd", lr=0.5, init_std=1.0, **kw)
    _, b3 = train_pair(d_k, steps=1, init_std=3.0, **kw)
    return a, b, b3


@pytest.mark.parametrize("d_k,train_d_k", [(64, 64), (1024, 512)])
def test_the_initialisation_text_quotes_what_the_training_lab_measures(d_k, train_d_k):
    at = run_page(PAGE, d_k=str(d_k), step="Two keys")
    no_exception(at)
    text = " ".join(texts(at).split())  # one line: the markdown wraps anywhere
    a, b, b3 = training_numbers(train_d_k)
    ratio = b.qk_grad_norm[0] / a.qk_grad_norm[0]
    assert f"training lab at d_k = {train_d_k}" in text
    if d_k != train_d_k:
        assert f"the nearest it offers to this page's {d_k}" in text
    assert f"in {b.saturated[0]:.0%} of the unscaled model's attention rows" in text
    assert f"against {a.saturated[0]:.0%} with ÷√d_k" in text
    assert f"{ratio:.3g} times the scaled run's" in text
    assert f"from {b.loss[0]:.3g} at step 0 to {b.loss[50]:.3g} at step 50" in text
    assert f"goes from {a.loss[0]:.3g} to {a.loss[50]:.3g}" in text
    assert f"By step 50, {b.saturated[50]:.0%} of the unscaled rows are above 0.99" in text
    assert f"initial std of 3 in the training lab, {b3.saturated[0]:.0%}" in text
    assert f"gap of 24 gives {float(two_key_gradient(24.0)):.2g}" in text
    # the measured story, not the lesson's: partial saturation, a larger gradient, learning
    assert 0 < b.saturated[0] < 1 and ratio > 1 and b.loss[50] < b.chance
    assert "does take off" in text and "larger, not smaller" in text


def test_the_training_page_shows_the_same_numbers():
    """/training, opened on the same settings, shows the figures /scaling quotes."""
    a, b, b3 = training_numbers(64)
    share = f"{b.saturated[0]:.0%}"
    scaling = " ".join(texts(run_page(PAGE, step="Two keys")).split())
    assert f"in {share} of the unscaled model's attention rows" in scaling
    rows = run_page(TRAINING, step="Rows")
    no_exception(rows)
    assert metrics(rows)["Step 0 rows > 0.99, unscaled"] == share
    std3 = run_page(TRAINING, step="Rows", init_std="3")
    assert metrics(std3)["Step 0 rows > 0.99, unscaled"] == f"{b3.saturated[0]:.0%}"
    assert f"training lab, {b3.saturated[0]:.0%}" in scaling
    predict = run_page(TRAINING, step="Predict")
    key = "train-grad-64-1-0"
    predict.number_input(key=f"guess-{key}").set_value(1.0)
    reveal(predict, key)
    ratio = f"{b.qk_grad_norm[0] / a.qk_grad_norm[0]:.3g}"
    assert any(f"Computed **{ratio}**" in v for v in verdicts(predict)[1])
    assert f"{ratio} times the scaled run's" in scaling
    # the loss /training's chart shows at step 50 is the same whatever the run's length
    a400, b400 = train_pair(64, steps=400, seed=0, device=DEV)
    assert (a400.loss[50], b400.loss[50]) == (a.loss[50], b.loss[50])


def test_the_training_runs_only_when_the_two_keys_step_is_open(monkeypatch):
    calls = []
    real = training.train_pair

    def counting(*args, **kw):
        calls.append(args)
        return real(*args, **kw)

    monkeypatch.setattr(training, "train_pair", counting)  # the page trains through it
    monkeypatch.setenv("ATTN_JOB_PROCESS", "0")  # ui.jobs.call here, where it is counted
    for step in ("Scores to weights", "Spread", "Saturation", "Jacobian", "Check yourself"):
        no_exception(run_page(PAGE, d_k="16", step=step))
    assert calls == []
    no_exception(run_page(PAGE, d_k="16", step="Two keys"))  # a d_k no other test trains
    assert [c[0] for c in calls] == [16, 16]  # the 51-step pair and the initial-std-3 step 0


# ---------------------------------------------------------------- 3. iid or not: sampling noise


def theory_rel_se(d_k: int, B: int, T: int) -> float:
    """Relative SE of the pooled variance for iid N(0, 1) components (derived, not measured).

    Per sequence V = mean of x_ij² over T² pairs; Var(x²) = 2d² + 6d, two squares
    sharing q (or k) have covariance 2d, all others are independent.
    """
    return math.sqrt((2 + 6 / d_k + 4 * (T - 1) / d_k) / (B * T * T))


@pytest.mark.parametrize("seed", range(5))
def test_gaussian_draws_never_claim_dependence(seed):
    raw = sweep_raw_scores(seed=seed)
    for d_k in DK_SWEEP:
        B, T, _ = raw[d_k].shape
        se = variance_rel_se(raw[d_k])
        assert 0.6 < se / theory_rel_se(d_k, B, T) < 1.6  # the batch estimate matches theory
        text = iid_verdict(float(raw[d_k].var()) / d_k, se, B)
        assert "within sampling noise" in text and "not independent" not in text, (d_k, text)


@pytest.mark.parametrize("seed", range(5))
def test_layernorm_draws_claim_dependence_where_it_is_measurable(seed):
    raw = sweep_raw_scores(init="layernorm", seed=seed)
    for d_k in (2, 4, 8, 16, 32):
        ratio = float(raw[d_k].var()) / d_k
        text = iid_verdict(ratio, variance_rel_se(raw[d_k]), 32)
        assert "not independent" in text, (d_k, text)
        # and the size of the miss is the one the caveat's formula predicts, within noise;
        # at d_k = 2 LayerNorm's ε (1e-5) measurably shrinks it, as the caveat says
        z = (ratio - (1 + layernorm_excess(d_k))) / (variance_rel_se(raw[d_k]) * ratio)
        assert z < -3 if d_k == 2 else abs(z) < 4, (d_k, z)


@pytest.mark.parametrize(
    "params,dependent",
    [({"d_k": "1"}, False), ({}, False), ({"init": "layernorm", "d_k": "4"}, True)],
)
def test_the_histogram_caption_shows_the_computed_deviation_and_noise(params, dependent):
    at = run_page(PAGE, step="Spread", **params)
    no_exception(at)
    d_k = int(params.get("d_k", 64))
    raw = sweep_raw_scores(init=params.get("init", "gaussian"), seed=0)[d_k]
    x = raw.flatten()
    off = abs(float(x.std()) ** 2 / d_k - 1)
    noise = 3 * variance_rel_se(raw)
    text = texts(at)
    assert f"{off:.1%} off the iid prediction" in text
    assert f"(±{noise:.1%}, 3 standard errors over the 32 independent sequences)" in text
    assert ("not independent" in text) == dependent
    assert ("within sampling noise" in text) != dependent


def test_the_iid_caveat_quotes_the_formula():
    caveat = texts(run_page(PAGE, step="Spread"))  # the caveat's expander is on that step
    for d_k, fmt in ((2, ".0%"), (4, ".0%"), (32, ".1%"), (1024, ".2%")):
        assert f"{d_k * d_k / (d_k - 1) / d_k - 1:{fmt}}" in caveat
        assert d_k * d_k / (d_k - 1) / d_k - 1 == pytest.approx(layernorm_excess(d_k))


# ---------------------------------------------------------------- 4. the other captions


def test_the_two_key_caption_computes_the_lessons_numbers():
    at = run_page(PAGE, step="Two keys")
    text = texts(at)
    lo, hi = float(two_key_gradient(3.0)), float(two_key_gradient(24.0))
    eps = float(torch.finfo(torch.float32).eps)
    assert f"gap 3 gives {lo:.2g}, gap 24 gives {hi:.2g}" in text
    assert f"{math.log10(lo / hi):.1f} orders of magnitude apart" in text
    assert f"{eps / hi:,.0f} times smaller than float32's epsilon" in text
    gaps = torch.linspace(0, 30, 601, dtype=torch.float64)
    zero = first_exact_zero(gaps, two_key_gradient_in(gaps, torch.float32))
    assert f"exactly 0 from gap {zero:.3g}" in text
    rows = score_rows(sweep_raw_scores(seed=0)[64], 12)  # unscaled d_k = 64, rows of 12 keys
    share = float((lead_of(rows) >= 24).double().mean())
    assert f"of {rows.shape[0]:,} sampled rows of 12 keys at that setting, {share:.2%}" in text
    assert share < 0.05 and "the fully saturated extreme" in text


@pytest.mark.parametrize("params", [{}, {"seed": "1", "tokens": "64"}, {"tokens": "2"}])
def test_try_this_quotes_each_experiment_at_the_readers_settings(params):
    at = run_page(PAGE, **params)
    no_exception(at)
    T, seed = int(params.get("tokens", 12)), int(params.get("seed", 0))
    off = scaling_sample(T, 128, scaled=False, seed=seed, device=DEV)
    on = scaling_sample(T, 128, scaled=True, seed=seed, device=DEV)
    soft = scaling_sample(T, 64, scaled=True, temperature=8.0, seed=seed, device=DEV)
    half = scaling_sample(T, 1024, scaled=False, seed=seed, dtype=torch.float16, device=DEV)
    drop = row_median(on.jacobian_norm) / row_median(off.jacobian_norm)
    zero = (softmax_jacobian(half.weights) == 0).cpu()  # (T, T, T)
    gaps = torch.linspace(0, 30, 601, dtype=torch.float64)
    zero_gap = first_exact_zero(gaps, two_key_gradient_in(gaps, torch.float16))
    text = texts(at)
    clip = float((off.logits.abs() > 6).double().mean())  # the map's ±6 colour range
    assert f"{clip:.0%} of the logits go past the map's ±6 colour range" in text
    assert f"{int((off.max_weight > 0.99).sum())} of {T} weight rows collapse" in text
    change = f"{drop:.3g}× smaller" if drop >= 1 else f"{1 / drop:.3g}× larger"
    assert f"Jacobian norm on the Jacobian step is {change}" in text
    assert f"entropy at least {float(soft.entropy_frac.min()):.3f} of log T" in text
    assert f"largest weight at most {float(soft.max_weight.max()):.3f}" in text
    n_zero = int(zero.flatten(1).any(-1).sum())
    assert f"{n_zero} of {T} rows get exact zeros" in text
    assert f"row 0: {int(zero[0].sum())} of {T * T} cells" in text
    assert f"exactly 0 from a gap of {zero_gap:.3g}" in text


@pytest.mark.parametrize("params", [{}, {"tokens": "2"}, {"temperature": "20"}])
def test_the_saturation_and_entropy_captions_follow_the_sweep(params):
    at = run_page(PAGE, step="Saturation", **params)
    no_exception(at)
    T = int(params.get("tokens", 12))
    s = saturation_sweep(
        sweep_raw_scores(seed=0), T, temperature=float(params.get("temperature", 1))
    )
    text = texts(at)
    u, sc = s.saturated_unscaled, s.saturated_scaled
    assert f"from {float(u[0]):.0%} at d_k = 1 to {float(u[-1]):.0%} at d_k = 1024" in text
    worst = round(float(sc.max()) * s.n_rows)
    if worst:
        assert f"at most {worst:,} of the {s.n_rows:,} rows ({float(sc.max()):.2%})" in text
    else:
        assert "no row saturates at any d_k" in text
    e = s.entropy_scaled
    assert f"stays between {float(e.min()):.2f} and {float(e.max()):.2f}" in text
    eu = s.entropy_unscaled
    assert f"goes from {float(eu[0]):.2f} to {float(eu[-1]):.2f}" in text


@pytest.mark.parametrize("params", [{}, {"scaled": "false"}, {"scaled": "false", "d_k": "1024"}])
def test_the_jacobian_caption_compares_responsive_and_saturated_rows(params):
    at = run_page(PAGE, step="Jacobian", **params)
    no_exception(at)
    d_k, scaled = int(params.get("d_k", 64)), "scaled" not in params
    s = scaling_sample(12, d_k, scaled=scaled, seed=0, device=DEV)
    J, sat = s.jacobian_norm.cpu().numpy(), (s.max_weight > 0.99).cpu().numpy()
    text = texts(at)
    if sat.any() and not sat.all():
        resp, top = float(np.median(J[~sat])), float(J[sat].max())
        assert f"The {int((~sat).sum())} responsive rows have a median norm of {resp:.3g}" in text
        assert (
            f"the {int(sat.sum())} saturated ones at most {top:.3g} ({resp / top:.3g}× less)"
            in text
        )
    elif not sat.any():
        assert f"No row is saturated: the 12 rows have a median norm of {np.median(J):.3g}" in text
    assert "‖J‖ ≤ 1 − a² < 0.0199" in text
    assert "every entry is at most 1 − a < 0.01" in text


def test_a_saturated_rows_jacobian_entries_are_below_one_minus_its_top_weight():
    for seed in range(3):
        s = scaling_sample(12, 512, scaled=False, seed=seed, dtype=torch.float64)
        J = softmax_jacobian(s.weights).abs()  # (T, T, T)
        a = s.max_weight
        assert bool((J.flatten(1).amax(-1) <= (1 - a) + 1e-12).all())


def test_the_variance_caption_quotes_the_scaled_range():
    at = run_page(PAGE, step="Spread", init="layernorm")
    v = attn_core.variance_sweep(sweep_raw_scores(init="layernorm", seed=0))
    text = texts(at)
    assert f"stays between {float(v.scaled.min()):.3g} and {float(v.scaled.max()):.3g}" in text
