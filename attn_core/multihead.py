"""Multi-head attention, with grouped-query (GQA) and multi-query (MQA) variants.

d_model is split into h heads of width d_k = d_model / h. Each head runs its own
softmax over its own subspace; concatenating and projecting with W_o recombines
them. K and V may have fewer heads (num_kv_heads) shared by groups of query heads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from .attention import attention, fused_attention


def valid_head_counts(d_model: int, max_heads: int = 64) -> list[int]:
    """The divisors of d_model up to max_heads: the only head counts that split it evenly."""
    return [h for h in range(1, min(d_model, max_heads) + 1) if d_model % h == 0]


@dataclass(frozen=True)
class MHAResult:
    q: torch.Tensor  # (B, h, T_q, d_k)
    k: torch.Tensor  # (B, h, T_k, d_k), K heads already repeated for GQA/MQA
    v: torch.Tensor  # (B, h, T_k, d_k)
    scores: torch.Tensor | None  # (B, h, T_q, T_k) logits; None on the fused path
    weights: torch.Tensor | None  # (B, h, T_q, T_k); None on the fused path
    head_outputs: torch.Tensor  # (B, h, T_q, d_k), after any head_mask
    concat: torch.Tensor  # (B, T_q, d_model), heads side by side before W_o
    output: torch.Tensor  # (B, T_q, d_model)


class MultiHeadAttention(nn.Module):
    def __init__(
        self,
        d_model: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
    ):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        if d_model < 1 or num_heads < 1 or num_kv_heads < 1:
            raise ValueError(
                f"d_model, num_heads and num_kv_heads must be positive; "
                f"got {d_model}, {num_heads}, {num_kv_heads}"
            )
        if d_model % num_heads:
            raise ValueError(
                f"num_heads={num_heads} does not divide d_model={d_model}; "
                f"valid head counts: {valid_head_counts(d_model)}"
            )
        if num_heads % num_kv_heads:
            raise ValueError(
                f"num_kv_heads={num_kv_heads} does not divide num_heads={num_heads}; "
                f"valid choices: {[g for g in range(1, num_heads + 1) if num_heads % g == 0]}"
            )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1); got {dropout}")
        self.d_model = d_model
        self.h = num_heads
        self.h_kv = num_kv_heads
        self.d_k = d_model // num_heads
        self.dropout = dropout
        # One matrix per role; heads are carved out by reshaping, not by separate layers.
        self.W_q = nn.Linear(d_model, d_model, bias=bias)
        self.W_k = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.W_v = nn.Linear(d_model, num_kv_heads * self.d_k, bias=bias)
        self.W_o = nn.Linear(d_model, d_model, bias=bias)

    def _split(self, x: torch.Tensor, heads: int) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, heads, self.d_k).transpose(1, 2)  # (B, heads, T, d_k)

    def _check(self, query, key, value) -> None:
        shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
        if query.dim() != 3 or key.dim() != 3 or value.dim() != 3:
            raise ValueError(f"expected (B, T, d_model) inputs; got {shapes}")
        if not (query.shape[-1] == key.shape[-1] == value.shape[-1] == self.d_model):
            raise ValueError(f"last dim must be d_model={self.d_model}; got {shapes}")
        if key.shape[:2] != value.shape[:2] or query.shape[0] != key.shape[0]:
            raise ValueError(f"batch sizes and key/value lengths must match; got {shapes}")

    def forward_detailed(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        fused: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> MHAResult:
        """Everything a page wants to draw. `head_mask` (h,) scales each head's output
        (0 prunes a head) before the concatenation."""
        self._check(query, key, value)
        B, T_q, _ = query.shape
        q = self._split(self.W_q(query), self.h)  # (B, h, T_q, d_k)
        k = self._split(self.W_k(key), self.h_kv)  # (B, h_kv, T_k, d_k)
        v = self._split(self.W_v(value), self.h_kv)  # (B, h_kv, T_k, d_k)
        if self.h_kv != self.h:
            g = self.h // self.h_kv  # query heads per K/V head
            k = k.repeat_interleave(g, dim=1)  # (B, h, T_k, d_k)
            v = v.repeat_interleave(g, dim=1)  # (B, h, T_k, d_k)
        p = self.dropout if self.training else 0.0
        if fused:
            o = fused_attention(q, k, v, mask, dropout_p=p)  # (B, h, T_q, d_k)
            scores = weights = None
        else:
            r = attention(q, k, v, mask, dropout_p=p, training=self.training)
            o, scores, weights = r.output, r.scores, r.weights
        if head_mask is not None:
            o = o * head_mask.to(o.dtype).view(1, self.h, 1, 1)  # (B, h, T_q, d_k)
        # transpose leaves a non-contiguous layout; .view needs contiguous memory
        concat = o.transpose(1, 2).contiguous().view(B, T_q, self.d_model)  # (B, T_q, d_model)
        return MHAResult(q, k, v, scores, weights, o, concat, self.W_o(concat))

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        fused: bool = False,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(output (B, T_q, d_model), weights (B, h, T_q, T_k) or None when fused)."""
        r = self.forward_detailed(query, key, value, mask, fused=fused, head_mask=head_mask)
        return r.output, r.weights
