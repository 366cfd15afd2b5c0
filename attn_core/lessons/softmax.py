"""Softmax and values: how the weights mix the values, and the traps around softmax.

Everything here works on one query at a time over a handful of tokens, small
enough to print every intermediate number:

    raw_i = q · k_i  →  s_i = raw_i / √d_k  →  e^{s_i}  →  w_i = e^{s_i} / Σ_j e^{s_j}
    z = Σ_i w_i v_i

The worked example runs in float64 on the CPU so the printed digits are exact;
the stability demo runs in the precision the reader picks, because that is the
point of it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ..attention import attention, random_qkv
from ..device import parse_dtype
from ..softmax import entropy, naive_softmax, stable_softmax

F64 = torch.float64

# The lesson's example: three tokens with 2-D values, a 3-D query. The keys are
# ours, picked so the weights land near the lesson's [0.074, 0.620, 0.306]
# (raw scores 0, 3.7, 2.5; the third key component is ignored because q_3 = 0).
LESSON_Q = (1.0, 2.0, 0.0)
LESSON_K = ((0.0, 0.0, 1.0), (1.7, 1.0, 0.0), (0.5, 1.0, 0.5))
LESSON_V = ((2.0, 0.0), (0.0, 4.0), (1.0, 1.0))
LESSON_WEIGHTS = (0.074, 0.620, 0.306)

# Starting tables for the page: (token names, q, keys, values).
SOFTMAX_EXAMPLES: dict[str, tuple] = {
    "lesson": (("t1", "t2", "t3"), LESSON_Q, LESSON_K, LESSON_V),
    # raw scores -2, 3, 1: fine for softmax, but sum normalisation gives weight -1 to t1
    "negative": (
        ("t1", "t2", "t3"),
        LESSON_Q,
        ((0.0, -1.0, 0.0), (1.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
        LESSON_V,
    ),
    # one key matches the query far better than the rest: nearly one-hot weights
    "peaked": (
        ("t1", "t2", "t3", "t4"),
        LESSON_Q,
        ((3.0, 3.0, 0.0), (0.0, 0.0, 1.0), (-1.0, 0.0, 1.0), (1.0, -1.0, 0.0)),
        ((2.0, 0.0), (0.0, 4.0), (1.0, 1.0), (3.0, 3.0)),
    ),
}

AGREE_TOL = 0.01  # naive and stable weights "agree" when no weight differs by this much

# Scores that overflow a naive float32 softmax (e^102 ≈ 2e44 > 3.4e38).
STABILITY_SCORES = (100.0, 101.0, 102.0)

# Table entries stay within ±CELL_LIMIT: then |q·k| ≤ 3·10·10 = 300, and with a
# shift of up to ±50 every e^s printed on the page is a finite float64.
CELL_LIMIT = 10.0
MIN_TOKENS, MAX_TOKENS = 3, 6


# ---------------------------------------------------------------- the table


class ExampleError(ValueError):
    """A table cell the example cannot use; says where and why."""

    def __init__(
        self, reason: str, *, row: int | None = None, column: str | None = None, cell: Any = None
    ):
        self.reason, self.row, self.column = reason, row, column
        self.cell = None if cell is None else str(cell)
        where = ", ".join(
            p for p in (f"row {row}" if row else "", f"column {column}" if column else "") if p
        )
        super().__init__(f"{where}: {reason}" if where else reason)


def _is_missing(cell: Any) -> bool:
    if cell is None:
        return True
    if isinstance(cell, float) and math.isnan(cell):
        return True  # pandas fills a freshly added row with NaN
    return isinstance(cell, str) and cell.strip() == ""


def parse_number(cell: Any) -> float:
    """One table cell -> a finite float within ±CELL_LIMIT, or ValueError saying why."""
    if _is_missing(cell):
        raise ValueError("the cell is empty; every entry needs a number")
    text = str(cell).strip().replace("−", "-")  # accept the typographic minus sign
    try:
        x = float(text)
    except ValueError:
        hint = " (use a dot for decimals)" if "," in text else ""
        raise ValueError(f"this is not a number{hint}") from None
    if math.isnan(x):
        raise ValueError("NaN is not a number you can attend with")
    if math.isinf(x):
        raise ValueError("infinite entries are not allowed; use a finite number")
    if abs(x) > CELL_LIMIT:
        raise ValueError(
            f"too large: keep every entry between {-CELL_LIMIT:g} and {CELL_LIMIT:g} "
            "(the numerical-stability section shows what huge scores do)"
        )
    return x


@dataclass(frozen=True)
class WorkedExample:
    q: torch.Tensor  # (d_k,)
    k: torch.Tensor  # (T, d_k)
    v: torch.Tensor  # (T, d_v)


def _parse_cells(columns: Sequence[str], cells: Sequence[Any], row: int | None) -> list[float]:
    """One row of the table as numbers; a bad cell raises, naming its row and column."""
    out = []
    for name, cell in zip(columns, cells, strict=True):
        try:
            out.append(parse_number(cell))
        except ValueError as e:
            raise ExampleError(str(e), row=row, column=name, cell=cell) from None
    return out


def parse_example(
    q_cells: Sequence[Any],
    rows: Sequence[Sequence[Any]],
    *,
    q_columns: Sequence[str],
    k_columns: Sequence[str],
    v_columns: Sequence[str],
) -> WorkedExample:
    """Validate the editable tables: one query row, and one (key | value) row per token.

    Raises ExampleError naming the first bad cell (1-based row, column name).
    """
    d_k = len(k_columns)
    if len(q_cells) != len(q_columns) or len(q_columns) != d_k:
        raise ExampleError(f"the query needs exactly {d_k} entries")
    if not MIN_TOKENS <= len(rows) <= MAX_TOKENS:
        raise ExampleError(
            f"the table has {len(rows)} tokens; use {MIN_TOKENS} to {MAX_TOKENS} rows"
        )
    q = _parse_cells(q_columns, q_cells, row=None)
    columns = [*k_columns, *v_columns]
    table = []
    for i, row in enumerate(rows, start=1):
        if len(row) != len(columns):
            raise ExampleError(f"expected {len(columns)} entries", row=i)
        texts = [str(c).strip().replace("−", "-").lower() for c in row]
        if all(t in ("-inf", "-infinity") for t in texts):
            raise ExampleError(
                "every entry is -inf. A score of -inf is how a mask hides a key (see the "
                "Masks page); here each entry must be a finite number",
                row=i,
            )
        table.append(_parse_cells(columns, row, row=i))
    t = torch.tensor(table, dtype=F64)  # (T, d_k + d_v)
    return WorkedExample(q=torch.tensor(q, dtype=F64), k=t[:, :d_k], v=t[:, d_k:])


# ---------------------------------------------------------------- the steps


@dataclass(frozen=True)
class MixingSteps:
    """Every intermediate of one query's attention, as 1-D tensors over the T tokens."""

    raw: torch.Tensor  # (T,) q · k_i
    scores: torch.Tensor  # (T,) raw / √d_k
    exp: torch.Tensor | None  # (T,) e^{s_i}; None for sum normalisation (no exp there)
    weights: torch.Tensor  # (T,)
    contributions: torch.Tensor  # (T, d_v) w_i v_i
    output: torch.Tensor  # (d_v,) Σ_i w_i v_i
    mean: torch.Tensor  # (d_v,) uniform weights 1/T: the plain average
    inside_hull: bool  # is the output a point of the values' convex hull?


