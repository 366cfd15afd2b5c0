"""Where position enters attention (/positions): added codes, RoPE and ALiBi.

Attention itself is blind to order: permute the tokens and every output is permuted the
same way. A model gets order from one of three places, all built here on the same
`attention()` path as every other page:

- added to x before the projections: `sinusoidal_positions` (or a learned table);
- a rotation of q and k inside the scores: `rope` (RoFormer), so q_mᵀk_n depends on m − n;
- a bias on the scores: `alibi_bias` (ALiBi), a per-head penalty −slope·|m − n|.

Conventions: positions are integers 0…T−1; RoPE rotates *interleaved* pairs of the last
dimension, (x_0, x_1), (x_2, x_3), …, pair i by the angle position · base^(−2i/d), as in the
RoFormer paper (GPT-NeoX and Llama pair dimension i with i + d/2 instead: the same rotation
with the dimensions listed in another order).
"""

from __future__ import annotations

import math

import torch

ROPE_BASE = 10_000.0  # RoFormer's and Llama's base θ
SINUSOID_BASE = 10_000.0  # "Attention is all you need"


# ----------------------------------------------------------------------------- added codes
def sinusoidal_positions(T: int, d_model: int, base: float = SINUSOID_BASE) -> torch.Tensor:
    """(T, d_model) float64: the original transformer's code, sin at the even dimensions and
    cos at the odd ones, pair i turning at the frequency base^(−2i/d_model) per position.

    The dot product of the codes of positions m and n is Σ_i cos((m − n)·ω_i): it depends on
    the offset alone, which is why an added code can carry relative position at all.
    """
    if T < 0 or d_model < 1:
        raise ValueError(f"need T >= 0 and d_model >= 1; got T={T}, d_model={d_model}")
    pos = torch.arange(T, dtype=torch.float64).unsqueeze(1)  # (T, 1)
    i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = pos / (base ** (i / d_model))  # (T, ceil(d/2))
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe  # (T, d_model)


# ----------------------------------------------------------------------------- RoPE
def rope_frequencies(d: int, base: float = ROPE_BASE) -> torch.Tensor:
    """(d/2,) float64: how many radians pair i turns per position, base^(−2i/d)."""
    if d < 2 or d % 2:
        raise ValueError(f"RoPE rotates pairs: d must be even and >= 2; got {d}")
    if not (base > 1.0 and math.isfinite(base)):
        raise ValueError(f"the base must be a finite number above 1; got {base}")
    i = torch.arange(d // 2, dtype=torch.float64)  # (d/2,)
    return base ** (-2.0 * i / d)


def rope(x: torch.Tensor, positions: torch.Tensor, base: float = ROPE_BASE) -> torch.Tensor:
    """Rotate each interleaved pair (x_2i, x_2i+1) of the last dimension by positions · ω_i.

    x (..., T, d) with d even; positions (T,) (or anything broadcasting to x's (..., T)).
    Returns x's shape and dtype. A rotation keeps every vector's length, and rotating q by
    mθ and k by nθ leaves q·k a function of (m − n)θ: the score sees the offset only.
    """
    d = x.shape[-1]
    w = rope_frequencies(d, base).to(x.device)  # (d/2,)
    angle = positions.to(x.device, torch.float64).unsqueeze(-1) * w  # (..., T, d/2)
    cos, sin = torch.cos(angle).to(x.dtype), torch.sin(angle).to(x.dtype)
    x0, x1 = x[..., 0::2], x[..., 1::2]  # (..., T, d/2) each: the pairs' two coordinates
    out = torch.empty_like(x)
    out[..., 0::2] = x0 * cos - x1 * sin
    out[..., 1::2] = x0 * sin + x1 * cos
    return out


# ----------------------------------------------------------------------------- ALiBi
def _alibi_power_of_two(n: int) -> list[float]:
    start = 2.0 ** (-8.0 / n)  # the paper's geometric sequence: start, start², …, start^n
    return [start ** (i + 1) for i in range(n)]


def alibi_slopes(h: int) -> torch.Tensor:
    """(h,) float64: ALiBi's per-head slopes (Press et al., 2022).

    For h a power of two: 2^(−8/h), 2^(−16/h), …, 2^(−8) (h = 8 gives 1/2, 1/4, …, 1/256).
    Otherwise the paper's rule: the slopes of the power of two n just below h, then every
    other slope of 2n until there are h.
    """
    if h < 1:
        raise ValueError(f"need at least one head; got h={h}")
    n = 1 << (h.bit_length() - 1)  # the largest power of two <= h
    slopes = _alibi_power_of_two(n)
    if n < h:
        slopes += _alibi_power_of_two(2 * n)[0::2][: h - n]
    return torch.tensor(slopes, dtype=torch.float64)


def alibi_bias(T_q: int, T_k: int, h: int) -> torch.Tensor:
    """(h, T_q, T_k) float64: −slope_head · |m − n|, added to the scaled scores.

    Query i sits at position T_k − T_q + i (the last T_q of the T_k positions, as when a
    decoder's new tokens attend to a cache), key j at position j.
    """
    if T_q < 1 or T_k < T_q:
        raise ValueError(f"need 1 <= T_q <= T_k; got T_q={T_q}, T_k={T_k}")
    m = torch.arange(T_k - T_q, T_k, dtype=torch.float64).unsqueeze(1)  # (T_q, 1)
    n = torch.arange(T_k, dtype=torch.float64).unsqueeze(0)  # (1, T_k)
    dist = (m - n).abs()  # (T_q, T_k)
    return -alibi_slopes(h).view(h, 1, 1) * dist  # (h, T_q, T_k)
