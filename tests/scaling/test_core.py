"""attn_core.lessons.scaling against closed forms, autograd and PyTorch's own attention."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd.functional import jacobian

from attn_core import random_qkv
from attn_core.lessons import scaling as core


@pytest.fixture(scope="module")
def sweep():
    """The page's default sweep: 32 sequences of 64 tokens for every d_k from 1 to 1024."""
    return core.sweep_raw_scores(seed=0)


# ---------------------------------------------------------------- the variance argument


@pytest.mark.parametrize("d_k", [16, 64, 256])
def test_measured_variance_is_d_k_unscaled_and_1_scaled(sweep, d_k):
    v = core.variance_sweep({d_k: sweep[d_k]})
    assert v.n_samples == 32 * 64 * 64
    assert abs(float(v.unscaled[0]) / d_k - 1) < 0.10
    assert abs(float(v.scaled[0]) - 1) < 0.10


def test_log_log_slope_is_one_unscaled_and_zero_scaled(sweep):
    v = core.variance_sweep(sweep)
    assert v.d_ks == core.DK_SWEEP
    assert abs(v.slope_unscaled - 1) < 0.05
    assert abs(v.slope_scaled) < 0.05
    assert core.log_log_slope([1, 10, 100], [3, 30, 300]) == pytest.approx(1.0)


def test_layernorm_vectors_break_independence_only_at_small_d_k():
    # Normalised vectors sum to 0, so Var(q·k) = d_k² / (d_k - 1) instead of d_k.
    raw = core.sweep_raw_scores(d_ks=(4, 256), init="layernorm", seed=1)
    v = core.variance_sweep(raw)
    assert float(v.unscaled[0]) == pytest.approx(16 / 3, rel=0.10)
    assert float(v.unscaled[1]) == pytest.approx(256, rel=0.10)


def test_sample_raw_scores_are_q_dot_k_from_random_qkv():
    raw = core.sample_raw_scores(5, 8, n_seq=3, seed=7)
    q, k, _ = random_qkv(15, 8, d_v=1, seed=7, dtype=torch.float64)
    ref = q.view(3, 5, 8) @ k.view(3, 5, 8).transpose(-2, -1)
    torch.testing.assert_close(raw, ref)


def test_score_rows_cut_long_rows_into_disjoint_key_sets():
    raw = torch.arange(2 * 4 * 8, dtype=torch.float64).view(2, 4, 8)
    rows = core.score_rows(raw, 3)  # 8 // 3 = 2 rows of 3 keys per query
    assert rows.shape == (2 * 4 * 2, 3)
    torch.testing.assert_close(rows[0], raw[0, 0, :3])
    torch.testing.assert_close(rows[1], raw[0, 0, 3:6])
    torch.testing.assert_close(core.score_rows(raw, 8), raw.reshape(-1, 8))
    with pytest.raises(ValueError):
        core.score_rows(raw, 9)


def test_logit_distribution_is_a_density_with_the_measured_variance(sweep):
    h = core.logit_distribution(sweep[64], 1 / 8)
    width = h.edges[1:] - h.edges[:-1]
    assert float((h.density * width).sum()) == pytest.approx(1.0, abs=1e-6)
    assert h.variance == pytest.approx(float((sweep[64] / 8).var()), rel=1e-6)
    assert h.n == sweep[64].numel()


# ---------------------------------------------------------------- saturation


def test_saturation_rises_with_d_k_only_when_unscaled(sweep):
    s = core.saturation_sweep(sweep, 12)
    u = s.saturated_unscaled
    assert float(u[0]) < 0.01 and float(u[-1]) > 0.5
    assert bool((u[1:] >= u[:-1] - 0.01).all())  # rises (up to sampling noise)
    assert float(s.saturated_scaled.max()) < 0.01
    assert float(s.entropy_unscaled[-1]) < 0.1 < 0.8 < float(s.entropy_scaled.min())
    assert float(s.entropy_scaled.max() - s.entropy_scaled.min()) < 0.05
    assert s.n_rows == 4096