def mix_values(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """z = Σ_i w_i v_i: (..., T) weights and (T, d_v) values -> (..., d_v)."""
    return weights @ v


def _steps(raw, scores, exp, w, v) -> MixingSteps:
    T = v.shape[0]
    out = mix_values(w, v)  # (d_v,)
    return MixingSteps(
        raw=raw,
        scores=scores,
        exp=exp,
        weights=w,
        contributions=w[:, None] * v,  # (T, d_v)
        output=out,
        mean=mix_values(torch.full((T,), 1.0 / T, dtype=v.dtype), v),
        inside_hull=in_convex_hull(out, v),
    )


def softmax_steps(ex: WorkedExample) -> MixingSteps:
    """The real thing, through `attention`, with e^{s} printed on the side."""
    r = attention(ex.q[None, :], ex.k, ex.v)  # q as a (1, d_k) matrix
    scores = r.scores[0]  # (T,)
    return _steps(r.raw_scores[0], scores, torch.exp(scores), r.weights[0], ex.v)


def sum_normalised_steps(ex: WorkedExample) -> MixingSteps:
    """The tempting alternative: w_i = raw_i / Σ_j raw_j (no exp).

    The √d_k factor cancels in the ratio. Weights still sum to 1, but a negative
    score gives a negative weight, and a zero sum has no answer at all.
    """
    raw = ex.k @ ex.q  # (T,)
    total = float(raw.sum())
    if abs(total) < 1e-9 * max(1.0, float(raw.abs().max())):
        raise ValueError(
            f"the raw scores sum to {total:.3g}, so dividing by their sum is undefined"
        )
    scores = raw / math.sqrt(ex.q.shape[0])
    return _steps(raw, scores, None, raw / total, ex.v)


# ---------------------------------------------------------------- the hull


def _cross(o, a, b) -> float:
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def convex_hull(points: torch.Tensor) -> torch.Tensor:
    """Vertices of the convex hull of (n, 2) points, counter-clockwise (monotone chain).

    Degenerate inputs give degenerate hulls: one point, or a segment's two ends.
    """
    pts = sorted(set(map(tuple, points.tolist())))
    if len(pts) <= 2:
        return torch.tensor(pts, dtype=F64).reshape(-1, 2)
    lower: list = []
    for p in pts:
        while len(lower) >= 2 and _cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    upper: list = []
    for p in reversed(pts):
        while len(upper) >= 2 and _cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return torch.tensor(lower[:-1] + upper[:-1], dtype=F64)  # (m, 2)


def in_convex_hull(point: torch.Tensor, points: torch.Tensor, tol: float = 1e-9) -> bool:
    """Is `point` (2,) a convex combination of the (n, 2) `points`? Edges count as inside."""
    hull = convex_hull(points).tolist()
    p = point.tolist()
    scale = max(1.0, float(points.abs().max()))
    tol = tol * scale * scale
    if len(hull) == 1:
        return math.dist(p, hull[0]) <= math.sqrt(tol)
    if len(hull) == 2:  # a segment: on the line, between its ends
        a, b = hull
        if abs(_cross(a, b, p)) > tol * math.dist(a, b):
            return False
        t = ((p[0] - a[0]) * (b[0] - a[0]) + (p[1] - a[1]) * (b[1] - a[1])) / math.dist(a, b) ** 2
        return -1e-9 <= t <= 1 + 1e-9
    # counter-clockwise polygon: inside means left of (or on) every edge
    return all(_cross(a, b, p) >= -tol for a, b in zip(hull, hull[1:] + hull[:1], strict=True))


# ---------------------------------------------------------------- shift invariance


def shifted_weights(scores: torch.Tensor, c: float) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(s) and softmax(s + c): e^{s+c} = e^c · e^s, and the e^c cancels."""
    return stable_softmax(scores), stable_softmax(scores + c)


# ---------------------------------------------------------------- numerical stability


@dataclass(frozen=True)
class ExpLimits:
    """Where e^x stays finite and non-zero in one floating-point format, as torch.exp finds."""

    dtype: str
    max_finite: float  # the largest finite number
    overflow_at: float  # torch.exp gives inf for x above this (x rounded to dtype first)
    underflow_at: float  # torch.exp gives exactly 0 for x below this
    eps: float  # gap between 1 and the next number
    smallest_normal: float  # below it numbers are subnormal: fewer and fewer digits
    exponent_bits: int  # bits of the exponent field: they set the range
    significant_bits: int  # bits of precision, the implicit leading 1 included


def _exp_edge(dt: torch.dtype, inside: float, outside: float, broken) -> float:
    """The x between `inside` (e^x fine) and `outside` (broken(e^x) true) where
    torch.exp in `dt` starts to break, by bisection in float64.

    x is rounded to dt before exp, as a score stored in that precision would be, so
    the edge includes the rounding of the input as well as that of the result.
    """

    def bad(x: float) -> bool:
        return broken(float(torch.exp(torch.tensor(x, dtype=F64).to(dt))))

    if bad(inside) or not bad(outside):
        raise ValueError(f"no edge between {inside} and {outside} for {dt}")
    for _ in range(200):  # float64 halving reaches adjacent numbers well before this
        mid = (inside + outside) / 2
        if mid in (inside, outside):
            break
        inside, outside = (inside, mid) if bad(mid) else (mid, outside)
    return (inside + outside) / 2


@functools.lru_cache(maxsize=8)
def _exp_limits(dt: torch.dtype) -> ExpLimits:
    fi = torch.finfo(dt)
    far = 2.0 * math.log(fi.max)  # beyond both edges: e^far overflows, e^-far underflows
    return ExpLimits(
        dtype=str(dt).removeprefix("torch."),
        max_finite=fi.max,
        overflow_at=_exp_edge(dt, 0.0, far, math.isinf),
        underflow_at=_exp_edge(dt, 0.0, -far, lambda e: e == 0.0),
        eps=fi.eps,
        smallest_normal=fi.smallest_normal,
        exponent_bits=round(math.log2(math.frexp(fi.max)[1])) + 1,  # 2^(e-1) is the top power
        significant_bits=round(-math.log2(fi.eps)) + 1,
    )


def exp_limits(dtype: str | torch.dtype) -> ExpLimits:
    """Measured on the CPU with torch.exp itself (round-to-nearest), not from a formula:
    e^x rounds to 0 only below ln(smallest subnormal / 2), so the printed edges are true."""
    return _exp_limits(parse_dtype(dtype))


@dataclass(frozen=True)
class StabilityDemo:
    scores: list[float]  # the scores as the chosen precision stores them
    naive_exp: list[float]  # e^s, may be inf
    naive: list[float]  # naive_softmax: exp, then divide (may be nan)
    stable_exp: list[float]  # e^{s - max s}: every exponent ≤ 0
    stable: list[float]  # stable_softmax
    reference: list[float]  # float64 softmax of the unrounded scores
    logsumexp: float  # ln Σ e^s (float64): the naive sum overflows once this passes overflow_at
    limits: ExpLimits
    device: str  # where it actually ran

    @property
    def naive_ok(self) -> bool:
        """Every naive weight is a finite number (right or not)."""
        return all(math.isfinite(x) for x in self.naive)

    @property
    def naive_error(self) -> float:
        """Largest |naive - stable| weight; inf when a naive weight is not finite."""
        if not self.naive_ok:
            return math.inf
        return max(abs(a - b) for a, b in zip(self.naive, self.stable, strict=True))

    @property
    def naive_agrees(self) -> bool:
        """The naive weights are finite and match the stable ones to AGREE_TOL."""
        return self.naive_error < AGREE_TOL

    @property
    def tiny_exp(self) -> bool:
        """Some e^s is below the format's smallest normal number (few digits left, or 0)."""
        return any(x < self.limits.smallest_normal for x in self.naive_exp)


def stability_demo(
    scores: Sequence[float], dtype: str | torch.dtype, device: torch.device | str = "cpu"
) -> StabilityDemo:
    """Naive against stable softmax for one row of scores in one precision."""
    dt = parse_dtype(dtype)
    x64 = torch.tensor(list(scores), dtype=F64)  # (T,)
    try:
        x = x64.to(device=device, dtype=dt)
    except (RuntimeError, TypeError):  # e.g. float64 on Apple MPS: run where it exists
        device, x = "cpu", x64.to(dtype=dt)

    def host(t):
        return t.to("cpu", F64).tolist()

    return StabilityDemo(
        scores=host(x),
        naive_exp=host(torch.exp(x)),
        naive=host(naive_softmax(x)),
        stable_exp=host(torch.exp(x - x.max())),
        stable=host(stable_softmax(x)),
        reference=stable_softmax(x64).tolist(),
        logsumexp=float(torch.logsumexp(x64, 0)),
        limits=exp_limits(dt),
        device=str(torch.device(device)),
    )


def naive_offset_band(
    dtype: str | torch.dtype, scores: Sequence[float] = STABILITY_SCORES
) -> tuple[int, int]:
    """(lowest, highest) whole offset c for which a naive softmax of scores + c works.

    "Works" as the page judges it: every naive weight finite (StabilityDemo.naive_ok).
    The search starts at the exp edges and steps inward, so it costs a few demos;
    c - 1 below the band underflows, c + 1 above it overflows.
    """
    lim, top = exp_limits(dtype), max(scores)

    def ok(c: int) -> bool:
        return stability_demo([s + c for s in scores], dtype).naive_ok

    lo, hi = math.floor(lim.underflow_at - top), math.ceil(lim.overflow_at - top)
    while not ok(lo):
        lo += 1
    while not ok(hi):
        hi -= 1
    if lo > hi:
        raise ValueError(f"no offset works for {scores} in {dtype}")
    return lo, hi


# ---------------------------------------------------------------- temperature


@dataclass(frozen=True)
class TemperatureSweep:
    temperatures: torch.Tensor  # (n,)
    weights: torch.Tensor  # (n, T) softmax(s / τ)
    entropy: torch.Tensor  # (n,) in nats
    cold_limit: float  # τ → 0: argmax, uniform over the tied maxima: ln(#maxima)
    hot_limit: float  # τ → ∞: uniform over all T tokens: ln T


def temperature_sweep(scores: torch.Tensor, temperatures: torch.Tensor) -> TemperatureSweep:
    s = scores.to(F64)  # (T,)
    tau = temperatures.to(F64)  # (n,)
    w = stable_softmax(s[None, :] / tau[:, None])  # (n, T)
    ties = int((s >= s.max() - 1e-12).sum())
    return TemperatureSweep(tau, w, entropy(w), math.log(ties), math.log(s.numel()))


# ---------------------------------------------------------------- dropout


@dataclass(frozen=True)
class DropoutStats:
    clean: torch.Tensor  # (T, T) weights before dropout; rows sum to 1
    sample: torch.Tensor  # (T, T) one draw of dropout (or the clean weights in eval)
    sample_row_sums: torch.Tensor  # (T,)
    mean_row_sums: torch.Tensor  # (T,) averaged over n_samples draws
    n_samples: int
    survivor_scale: float  # 1 / (1 - p) in training, 1 in eval
    zeroed_fraction: float  # share of the sample's entries dropout set to 0


def dropout_stats(
    p: float, training: bool, seed: int = 0, *, T: int = 8, d_k: int = 4, n_samples: int = 2000
) -> DropoutStats:
    """PyTorch's own dropout (through `attention`) applied to a fixed weight matrix.

    The weights come from random self-attention (random_qkv seed 0); `seed` only
    picks the dropout draws. Draw 0 is "one sample"; all draws give the mean.
    CPU and a forked RNG, so a seed always shows the same draws.
    """
    q, k, v = random_qkv(T, d_k, seed=0, dtype=F64)  # (T, d_k), (T, d_k), (T, d_k)
    clean = attention(q, k, v).weights  # (T, T)
    q_many = q.expand(n_samples, T, d_k)  # (N, T, d_k): N independent dropout draws
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        w = attention(q_many, k, v, dropout_p=p, training=training).weights  # (N, T, T)
    sums = w.sum(-1)  # (N, T)
    return DropoutStats(
        clean=clean,
        sample=w[0],
        sample_row_sums=sums[0],
        mean_row_sums=sums.mean(0),
        n_samples=n_samples,
        survivor_scale=1.0 / (1.0 - p) if training else 1.0,
        zeroed_fraction=float((w[0] == 0).double().mean()),
    )


# ---------------------------------------------------------------- check yourself


@dataclass(frozen=True)
class ShiftOrScale:
    """What adding c to every score, and multiplying every score by c, do to the weights."""

    c: float
    weights: torch.Tensor  # (T,) softmax(s)
    added: torch.Tensor  # (T,) softmax(s + c)
    multiplied: torch.Tensor  # (T,) softmax(c · s), i.e. temperature 1 / c
    add_change: float  # largest |Δ weight| from adding
    mul_change: float  # largest |Δ weight| from multiplying


def shift_or_scale(scores: torch.Tensor, c: float) -> ShiftOrScale:
    """Compare a shift by c with a scaling by c (c > 0) on one row of scores."""
    if not c > 0:
        raise ValueError(f"c must be positive; got {c}")
    s = scores.to(F64)  # (T,)
    w, w_add = shifted_weights(s, c)
    w_mul = temperature_sweep(s, torch.tensor([1.0 / c], dtype=F64)).weights[0]  # (T,)
    return ShiftOrScale(
        c=c,
        weights=w,
        added=w_add,
        multiplied=w_mul,
        add_change=float((w_add - w).abs().max()),
        mul_change=float((w_mul - w).abs().max()),
    )


@dataclass(frozen=True)
class SoftmaxQuiz:
    """One seed's numbers for the page's "predict, then reveal" questions."""

    c: float  # added to, and multiplied into, the worked example's scores
    scores: list[float]  # three scores for the naive-softmax question
    dtype: str  # the precision that question runs in
    dropout_p: float  # the dropout question's p


def softmax_quiz(seed: int) -> SoftmaxQuiz:
    """Draw the questions' numbers from `seed`: a new seed, a new set of questions."""
    rng = torch.Generator().manual_seed(int(seed) + 7919)  # apart from the stability draw
    c = (2.0, 3.0, 5.0, 10.0)[int(torch.randint(4, (1,), generator=rng))]
    p = (0.2, 0.3, 0.4, 0.5, 0.6)[int(torch.randint(5, (1,), generator=rng))]
    scores, dtype = stability_instance(seed)
    return SoftmaxQuiz(c=c, scores=scores, dtype=dtype, dropout_p=p)


def stability_instance(seed: int) -> tuple[list[float], str]:
    """Three scores, one apart, and a precision: a naive-softmax question drawn from `seed`.

    The top score lands 1 to 4 units above or below one of the precision's two
    edges (where e^x overflows, where it underflows to 0), or safely inside the
    band, so no score sits where rounding alone could decide the outcome.
    """
    rng = torch.Generator().manual_seed(int(seed))

    def pick(n: int) -> int:
        return int(torch.randint(n, (1,), generator=rng))

    def uniform(lo: float, hi: float) -> float:
        return lo + (hi - lo) * float(torch.rand(1, generator=rng, dtype=F64))

    dtype = ("float16", "bfloat16", "float32")[pick(3)]
    lim = exp_limits(dtype)
    case = pick(4)
    if case == 0:  # just past the overflow edge
        top = lim.overflow_at + uniform(1, 4)
    elif case == 1:  # just below it: huge e^s, but still finite (the sum too)
        top = lim.overflow_at - uniform(1, 4)
    elif case == 2:  # below the underflow edge: every e^s is 0
        top = lim.underflow_at - uniform(1, 4)
    else:  # comfortably above it, where e^x is a normal, precise number
        top = lim.underflow_at + uniform(9, 12)
    top = round(top, 1)
    return [round(top - 2, 1), round(top - 1, 1), top], dtype


def naive_outcome(demo: StabilityDemo, tol: float = AGREE_TOL) -> str:
    """'works' (naive weights match the stable ones), 'overflow' or 'underflow'."""
    naive, stable = demo.naive, demo.stable
    if (
        all(math.isfinite(x) for x in naive)
        and max(abs(a - b) for a, b in zip(naive, stable, strict=True)) < tol
    ):
        return "works"
    if any(math.isinf(x) for x in demo.naive_exp) or demo.logsumexp > demo.limits.overflow_at:
        return "overflow"
    return "underflow"
