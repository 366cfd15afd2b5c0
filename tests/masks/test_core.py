"""attn_core.lessons.masks: mask kinds, parsing, fill experiments, the broadcast bug, is_causal."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import DTYPES
from attn_core.lessons import masks as core


def grid(rows: list[str]) -> torch.Tensor:
    """Hand-drawn mask: '1' may attend, '.' may not."""
    return torch.tensor([[ch == "1" for ch in r] for r in rows])


# ----------------------------------------------------------------------------- builders
HAND = {
    "none": ({}, ["1111", "1111", "1111", "1111"]),
    "causal": ({}, ["1...", "11..", "111.", "1111"]),
    "sliding-window": ({"window": 2}, ["1...", "11..", ".11.", "..11"]),
    "prefix-LM": ({"prefix": 2}, ["11..", "11..", "111.", "1111"]),
    "block-diagonal": ({"lengths": (2, 1, 1)}, ["11..", "11..", "..1.", "...1"]),
    "custom": ({"cells": [(0, 3), (3, 3)]}, ["1..1", "11..", "111.", "111."]),
}


@pytest.mark.parametrize("kind", list(HAND))
def test_each_kind_matches_a_hand_drawn_mask(kind):
    opts, rows = HAND[kind]
    keep = core.build_mask(kind, 4, **opts)
    assert keep.shape == (1, 4, 4) and keep.dtype == torch.bool
    assert torch.equal(keep[0], grid(rows))


def test_padding_gives_one_mask_per_example_on_the_keys():
    keep = core.build_mask("padding", 4, lengths=(2, 4, 1))
    assert keep.shape == (3, 4, 4)
    assert torch.equal(keep[0], grid(["11.."] * 4))
    assert torch.equal(keep[1], grid(["1111"] * 4))
    assert torch.equal(keep[2], grid(["1..."] * 4))


def test_block_diagonal_causal_segments_and_shapes():
    keep = core.build_mask("block-diagonal", 5, lengths=(3, 2), segments_causal=True)[0]
    assert torch.equal(keep, grid(["1....", "11...", "111..", "...1.", "...11"]))
    # a shortfall becomes a last segment, an excess is cut: always T x T
    for lengths in [(1,), (2, 2), (9, 9)]:
        assert core.build_mask("block-diagonal", 6, lengths=lengths).shape == (1, 6, 6)


def test_prefix_lm_is_bidirectional_prefix_then_causal():
    T, p = 7, 3
    keep = core.build_mask("prefix-LM", T, prefix=p)[0]
    assert keep[:p, :p].all()  # the prefix sees itself both ways
    assert keep[:, :p].all()  # everyone reads the prefix
    assert torch.equal(keep[p:, p:], torch.ones(T - p, T - p, dtype=torch.bool).tril())
    assert not keep[:p, p:].any()  # the prefix never reads the continuation
    assert torch.equal(
        core.build_mask("prefix-LM", T, prefix=0)[0], core.build_mask("causal", T)[0]
    )


def test_window_at_least_T_is_plain_causal():
    assert torch.equal(core.build_mask("sliding-window", 5, window=9), core.build_mask("causal", 5))


def test_unknown_kind_raises():
    with pytest.raises(ValueError, match="unknown mask"):
        core.build_mask("diagonal", 4)
    assert len(core.MASK_KINDS) == 7


def test_empty_rows_found_in_any_batch_element():
    assert core.empty_rows(core.build_mask("causal", 5)) == []
    assert core.empty_rows(core.custom_mask(4, [(0, 0), (2, 0), (2, 1), (2, 2)])) == [0, 2]


# ----------------------------------------------------------------------------- parsing
REPAIRS = ("non_numeric", "too_long", "not_positive", "dropped_extra", "used_default")


@pytest.mark.parametrize(
    "text,T,lengths,field",
    [
        ("5,3,7", 8, [5, 3, 7], None),
        (" 5 ; 3  7 ", 8, [5, 3, 7], None),
        ("9,2", 8, [8, 2], "too_long"),
        ("0,-4,3", 8, [1, 1, 3], "not_positive"),
        ("abc,3,1e3,4.5", 8, [3], "non_numeric"),
        ("", 8, [5, 3, 7], "used_default"),
        ("x,y", 4, [4, 3, 4], "used_default"),
        (",".join(["2"] * 12), 8, [2] * core.MAX_EXAMPLES, "dropped_extra"),
    ],
)
def test_parse_lengths_repairs_and_says_why(text, T, lengths, field):
    p = core.parse_lengths(text, T)
    assert p.lengths == lengths
    assert all(1 <= n <= T for n in p.lengths)
    repaired = {f for f in REPAIRS if getattr(p, f)}  # the page words one note per repair
    assert field in repaired if field else not repaired


def test_parse_custom_toggles_and_rejects():
    p = core.parse_custom("2-1,zz,1-9,2-1,0-3, ,3-0", 4)
    assert p.cells == {(0, 3), (3, 0)}  # 2-1 listed twice cancels out
    assert p.bad == ["zz"] and p.outside == ["1-9"]  # the page words one note for each
    assert core.parse_custom("", 4).cells == frozenset()


@settings(max_examples=40, deadline=None)
@given(
    T=st.integers(2, 12),
    cells=st.sets(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=20),
    i=st.integers(0, 11),
    j=st.integers(0, 11),
)
def test_custom_encoding_round_trips_and_toggle_is_an_involution(T, cells, i, j):
    cells = {(a, b) for a, b in cells if a < T and b < T}
    i, j = i % T, j % T
    assert core.parse_custom(core.encode_custom(cells), T).cells == cells
    once = core.parse_custom(core.toggle_cell(cells, i, j), T).cells
    assert once ^ cells == {(i, j)}
    assert core.parse_custom(core.toggle_cell(once, i, j), T).cells == cells
    keep = core.custom_mask(T, cells)
    assert int((keep != core.build_mask("causal", T)[0]).sum()) == len(cells)


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 20), min_size=1, max_size=8), T=st.integers(1, 48))
def test_fit_segments_tiles_exactly_T(lengths, T):
    seg = core.fit_segments(lengths, T)
    assert sum(seg) == T and all(n >= 1 for n in seg)


def test_batch_lengths_cycles_and_clips():
    assert core.batch_lengths([5, 3, 7], 5, 6) == [5, 3, 6, 5, 3]
    assert core.batch_lengths([0], 2, 4) == [1, 1]


# ----------------------------------------------------------------------------- fills
def test_fill_values_and_what_each_dtype_stores():
    assert core.fill_value("finfo.min", torch.float16) == -65504.0
    assert core.stored_fill("-1e9", torch.float16) == -math.inf  # overflows silently
    assert core.stored_fill("-1e9", torch.float32) == -1e9
    assert core.stored_fill("-1e4", torch.bfloat16) == -9984.0  # bfloat16 has 8 bits of mantissa
    assert core.stored_fill("finfo.min", torch.float64) == torch.finfo(torch.float64).min
    with pytest.raises(ValueError):
        core.fill_value("-1", torch.float32)


def test_masked_fill_with_minus_1e9_raises_in_float16_only():
    assert "overflow" in core.replace_fill_error("-1e9", torch.float16)
    assert core.replace_fill_error("-1e9", torch.float32) is None
    assert core.replace_fill_error("-inf", torch.float16) is None
    assert core.replace_fill_error("-1e4", torch.float16) is None


@pytest.mark.parametrize("fill", core.FILLS)
def test_plain_path_matches_sdpa_when_no_row_is_empty(fill):
    q, k, v = core.demo_qkv(2, 6, 6, seed=3)
    keep = core.build_mask("padding", 6, lengths=(4, 6))
    r = core.apply_fill(q, k, v, keep, fill, torch.float64)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    torch.testing.assert_close(r.output, ref)
    torch.testing.assert_close(r.safe_output, ref)
    assert not r.nan_rows.any() and r.max_leak < 1e-12


def test_minus_inf_with_an_empty_row_gives_nan_and_the_safe_path_zeros():
    q, k, v = core.demo_qkv(1, 4, 4)
    keep = core.custom_mask(4, [(0, 0)])[None]  # row 0 has no key
    r = core.apply_fill(q, k, v, keep, "-inf", torch.float32)
    assert r.nan_rows[0].tolist() == [True, False, False, False]
    assert torch.isnan(r.weights[0, 0]).all() and torch.isnan(r.output[0, 0]).all()
    assert torch.equal(r.safe_weights[0, 0], torch.zeros(4))
    assert torch.equal(r.safe_output[0, 0], torch.zeros(q.shape[-1], dtype=r.safe_output.dtype))
    # the plain softmax really is PyTorch's: same NaN from torch.softmax on the filled logits
    assert torch.isnan(torch.softmax(r.logits[0, 0], -1)).all()
    # a finite fill: no NaN, but the empty row puts all its weight on forbidden keys
    f = core.apply_fill(q, k, v, keep, "-1e9", torch.float32)
    assert not f.nan_rows.any() and f.empty_read
    torch.testing.assert_close(f.leaked[0, 0].item(), 1.0)


def test_minus_1e9_overflows_to_minus_inf_in_float16_and_brings_nan_back():
    q, k, v = core.demo_qkv(1, 4, 4)
    keep = core.custom_mask(4, [(0, 0)])[None]
    assert core.apply_fill(q, k, v, keep, "-1e9", torch.float16).nan_rows.any()
    assert not core.apply_fill(q, k, v, keep, "-1e9", torch.float32).nan_rows.any()


def test_minus_1e4_in_float16_leaks_when_logits_are_large():
    q, k, v = core.demo_qkv(1, 8, 8)
    keep = core.build_mask("causal", 8)
    leak = core.apply_fill(q, k, v, keep, "-1e4", torch.float16, logit_size=10_000)
    assert leak.max_leak > 0.5  # forbidden future keys take most of some row
    assert not leak.nan_rows.any()
    # same logits, -inf: exact; small logits, -1e4: exact too
    assert core.apply_fill(q, k, v, keep, "-inf", torch.float16, logit_size=10_000).max_leak == 0
    assert core.apply_fill(q, k, v, keep, "-1e4", torch.float16, logit_size=1).max_leak < 1e-6


def test_fill_outcomes_cover_every_fill_and_dtype():
    q, k, v = core.demo_qkv(1, 4, 4)
    keep = core.custom_mask(4, [(0, 0)])[None]
    out = core.fill_outcomes(q, k, v, keep, DTYPES)
    assert len(out) == len(core.FILLS) * len(DTYPES)
    by = {(o.fill, o.dtype): o for o in out}
    assert by[("-inf", "float32")].verdict == "nan"
    assert by[("-1e9", "float32")].verdict == "reads"
    assert by[("-1e9", "float16")].verdict == "nan" and by[("-1e9", "float16")].overflowed


# ----------------------------------------------------------------------------- broadcasting
def test_b_equal_t_q_runs_silently_and_gives_a_different_output():
    r = core.broadcast_lab(3, 3, 6, [2, 6, 4])
    assert r.torch_error is None and r.core_error is None
    assert r.row_source == [0, 1, 2]
    assert r.diff.max() > 1e-3  # wrong rows
    assert torch.all(r.diff.diagonal() == 0)  # row i of example i uses its own padding
    # what the bug computes is exactly SDPA with the mask read as (1, 1, B, T_k)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, n, 8, generator=g, dtype=torch.float64) for n in (3, 6, 6))
    bare = torch.arange(6) < torch.tensor([2, 6, 4])[:, None]  # (B, T_k)
    wrong = F.scaled_dot_product_attention(q, k, v, attn_mask=bare[None, None])
    right = F.scaled_dot_product_attention(q, k, v, attn_mask=bare[:, None, None, :])
    torch.testing.assert_close(r.wrong_out, wrong[:, 0])
    torch.testing.assert_close(r.right_out, right[:, 0])
    assert torch.equal(r.wrong_keep[1], bare)  # example 1, row i reads example i's padding


def test_b_different_from_t_q_raises_the_real_shape_error():
    r = core.broadcast_lab(3, 5, 6, [2, 6, 4])
    assert "must match the size" in r.torch_error
    assert "(B, 1, 1, T_k)" in r.core_error
    assert r.wrong_out is None and r.diff is None
    with pytest.raises(RuntimeError):
        torch.zeros(3, 2, 5, 6).masked_fill(torch.ones(3, 6, dtype=torch.bool), 0.0)


def test_batch_of_one_broadcasts_correctly_and_equal_lengths_hide_the_bug():
    assert core.broadcast_lab(1, 4, 6, [3]).diff.abs().max() == 0
    assert core.broadcast_lab(4, 4, 6, [3]).diff.abs().max() == 0  # every example length 3


# ----------------------------------------------------------------------------- cross-attention
def test_cross_attention_pads_keys_only_and_matches_sdpa():
    keep, w, used = core.cross_attention_demo(3, 6, [2, 6, 4])
    assert keep.shape == w.shape == (3, 3, 6) and used == [2, 6, 4]
    assert torch.all(w[~keep] == 0)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, 3, dtype=w.dtype))
    q, k, _ = core.demo_qkv(3, 3, 6)
    ref = torch.softmax(
        (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(~keep, float("-inf")), -1
    )
    torch.testing.assert_close(w, ref)


# ----------------------------------------------------------------------------- is_causal
def test_is_causal_equals_materialised_mask_and_reports_costs():
    c = core.causal_cost(64, h=2, d_k=16, repeats=1)
    assert c.max_diff < 1e-5
    assert c.ms_is_causal > 0 and c.ms_mask > 0
    assert c.mask_bytes == 64 * 64
    assert c.peak_mask is None and c.peak_is_causal is None  # CPU: no allocator counter


@pytest.mark.parametrize("logit_size", [1.0, 10_000.0])
def test_fill_outcomes_agree_with_apply_fill(logit_size):
    q, k, v = core.demo_qkv(2, 6, 6, seed=5)
    keep = core.custom_mask(6, [(0, 0), (3, 5), (4, 1)])[None].expand(2, -1, -1)
    for o in core.fill_outcomes(q, k, v, keep, DTYPES, logit_size=logit_size):
        r = core.apply_fill(q, k, v, keep, o.fill, DTYPES[o.dtype], logit_size=logit_size)
        assert o.nan_rows == int(r.nan_rows.sum())
        assert o.max_leak == pytest.approx(r.max_leak)
        assert o.empty_read == r.empty_read and o.stored == r.stored
