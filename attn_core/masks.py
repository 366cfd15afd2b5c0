"""Boolean attention masks. Convention everywhere: True = this query may attend to this key."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def causal_mask(T_q: int, T_k: int | None = None, *, device=None) -> torch.Tensor:
    """(T_q, T_k) lower-triangular: query i sees keys 0..i.

    Aligned top-left like F.scaled_dot_product_attention(is_causal=True), so the
    two agree when T_q != T_k as well.
    """
    T_k = T_q if T_k is None else T_k
    if T_q < 1 or T_k < 1:
        raise ValueError(f"T_q and T_k must be >= 1; got {T_q}, {T_k}")
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()  # (T_q, T_k)


def padding_mask(lengths: Sequence[int] | torch.Tensor, T_k: int, *, device=None) -> torch.Tensor:
    """(B, 1, 1, T_k): example b may attend to its first lengths[b] keys.

    Already four-dimensional, so it broadcasts over heads and queries. Passing a
    bare (B, T_k) mask is the silent bug: it would line up as (1, 1, B, T_k).
    """
    lengths = torch.as_tensor(lengths, device=device).long()
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,); got shape {tuple(lengths.shape)}")
    if bool((lengths < 0).any()) or bool((lengths > T_k).any()):
        raise ValueError(f"every length must be in [0, {T_k}]; got {lengths.tolist()}")
    keep = torch.arange(T_k, device=lengths.device) < lengths[:, None]  # (B, T_k)
    return keep[:, None, None, :]  # (B, 1, 1, T_k)


def sliding_window_mask(T: int, window: int, *, device=None) -> torch.Tensor:
    """(T, T) causal band: query i sees keys i-window+1 .. i (itself included)."""
    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}")
    i = torch.arange(T, device=device)[:, None]
    j = torch.arange(T, device=device)[None, :]
    return (j <= i) & (i - j < window)  # (T, T)


def prefix_lm_mask(T: int, prefix: int, *, device=None) -> torch.Tensor:
    """(T, T): the first `prefix` positions see each other freely, the rest is causal."""
    if not 0 <= prefix <= T:
        raise ValueError(f"prefix must be in [0, {T}]; got {prefix}")
    m = causal_mask(T, device=device).clone()
    m[:, :prefix] = True  # every query may read the whole prefix
    return m  # (T, T)


def block_diagonal_mask(
    lengths: Sequence[int], *, causal: bool = False, device=None
) -> torch.Tensor:
    """(T, T) for packed sequences: tokens attend only within their own segment."""
    lengths = [int(n) for n in lengths]
    if not lengths or any(n < 1 for n in lengths):
        raise ValueError(f"segment lengths must be positive; got {lengths}")
    seg = torch.repeat_interleave(
        torch.arange(len(lengths), device=device), torch.tensor(lengths, device=device)
    )  # (T,) segment id per position
    m = seg[:, None] == seg[None, :]  # (T, T)
    if causal:
        m &= causal_mask(len(seg), device=device)
    return m
