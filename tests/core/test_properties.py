"""Properties that must hold for any input (hypothesis)."""

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import attention, causal_mask

dims = st.integers(1, 9)
seeds = st.integers(0, 2**31 - 1)
SETTINGS = settings(max_examples=60, deadline=None)


def _qkv(T_q, T_k, d_k, d_v, seed, spread=1.0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(T_q, d_k, generator=g, dtype=torch.float64) * spread
    k = torch.randn(T_k, d_k, generator=g, dtype=torch.float64) * spread
    v = torch.randn(T_k, d_v, generator=g, dtype=torch.float64)
    return q, k, v


@SETTINGS
@given(dims, dims, dims, dims, seeds, st.floats(0.1, 10.0), st.booleans())
def test_rows_sum_to_one_in_eval_mode(T_q, T_k, d_k, d_v, seed, spread, causal):
    q, k, v = _qkv(T_q, T_k, d_k, d_v, seed, spread)
    mask = causal_mask(T_q, T_k) if causal else None
    r = attention(q, k, v, mask, dropout_p=0.3, training=False)  # eval: dropout is off
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(T_q, dtype=torch.float64))
    assert (r.weights >= 0).all()


@SETTINGS
@given(dims, st.integers(1, 9), dims, st.integers(1, 4), seeds, st.floats(0.1, 20.0))
def test_output_lies_in_convex_hull_of_values(T_q, T_k, d_k, d_v, seed, spread):
    q, k, v = _qkv(T_q, T_k, d_k, d_v, seed, spread)
    out = attention(q, k, v).output  # (T_q, d_v)
    # A point is in the hull iff no direction u puts it beyond every value: u·out <= max_j u·v_j.
    g = torch.Generator().manual_seed(seed)
    dirs = torch.randn(64, d_v, generator=g, dtype=torch.float64)
    dirs = torch.cat(
        [dirs, torch.eye(d_v, dtype=torch.float64), -torch.eye(d_v, dtype=torch.float64)]
    )
    support = (v @ dirs.T).amax(0)  # (n_dirs,)
    assert ((out @ dirs.T) <= support + 1e-9).all()


@SETTINGS
@given(dims, dims, dims, seeds, st.floats(-1e4, 1e4))
def test_adding_a_constant_to_all_logits_changes_nothing(T_q, T_k, d_k, seed, c):
    q, k, v = _qkv(T_q, T_k, d_k, 3, seed)
    base = attention(q, k, v)
    shifted = attention(
        q, k, v, torch.full((T_q, T_k), c, dtype=torch.float64)
    )  # float mask adds c
    torch.testing.assert_close(shifted.weights, base.weights)
    torch.testing.assert_close(shifted.output, base.output)


@SETTINGS
@given(dims, dims, dims, seeds, st.floats(0.05, 20.0), st.floats(0.01, 3.0))
def test_temperature_t_equals_scale_over_t(T_q, T_k, d_k, seed, t, scale):
    q, k, v = _qkv(T_q, T_k, d_k, 2, seed)
    a = attention(q, k, v, scale=scale, temperature=t)
    b = attention(q, k, v, scale=scale / t)
    torch.testing.assert_close(a.weights, b.weights)
    c = attention(q, k, v, temperature=t)
    d = attention(q, k, v, scale=1 / (math.sqrt(d_k) * t))
    torch.testing.assert_close(c.weights, d.weights)
