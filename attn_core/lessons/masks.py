"""The masks page's laboratory: every mask shape, what the fill value does, and the broadcast bug.

Convention as in `masks.py`: a boolean `keep` is True where a query may attend to a key.
The builders themselves live in `masks.py`; this module composes them, parses the
page's compact text inputs (lengths "5,3,7", custom cells "2-5,0-1"), and runs the
experiments that make each failure visible: NaN rows, leaked weight, a fill value
that overflows, and a padding mask that broadcasts onto the wrong axis.
"""

from __future__ import annotations

import math
import re
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch

from ..attention import attention, default_scale, fused_attention
from ..masks import (
    block_diagonal_mask,
    causal_mask,
    padding_mask,
    prefix_lm_mask,
    sliding_window_mask,
)
from ..softmax import stable_softmax

MASK_KINDS = (
    "none",
    "causal",
    "padding",
    "sliding-window",
    "prefix-LM",
    "block-diagonal",
    "custom",
)
FILLS = ("-inf", "-1e9", "finfo.min", "-1e4")  # finfo.min: the dtype's most negative finite
MAX_EXAMPLES = 8  # at most this many lengths in a batch (keeps the pictures readable)


# ----------------------------------------------------------------------------- text inputs
@dataclass(frozen=True)
class ParsedLengths:
    """The lengths the page uses, and each kind of repair made (the page words the notes)."""

    lengths: list[int]  # what the page uses: every entry in [1, T]
    non_numeric: list[str]  # dropped
    too_long: list[int]  # clipped to T
    not_positive: list[int]  # raised to 1
    dropped_extra: int  # entries beyond MAX_EXAMPLES
    used_default: bool  # nothing usable was left


def parse_lengths(text: str, T: int, default: Sequence[int] = (5, 3, 7)) -> ParsedLengths:
    """'5,3,7' -> [5, 3, 7], repairing what cannot be used and recording why.

    A length above T is clipped to T (an example cannot be longer than the padded
    batch); zero or negative becomes 1 (an example with no tokens would leave every
    query with nothing to attend to); a non-number is dropped.
    """
    parts = [p.strip() for p in re.split(r"[,\s;]+", str(text)) if p.strip()]
    lengths: list[int] = []
    non_numeric: list[str] = []
    too_long: list[int] = []
    not_positive: list[int] = []
    for p in parts:
        if not re.fullmatch(r"[+-]?\d{1,9}", p):
            non_numeric.append(p)
            continue
        n = int(p)
        if n > T:
            too_long.append(n)
            n = T
        elif n < 1:
            not_positive.append(n)
            n = 1
        lengths.append(n)
    extra = max(0, len(lengths) - MAX_EXAMPLES)
    lengths = lengths[:MAX_EXAMPLES]
    used_default = not lengths
    if used_default:
        lengths = [min(max(int(n), 1), T) for n in default]
    return ParsedLengths(lengths, non_numeric, too_long, not_positive, extra, used_default)


def fit_segments(lengths: Sequence[int], T: int) -> list[int]:
    """Packed segment lengths that tile exactly T tokens.

    Segments past T are cut; a shortfall becomes one last segment, as when the
    packer's final document fills the rest of the row.
    """
    out: list[int] = []
    left = T
    for n in lengths:
        if left == 0:
            break
        take = min(int(n), left)
        out.append(take)
        left -= take
    if left:
        out.append(left)
    return out


@dataclass(frozen=True)
class ParsedCells:
    """The flipped cells, and the items that were ignored (the page words the notes)."""

    cells: frozenset[tuple[int, int]]  # (query, key) pairs inside the T x T grid
    bad: list[str]  # items that are not "query-key"
    outside: list[str]  # well formed but outside the grid


def parse_custom(text: str, T: int) -> ParsedCells:
    """'2-5,0-1' -> {(2, 5), (0, 1)}: the cells flipped relative to the causal mask.

    A cell listed twice flips twice, i.e. not at all (the encoding is a toggle list).
    """
    cells: set[tuple[int, int]] = set()
    bad: list[str] = []
    outside: list[str] = []
    for p in (p.strip() for p in str(text).split(",")):
        if not p:
            continue
        m = re.fullmatch(r"(\d{1,4})-(\d{1,4})", p)
        if not m:
            bad.append(p)
            continue
        i, j = int(m[1]), int(m[2])
        if i >= T or j >= T:
            outside.append(p)
            continue
        cells ^= {(i, j)}
    return ParsedCells(frozenset(cells), bad, outside)


