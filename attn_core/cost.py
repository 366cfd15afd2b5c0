"""The lesson's cost model, in plain Python ints so nothing overflows.

MACs are multiply-accumulates (1 MAC = 2 FLOPs). d is d_model.
"""

from __future__ import annotations

import torch

from .device import dtype_bytes


def projection_macs(T: int, d: int) -> int:
    """Q, K, V and output projections: four (T × d) @ (d × d) products = 4·T·d²."""
    return 4 * T * d * d


def attention_macs(T: int, d: int) -> int:
    """Q Kᵀ (T × d × T) plus weights @ V (T × T × d) = 2·T²·d, summed over heads."""
    return 2 * T * T * d


def crossover_T(d: int) -> int:
    """T at which the two are equal: 4·T·d² = 2·T²·d  =>  T = 2d."""
    return 2 * d


def attention_probs_bytes(
    batch: int, heads: int, T: int, dtype: str | torch.dtype, layers: int = 1
) -> int:
    """Bytes of the stored T×T probabilities kept for the backward pass."""
    return batch * heads * T * T * dtype_bytes(dtype) * layers


def kv_cache_bytes(
    batch: int, T: int, layers: int, num_kv_heads: int, d_head: int, dtype: str | torch.dtype
) -> int:
    """Bytes of a K and a V cache: 2 · batch · T · layers · kv_heads · d_head · bytes."""
    return 2 * batch * T * layers * num_kv_heads * d_head * dtype_bytes(dtype)


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; binary units like the lesson (512 MiB, 6 GiB)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")
