"""Scaled dot-product attention, written out so every intermediate can be shown.

    Attention(Q, K, V) = softmax(Q Kᵀ · scale / temperature + mask) V,  scale = 1/√d_k

`attention` is the explicit path the pages draw from; `fused_attention` is the
production path (PyTorch's fused kernel) that never materialises the weights.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass(frozen=True)
class AttentionResult:
    output: torch.Tensor  # (..., T_q, d_v)
    weights: torch.Tensor  # (..., T_q, T_k), after softmax and dropout
    scores: torch.Tensor  # (..., T_q, T_k), the logits softmax saw (scaled, tempered, masked)
    raw_scores: torch.Tensor  # (..., T_q, T_k), plain Q Kᵀ


def _check_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    def fail(why: str):
        shapes = f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        raise ValueError(f"{why}; got {shapes}")

    if q.dim() < 2 or k.dim() < 2 or v.dim() < 2:
        fail("q, k and v need at least 2 dims (..., T, d)")
    if q.shape[-1] != k.shape[-1]:
        fail("q and k must share d_k (last dim)")
    if k.shape[-2] != v.shape[-2]:
        fail("k and v must share T_k (second-to-last dim)")
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        try:
            torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        except RuntimeError:
            fail("batch dims of q, k and v do not broadcast")
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"q, k and v must share a dtype; got {q.dtype}, {k.dtype}, {v.dtype}")


def _check_mask(mask: torch.Tensor, scores_shape: torch.Size) -> None:
    try:
        out = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        out = None
    if out != scores_shape:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the scores' shape "
            f"{tuple(scores_shape)} (..., T_q, T_k); expand it explicitly, e.g. a padding "
            "mask to (B, 1, 1, T_k)"
        )


def default_scale(d_k: int) -> float:
    return 1.0 / math.sqrt(d_k)


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    temperature: float = 1.0,
    dropout_p: float = 0.0,
    training: bool = False,
    bias: torch.Tensor | None = None,
) -> AttentionResult:
    """Explicit scaled dot-product attention returning every intermediate.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v). `mask` broadcasts to
    (..., T_q, T_k): bool means True = may attend, a float mask is added to the
    logits. A query whose keys are all masked gets zero weights and zero output.
    `bias` (broadcasting to (..., T_q, T_k), e.g. ALiBi's distance penalty) is added to
    the scaled scores before the temperature divides them: logits = (s·QKᵀ + bias) / τ.
    """
    _check_qkv(q, k, v)
    if temperature <= 0 or not math.isfinite(temperature):
        raise ValueError(f"temperature must be a positive finite number; got {temperature}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1); got {dropout_p}")
    d_k = q.shape[-1]
    s = (default_scale(d_k) if scale is None else scale) / temperature

    raw = q @ k.transpose(-2, -1)  # (..., T_q, T_k)
    scores = raw * s  # one multiply for scale and temperature together
    if bias is not None:
        try:
            torch.broadcast_shapes(bias.shape, scores.shape)
        except RuntimeError:
            raise ValueError(
                f"bias of shape {tuple(bias.shape)} does not broadcast to the scores "
                f"{tuple(scores.shape)}"
            ) from None
        scores = scores + bias.to(scores.dtype) / temperature  # (..., T_q, T_k)
    empty = None  # (..., T_q, 1) True where a row has no key left to attend to
    if mask is not None:
        _check_mask(mask, scores.shape)
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, float("-inf"))
            empty = ~mask.any(dim=-1, keepdim=True)
        else:
            scores = scores + mask.to(scores.dtype)
            empty = scores.amax(dim=-1, keepdim=True) == float("-inf")

    w = torch.softmax(scores, dim=-1)  # (..., T_q, T_k); rows sum to 1
    if empty is not None:
        # softmax of an all -inf row is 0/0; a query that may see nothing reads nothing
        w = w.masked_fill(empty, 0.0)
    if training and dropout_p > 0.0:
        # survivors scale by 1/(1-p): rows sum to 1 only in expectation
        w = F.dropout(w, p=dropout_p, training=True)
    out = w @ v  # (..., T_q, d_v)
    return AttentionResult(output=out, weights=w, scores=scores, raw_scores=raw)


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """The production path: F.scaled_dot_product_attention, same conventions.

    It dispatches to a fused kernel (flash / memory-efficient / math) and never
    returns the weights. Fully masked rows are zeroed to match `attention`.
    """
    _check_qkv(q, k, v)
    if mask is not None:
        if is_causal:
            raise ValueError("pass either a mask or is_causal=True, not both")
        _check_mask(mask, torch.Size((*q.shape[:-1], k.shape[-2])))
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=is_causal, scale=scale
    )  # (..., T_q, d_v)
    if mask is not None:
        if mask.dtype == torch.bool:
            empty = ~mask.any(dim=-1, keepdim=True)
        else:
            empty = (mask == float("-inf")).all(dim=-1, keepdim=True)
        out = out.masked_fill(empty, 0.0)
    return out


INITS = ("gaussian", "layernorm")


def random_qkv(
    T: int,
    d_k: int,
    *,
    d_v: int | None = None,
    init: str = "gaussian",
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k (T, d_k) and v (T, d_v) drawn the way the derivation assumes.

    "gaussian": iid N(0, 1) components — the variance argument's exact premise.
    "layernorm": each vector then normalised to zero mean and unit variance over
    its components, like a LayerNorm output (components no longer independent).
    Drawn in float64 on the CPU from `seed`, so every device and precision sees
    the same numbers up to rounding.
    """
    if init not in INITS:
        raise ValueError(f"unknown init {init!r}; valid: {', '.join(INITS)}")
    g = torch.Generator().manual_seed(seed)
    d_v = d_k if d_v is None else d_v
    q = torch.randn(T, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(T, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(T, d_v, generator=g, dtype=torch.float64)
    if init == "layernorm" and d_k > 1:
        q = torch.nn.functional.layer_norm(q, (d_k,))
        k = torch.nn.functional.layer_norm(k, (d_k,))
    return tuple(x.to(device=device, dtype=dtype) for x in (q, k, v))  # type: ignore[return-value]