def encode_custom(cells: Iterable[tuple[int, int]]) -> str:
    """The compact URL form: sorted 'query-key' pairs joined by commas."""
    return ",".join(f"{i}-{j}" for i, j in sorted(set(cells)))


def toggle_cell(cells: Iterable[tuple[int, int]], i: int, j: int) -> str:
    """Flip one cell and return the new URL text."""
    return encode_custom(set(cells) ^ {(int(i), int(j))})


def custom_mask(T: int, cells: Iterable[tuple[int, int]], *, device=None) -> torch.Tensor:
    """(T, T): the causal mask with the listed cells flipped (allowed <-> blocked)."""
    keep = causal_mask(T, device=device).clone()
    for i, j in cells:
        keep[i, j] = ~keep[i, j]
    return keep


# ----------------------------------------------------------------------------- the chosen mask
def build_mask(
    kind: str,
    T: int,
    *,
    window: int = 3,
    prefix: int = 3,
    lengths: Sequence[int] = (5, 3, 7),
    segments_causal: bool = False,
    cells: Iterable[tuple[int, int]] = (),
    device=None,
) -> torch.Tensor:
    """(B, T, T) boolean keep-mask for one of MASK_KINDS.

    B is len(lengths) for "padding" (one mask per example, padding on the keys);
    every other kind shares one mask across the batch, so B = 1.
    "block-diagonal" packs the lengths as segments into the T tokens (see fit_segments).
    """
    if kind not in MASK_KINDS:
        raise ValueError(f"unknown mask {kind!r}; valid: {', '.join(MASK_KINDS)}")
    if kind == "none":
        keep = torch.ones(T, T, dtype=torch.bool, device=device)
    elif kind == "causal":
        keep = causal_mask(T, device=device)
    elif kind == "padding":
        m = padding_mask(list(lengths), T, device=device)  # (B, 1, 1, T)
        return m.expand(-1, -1, T, -1)[:, 0]  # (B, T, T): every query row sees the same keys
    elif kind == "sliding-window":
        keep = sliding_window_mask(T, window, device=device)
    elif kind == "prefix-LM":
        keep = prefix_lm_mask(T, prefix, device=device)
    elif kind == "block-diagonal":
        keep = block_diagonal_mask(fit_segments(lengths, T), causal=segments_causal, device=device)
    else:
        keep = custom_mask(T, cells, device=device)
    return keep[None]  # (1, T, T)


def empty_rows(keep: torch.Tensor) -> list[int]:
    """Query rows (of the last two dims, any batch element) that may attend to no key."""
    empty = ~keep.any(-1)  # (..., T_q) True where the row has no key left
    return torch.nonzero(empty.reshape(-1, keep.shape[-2]).any(0)).flatten().tolist()


# ----------------------------------------------------------------------------- fill values
def fill_value(fill: str, dtype: torch.dtype) -> float:
    """The number a fill name asks for. 'finfo.min' is the dtype's most negative finite value."""
    if fill not in FILLS:
        raise ValueError(f"unknown fill {fill!r}; valid: {', '.join(FILLS)}")
    return float(torch.finfo(dtype).min) if fill == "finfo.min" else float(fill)


def stored_fill(fill: str, dtype: torch.dtype) -> float:
    """What the dtype actually holds for that fill: -1e9 in float16 is already -inf."""
    return float(torch.tensor(fill_value(fill, dtype), dtype=torch.float64).to(dtype))


def min_fill_overflow(dtype: torch.dtype) -> float:
    """The score s from which finfo.min + s rounds to -inf in `dtype`: minus half the
    spacing of the dtype's numbers at its top (the tie rounds away, to -inf).

    Checked against torch's own addition before it is returned.
    """
    fi = torch.finfo(dtype)
    top = torch.tensor(fi.max, dtype=dtype)
    gap = float(top - torch.nextafter(top, torch.zeros((), dtype=dtype)))
    s = -gap / 2
    low = torch.tensor(fi.min, dtype=dtype)
    if not (torch.isinf(low + s) and torch.isfinite(low + torch.nextafter(
            torch.tensor(s, dtype=dtype), torch.zeros((), dtype=dtype)))):  # fmt: skip
        raise ArithmeticError(f"finfo.min + {s} does not overflow exactly there in {dtype}")
    return s


