"""attn_core.lessons.alternatives against closed forms, PyTorch's functions and hand sums."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import attention
from attn_core.lessons import alternatives as core

FAST = settings(max_examples=25, deadline=None)


def _randn(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ------------------------------------------------------------------ scoring functions


def test_dot_and_scaled_dot_match_attention_raw_scores():
    q, k, v = _randn(5, 16), _randn(7, 16, seed=1), _randn(7, 3, seed=2)
    r = attention(q, k, v)
    torch.testing.assert_close(core.dot_scores(q, k), r.raw_scores)
    torch.testing.assert_close(core.scaled_dot_scores(q, k), r.scores)


def test_additive_matches_a_hand_computation():
    # d = 2, d_a = 2, one query, two keys: write every tanh out by hand
    q = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    k = torch.tensor([[0.5, 2.0], [-1.0, 0.0]], dtype=torch.float64)
    W_1 = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=torch.float64)
    W_2 = torch.tensor([[0.0, 1.0], [1.0, -1.0]], dtype=torch.float64)
    v_a = torch.tensor([2.0, -1.0], dtype=torch.float64)
    # W_1 q = [1, 0];  W_2 k_1 = [2, -1.5];  W_2 k_2 = [0, -1]
    s1 = 2 * math.tanh(1 + 2) - math.tanh(0 - 1.5)
    s2 = 2 * math.tanh(1 + 0) - math.tanh(0 - 1)
    got = core.additive_scores(q, k, W_1, W_2, v_a)
    torch.testing.assert_close(got, torch.tensor([[s1, s2]], dtype=torch.float64))


@FAST
@given(T_q=st.integers(1, 6), T_k=st.integers(1, 6), d=st.integers(1, 5), d_a=st.integers(1, 5))
def test_additive_equals_the_per_pair_loop(T_q, T_k, d, d_a):
    q, k = _randn(T_q, d), _randn(T_k, d, seed=1)
    W_1, W_2, v_a = _randn(d_a, d, seed=2), _randn(d_a, d, seed=3), _randn(d_a, seed=4)
    loop = torch.tensor(
        [
            [float(v_a @ torch.tanh(W_1 @ q[i] + W_2 @ k[j])) for j in range(T_k)]
            for i in range(T_q)
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(core.additive_scores(q, k, W_1, W_2, v_a), loop)


def test_additive_intermediate_bytes_is_the_real_tensor_size_and_caps_at_1024():
    T, d_a = 32, 64
    h = torch.tanh(_randn(T, 1, d_a).float() + _randn(1, T, d_a, seed=1).float())  # (T, T, d_a)
    assert core.additive_intermediate_bytes(T, T, d_a) == h.nelement() * h.element_size()
    assert core.additive_T_cap(64) == 1024  # 1024² · 64 · 4 B = 256 MiB exactly
    assert core.additive_intermediate_bytes(1024, 1024, 64) == core.ADDITIVE_BUDGET_BYTES
    assert core.additive_T_cap(64, budget_bytes=core.ADDITIVE_BUDGET_BYTES - 1) == 512


@FAST
@given(
    T=st.integers(1, 8),
    d=st.integers(1, 8),
    tau=st.floats(0.01, 10.0),
    scale=st.floats(1e-3, 1e3),
    seed=st.integers(0, 1000),
)
def test_cosine_scores_are_bounded_and_match_torch(T, d, tau, scale, seed):
    q, k = scale * _randn(T, d, seed=seed), _randn(T + 1, d, seed=seed + 1)
    s = core.cosine_scores(q, k, tau)
    assert torch.isfinite(s).all()
    assert (s.abs() <= 1 / tau + 1e-9).all()
    ref = F.cosine_similarity(q[:, None, :], k[None, :, :], dim=-1) / tau
    torch.testing.assert_close(s, ref)


def test_cosine_of_a_zero_vector_is_zero_not_nan():
    q = torch.zeros(1, 4, dtype=torch.float64)
    assert torch.equal(
        core.cosine_scores(q, _randn(3, 4), 0.5), torch.zeros(1, 3, dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="tau"):
        core.cosine_scores(q, q, 0.0)


@FAST
@given(T=st.integers(1, 6), d_model=st.integers(1, 6), d_k=st.integers(1, 6))
def test_bilinear_equals_dot_product_after_absorbing_w(T, d_model, d_k):
    shapes = [(T, d_model), (d_model, d_k), (d_model, d_k), (d_k, d_k)]
    x, W_q, W_k, W = (_randn(*s, seed=i) for i, s in enumerate(shapes))
    a = core.bilinear_absorption(x, W_q, W_k, W)
    torch.testing.assert_close(a.bilinear, a.absorbed, rtol=1e-10, atol=1e-10)
    assert a.max_abs_diff <= 1e-10 * max(1.0, a.max_abs_score)
    # and with W = I the bilinear score is the plain dot product
    q, k = x @ W_q, x @ W_k
    torch.testing.assert_close(core.bilinear_scores(q, k, torch.eye(d_k, dtype=q.dtype)), q @ k.T)


def test_compare_scorings_rows_sum_to_one_and_dot_is_sharper_than_scaled():
    s = core.scoring_setup(8, seed=3)
    c = core.compare_scorings(s, tau=1.0)
    assert list(c.scores) == list(core.SCORINGS) == list(c.weights)
    for name in core.SCORINGS:
        assert c.scores[name].shape == c.weights[name].shape == (8, 8)
        torch.testing.assert_close(c.weights[name].sum(-1), torch.ones(8, dtype=torch.float64))
    # entropy of softmax(β s) falls as β grows; dot = 4 × scaled dot (√16)
    assert c.mean_entropy["dot"] < c.mean_entropy["scaled dot"]
    torch.testing.assert_close(c.scores["dot"], 4 * c.scores["scaled dot"])
    assert c.absorption.max_abs_diff < 1e-12
    assert c.scores["cosine"].abs().max() <= 1.0


def test_cosine_entropy_rises_with_tau_to_uniform():
    s = core.scoring_setup(8, seed=0)
    taus = [0.01, 0.1, 1.0, 10.0, 1000.0]
    ent = core.cosine_entropy_vs_tau(s.q, s.k, taus)
    assert (ent.diff() > 0).all()
    assert ent[0] < 0.1 and abs(float(ent[-1]) - math.log(8)) < 1e-4


@pytest.mark.parametrize("tau", [0.01, 0.1, 1.0, 10.0])
def test_loud_key_wins_under_dot_and_loses_under_cosine(tau):
    lk = core.loud_key_example(tau)
    assert int(lk.dot_weights.argmax()) == 1  # the long, off-angle key
    assert int(lk.cosine_weights.argmax()) == 0  # the aligned key
    assert float(lk.key_norms[1]) > float(lk.key_norms[0])
    torch.testing.assert_close(lk.cosines[0], torch.tensor(1.0, dtype=torch.float64))


# ----------------------------------------------------------------- kernel smoothers


def test_nadaraya_watson_matches_the_textbook_formula():
    x, y = core.toy_regression(30, seed=1)
    x_q = torch.linspace(0, 10, 11, dtype=torch.float64)
    h = 0.8
    K = torch.exp(-((x_q[:, None] - x[None, :]) ** 2) / (2 * h * h))
    fit, w = core.nadaraya_watson(x_q, x, y, h)
    torch.testing.assert_close(fit, (K @ y) / K.sum(-1))
    torch.testing.assert_close(w.sum(-1), torch.ones(11, dtype=torch.float64))


@pytest.mark.parametrize("h", [0.1, 0.5, 2.0, 5.0])
def test_softmax_attention_with_quadratic_features_is_the_gaussian_smoother(h):
    x, y = core.toy_regression(40, seed=2)
    x_q = torch.linspace(-1, 11, 25, dtype=torch.float64)
    a, wa = core.softmax_regression(x_q, x, y, h)
    b, wb = core.nadaraya_watson(x_q, x, y, h)
    torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(wa, wb, rtol=1e-9, atol=1e-9)


def test_elu_plus_one_is_exp_below_zero_and_shifted_identity_above():
    u = torch.linspace(-5, 5, 101, dtype=torch.float64)
    expected = torch.where(u < 0, torch.exp(u), u + 1)
    torch.testing.assert_close(core.elu_feature_map(u), expected)
    assert (core.elu_feature_map(u) > 0).all()


@FAST
@given(
    B=st.integers(1, 3),
    T_q=st.integers(1, 6),
    T_k=st.integers(1, 6),
    d=st.integers(1, 5),
    d_v=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_linear_attention_matches_its_quadratic_closed_form(B, T_q, T_k, d, d_v, seed):
    q, k, v = (
        _randn(B, T_q, d, seed=seed),
        _randn(B, T_k, d, seed=seed + 1),
        _randn(B, T_k, d_v, seed=seed + 2),
    )
    phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
    A = phi_q @ phi_k.transpose(-2, -1)  # (B, T_q, T_k)
    closed = (A / A.sum(-1, keepdim=True)) @ v
    torch.testing.assert_close(core.linear_attention(q, k, v), closed)
    torch.testing.assert_close(core.linear_attention_weights(q, k) @ v, closed)


def test_linear_attention_hand_case():
    # φ(q) = [2, 1] (q = [1, 0]); keys φ(k_1) = [1, 1], φ(k_2) = [3, 1] (k = [0, 0], [2, 0])
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    k = torch.tensor([[0.0, 0.0], [2.0, 0.0]], dtype=torch.float64)
    v = torch.tensor([[10.0], [20.0]], dtype=torch.float64)
    # weights ∝ [2 + 1, 6 + 1] = [3, 7]  ->  output = 0.3·10 + 0.7·20 = 17
    torch.testing.assert_close(core.linear_attention(q, k, v), torch.tensor([[17.0]]).double())


def test_anchor_features_give_a_gaussian_times_an_anchor_sum():
    x = torch.tensor([1.0, 2.5, 7.0], dtype=torch.float64)
    c = torch.linspace(0, 10, 24, dtype=torch.float64)
    h = 0.7
    w = core.linear_attention_weights(core.anchor_features(x, c, h), core.anchor_features(x, c, h))
    mid = (x[:, None] + x[None, :]) / 2
    K = torch.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * h * h)) * torch.exp(
        -2 * (c[None, None, :] - mid[..., None]) ** 2 / (h * h)
    ).sum(-1)
    torch.testing.assert_close(w, K / K.sum(-1, keepdim=True))


@pytest.mark.parametrize("h", [0.1, 0.5, 5.0])
def test_smoother_demo_is_finite_and_softmax_equals_gaussian(h):
    d = core.kernel_smoother_demo(h, n=40, n_query=51)
    assert set(d.fits) == {"Gaussian kernel", "softmax attention", "linear attention"}
    for name, f in d.fits.items():
        assert f.shape == (51,) and torch.isfinite(f).all(), name
        w = d.probe_weights[name]
        assert w.shape == (40,)
        torch.testing.assert_close(w.sum(), torch.tensor(1.0, dtype=torch.float64))
    assert d.max_gap_softmax < 1e-9
    with pytest.raises(ValueError, match="bandwidth"):
        core.kernel_smoother_demo(0.0)


# --------------------------------------------------- weights are not explanations


def test_top_weight_token_has_the_smallest_contribution():
    c = core.weights_vs_contributions(0.02)
    assert int(c.weights.argmax()) == c.top
    assert int(c.contributions.argmin()) == c.top
    assert int(c.contributions.argmax()) == c.light
    assert c.weights[c.light] < c.weights[c.top]
    assert c.knockout_change[c.top] < c.knockout_change[c.light]


def test_contributions_match_their_definitions():
    c = core.weights_vs_contributions(0.3)
    v = c.value_norms
    torch.testing.assert_close(c.contributions, c.weights * v)
    torch.testing.assert_close(c.knockout_change, c.contributions)
    torch.testing.assert_close(c.weights.sum(), torch.tensor(1.0, dtype=torch.float64))


def test_deleting_a_token_equals_recomputing_softmax_without_it():
    from attn_core.lessons.alternatives import _LOGITS, TOKENS

    c = core.weights_vs_contributions(0.02)
    logits = torch.tensor(_LOGITS, dtype=torch.float64)
    # delete token j by masking it out of a real attention call whose one-hot keys
    # reproduce the example's logits: softmax then re-spreads j's weight over the rest
    k = torch.eye(len(TOKENS), dtype=torch.float64)  # (T, T)
    q = logits[None, :]  # q·k_j = logit_j
    for j in (c.top, c.light):
        keep = torch.ones(1, len(TOKENS), dtype=torch.bool)
        keep[0, j] = False
        w = attention(q, k, k, keep, scale=1.0).weights[0]  # renormalised weights without j
        expected = c.weights.clone()
        expected[j] = 0
        torch.testing.assert_close(w, expected / (1 - c.weights[j]))
    assert c.renorm_angle_deg[c.top] < 5 < c.renorm_angle_deg[c.light]
    assert c.contributions[c.top] < 0.02


def test_a_full_length_value_makes_the_top_token_the_top_contributor():
    c = core.weights_vs_contributions(1.0)
    assert int(c.contributions.argmax()) == c.top
    assert float(core.weights_vs_contributions(0.0).contributions[c.top]) == 0.0
    with pytest.raises(ValueError, match="value_scale"):
        core.weights_vs_contributions(float("nan"))


# -------------------------------------------------------------------------- timing


def test_timings_are_positive_and_sized():
    rows = core.time_dot_vs_additive((8, 16), d=8, rounds=1)
    assert [r.T for r in rows] == [8, 16]
    for r in rows:
        assert r.dot_s > 0 and r.additive_s > 0 and math.isfinite(r.ratio)
        assert r.intermediate_bytes == r.T * r.T * 8 * 4
    rows = core.time_softmax_vs_linear((8, 16), d=8, rounds=1)
    assert all(r.softmax_s > 0 and r.linear_s > 0 and r.ratio > 0 for r in rows)


def test_growth_exponent_reads_the_slope():
    assert core.growth_exponent([100, 200], [1.0, 4.0]) == pytest.approx(2.0)
    assert core.growth_exponent([100, 200, 400], [1.0, 2.0, 4.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        core.growth_exponent([100], [1.0])
