"""attn_core.lessons.positions: sinusoidal codes, RoPE, ALiBi, and attention's `bias` path."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import (
    alibi_bias,
    alibi_slopes,
    attention,
    causal_mask,
    rope,
    rope_frequencies,
    sinusoidal_positions,
)


def _complex_rope(x: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """RoPE written independently: each interleaved pair is a complex number z, rotated by
    multiplying with e^{i·pos·ω}, ω_i = base^(−2i/d), all in complex128."""
    d = x.shape[-1]
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    omega = torch.tensor([base ** (-2 * i / d) for i in range(d // 2)], dtype=torch.float64)
    turn = torch.polar(torch.ones_like(omega), pos.double().unsqueeze(-1) * omega)  # (T, d/2)
    return torch.view_as_real(z * turn).reshape(x.shape)


# ----------------------------------------------------------------------------- RoPE
@pytest.mark.parametrize("d", [2, 8, 64])
@pytest.mark.parametrize("base", [100.0, 10_000.0, 500_000.0])
def test_rope_equals_the_complex_number_rotation(d, base):
    g = torch.Generator().manual_seed(d)
    x = torch.randn(2, 3, 17, d, generator=g, dtype=torch.float64)  # (B, h, T, d)
    pos = torch.arange(17)
    got = rope(x, pos, base)
    assert got.shape == x.shape and got.dtype == x.dtype
    assert torch.allclose(got, _complex_rope(x, pos, base), atol=1e-6, rtol=0)


def test_rope_in_float32_stays_within_1e_6_of_float64_for_moderate_positions():
    x = torch.randn(64, 32, generator=torch.Generator().manual_seed(1))
    pos = torch.arange(64)
    err = (rope(x, pos).double() - _complex_rope(x, pos, 10_000.0)).abs().max().item()
    assert err < 1e-5  # float32 rounding of values of size ~3


def test_rope_keeps_lengths_and_leaves_position_zero_alone():
    x = torch.randn(10, 16, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    y = rope(x, torch.arange(10))
    assert torch.allclose(y.norm(dim=-1), x.norm(dim=-1), atol=1e-12)
    assert torch.equal(y[0], x[0])
    assert not torch.allclose(y[1:], x[1:])


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(0, 300),
    n=st.integers(0, 300),
    s=st.integers(-200, 500),
    half=st.integers(1, 32),
    seed=st.integers(0, 2**16),
)
def test_rope_scores_depend_on_the_offset_only(m, n, s, half, seed):
    if m + s < 0 or n + s < 0:
        s = -min(m, n)
    d = 2 * half
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(1, d, generator=g, dtype=torch.float64) for _ in range(2))

    def score(a: int, b: int) -> float:
        return (rope(q, torch.tensor([a])) @ rope(k, torch.tensor([b])).T).item()

    assert score(m, n) == pytest.approx(score(m + s, n + s), abs=1e-9 * d)


def test_rope_frequencies_are_geometric_from_one_down_to_base_to_the_minus_one():
    w = rope_frequencies(8, 10_000.0)
    assert w[0] == 1.0
    assert torch.allclose(
        w[1:] / w[:-1], torch.full((3,), 10_000.0 ** (-2 / 8), dtype=torch.float64)
    )
    with pytest.raises(ValueError):
        rope_frequencies(7)
    with pytest.raises(ValueError):
        rope_frequencies(8, base=1.0)


def test_rope_through_attention_matches_torch_sdpa_with_a_causal_mask():
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 4, 12, 16, generator=g) for _ in range(3))  # (B, h, T, d_k)
    pos = torch.arange(12)
    qr, kr = rope(q, pos), rope(k, pos)
    ours = attention(qr, kr, v, causal_mask(12)).output
    ref = F.scaled_dot_product_attention(qr, kr, v, is_causal=True)
    assert torch.allclose(ours, ref, atol=1e-5)


# ----------------------------------------------------------------------------- ALiBi
def test_alibi_slopes_for_eight_heads_are_the_papers_halves():
    want = torch.tensor([2.0**-i for i in range(1, 9)], dtype=torch.float64)
    assert torch.equal(alibi_slopes(8), want)


@pytest.mark.parametrize("h", [1, 2, 3, 5, 6, 12, 16])
def test_alibi_slopes_follow_the_papers_rule_for_any_head_count(h):
    def power(n):  # the geometric sequence written out: 2^(−8/n · i), i = 1…n
        return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]

    n = 2 ** math.floor(math.log2(h))
    want = power(n) + power(2 * n)[0::2][: h - n]
    got = alibi_slopes(h)
    assert got.shape == (h,) and torch.allclose(got, torch.tensor(want, dtype=torch.float64))
    assert (got > 0).all() and (got < 1).all() and len(set(got.tolist())) == h


def test_alibi_bias_is_minus_slope_times_distance_and_aligns_queries_to_the_end():
    b = alibi_bias(4, 4, 2)  # (h, T_q, T_k)
    assert b.shape == (2, 4, 4)
    dist = torch.tensor([[abs(m - n) for n in range(4)] for m in range(4)], dtype=torch.float64)
    assert torch.equal(b[0], -0.0625 * dist) and torch.equal(b[1], -(2.0**-8) * dist)
    tail = alibi_bias(1, 6, 1)  # one new query at position 5 reading a cache of 6
    assert torch.equal(
        tail[0, 0], -(2.0**-8) * torch.tensor([5.0, 4, 3, 2, 1, 0], dtype=torch.float64)
    )
    with pytest.raises(ValueError):
        alibi_bias(5, 4, 2)
    with pytest.raises(ValueError):
        alibi_slopes(0)


def test_alibi_through_attentions_bias_matches_sdpa_with_the_bias_as_float_mask():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 8, 10, 16, generator=g) for _ in range(3))  # (B, h, T, d_k)
    bias = alibi_bias(10, 10, 8).float()  # (h, T, T)
    ours = attention(q, k, v, causal_mask(10), bias=bias)
    ref = F.scaled_dot_product_attention(
        q, k, v, attn_mask=bias.masked_fill(~causal_mask(10), float("-inf"))
    )
    assert torch.allclose(ours.output, ref, atol=1e-5)
    # the bias joins the scaled scores; the raw scores stay plain QKᵀ
    assert torch.allclose(ours.raw_scores, q @ k.transpose(-2, -1))


def test_the_bias_is_divided_by_the_temperature_with_the_scores():
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(6, 8, generator=g) for _ in range(3))
    bias = alibi_bias(6, 6, 1)[0].float()
    hot = attention(q, k, v, bias=bias, temperature=2.0).scores
    cold = attention(q, k, v, bias=bias).scores
    assert torch.allclose(hot, cold / 2.0, atol=1e-6)
    with pytest.raises(ValueError, match="broadcast"):
        attention(q, k, v, bias=torch.zeros(5, 6))


def test_a_steep_alibi_penalty_makes_every_query_read_itself():
    q, k, v = (torch.randn(7, 4, generator=torch.Generator().manual_seed(6)) for _ in range(3))
    w = attention(q, k, v, bias=100.0 * alibi_bias(7, 7, 1)[0].float() / 2**-8).weights
    assert torch.allclose(w, torch.eye(7), atol=1e-6)


# ----------------------------------------------------------------------------- sinusoidal codes
def test_sinusoidal_positions_match_the_formula():
    pe = sinusoidal_positions(50, 16)
    p, i = 37, 3
    assert pe[p, 2 * i] == pytest.approx(math.sin(p / 10_000 ** (2 * i / 16)), abs=1e-12)
    assert pe[p, 2 * i + 1] == pytest.approx(math.cos(p / 10_000 ** (2 * i / 16)), abs=1e-12)
    assert sinusoidal_positions(3, 5).shape == (3, 5)  # an odd width ends on a sine


def test_sinusoidal_dot_products_depend_on_the_offset_only():
    pe = sinusoidal_positions(64, 32)
    gram = pe @ pe.T  # (T, T)
    for off in (0, 1, 5, 20):
        diag = torch.diagonal(gram, off)
        assert torch.allclose(diag, diag[0].expand_as(diag), atol=1e-9)


# ----------------------------------------------------------------------------- order blindness
def test_without_positions_attention_permutes_with_its_input():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(9, 16, generator=g)
    perm = torch.randperm(9, generator=g)
    out = attention(x, x, x).output
    out_p = attention(x[perm], x[perm], x[perm]).output
    assert torch.allclose(out_p, out[perm], atol=1e-6)
    # RoPE breaks the symmetry: the same permuted tokens now sit at other positions
    pos = torch.arange(9)
    r = attention(rope(x, pos), rope(x, pos), x).output
    r_p = attention(rope(x[perm], pos), rope(x[perm], pos), x[perm]).output
    assert not torch.allclose(r_p, r[perm], atol=1e-3)