def replace_fill_error(fill: str, dtype: torch.dtype) -> str | None:
    """The error `scores.masked_fill(~keep, fill)` raises, or None when it works.

    masked_fill with a Python number checks that the number fits the dtype, so the
    classic -1e9 fails loudly in float16, whereas building a float mask tensor
    (the additive style) overflows to -inf without a word.
    """
    x = torch.zeros(2, dtype=dtype)
    try:
        x.masked_fill(torch.tensor([True, False]), fill_value(fill, dtype))
    except RuntimeError as e:
        return str(e)
    return None


def demo_qkv(
    B: int, T_q: int, T_k: int, d_k: int = 8, *, seed: int = 0, device=None
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """float64 q (B, T_q, d_k), k and v (B, T_k, d_k): iid N(0, 1), reproducible from seed."""
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T_q, d_k, generator=g, dtype=torch.float64)
    k = torch.randn(B, T_k, d_k, generator=g, dtype=torch.float64)
    v = torch.randn(B, T_k, d_k, generator=g, dtype=torch.float64)
    return q.to(device), k.to(device), v.to(device)


@dataclass(frozen=True)
class FillResult:
    stored: float  # the fill as the dtype holds it
    logits: torch.Tensor  # (B, T_q, T_k) scores + additive mask, in dtype
    weights: torch.Tensor  # (B, T_q, T_k) plain torch.softmax of those logits (may hold NaN)
    output: torch.Tensor  # (B, T_q, d_v) weights @ v
    safe_weights: torch.Tensor  # (B, T_q, T_k) boolean mask + attn_core.stable_softmax
    safe_output: torch.Tensor  # (B, T_q, d_v)
    empty: torch.Tensor  # (B, T_q) bool: the mask leaves this query no key at all
    nan_rows: torch.Tensor  # (B, T_q) bool: the plain softmax returned NaN
    leaked: torch.Tensor  # (B, T_q) float64: weight on keys the mask forbids (NaN where NaN)
    out_diff: torch.Tensor  # (B, T_q) float64: max |plain - safe| output (NaN where NaN)
    keep: torch.Tensor  # (B, T_q, T_k) bool: the mask, broadcast to the logits

    @property
    def max_leak(self) -> float:
        """Largest forbidden weight in a row that does have allowed keys (0 if none)."""
        rows = ~self.empty & ~self.nan_rows
        return float(self.leaked[rows].max()) if bool(rows.any()) else 0.0

    @property
    def empty_read(self) -> bool:
        """An empty row spread its weight over forbidden keys instead of reading nothing."""
        rows = self.empty & ~self.nan_rows
        return bool(rows.any()) and float(self.leaked[rows].max()) > 0.5

    @property
    def outrun(self) -> torch.Tensor:
        """(B, T_q) bool: a forbidden logit, fill and all, is still the row's largest.

        Softmax then gives most of the row's weight to keys the mask forbids: a
        finite fill only shifts those logits, and here the shift was not enough.
        """
        forbidden = self.logits.masked_fill(self.keep, float("-inf")).amax(-1)  # (B, T_q)
        allowed = self.logits.masked_fill(~self.keep, float("-inf")).amax(-1)
        return (forbidden > allowed) & self.keep.any(-1) & (~self.keep).any(-1)


def _scores(q: torch.Tensor, k: torch.Tensor, logit_size: float, dtype) -> torch.Tensor:
    """q·kᵀ/√d_k · logit_size formed in float64, then rounded once to `dtype`."""
    scale = logit_size * default_scale(q.shape[-1])
    return (q.double() @ k.double().transpose(-2, -1) * scale).to(dtype)  # (B, T_q, T_k)


def _plain_softmax(scores: torch.Tensor, keep: torch.Tensor, fill: str, dtype):
    """The additive float mask and a plain softmax: (stored fill, logits, weights)."""
    fill_t = torch.tensor(fill_value(fill, dtype), dtype=torch.float64).to(dtype)  # may be -inf
    bias = torch.where(keep, torch.zeros((), dtype=dtype), fill_t.to(scores.device))
    logits = scores + bias  # (B, T_q, T_k); s + fill can itself overflow to -inf
    return float(fill_t), logits, torch.softmax(logits, dim=-1)  # all -inf row: 0/0 = NaN


