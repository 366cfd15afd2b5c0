"""FlashAttention's trick in plain torch: attention one tile at a time, never the full T×T matrix.

Softmax needs the maximum and the sum over a *whole* row of scores, which seems to
force us to hold the row. The online softmax avoids that. For each query row keep

    m    the largest score seen so far        (the stable-softmax shift)
    l    Σ exp(s - m) over the keys seen so far
    acc  Σ exp(s - m) · v over the same keys

When a new block of keys arrives with a larger maximum m_new, everything kept so
far was measured against the old shift, so it is multiplied by exp(m - m_new)
before the new block is added. After the last block, acc / l is exactly
softmax(s) @ v: the same answer, up to float rounding.

Here the loop runs over (query block, key block) tiles in Python, so the only
score-sized buffers are one tile (block_q × block_k). A real kernel runs the same
loop inside one GPU kernel with the tile in on-chip SRAM.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import _check_mask, _check_qkv, default_scale


@dataclass(frozen=True)
class TileStep:
    """The state of one query block right after one tile was folded in."""

    index: int  # position in processing order, 0-based
    q_block: int  # which block of query rows
    k_block: int  # which block of key columns
    rows: tuple[int, int]  # query rows [start, stop)
    cols: tuple[int, int]  # key columns [start, stop)
    m: torch.Tensor  # (..., rows) running max of the scores seen so far
    l: torch.Tensor  # (..., rows) running Σ exp(s - m)
    out: torch.Tensor  # (..., rows, d_v) acc / l: the answer if no more keys came


@dataclass(frozen=True)
class TraceState:
    """Every row's state after the first `step` tiles; NaN where a row has not started."""

    m: torch.Tensor  # (..., T_q)
    l: torch.Tensor  # (..., T_q)
    out: torch.Tensor  # (..., T_q, d_v)
    current: TileStep | None  # the tile processed last (None before the first)


def _normalise(acc: torch.Tensor, l: torch.Tensor) -> torch.Tensor:
    """acc / l, with 0 for rows that have seen no allowed key yet (l = 0), like `attention`."""
    safe = torch.where(l > 0, l, torch.ones_like(l))
    return torch.where((l > 0)[..., None], acc / safe[..., None], 0.0)  # (..., rows, d_v)


def _check_blocks(block_q: int, block_k: int) -> None:
    for name, b in (("block_q", block_q), ("block_k", block_k)):
        if not isinstance(b, int) or b < 1:
            raise ValueError(f"{name} must be a positive integer; got {b!r}")


def _mask_tile(s_tile, rows, cols, causal: bool, mask, work) -> torch.Tensor:
    """One (..., bq, bk) score tile with the future (causal) and the mask applied."""
    (q0, q1), (k0, k1) = rows, cols
    if causal and k1 - 1 > q0:  # the tile crosses the diagonal: hide its future part
        i = torch.arange(q0, q1, device=s_tile.device)[:, None]  # (bq, 1)
        j = torch.arange(k0, k1, device=s_tile.device)[None, :]  # (1, bk)
        s_tile = s_tile.masked_fill(j > i, float("-inf"))
    if mask is not None:
        m_tile = mask[..., q0:q1, k0:k1]  # (..., bq, bk)
        if m_tile.dtype == torch.bool:
            s_tile = s_tile.masked_fill(~m_tile, float("-inf"))
        else:
            s_tile = s_tile + m_tile.to(work)
    return s_tile


def _online_softmax_step(m, l, acc, s_tile, v_blk):
    """Fold one tile into the running row max m, row sum l and unnormalised output acc."""
    m_new = torch.maximum(m, s_tile.amax(dim=-1))  # (..., bq)
    # A row that has met only masked keys still has max -inf; shift it by 0 so
    # exp(-inf - shift) is a clean 0 instead of exp(nan).
    shift = torch.where(m_new == float("-inf"), torch.zeros_like(m_new), m_new)
    p = torch.exp(s_tile - shift[..., None])  # (..., bq, bk), every entry <= 1
    rescale = torch.exp(m - shift)  # (..., bq): old statistics re-expressed for new max
    l = rescale * l + p.sum(dim=-1)  # (..., bq)
    acc = rescale[..., None] * acc + p @ v_blk  # (..., bq, d_v)
    return m_new, l, acc


