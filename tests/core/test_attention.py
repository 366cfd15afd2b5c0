"""`attention` and `fused_attention` against PyTorch's own scaled_dot_product_attention."""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from attn_core import attention, causal_mask, fused_attention, padding_mask

SHAPES = [  # (batch dims, T_q, T_k, d_k, d_v)
    ((), 1, 1, 1, 1),
    ((), 5, 5, 8, 8),
    ((2,), 7, 3, 16, 16),  # cross-attention, fewer keys than queries
    ((2, 4), 6, 11, 32, 8),  # d_v != d_k
    ((3, 2), 16, 16, 64, 48),
]


def _qkv(batch, T_q, T_k, d_k, d_v, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, T_q, d_k, generator=g, dtype=dtype)
    k = torch.randn(*batch, T_k, d_k, generator=g, dtype=dtype)
    v = torch.randn(*batch, T_k, d_v, generator=g, dtype=dtype)
    return q, k, v


def _masks(batch, T_q, T_k, seed=0):
    g = torch.Generator().manual_seed(seed + 1)
    yield "none", None
    yield "causal", causal_mask(T_q, T_k)
    if len(batch) >= 1:
        B = batch[0]
        lengths = torch.randint(1, T_k + 1, (B,), generator=g)
        m = padding_mask(lengths, T_k)  # (B, 1, 1, T_k)
        yield "padding", m.view(B, *([1] * (len(batch) - 1)), 1, T_k)
    rnd = torch.rand(*batch, T_q, T_k, generator=g) > 0.3
    rnd[..., 0] = True  # keep at least one key per row: SDPA gives NaN for empty rows
    yield "random", rnd
    yield "float", torch.randn(*batch, T_q, T_k, generator=g)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("scale", [None, 1.0, 0.3])
def test_matches_sdpa_over_shapes_masks_and_scales(shape, scale):
    q, k, v = _qkv(*shape)
    for name, mask in _masks(shape[0], shape[1], shape[2]):
        ours = attention(q, k, v, mask, scale=scale)
        ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        torch.testing.assert_close(ours.output, ref, atol=1e-5, rtol=1e-5, msg=name)
        fused = fused_attention(q, k, v, mask, scale=scale)
        torch.testing.assert_close(fused, ref, atol=1e-6, rtol=1e-6, msg=name)


def test_intermediates_are_consistent():
    q, k, v = _qkv((2,), 5, 6, 16, 4)
    m = causal_mask(5, 6)
    r = attention(q, k, v, m, temperature=2.0)
    torch.testing.assert_close(r.raw_scores, q @ k.transpose(-2, -1))
    expected = (r.raw_scores / math.sqrt(16) / 2.0).masked_fill(~m, float("-inf"))
    torch.testing.assert_close(r.scores, expected)
    torch.testing.assert_close(r.weights, torch.softmax(expected, -1))
    torch.testing.assert_close(r.output, r.weights @ v)


def test_is_causal_equals_materialised_mask():
    q, k, v = _qkv((2, 3), 9, 9, 8, 8)
    a = fused_attention(q, k, v, is_causal=True)
    b = attention(q, k, v, causal_mask(9)).output
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_temperature_divides_the_logits():
    q, k, v = _qkv((), 6, 6, 16, 16)
    a = attention(q, k, v, temperature=4.0)
    b = attention(q, k, v, scale=0.25 / 4.0)
    torch.testing.assert_close(a.weights, b.weights)


@pytest.mark.parametrize("as_float", [False, True])
def test_fully_masked_rows_are_zero_not_nan(as_float):
    q, k, v = _qkv((2,), 4, 5, 8, 3)
    keep = torch.ones(2, 4, 5, dtype=torch.bool)
    keep[0, 1] = False  # example 0, query 1 sees nothing
    keep[1] = False  # example 1 sees nothing at all
    mask = keep if not as_float else torch.zeros(2, 4, 5).masked_fill(~keep, float("-inf"))
    r = attention(q, k, v, mask)
    assert not torch.isnan(r.output).any() and not torch.isnan(r.weights).any()
    assert torch.equal(r.weights[0, 1], torch.zeros(5))
    assert torch.equal(r.output[1], torch.zeros(4, 3))
    torch.testing.assert_close(r.weights[0, 0].sum(), torch.tensor(1.0))
    f = fused_attention(q, k, v, mask)
    assert not torch.isnan(f).any()
    torch.testing.assert_close(f, r.output, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_dtype_matches_float64_reference(dtype):
    q, k, v = _qkv((2,), 6, 7, 16, 8, dtype=torch.float64)
    ref = attention(q, k, v, causal_mask(6, 7)).output
    r = attention(q.to(dtype), k.to(dtype), v.to(dtype), causal_mask(6, 7))
    assert r.output.dtype == r.weights.dtype == dtype
    tol = {torch.float16: 1e-2, torch.bfloat16: 5e-2}.get(dtype, 1e-5)
    torch.testing.assert_close(r.output.double(), ref, atol=tol, rtol=tol)


@pytest.mark.parametrize(
    "q_shape,k_shape,v_shape",
    [
        ((4, 8), (4, 7), (4, 7)),
        ((4, 8), (5, 8), (6, 8)),
        ((8,), (4, 8), (4, 8)),
        ((2, 4, 8), (3, 4, 8), (3, 4, 8)),
    ],
)
def test_shape_mismatch_raises_value_error_naming_shapes(q_shape, k_shape, v_shape):
    q, k, v = torch.randn(q_shape), torch.randn(k_shape), torch.randn(v_shape)
    with pytest.raises(ValueError, match=r"\(") as e:
        attention(q, k, v)
    assert str(tuple(q_shape)) in str(e.value)
    with pytest.raises(ValueError):
        fused_attention(q, k, v)


def test_mask_that_does_not_broadcast_raises_value_error():
    q, k, v = _qkv((3, 2), 4, 5, 8, 8)  # scores (3, 2, 4, 5)
    raw_padding = torch.ones(3, 5, dtype=torch.bool)  # (B, T_k) lines up as (1, 1, 3, 5)
    with pytest.raises(ValueError, match=r"\(3, 5\)"):
        attention(q, k, v, raw_padding)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_temperature_raises(bad):
    q, k, v = _qkv((), 3, 3, 4, 4)
    with pytest.raises(ValueError, match="temperature"):
        attention(q, k, v, temperature=bad)


def test_dropout_only_in_training_and_rescales_survivors():
    q, k, v = _qkv((64,), 8, 8, 16, 16)
    ev = attention(q, k, v, dropout_p=0.5, training=False)
    torch.testing.assert_close(ev.weights.sum(-1), torch.ones(64, 8))
    torch.manual_seed(0)
    tr = attention(q, k, v, dropout_p=0.5, training=True)
    kept = tr.weights != 0
    torch.testing.assert_close(tr.weights[kept], ev.weights[kept] * 2.0)  # 1 / (1 - p)
    assert not torch.allclose(tr.weights.sum(-1), torch.ones(64, 8))
    # …yet in expectation rows still sum to 1
    assert abs(float(tr.weights.sum(-1).mean()) - 1.0) < 0.05


@pytest.mark.parametrize("case", list(itertools.product([1, 3], [2, 5])))
def test_output_dims(case):
    T_q, T_k = case
    q, k, v = _qkv((2,), T_q, T_k, 4, 6)
    r = attention(q, k, v)
    assert r.output.shape == (2, T_q, 6)
    assert r.weights.shape == r.scores.shape == r.raw_scores.shape == (2, T_q, T_k)