def apply_fill(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    keep: torch.Tensor,
    fill: str,
    dtype: torch.dtype,
    *,
    logit_size: float = 1.0,
) -> FillResult:
    """Mask by adding a float mask (0 where allowed, `fill` where not), then plain softmax.

    This is the additive style (what a float attn_mask does), so a finite fill only
    *shifts* a forbidden logit down: if the logits are as large as the fill, the
    forbidden key can still win weight. The scores are q·kᵀ/√d_k times logit_size,
    formed in float64 and then rounded to `dtype`, so every precision starts from
    the same numbers. The safe path masks the *same* rounded scores with the boolean
    mask (-inf) and uses attn_core.stable_softmax, which gives an empty row zeros.
    """
    scores = _scores(q, k, logit_size, dtype)  # (B, T_q, T_k)
    keep = keep.to(scores.device)
    stored, logits, w = _plain_softmax(scores, keep, fill, dtype)
    v = v.to(device=scores.device, dtype=dtype)
    out = w @ v  # (B, T_q, d_v)
    safe_w = stable_softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
    safe_out = safe_w @ v  # (B, T_q, d_v)
    nan_rows = torch.isnan(w).any(-1)  # (B, T_q)
    leaked = (w.double() * (~keep).double()).sum(-1)  # (B, T_q)
    diff = (out.double() - safe_out.double()).abs().amax(-1)  # (B, T_q)
    return FillResult(
        stored=stored,
        logits=logits,
        weights=w,
        output=out,
        safe_weights=safe_w,
        safe_output=safe_out,
        empty=~keep.any(-1).expand(nan_rows.shape),
        nan_rows=nan_rows,
        leaked=leaked.masked_fill(nan_rows, float("nan")),
        out_diff=diff.masked_fill(nan_rows, float("nan")),
        keep=keep.expand(logits.shape),
    )


@dataclass(frozen=True)
class FillOutcome:
    fill: str
    dtype: str
    stored: float  # the fill as the dtype holds it
    nan_rows: int  # rows the plain softmax turned into NaN
    max_leak: float  # largest forbidden weight in a row that has allowed keys
    empty_read: bool  # an empty row read forbidden keys instead of nothing
    overflowed: bool  # a finite fill became -inf when stored
    empty_rows: int = 0  # rows the mask leaves with no key at all
    nan_empty: int = 0  # of the NaN rows, those that are empty rows
    inf_scores: int = 0  # allowed scores already +-inf in this dtype (before any fill)
    max_finite: float = math.inf  # the dtype's largest finite number

    @property
    def verdict(self) -> str:
        """One word for the overview grid: nan, leak, reads (empty rows), or ok."""
        if self.nan_rows:
            return "nan"
        if self.max_leak > 1e-3:
            return "leak"
        if self.empty_read:
            return "reads"
        return "ok"


def fill_outcomes(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    keep: torch.Tensor,
    dtypes: dict[str, torch.dtype],
    *,
    logit_size: float = 1.0,
) -> list[FillOutcome]:
    """What apply_fill's plain softmax does for every fill and every dtype: the overview grid.

    Weights only (no outputs, no safe path), and the scores rounded once per dtype.
    """
    out = []
    empty = ~keep.any(-1)  # (B, T_q)
    for name, dtype in dtypes.items():
        scores = _scores(q, k, logit_size, dtype)  # (B, T_q, T_k)
        keep_d = keep.to(scores.device)
        for fill in FILLS:
            stored, _, w = _plain_softmax(scores, keep_d, fill, dtype)
            nan_rows = torch.isnan(w).any(-1).cpu()  # (B, T_q)
            leaked = (w.double() * (~keep_d).double()).sum(-1).cpu()  # (B, T_q)
            partial, lonely = ~empty & ~nan_rows, empty & ~nan_rows
            inf_scores = int((scores.isinf() & keep_d).sum())
            out.append(
                FillOutcome(
                    fill=fill,
                    dtype=name,
                    stored=stored,
                    nan_rows=int(nan_rows.sum()),
                    max_leak=float(leaked[partial].max()) if bool(partial.any()) else 0.0,
                    empty_read=bool(lonely.any()) and float(leaked[lonely].max()) > 0.5,
                    overflowed=math.isinf(stored) and fill != "-inf",
                    empty_rows=int(empty.sum()),
                    nan_empty=int((nan_rows & empty).sum()),
                    inf_scores=inf_scores,
                    max_finite=float(torch.finfo(dtype).max),
                )
            )
    return out