def tiled_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    block_q: int = 64,
    block_k: int = 64,
    scale: float | None = None,
    causal: bool = False,
    trace: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, list[TileStep]]:
    """softmax(q kᵀ · scale + mask) v, computed tile by tile with an online softmax.

    q (..., T_q, d_k), k (..., T_k, d_k), v (..., T_k, d_v); same conventions as
    `attention` (bool mask: True = may attend; float mask is added; a row with no
    allowed key gives zeros). `causal=True` lets query i see keys 0..i (aligned
    top-left like F.scaled_dot_product_attention) and skips tiles that lie wholly
    in the future. Any T works: the last block in each direction may be short.

    Returns the output (..., T_q, d_v); with `trace=True`, also the list of
    TileStep in processing order (keep T small: each step stores its rows' state).
    """
    _check_qkv(q, k, v)
    _check_blocks(block_q, block_k)
    T_q, d_k = q.shape[-2], q.shape[-1]
    T_k, d_v = k.shape[-2], v.shape[-1]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    if mask is not None:
        _check_mask(mask, torch.Size((*batch, T_q, T_k)))
        mask = mask.expand(*batch, T_q, T_k)  # a view with stride 0 where broadcast: no copy
    s = default_scale(d_k) if scale is None else scale
    # Half precision inputs are accumulated in float32, as the real kernels do.
    work = torch.float32 if q.dtype in (torch.float16, torch.bfloat16) else q.dtype
    dev = q.device

    out = torch.empty((*batch, T_q, d_v), dtype=q.dtype, device=dev)  # (..., T_q, d_v)
    steps: list[TileStep] = []
    for qi, q0 in enumerate(range(0, T_q, block_q)):
        q1 = min(q0 + block_q, T_q)
        q_blk = q[..., q0:q1, :].to(work)  # (..., bq, d_k)
        m = torch.full((*batch, q1 - q0), float("-inf"), dtype=work, device=dev)  # (..., bq)
        l = torch.zeros((*batch, q1 - q0), dtype=work, device=dev)  # (..., bq)
        acc = torch.zeros((*batch, q1 - q0, d_v), dtype=work, device=dev)  # (..., bq, d_v)
        for ki, k0 in enumerate(range(0, T_k, block_k)):
            if causal and k0 > q1 - 1:
                break  # this key block and all later ones are in every row's future
            k1 = min(k0 + block_k, T_k)
            k_blk = k[..., k0:k1, :].to(work)  # (..., bk, d_k)
            v_blk = v[..., k0:k1, :].to(work)  # (..., bk, d_v)
            s_tile = (q_blk @ k_blk.transpose(-2, -1)) * s  # (..., bq, bk): the only score buffer
            s_tile = _mask_tile(s_tile, (q0, q1), (k0, k1), causal, mask, work)
            m, l, acc = _online_softmax_step(m, l, acc, s_tile, v_blk)
            if trace:  # each step keeps its rows' state: the walkthrough replays it
                steps.append(TileStep(len(steps), qi, ki, (q0, q1), (k0, k1), m.clone(),
                                      l.clone(), _normalise(acc, l)))  # fmt: skip
        out[..., q0:q1, :] = _normalise(acc, l).to(q.dtype)  # (..., bq, d_v)
    return (out, steps) if trace else out


def tile_grid(
    T_q: int, T_k: int, block_q: int, block_k: int, causal: bool = False
) -> list[tuple[int, int, bool]]:
    """Every (q_block, k_block) tile and whether `tiled_attention` visits it (causal skips some)."""
    tiles = []
    for qi, q0 in enumerate(range(0, T_q, block_q)):
        q1 = min(q0 + block_q, T_q)
        for ki, k0 in enumerate(range(0, T_k, block_k)):
            tiles.append((qi, ki, not (causal and k0 > q1 - 1)))
    return tiles


def scores_computed(steps: list[TileStep]) -> int:
    """How many scores q·k the tiled loop computed: the area of every tile it visited.

    Masked entries inside a visited tile are computed too (and then thrown away); only
    tiles skipped whole (causal, wholly in the future) save work.
    """
    return sum((st.rows[1] - st.rows[0]) * (st.cols[1] - st.cols[0]) for st in steps)


def trace_state(steps: list[TileStep], step: int, T_q: int) -> TraceState:
    """Each row's (m, l, out) after the first `step` tiles of a trace (0 = nothing done yet).

    Rows whose query block has not started are NaN, so a chart leaves them blank.
    """
    if not steps:
        raise ValueError("empty trace")
    if not 0 <= step <= len(steps):
        raise ValueError(f"step must be in [0, {len(steps)}]; got {step}")
    first = steps[0]
    batch, d_v = first.m.shape[:-1], first.out.shape[-1]
    dtype, dev = first.m.dtype, first.m.device
    m = torch.full((*batch, T_q), float("nan"), dtype=dtype, device=dev)  # (..., T_q)
    l = torch.full((*batch, T_q), float("nan"), dtype=dtype, device=dev)  # (..., T_q)
    out = torch.full((*batch, T_q, d_v), float("nan"), dtype=dtype, device=dev)  # (..., T_q, d_v)
    # Each TileStep holds its block's full state, so the latest step per block is enough.
    for st in steps[:step]:
        r0, r1 = st.rows
        m[..., r0:r1] = st.m
        l[..., r0:r1] = st.l
        out[..., r0:r1, :] = st.out
    return TraceState(m=m, l=l, out=out, current=steps[step - 1] if step > 0 else None)
