"""MultiHeadAttention against torch.nn.MultiheadAttention loaded with the same weights."""

import pytest
import torch
import torch.nn as nn

from attn_core import MultiHeadAttention, causal_mask, padding_mask, valid_head_counts


def _pair(d_model, h, bias=True, seed=0):
    torch.manual_seed(seed)
    ours = MultiHeadAttention(d_model, h, bias=bias).eval()
    ref = nn.MultiheadAttention(d_model, h, bias=bias, batch_first=True).eval()
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        ref.out_proj.weight.copy_(ours.W_o.weight)
        if bias:
            ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
            ref.out_proj.bias.copy_(ours.W_o.bias)
    return ours, ref


@pytest.mark.parametrize("d_model,h", [(16, 1), (16, 4), (64, 8), (48, 3)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_matches_nn_multihead_attention(d_model, h, causal, bias):
    ours, ref = _pair(d_model, h, bias)
    x = torch.randn(2, 7, d_model)
    mask = causal_mask(7) if causal else None
    with torch.no_grad():
        out, w = ours(x, x, x, mask)
        # nn.MultiheadAttention's bool mask means the opposite: True = blocked
        ref_out, ref_w = ref(
            x, x, x, attn_mask=None if mask is None else ~mask, average_attn_weights=False
        )
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-5, rtol=1e-5)
    assert w.shape == (2, h, 7, 7)


def test_cross_attention_with_key_padding_matches_reference():
    ours, ref = _pair(32, 4)
    q = torch.randn(3, 5, 32)
    kv = torch.randn(3, 9, 32)
    lengths = torch.tensor([9, 4, 1])
    with torch.no_grad():
        out, _ = ours(q, kv, kv, padding_mask(lengths, 9))
        ref_out, _ = ref(q, kv, kv, key_padding_mask=~padding_mask(lengths, 9)[:, 0, 0])
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kv_heads", [8, 4, 2, 1])
def test_fused_path_agrees_with_explicit(kv_heads):
    torch.manual_seed(1)
    m = MultiHeadAttention(64, 8, num_kv_heads=kv_heads).eval()
    x = torch.randn(2, 10, 64)
    with torch.no_grad():
        a, w = m(x, x, x, causal_mask(10))
        b, none = m(x, x, x, causal_mask(10), fused=True)
    assert none is None and w.shape == (2, 8, 10, 10)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kv_heads", [8, 2, 1])
def test_gqa_and_mqa_shapes_and_parameter_savings(kv_heads):
    d_model, h = 64, 8
    m = MultiHeadAttention(d_model, h, num_kv_heads=kv_heads)
    d_k = d_model // h
    assert m.W_q.weight.shape == (d_model, d_model)
    assert m.W_k.weight.shape == m.W_v.weight.shape == (kv_heads * d_k, d_model)
    r = m.forward_detailed(torch.randn(2, 5, d_model), *(torch.randn(2, 6, d_model),) * 2)
    assert r.q.shape == (2, h, 5, d_k)
    assert r.k.shape == r.v.shape == (2, h, 6, d_k)  # shared K/V repeated to every query head
    assert r.weights.shape == (2, h, 5, 6)
    assert r.concat.shape == r.output.shape == (2, 5, d_model)
    g = h // kv_heads  # query heads in each group read the same K head
    for head in range(h):
        torch.testing.assert_close(r.k[:, head], r.k[:, (head // g) * g])


def test_gqa_equals_mha_with_tied_kv_heads():
    """GQA is ordinary MHA whose K/V projections repeat per group."""
    torch.manual_seed(2)
    gqa = MultiHeadAttention(32, 4, num_kv_heads=2).eval()
    mha = MultiHeadAttention(32, 4).eval()
    d_k = 8
    with torch.no_grad():
        for name in ("W_k", "W_v"):
            w = getattr(gqa, name).weight.view(2, d_k, 32).repeat_interleave(2, 0).reshape(32, 32)
            b = getattr(gqa, name).bias.view(2, d_k).repeat_interleave(2, 0).reshape(32)
            getattr(mha, name).weight.copy_(w)
            getattr(mha, name).bias.copy_(b)
        for name in ("W_q", "W_o"):
            getattr(mha, name).load_state_dict(getattr(gqa, name).state_dict())
        x = torch.randn(2, 6, 32)
        torch.testing.assert_close(gqa(x, x, x)[0], mha(x, x, x)[0], atol=1e-5, rtol=1e-5)


def test_head_mask_zeroes_heads_before_w_o():
    torch.manual_seed(3)
    m = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 5, 16)
    with torch.no_grad():
        r = m.forward_detailed(x, x, x, head_mask=torch.zeros(4))
    torch.testing.assert_close(r.output, m.W_o.bias.expand(1, 5, 16))


@pytest.mark.parametrize(
    "args,match",
    [((512, 7), "divide d_model"), ((64, 8, 3), "num_kv_heads"), ((0, 1), "positive")],
)
def test_invalid_head_splits_raise(args, match):
    kw = {"num_kv_heads": args[2]} if len(args) == 3 else {}
    with pytest.raises(ValueError, match=match):
        MultiHeadAttention(args[0], args[1], **kw)


def test_parameter_count_does_not_depend_on_heads():
    d = 64
    counts = {
        h: sum(p.numel() for p in MultiHeadAttention(d, h).parameters())
        for h in valid_head_counts(d)
    }
    assert set(counts.values()) == {4 * d * d + 4 * d}
    assert valid_head_counts(12) == [1, 2, 3, 4, 6, 12]


def test_training_mode_applies_dropout_to_weights():
    torch.manual_seed(4)
    m = MultiHeadAttention(16, 2, dropout=0.5).train()
    x = torch.randn(4, 6, 16)
    _, w = m(x, x, x)
    sums = w.sum(-1)
    assert not torch.allclose(sums, torch.ones_like(sums))
    m.eval()
    _, w = m(x, x, x)
    torch.testing.assert_close(w.sum(-1), torch.ones_like(w.sum(-1)))


def test_wrong_input_shapes_raise_value_error():
    m = MultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=r"\(2, 5, 8\)"):
        m(torch.randn(2, 5, 8), torch.randn(2, 5, 8), torch.randn(2, 5, 8))
    with pytest.raises(ValueError):
        m(torch.randn(2, 5, 16), torch.randn(3, 5, 16), torch.randn(3, 5, 16))