def test_temperature_divides_the_logits_on_top_of_the_scaling(sweep):
    # Unscaled at d_k = 64 with temperature 8 is the scaled setting exactly.
    a = core.saturation_sweep({64: sweep[64]}, 12, temperature=8.0)
    b = core.saturation_sweep({64: sweep[64]}, 12)
    torch.testing.assert_close(a.entropy_unscaled, b.entropy_scaled)
    assert core.logit_scale(64, scaled=False, temperature=8) == core.logit_scale(64, scaled=True)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError):
            core.logit_scale(64, temperature=bad)


# ---------------------------------------------------------------- one sequence


@pytest.mark.parametrize("scaled", [True, False])
def test_scaling_sample_matches_pytorch_attention(scaled):
    T, d_k, temp = 7, 32, 1.5
    s = core.scaling_sample(T, d_k, scaled=scaled, temperature=temp, seed=3, dtype=torch.float64)
    q, k, v = random_qkv(T, d_k, d_v=1, seed=3, dtype=torch.float64)
    scale = core.logit_scale(d_k, scaled=scaled, temperature=temp)
    torch.testing.assert_close(s.raw_scores, q @ k.T)
    torch.testing.assert_close(s.logits, q @ k.T * scale)
    out = F.scaled_dot_product_attention(q, k, v, scale=scale)
    torch.testing.assert_close(s.weights @ v, out)
    torch.testing.assert_close(s.max_weight, s.weights.amax(-1))
    assert bool(((s.entropy_frac >= 0) & (s.entropy_frac <= 1 + 1e-12)).all())
    top2 = s.logits.sort(-1, descending=True).values  # (T, T) each row largest first
    torch.testing.assert_close(s.lead, top2[:, 0] - top2[:, 1])  # winner minus runner-up
    assert s.nonfinite == 0


def test_jacobian_norms_match_autograd():
    x = torch.randn(5, 6, dtype=torch.float64) * 3
    p = torch.softmax(x, -1)
    norms = core.jacobian_norms(p)
    for i in range(5):
        J = jacobian(lambda r: torch.softmax(r, -1), x[i])
        assert float(norms[i]) == pytest.approx(float(torch.linalg.matrix_norm(J)), rel=1e-9)
        torch.testing.assert_close(core.row_jacobian(p, i), J.abs())
    with pytest.raises(ValueError):
        core.row_jacobian(p, 5)


@given(st.lists(st.floats(-60, 60), min_size=2, max_size=12))
@settings(max_examples=60, deadline=None)
def test_jacobian_norm_is_bounded_by_its_trace(logits):
    # diag(α) - ααᵀ is positive semi-definite, so ‖J‖_F <= trace = 1 - Σα² < 1.
    p = torch.softmax(torch.tensor(logits, dtype=torch.float64), -1)
    assert float(core.jacobian_norms(p)) <= float(1 - (p * p).sum()) + 1e-12
    assert 0.0 <= float(core.entropy_fraction(p)) <= 1.0 + 1e-12


def test_unscaled_d_k_64_kills_the_saturated_rows_jacobian():
    s = core.scaling_sample(64, 64, scaled=False, seed=0)
    sat = s.max_weight > 0.99
    assert bool(sat.any()) and bool((~sat).any())
    # saturated rows lose orders of magnitude, the others keep a norm of a few tenths
    assert float(s.jacobian_norm[sat].median()) < 1e-2 * float(s.jacobian_norm[~sat].median())
    scaled = core.scaling_sample(64, 64, scaled=True, seed=0)
    assert float(scaled.jacobian_norm.min()) > 0.1


