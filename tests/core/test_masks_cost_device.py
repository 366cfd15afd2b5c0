"""Mask builders against hand-written cases, the cost model, device selection."""

import pytest
import torch

from attn_core import (
    attention_macs,
    attention_probs_bytes,
    block_diagonal_mask,
    causal_mask,
    crossover_T,
    format_bytes,
    kv_cache_bytes,
    padding_mask,
    parse_dtype,
    pick_device,
    prefix_lm_mask,
    projection_macs,
    sliding_window_mask,
)

T, F = True, False


def test_causal_mask():
    assert causal_mask(3).tolist() == [[T, F, F], [T, T, F], [T, T, T]]
    assert causal_mask(2, 3).tolist() == [[T, F, F], [T, T, F]]
    with pytest.raises(ValueError):
        causal_mask(0)


def test_padding_mask_shape_and_values():
    m = padding_mask([3, 1], 4)
    assert m.shape == (2, 1, 1, 4)
    assert m[:, 0, 0].tolist() == [[T, T, T, F], [T, F, F, F]]
    for bad in ([5], [-1]):
        with pytest.raises(ValueError):
            padding_mask(bad, 4)


def test_sliding_window_is_causal_and_includes_self():
    assert sliding_window_mask(4, 2).tolist() == [
        [T, F, F, F],
        [T, T, F, F],
        [F, T, T, F],
        [F, F, T, T],
    ]
    assert torch.equal(sliding_window_mask(5, 5), causal_mask(5))
    assert torch.equal(sliding_window_mask(5, 1), torch.eye(5, dtype=torch.bool))


def test_prefix_lm_and_block_diagonal():
    assert prefix_lm_mask(4, 2).tolist() == [
        [T, T, F, F],
        [T, T, F, F],
        [T, T, T, F],
        [T, T, T, T],
    ]
    assert torch.equal(prefix_lm_mask(4, 0), causal_mask(4))
    assert block_diagonal_mask([2, 1]).tolist() == [[T, T, F], [T, T, F], [F, F, T]]
    assert block_diagonal_mask([2, 2], causal=True)[1].tolist() == [T, T, F, F]


def test_lesson_cost_figures():
    assert attention_probs_bytes(32, 8, 1024, "float16") == 512 * 2**20  # 512 MiB
    assert attention_probs_bytes(32, 8, 1024, torch.float16, layers=12) == 6 * 2**30
    assert attention_probs_bytes(32, 8, 2048, "float16") == 2 * 2**30
    assert attention_probs_bytes(32, 8, 2048, "float16", layers=12) == 24 * 2**30
    assert crossover_T(512) == 1024
    assert projection_macs(1024, 512) == attention_macs(1024, 512)
    assert projection_macs(100, 512) > attention_macs(100, 512)
    assert projection_macs(4096, 512) < attention_macs(4096, 512)


def test_kv_cache_mqa_saves_a_factor_h():
    mha = kv_cache_bytes(1, 4096, 32, 32, 128, "float16")
    mqa = kv_cache_bytes(1, 4096, 32, 1, 128, "float16")
    gqa = kv_cache_bytes(1, 4096, 32, 8, 128, "float16")
    assert mha == 2 * 4096 * 32 * 32 * 128 * 2
    assert mha // mqa == 32 and mha // gqa == 4


def test_format_bytes():
    assert format_bytes(512 * 2**20) == "512 MiB"
    assert format_bytes(6 * 2**30) == "6 GiB"
    assert format_bytes(10) == "10 B"


def test_pick_device(monkeypatch):
    monkeypatch.delenv("ATTN_DEVICE", raising=False)
    expected = "cuda" if torch.cuda.is_available() else None
    d = pick_device()
    if expected:
        assert d.type == "cuda"
    assert pick_device("cpu").type == "cpu"
    monkeypatch.setenv("ATTN_DEVICE", "cpu")
    assert pick_device().type == "cpu"
    monkeypatch.setenv("ATTN_DEVICE", "tpu")
    with pytest.raises(ValueError, match="cuda, mps, cpu"):
        pick_device()
    with pytest.raises(ValueError, match="valid names"):
        pick_device("gpu0")


def test_parse_dtype():
    assert parse_dtype("bfloat16") is torch.bfloat16
    with pytest.raises(ValueError, match="float8"):
        parse_dtype("float8")
