"""attn_core.lessons.multi_head against PyTorch's own pieces and closed forms."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import kv_cache_bytes, valid_head_counts
from attn_core.attention import attention
from attn_core.lessons import multi_head as core
from attn_core.lessons.multi_head import value_width_walkthrough
from ui.content import choices


def _small(d_model=32, h=4, h_kv=None, T=6, seed=0):
    m = core.seeded_mha(d_model, h, h if h_kv is None else h_kv, seed)
    x = core.random_tokens(T, d_model, seed)
    return m, x, core.run_heads(x, m)


# ----------------------------------------------------------------------------- parameters


@pytest.mark.parametrize("d_model", [16, 24, 96, 512, 1024])
def test_parameter_count_is_the_same_for_every_valid_head_count(d_model):
    expected = core.mha_parameter_formula(d_model)
    assert expected == 4 * d_model**2 + 4 * d_model
    for h in valid_head_counts(d_model):
        assert core.count_parameters(d_model, h)["total"] == expected


def test_meta_count_matches_a_real_layer_and_torch_mha():
    m = core.seeded_mha(48, 6, 2, 0)
    real = sum(p.numel() for p in m.parameters())
    assert core.count_parameters(48, 6, 2)["total"] == real
    ref = torch.nn.MultiheadAttention(64, 8, bias=True)
    assert core.count_parameters(64, 8)["total"] == sum(p.numel() for p in ref.parameters())


@pytest.mark.parametrize("h,h_kv", [(8, 8), (8, 2), (8, 1), (64, 8), (12, 3)])
def test_kv_cache_ratio_is_kv_heads_over_heads(h, h_kv):
    d_model = 64 * h
    rows = {r.h_kv: r for r in core.kv_table(d_model, h, h_kv)}
    assert rows[h].kind == "MHA" and rows[h].ratio == 1.0
    assert rows[1].kind == "MQA" and rows[1].ratio == pytest.approx(1 / h)
    assert rows[h_kv].ratio == pytest.approx(h_kv / h)
    full = kv_cache_bytes(1, 8192, 32, h, 64, "float16")
    assert rows[h].cache_bytes == full
    # K and V projections shrink by the same factor (weights and biases alike)
    assert rows[h_kv].kv_params * h == rows[h].kv_params * h_kv


def test_lesson_numbers_for_d512_h8():
    rows = core.kv_table(512, 8, 8)
    assert [r.kind for r in rows] == ["MHA", "GQA", "MQA"]
    assert rows[0].bytes_per_token == 2 * 512 * 2  # K and V, 512 numbers each, 2 bytes
    assert core.gqa_example(8) == 2 and core.gqa_example(64) == 8 and core.gqa_example(7) is None
    assert [r.h_kv for r in core.kv_table(64, 1, 1)] == [1]


def test_head_kind_and_choices():
    assert (
        core.head_kind(8, 8) == "MHA"
        and core.head_kind(8, 1) == "MQA"
        and core.head_kind(8, 4) == "GQA"
    )
    assert core.kv_head_choices(12) == [1, 2, 3, 4, 6, 12]
    assert core.nearest_choices(3, [1, 2, 4, 8]) == [2, 4]
    assert core.nearest_choices(100, [1, 2, 4]) == [4]
    assert core.nearest_valid_heads(3, 512) == 4  # tie 2 / 4 -> the larger
    assert core.nearest_valid_heads(12, 520) == 13
    with pytest.raises(ValueError):
        core.kv_head_choices(0)


# ----------------------------------------------------------------------------- the layer


def test_run_heads_matches_torch_multihead_attention():
    d_model, h, T = 32, 4, 7
    m, x, r = _small(d_model, h, T=T)
    ref = torch.nn.MultiheadAttention(d_model, h, bias=True, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([m.W_q.weight, m.W_k.weight, m.W_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([m.W_q.bias, m.W_k.bias, m.W_v.bias]))
        ref.out_proj.weight.copy_(m.W_o.weight)
        ref.out_proj.bias.copy_(m.W_o.bias)
        y, w = ref(x[None], x[None], x[None], average_attn_weights=False)
    torch.testing.assert_close(r.output, y[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(r.weights, w[0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(h, T))


def test_contributions_sum_to_the_output():
    _, _, r = _small()
    torch.testing.assert_close(r.contributions.sum(0) + r.bias, r.output, atol=1e-5, rtol=1e-5)


def test_pruning_every_head_leaves_only_the_bias():
    m, x, r = _small()
    y = core.pruned_forward(x, m, list(range(m.h)))
    torch.testing.assert_close(y, m.W_o.bias.detach().expand_as(y))
    torch.testing.assert_close(core.pruned_output(r, list(range(m.h))), y)


@pytest.mark.parametrize("pruned", [[], [0], [1, 3], [0, 1, 2]])
def test_linear_shortcut_matches_head_mask(pruned):
    m, x, r = _small()
    torch.testing.assert_close(
        core.pruned_output(r, pruned), core.pruned_forward(x, m, pruned), atol=1e-5, rtol=1e-5
    )


def test_pruning_curve_ends_and_order():
    _, _, r = _small(h=8, d_model=64)
    solo, curve, order = core.pruning_curve(r)
    assert curve[0] == 0.0 and sorted(order) == list(range(8))
    assert solo[order[0]] == solo.min()
    full_drop = core.output_change(r.output, r.bias.expand_as(r.output))[0]
    assert float(curve[-1]) == pytest.approx(full_drop, rel=1e-5)
    rel, cos = core.output_change(r.output, r.output)
    assert rel == 0.0 and cos == pytest.approx(1.0)


def test_grouped_query_heads_share_keys():
    _, _, r = _small(d_model=32, h=4, h_kv=1)
    m = core.seeded_mha(32, 4, 1, 0)
    x = core.random_tokens(6, 32, 0)
    res = m.forward_detailed(x[None], x[None], x[None])
    for j in range(1, 4):
        torch.testing.assert_close(res.k[0, j], res.k[0, 0])
    assert r.weights.shape == (4, 6, 6)


def test_seeded_layer_is_deterministic_and_seed_dependent():
    a, b, c = (
        core.seeded_mha(32, 4, 4, 1),
        core.seeded_mha(32, 4, 4, 1),
        core.seeded_mha(32, 4, 4, 2),
    )
    assert torch.equal(a.W_q.weight, b.W_q.weight)
    assert not torch.equal(a.W_q.weight, c.W_q.weight)
    # the weights do not reuse the input's random stream
    x = core.random_tokens(4, 32, 1)
    assert not torch.allclose(a.W_q.weight[:4], x / math.sqrt(32) * math.sqrt(2), atol=1e-3)


# ----------------------------------------------------------------------------- words


def test_embedding_is_per_word_and_deterministic():
    a = core.embed_words_fixed(["The", "cat"], 16)
    b = core.embed_words_fixed(["the", "dog", "cat"], 16)
    assert a.shape == (2, 16) and a.dtype == torch.float32
    torch.testing.assert_close(a, core.embed_words_fixed(["The", "cat"], 16))
    # same word, same position: same row, whatever the rest of the sentence
    torch.testing.assert_close(a[0], b[0])
    # same word at two positions: rows differ only by the position code
    assert not torch.equal(core.embed_words_fixed(["cat", "cat"], 16)[0], a[1])
    with pytest.raises(ValueError):
        core.embed_words_fixed([], 16)


def test_sentence_tokens_handles_emoji_html_and_length():
    toks, dropped = core.sentence_tokens("The tired cat 🐈 sat! <b>hi</b>")
    assert toks[:3] == ["The", "tired", "cat"] and "🐈" in toks and dropped == 0
    assert "<" in "".join(toks)  # kept as text; the page escapes it
    toks, dropped = core.sentence_tokens("word " * 10_000)
    assert len(toks) == 64 and dropped == 10_000 - 64
    assert core.sentence_tokens("   ") == ([], 0)


# ----------------------------------------------------------------------------- diversity


def test_jensen_shannon_against_a_direct_formula():
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(5, 7, generator=g, dtype=torch.float64), -1)
    q = torch.softmax(torch.randn(5, 7, generator=g, dtype=torch.float64), -1)
    m = 0.5 * (p + q)
    kl = lambda a, b: (a * (a / b).log()).sum(-1)  # noqa: E731
    direct = 0.5 * (kl(p, m) + kl(q, m)) / math.log(2)
    torch.testing.assert_close(core.jensen_shannon(p, q), direct)
    torch.testing.assert_close(
        core.jensen_shannon(p, q), 0.5 * (F.kl_div(m.log(), p, reduction="none").sum(-1)
                                     + F.kl_div(m.log(), q, reduction="none").sum(-1)) / math.log(2)
    )  # fmt: skip
    one_hot = torch.eye(3, dtype=torch.float64)
    torch.testing.assert_close(
        core.jensen_shannon(one_hot[0], one_hot[1]), torch.tensor(1.0).double()
    )


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 6), T=st.integers(1, 8), seed=st.integers(0, 1000))
def test_head_diversity_properties(h, T, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.softmax(torch.randn(h, T, T, generator=g), -1)
    d = core.head_diversity(w)
    assert d.shape == (h, h)
    assert torch.all(d >= 0) and torch.all(d <= 1 + 1e-9)
    torch.testing.assert_close(d, d.T)
    assert torch.all(d.diagonal() == 0)
    same = core.head_diversity(w[:1].expand(2, T, T))
    assert float(same.max()) < 1e-9


# ----------------------------------------------------------------------------- the reshape


@pytest.mark.parametrize("T,d_model,h", [(10, 512, 8), (3, 16, 2), (64, 1024, 64)])
def test_missing_contiguous_raises_and_is_caught(T, d_model, h):
    walk = core.reshape_walkthrough(1, T, d_model, h)
    assert walk.view_error is not None and "view" in walk.view_error
    assert walk.reshape_copies and walk.reshape_matches
    shapes = [s.shape for s in walk.steps]
    d_k = d_model // h
    assert shapes[1] == (1, T, h, d_k) and shapes[2] == (1, h, T, d_k)
    assert shapes[3] == (1, h, T, T) and shapes[-1] == (1, T, d_model)
    assert [s.contiguous for s in walk.steps] == [True, True, False, True, True, False, True]
    # the same error PyTorch raises on its own
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        torch.zeros(1, h, T, d_k).transpose(1, 2).view(1, T, d_model)


def test_every_reshape_step_and_shape_row_has_its_words_in_the_content_file():
    walk = core.reshape_walkthrough(1, 5, 32, 4)
    rows = [r.key for r in value_width_walkthrough(1, 5, 32, 4, 8).rows]
    assert [s.key for s in walk.steps] == list(choices("multi_head", "reshape.steps"))
    assert rows == list(choices("multi_head", "value_width.rows"))  # same rows, same order
    last = walk.steps[-1]  # the page finds the merge step by its key
    assert last.key == "merge" and ".contiguous()" in last.code


def test_single_head_view_needs_no_copy():
    assert core.reshape_walkthrough(1, 5, 32, 1).view_error is None
    with pytest.raises(ValueError):
        core.reshape_walkthrough(1, 5, 32, 3)


# ----------------------------------------------------------------------------- the tired cat


def test_tired_cat_outputs():
    torch.testing.assert_close(core.tired_cat_one_head(0.5), torch.tensor([2.0, 2.0]).double())
    torch.testing.assert_close(core.tired_cat_one_head(1.0), torch.tensor(core.V_CAT).double())
    torch.testing.assert_close(core.tired_cat_one_head(0.0), torch.tensor(core.V_TIRED).double())
    torch.testing.assert_close(
        core.tired_cat_two_heads(1.0, 0.0), torch.tensor([4.0, 0.0, 0.0, 4.0]).double()
    )


@settings(max_examples=30, deadline=None)
@given(a=st.floats(0.0, 1.0))
def test_one_head_output_stays_on_the_segment(a):
    y = core.tired_cat_one_head(a)
    assert torch.isfinite(y).all()
    assert float(y.sum()) == pytest.approx(4.0)  # on the line x + y = 4
    # The weight is held as a float32 tensor: agree to float32 rounding, not float64's.
    torch.testing.assert_close(
        y,
        a * torch.tensor(core.V_CAT).double() + (1 - a) * torch.tensor(core.V_TIRED).double(),
        rtol=0,
        atol=1e-6,
    )


# ----------------------------------------------------------------------------- d_v ≠ d_k


@pytest.mark.parametrize(
    "batch,T_q,T_k,d_k,d_v",
    [((), 6, 6, 8, 3), ((2, 3), 5, 7, 4, 16), ((1, 8), 10, 10, 64, 32), ((2,), 1, 9, 5, 1)],
)
@pytest.mark.parametrize("causal", [False, True])
def test_attention_with_d_v_other_than_d_k_matches_sdpa(batch, T_q, T_k, d_k, d_v, causal):
    g = torch.Generator().manual_seed(d_k * 100 + d_v)
    q = torch.randn(*batch, T_q, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(*batch, T_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(*batch, T_k, d_v, generator=g, dtype=torch.float64)
    mask = torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q) if causal else None
    r = attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert r.output.shape == (*batch, T_q, d_v)  # the values' width, not d_k
    assert r.weights.shape == (*batch, T_q, T_k)
    torch.testing.assert_close(r.output, ref)


@pytest.mark.parametrize("d_q,d_k", [(8, 4), (4, 8), (64, 65)])
def test_attention_refuses_queries_and_keys_of_different_widths(d_q, d_k):
    q, k, v = torch.randn(2, 5, d_q), torch.randn(2, 5, d_k), torch.randn(2, 5, d_k)
    with pytest.raises(ValueError, match="q and k must share d_k"):
        attention(q, k, v)
    with pytest.raises(RuntimeError):  # PyTorch's own kernel refuses them too
        F.scaled_dot_product_attention(q, k, v)


@pytest.mark.parametrize("T,d_model,h,d_v", [(10, 512, 8, 32), (3, 64, 4, 16), (5, 48, 1, 7)])
def test_value_width_walkthrough_shapes_and_agreement(T, d_model, h, d_v):
    w = value_width_walkthrough(1, T, d_model, h, d_v)
    d_k = d_model // h
    assert (w.d_k, w.d_v) == (d_k, d_v)
    shapes = {r.code: r.shape for r in w.rows}
    assert shapes["q = split(x @ W_q)"] == shapes["k = split(x @ W_k)"] == (1, h, T, d_k)
    assert shapes["v = split(x @ W_v)"] == (1, h, T, d_v)
    assert shapes["q @ k.transpose(-2, -1)"] == (1, h, T, T)
    assert w.head_output == shapes["softmax(scores) @ v"] == (1, h, T, d_v)
    assert w.merged == (1, T, h * d_v) and w.W_o == (h * d_v, d_model)
    assert w.output == (1, T, d_model)
    assert w.sdpa_max_diff < 1e-5
    assert "q and k must share d_k" in w.mismatch_error
    assert f"q (1, {h}, {T}, {d_k})" in w.mismatch_error


def test_value_width_walkthrough_with_equal_widths_still_shows_the_error():
    w = value_width_walkthrough(1, 4, 64, 4, 16)  # d_v = d_k = 16
    assert "q and k must share d_k" in w.mismatch_error
    with pytest.raises(ValueError):
        value_width_walkthrough(1, 4, 64, 3, 16)