def test_float16_underflows_to_exact_zeros_without_nan():
    s16 = core.scaling_sample(64, 1024, scaled=False, seed=0, dtype=torch.float16)
    s64 = core.scaling_sample(64, 1024, scaled=False, seed=0, dtype=torch.float64)
    assert s16.nonfinite == 0 and s64.nonfinite == 0
    assert bool((s16.weights == 0).any())
    assert bool((s16.jacobian_norm == 0).any())  # a one-hot row: no gradient at all
    assert bool((s64.jacobian_norm > 0).all())
    extreme = core.scaling_sample(8, 1024, scaled=False, temperature=0.05, dtype=torch.float16)
    assert extreme.nonfinite == 0


# ---------------------------------------------------------------- two keys


def test_two_key_values_match_the_lesson():
    g = core.two_key_gradient([0.0, 3.0, 24.0])
    assert float(g[0]) == 0.25
    assert float(g[1]) == pytest.approx(0.045, abs=0.001)
    assert float(g[2]) == pytest.approx(3.8e-11, rel=0.01)
    assert float(g[1] / g[2]) > 1e9  # nine orders of magnitude


def test_two_key_gradient_in_float64_is_autograd_of_softmax():
    # Backprop forms α(1 - α) with 1 - α rounded, so even float64 loses digits far out.
    gaps = torch.linspace(0, 30, 61, dtype=torch.float64)
    got = core.two_key_gradient_in(gaps, torch.float64)
    torch.testing.assert_close(got[:41], core.two_key_gradient(gaps)[:41], rtol=1e-6, atol=0)
    torch.testing.assert_close(got, core.two_key_gradient(gaps), rtol=5e-3, atol=0)
    assert core.first_exact_zero(gaps, core.two_key_gradient_in(gaps, torch.float64)) is None


@pytest.mark.parametrize(
    "dtype,lo,hi",
    [(torch.float16, 6, 10), (torch.bfloat16, 4, 8), (torch.float32, 15, 18)],
)
def test_reduced_precision_gradient_becomes_exactly_zero(dtype, lo, hi):
    gaps = torch.linspace(0, 30, 601, dtype=torch.float64)
    g = core.two_key_gradient_in(gaps, dtype)
    zero = core.first_exact_zero(gaps, g)
    assert zero is not None and lo < zero < hi
    assert bool((g[gaps >= zero] == 0).all())
    eps = torch.finfo(dtype).eps
    # where it vanishes the exact value is already below the precision's epsilon
    assert float(core.two_key_gradient(zero)) < eps


def test_first_exact_zero_means_zero_from_there_on():
    assert core.first_exact_zero([0, 1, 2, 3, 4], [1.0, 0.0, 1.0, 0.0, 0.0]) == 3.0
    assert core.first_exact_zero([0, 1], [1.0, 1.0]) is None
    assert core.first_exact_zero([0, 1], [0.0, 0.0]) == 0.0
    assert math.isclose(core.first_exact_zero([0.5, 1.5], [1.0, 0.0]), 1.5)


# ---------------------------------------------------------------- moved down from figures/


def test_iid_check_counts_a_miss_only_beyond_three_standard_errors():
    c = core.iid_check(1.05, 0.01)  # 5 % off, noise ±3 %
    assert c.off == pytest.approx(0.05) and c.noise == pytest.approx(0.03) and c.dependent
    assert not core.iid_check(0.98, 0.01).dependent  # 2 % off, within ±3 %


def test_layernorm_excess_is_d_k_over_d_k_minus_one_less_one():
    assert core.layernorm_excess(1) == 0.0
    for d_k in (2, 4, 32, 1024):
        assert core.layernorm_excess(d_k) == pytest.approx(d_k * d_k / (d_k - 1) / d_k - 1)


def test_jacobian_drop_buckets_follow_their_edges():
    ratios = (0.5, 2.99, 3.0, 29.9, 30.0, 999.0, 1000.0, math.inf)
    assert [core.jacobian_drop_bucket(r) for r in ratios] == [0, 0, 1, 1, 2, 2, 3, 3]