# ----------------------------------------------------------------------------- broadcasting bug
@dataclass(frozen=True)
class BroadcastResult:
    lengths: list[int]  # (B,) key lengths of the batch
    torch_error: str | None  # PyTorch's own message when (B, T_k) cannot line up
    core_error: str | None  # attn_core.attention's message for the same call
    right_keep: torch.Tensor  # (B, T_q, T_k) what each example should see
    wrong_keep: torch.Tensor | None  # (B, T_q, T_k) what the bare (B, T_k) mask applies
    row_source: list[int] | None  # query row i is masked with example row_source[i]'s padding
    right_out: torch.Tensor  # (B, T_q, d_v) attention with the (B, 1, 1, T_k) mask
    wrong_out: torch.Tensor | None  # (B, T_q, d_v) attention with the bare (B, T_k) mask
    diff: torch.Tensor | None  # (B, T_q) max |wrong - right| over heads and features


def batch_lengths(lengths: Sequence[int], B: int, T_k: int) -> list[int]:
    """B key lengths: the given ones repeated in turn, each clipped to [1, T_k]."""
    base = [min(max(int(n), 1), T_k) for n in lengths] or [T_k]
    return [base[b % len(base)] for b in range(B)]


def broadcast_lab(
    B: int, T_q: int, T_k: int, lengths: Sequence[int], *, h: int = 2, d_k: int = 8, seed: int = 0
) -> BroadcastResult:
    """Pass a (B, T_k) padding mask straight into (B, h, T_q, T_k) scores.

    Broadcasting aligns shapes from the right, so (B, T_k) is read as (1, 1, B, T_k):
    the batch axis lands on the query axis. B != T_q (and B != 1) raises; B == T_q
    runs, and query row i of every example is masked with example i's padding.
    """
    lengths = batch_lengths(lengths, B, T_k)
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, h, T_q, d_k, generator=g, dtype=torch.float64)  # (B, h, T_q, d_k)
    k = torch.randn(B, h, T_k, d_k, generator=g, dtype=torch.float64)  # (B, h, T_k, d_k)
    v = torch.randn(B, h, T_k, d_k, generator=g, dtype=torch.float64)  # (B, h, T_k, d_v)
    right = padding_mask(lengths, T_k)  # (B, 1, 1, T_k): correct, explicit
    bare = right[:, 0, 0, :]  # (B, T_k): the tempting shape
    right_out = attention(q, k, v, right).output  # (B, h, T_q, d_v)
    right_keep = right[:, 0].expand(B, T_q, T_k)  # (B, T_q, T_k)

    scores = q @ k.transpose(-2, -1)  # (B, h, T_q, T_k)
    torch_error = core_error = None
    try:
        scores.masked_fill(~bare, float("-inf"))  # the line people actually write
    except RuntimeError as e:
        torch_error = str(e)
    try:
        wrong_out = attention(q, k, v, bare).output  # (B, h, T_q, d_v)
    except ValueError as e:
        core_error, wrong_out = str(e), None
    wrong_keep = row_source = diff = None
    if wrong_out is not None:
        # what the bare mask really applies: (1, 1, B, T_k) -> example b, query row i reads
        # bare[i] (or bare[0] for every row when B == 1, which happens to be right)
        wrong_keep = bare.expand(T_q, T_k)[None].expand(B, T_q, T_k)  # (B, T_q, T_k)
        row_source = list(range(T_q)) if T_q == B else [0] * T_q
        diff = (wrong_out - right_out).abs().amax(dim=(1, 3))  # (B, T_q)
        wrong_out = wrong_out[:, 0]  # (B, T_q, d_v) head 0, for display
    return BroadcastResult(
        lengths=lengths,
        torch_error=torch_error,
        core_error=core_error,
        right_keep=right_keep,
        wrong_keep=wrong_keep,
        row_source=row_source,
        right_out=right_out[:, 0],  # (B, T_q, d_v) head 0, for display
        wrong_out=wrong_out,
        diff=diff,
    )


# ----------------------------------------------------------------------------- cross-attention
def cross_attention_demo(
    T_q: int, T_k: int, lengths: Sequence[int], *, d_k: int = 8, seed: int = 0, device=None
):
    """Decoder queries (T_q) over encoder keys (T_k) with padding on the keys only.

    Returns (keep (B, T_q, T_k), weights (B, T_q, T_k), lengths). No query row is
    ever empty: every example keeps at least one key.
    """
    B = len(lengths)
    lengths = batch_lengths(lengths, B, T_k)
    q, k, v = demo_qkv(B, T_q, T_k, d_k, seed=seed, device=device)
    m = padding_mask(lengths, T_k, device=q.device)  # (B, 1, 1, T_k)
    r = attention(q[:, None], k[:, None], v[:, None], m)  # one head: (B, 1, T_q, T_k)
    return m[:, 0].expand(B, T_q, T_k), r.weights[:, 0], lengths


