"""Softmax three ways: the textbook one that overflows, the stable one, and its Jacobian."""

from __future__ import annotations

import torch


def naive_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """exp(x) / sum(exp(x)) exactly as written on the board.

    Kept on purpose: once exp overflows (x above ~88.7 in float32, ~11.1 in
    float16) the numerator and denominator are both inf and the result is NaN.
    """
    e = torch.exp(x)
    return e / e.sum(dim=dim, keepdim=True)


def stable_softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Softmax after subtracting the row maximum.

    Shift invariance (softmax(x + c) = softmax(x)) makes the subtraction free;
    it keeps every exponent <= 0 so nothing overflows. A row that is entirely
    -inf (every key masked) gives zeros instead of 0/0 = NaN.
    """
    m = x.amax(dim=dim, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # all -inf row: shift by 0
    e = torch.exp(x - m)
    s = e.sum(dim=dim, keepdim=True)
    return torch.where(s > 0, e / s.clamp_min(torch.finfo(x.dtype).tiny), 0.0)


def softmax_jacobian(p: torch.Tensor) -> torch.Tensor:
    """d softmax / d logits for every row: diag(p) - p pᵀ.

    (..., n) -> (..., n, n). Its entries are bounded by p_i (1 - p_i), so a
    one-hot row has a Jacobian of exactly zero: no gradient flows back.
    """
    return torch.diag_embed(p) - p.unsqueeze(-1) * p.unsqueeze(-2)  # (..., n, n)


def entropy(p: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Shannon entropy in nats, with 0·log 0 = 0."""
    logp = torch.where(p > 0, torch.log(p.clamp_min(torch.finfo(p.dtype).tiny)), 0.0)
    return -(p * logp).sum(dim=dim)