# ----------------------------------------------------------------------------- is_causal vs mask
@dataclass(frozen=True)
class CausalCost:
    T: int
    h: int
    d_k: int
    dtype: str
    device: str
    max_diff: float  # max |is_causal - materialised| over the output
    ms_is_causal: float  # median wall time per call
    ms_mask: float
    mask_bytes: int  # the materialised (T, T) boolean mask
    peak_is_causal: int | None  # peak bytes allocated during the call (CUDA only)
    peak_mask: int | None


def _timed(fn, device: torch.device, repeats: int) -> float:
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()  # warm-up: kernel selection, allocator
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def _peak(fn, device: torch.device) -> int | None:
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    torch.cuda.synchronize(device)
    return int(torch.cuda.max_memory_allocated(device) - base)


def causal_cost(
    T: int,
    *,
    h: int = 8,
    d_k: int = 64,
    dtype: torch.dtype = torch.float32,
    device=None,
    repeats: int = 5,
    seed: int = 0,
) -> CausalCost:
    """F.scaled_dot_product_attention with is_causal=True against a materialised causal mask.

    Same maths, so the outputs agree to rounding; the mask version must build and
    read a (T, T) tensor, which is what the fused kernels avoid.
    """
    device = torch.device(device or "cpu")
    g = torch.Generator().manual_seed(seed)
    q, k, v = (
        torch.randn(1, h, T, d_k, generator=g).to(device=device, dtype=dtype) for _ in range(3)
    )  # (1, h, T, d_k)

    def with_flag():
        return fused_attention(q, k, v, is_causal=True)

    def with_mask():
        return fused_attention(q, k, v, causal_mask(T, device=device))  # builds (T, T) each call

    with torch.no_grad():
        a, b = with_flag(), with_mask()
        max_diff = float((a.double() - b.double()).abs().max())
        ms_flag = _timed(with_flag, device, repeats)
        ms_mask = _timed(with_mask, device, repeats)
        peak_flag, peak_mask = _peak(with_flag, device), _peak(with_mask, device)
    return CausalCost(
        T=T,
        h=h,
        d_k=d_k,
        dtype=str(dtype).removeprefix("torch."),
        device=str(device),
        max_diff=max_diff,
        ms_is_causal=ms_flag,
        ms_mask=ms_mask,
        mask_bytes=T * T,  # bool: one byte per entry
        peak_is_causal=peak_flag,
        peak_mask=peak_mask,
    )


# ----------------------------------------------------------------------------- exercises
EMPTY_ROW_OUTCOMES = ("nan", "zeros", "spread")


def empty_row_weights(
    T: int, fill: str, dtype: torch.dtype, *, logit_size: float = 1.0
) -> tuple[str, list[float]]:
    """Causal mask with cell 0-0 flipped, so query 0 may read no key: what plain softmax gives it.

    Returns ("nan" | "zeros" | "spread", row 0's weights as floats). "spread": the row still
    sums to one, over keys it must not read (a finite fill only shifts the logits).
    """
    keep = custom_mask(T, {(0, 0)})[None]  # (1, T, T): row 0 has nothing left
    q, k, v = demo_qkv(1, T, T)
    w = apply_fill(q, k, v, keep, fill, dtype, logit_size=logit_size).weights[0, 0].double()
    if bool(torch.isnan(w).any()):
        verdict = "nan"
    elif float(w.abs().max()) < 1e-6:
        verdict = "zeros"
    else:
        verdict = "spread"
    return verdict, [float(x) for x in w]


def broadcast_verdict(B: int, T_q: int, T_k: int, lengths: Sequence[int]) -> tuple[str, int]:
    """What the bare (B, T_k) padding mask does: ("raises" | "right" | "wrong", rows changed).

    "rows changed" counts (example, query) pairs whose output differs from the correct
    (B, 1, 1, T_k) mask's; it is 0 unless the call runs.
    """
    lab = broadcast_lab(B, T_q, T_k, lengths)
    if lab.torch_error is not None or lab.diff is None:
        return "raises", 0
    changed = int((lab.diff > 1e-9).sum())
    return ("wrong" if changed else "right"), changed
