"""Why √d_k: how big q·k gets as d_k grows, and what that does to softmax and its gradient.

The chain the page follows, stage by stage:

    q, k with iid unit-variance components
      -> Var(q·k) = d_k                       (variance_sweep)
      -> softmax of logits with SD √d_k is often nearly one-hot   (saturation_sweep)
      -> a saturated row's Jacobian diag(α) - ααᵀ is nearly zero  (jacobian_norms)
      -> two keys, gap g: the gradient α(1-α) ≈ e^-g             (two_key_gradient);
         a row's lead over its runner-up (top_two_gap) is that g

Everything is computed by torch. Sampling is always done in float64 (so the
variance measurements are exact up to sampling noise); the softmax and the
Jacobian are computed in the precision the caller asks for, so underflow in
float16 / bfloat16 / float32 is real, not simulated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ..attention import attention, default_scale, random_qkv
from ..softmax import entropy, softmax_jacobian

DK_SWEEP: tuple[int, ...] = tuple(2**i for i in range(11))  # 1, 2, 4 … 1024
SATURATION = 0.99  # a row counts as saturated when its largest weight exceeds this
LESSON_GAPS = (3.0, 24.0)  # the lesson's two-key examples: scaled and unscaled at d_k = 64


def logit_scale(d_k: int, *, scaled: bool = True, temperature: float = 1.0) -> float:
    """The single factor softmax's input is multiplied by: (1/√d_k or 1) / temperature."""
    if d_k < 1:
        raise ValueError(f"d_k must be a positive integer; got {d_k}")
    if not (temperature > 0 and math.isfinite(temperature)):
        raise ValueError(f"temperature must be a positive finite number; got {temperature}")
    return (default_scale(d_k) if scaled else 1.0) / temperature


def jacobian_norms(weights: torch.Tensor) -> torch.Tensor:
    """Frobenius norm of each row's softmax Jacobian diag(α) - ααᵀ.

    (..., T) -> (...). The Jacobian is formed in the weights' own dtype (so a
    float16 row whose small weights underflowed really has a zero Jacobian);
    only the norm is taken in float64, so squaring 1e-11 cannot underflow.
    """
    J = softmax_jacobian(weights)  # (..., T, T) in the weights' dtype
    return torch.linalg.matrix_norm(J.double(), ord="fro")  # (...)


def row_jacobian(weights: torch.Tensor, row: int) -> torch.Tensor:
    """|diag(α) - ααᵀ| for one query row, in the weights' dtype. (T_q, T_k) -> (T_k, T_k)."""
    T_q = weights.shape[-2]
    if not 0 <= row < T_q:
        raise ValueError(f"row must be in 0 … {T_q - 1}; got {row}")
    return softmax_jacobian(weights[..., row, :]).abs()  # (T_k, T_k)


def entropy_fraction(weights: torch.Tensor) -> torch.Tensor:
    """Entropy of each row over its maximum log T: 1 = uniform, 0 = one-hot. (..., T) -> (...)."""
    T = weights.shape[-1]
    if T < 2:
        return torch.zeros(weights.shape[:-1], dtype=torch.float64)
    return entropy(weights.double()) / math.log(T)


@dataclass(frozen=True)
class ScalingSample:
    """One sequence of T random tokens, every stage of the attention scores."""

    raw_scores: torch.Tensor  # (T, T) q·k, in `dtype`
    logits: torch.Tensor  # (T, T) what softmax sees: raw · scale / temperature
    weights: torch.Tensor  # (T, T) softmax(logits), in `dtype`
    max_weight: torch.Tensor  # (T,) float64, largest weight of each query row
    entropy_frac: torch.Tensor  # (T,) float64, entropy / log T
    jacobian_norm: torch.Tensor  # (T,) float64, ‖diag(α) - ααᵀ‖_F per row
    lead: torch.Tensor  # (T,) float64, each row's winner minus its runner-up (top_two_gap)
    nonfinite: int  # how many logits or weights are inf/NaN (0 unless a dtype overflowed)


def scaling_sample(
    T: int,
    d_k: int,
    *,
    scaled: bool = True,
    temperature: float = 1.0,
    init: str = "gaussian",
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> ScalingSample:
    """Draw q, k, v for T tokens and run attention in `dtype`, keeping every stage."""
    if T < 2:
        raise ValueError(f"need at least 2 tokens; got {T}")
    q, k, v = random_qkv(T, d_k, d_v=1, init=init, seed=seed, dtype=dtype, device=device)
    r = attention(q, k, v, scale=None if scaled else 1.0, temperature=temperature)
    w = r.weights  # (T, T)
    logits64 = r.scores.double()  # (T, T)
    return ScalingSample(
        raw_scores=r.raw_scores,
        logits=r.scores,
        weights=w,
        max_weight=w.double().amax(-1),
        entropy_frac=entropy_fraction(w),
        jacobian_norm=jacobian_norms(w),
        lead=top_two_gap(logits64),
        nonfinite=int((~torch.isfinite(r.scores)).sum() + (~torch.isfinite(w)).sum()),
    )


def sample_raw_scores(
    T: int, d_k: int, *, n_seq: int = 32, init: str = "gaussian", seed: int = 0
) -> torch.Tensor:
    """q·k for `n_seq` independent sequences of T tokens, in float64. Returns (n_seq, T, T)."""
    q, k, _ = random_qkv(n_seq * T, d_k, d_v=1, init=init, seed=seed, dtype=torch.float64)
    q = q.view(n_seq, T, d_k)  # (B, T, d_k)
    k = k.view(n_seq, T, d_k)  # (B, T, d_k)
    return q @ k.transpose(-2, -1)  # (B, T, T)


SWEEP_T = 64  # one sample of 64-token sequences serves every token count (see `score_rows`)


def sweep_raw_scores(
    *,
    d_ks: tuple[int, ...] = DK_SWEEP,
    T: int = SWEEP_T,
    n_seq: int = 32,
    init: str = "gaussian",
    seed: int = 0,
) -> dict[int, torch.Tensor]:
    """Raw scores (n_seq, T, T) for every d_k of the sweep, each d_k from its own seed.

    Drawn once per (init, seed): changing the temperature, the precision or the
    token count re-uses them instead of sampling again.
    """
    return {
        d_k: sample_raw_scores(T, d_k, n_seq=n_seq, init=init, seed=seed * 1009 + i)
        for i, d_k in enumerate(d_ks)
    }


def score_rows(raw: torch.Tensor, T: int) -> torch.Tensor:
    """Cut (B, T_max, T_max) scores into query rows over T keys: (N, T).

    Each query row of T_max keys is split into floor(T_max / T) rows of T
    different keys, so one draw serves every token count with at least
    B·T_max rows (rows cut from one query share it; their keys are disjoint).
    """
    B, T_q, T_max = raw.shape
    if not 2 <= T <= T_max:
        raise ValueError(f"T must be in 2 … {T_max}; got {T}")
    m = T_max // T
    return raw[..., : m * T].reshape(B * T_q * m, T)  # (N, T)


def log_log_slope(x, y) -> float:
    """Least-squares slope of log y against log x: 1 for y ∝ x, 0 for flat."""
    lx = torch.log(torch.as_tensor(x, dtype=torch.float64))
    ly = torch.log(torch.as_tensor(y, dtype=torch.float64))
    lx = lx - lx.mean()
    return float((lx * (ly - ly.mean())).sum() / (lx * lx).sum())


@dataclass(frozen=True)
class VarianceSweep:
    d_ks: tuple[int, ...]
    unscaled: torch.Tensor  # (n,) measured Var(q·k)
    scaled: torch.Tensor  # (n,) measured Var(q·k / √d_k)
    n_samples: int  # dot products behind each point

    @property
    def slope_unscaled(self) -> float:
        return log_log_slope(self.d_ks, self.unscaled)

    @property
    def slope_scaled(self) -> float:
        return log_log_slope(self.d_ks, self.scaled)


def variance_sweep(raw: dict[int, torch.Tensor]) -> VarianceSweep:
    """Measured variance of the logits, unscaled and divided by √d_k, for every d_k.

    Theory (iid, mean 0, variance 1 components): Var(q·k) = Σ Var(q_i k_i) = d_k,
    so the scaled logits have variance 1 whatever d_k is.
    """
    d_ks = tuple(sorted(raw))
    var = torch.stack([raw[d].var() for d in d_ks])  # (n,)
    scale2 = torch.tensor([float(d) for d in d_ks], dtype=torch.float64)
    n = min(raw[d].numel() for d in d_ks)
    return VarianceSweep(d_ks=d_ks, unscaled=var, scaled=var / scale2, n_samples=n)


def variance_rel_se(raw: torch.Tensor) -> float:
    """Standard error of the pooled variance of `raw` (B, T, T), relative to that variance.

    The B·T² dot products are not independent draws: the T scores of one query
    row share its q, those of one column share their k, and their squares are
    correlated through |q|² and |k|² (for iid N(0, 1) components the covariance
    of two squares sharing a vector is 2·d_k, against a variance of 2·d_k² + 6·d_k).
    A fourth-moment formula that treats them as independent therefore understates
    the error, by a factor of √(1 + 2(T-1)/(d_k + 3)) for that case (5.7 at
    d_k = 1, T = 64; 1.7 at d_k = 64). The B sequences, on the other hand, are
    drawn independently of each other, so the spread of their own variances
    measures the sampling error directly: SE = SD(v_b) / √B, with no assumption
    about the distribution.
    """
    B = raw.shape[0]
    if B < 2:
        raise ValueError(f"need at least 2 independent sequences; got {B}")
    x = raw.double().flatten(1)  # (B, T·T)
    v = (x - x.mean()).square().mean(-1)  # (B,) each sequence's variance about the pooled mean
    return float(v.std() / math.sqrt(B) / v.mean())


NOISE_SE = 3.0  # a deviation from the iid prediction counts only beyond this many standard errors


@dataclass(frozen=True)
class IidCheck:
    """How far a measured variance misses the iid prediction, against its sampling noise."""

    off: float  # |measured / predicted − 1|
    noise: float  # NOISE_SE relative standard errors
    dependent: bool  # off > noise: evidence that the components are not independent


def iid_check(ratio: float, rel_se: float) -> IidCheck:
    """Measured / predicted variance `ratio` with its relative standard error `rel_se`
    (variance_rel_se): only a miss of more than NOISE_SE of them is evidence of dependence."""
    off, noise = abs(ratio - 1), NOISE_SE * rel_se
    return IidCheck(off=off, noise=noise, dependent=off > noise)


def layernorm_excess(d_k: int) -> float:
    """How much larger Var(q·k) is for LayerNorm-style vectors than d_k: d_k/(d_k − 1) − 1.

    Centred vectors of squared length d_k live in a (d_k − 1)-dimensional
    subspace, so E[(q·k)²] = d_k · d_k / (d_k − 1). (d_k = 1 is left as drawn.)
    """
    return 0.0 if d_k < 2 else 1 / (d_k - 1)


@dataclass(frozen=True)
class LogitDistribution:
    edges: torch.Tensor  # (bins + 1,)
    density: torch.Tensor  # (bins,) histogram normalised to area 1
    variance: float  # measured variance of the logits
    n: int  # how many logits


def logit_distribution(raw: torch.Tensor, scale: float, *, bins: int = 61) -> LogitDistribution:
    """Histogram of the logits raw · scale over ±4 SD (the rare values beyond are left out)."""
    x = (raw * scale).flatten().double()  # (n,)
    sd = float(x.std())
    lim = 4 * sd if sd > 0 else 1.0
    density, edges = torch.histogram(x, bins=bins, range=(-lim, lim), density=True)
    return LogitDistribution(edges=edges, density=density, variance=sd * sd, n=x.numel())


@dataclass(frozen=True)
class SaturationSweep:
    d_ks: tuple[int, ...]
    saturated_unscaled: torch.Tensor  # (n,) share of rows with max weight > threshold
    saturated_scaled: torch.Tensor  # (n,)
    entropy_unscaled: torch.Tensor  # (n,) mean entropy / log T
    entropy_scaled: torch.Tensor  # (n,)
    threshold: float
    n_rows: int


def saturation_sweep(
    raw: dict[int, torch.Tensor],
    T: int,
    *,
    temperature: float = 1.0,
    dtype: torch.dtype = torch.float32,
    threshold: float = SATURATION,
    max_rows: int = 4096,
) -> SaturationSweep:
    """How often softmax over T keys is nearly one-hot, and its mean entropy, for every d_k.

    The logits are formed in float64 from the sampled scores, then cast to
    `dtype` for the softmax, as a model running in that precision would. All
    d_k and both settings go through softmax as one batch (few, large ops).
    """
    d_ks = tuple(sorted(raw))
    rows = torch.stack([score_rows(raw[d], T)[:max_rows] for d in d_ks])  # (n, N, T)
    n = len(d_ks)
    s = torch.tensor(
        [
            [logit_scale(d, scaled=sc, temperature=temperature) for d in d_ks]
            for sc in (True, False)
        ],
        dtype=torch.float64,
    )  # (2, n): row 0 scaled, row 1 unscaled
    logits = rows.unsqueeze(0) * s.view(2, n, 1, 1)  # (2, n, N, T)
    w = torch.softmax(logits.to(dtype), dim=-1)  # (2, n, N, T) in the chosen precision
    share = (w.amax(-1).double() > threshold).double().mean(-1)  # (2, n), share of rows
    stats_dtype = torch.float64 if dtype == torch.float64 else torch.float32  # enough for a mean
    ent = (entropy(w.to(stats_dtype)) / math.log(T)).double().mean(-1)  # (2, n)
    return SaturationSweep(
        d_ks=d_ks,
        saturated_unscaled=share[1],
        saturated_scaled=share[0],
        entropy_unscaled=ent[1],
        entropy_scaled=ent[0],
        threshold=threshold,
        n_rows=rows.shape[1],
    )


def two_key_gradient(gap) -> torch.Tensor:
    """Exact α(1 - α) for two keys whose logits differ by `gap` (α = sigmoid(gap)).

    Written as e^-g / (1 + e^-g)², which never forms 1 - α, so it stays
    accurate in float64 for any gap (3 -> 0.0452, 24 -> 3.78e-11).
    """
    g = torch.as_tensor(gap, dtype=torch.float64).abs()
    e = torch.exp(-g)
    return e / (1 + e) ** 2


def two_key_gradient_in(gaps, dtype: torch.dtype) -> torch.Tensor:
    """What backpropagation actually gets in `dtype`: ∂α_winner/∂s_winner by autograd.

    Two logits [gap, 0] go through torch.softmax in `dtype`; once the winner's
    weight rounds to exactly 1.0, α(1 - α) is exactly 0 and no gradient flows.
    Returns float64 values (exact zeros stay zeros).
    """
    g = torch.as_tensor(gaps, dtype=torch.float64)
    s = torch.stack([g, torch.zeros_like(g)], dim=-1).to(dtype)  # (n, 2)
    s.requires_grad_(True)
    with torch.enable_grad():
        a = torch.softmax(s, dim=-1)  # (n, 2)
        a[:, 0].sum().backward()
    return s.grad[:, 0].double()


def first_exact_zero(gaps, values) -> float | None:
    """The smallest gap from which `values` is exactly 0 to the end, or None."""
    g = torch.as_tensor(gaps, dtype=torch.float64)
    v = torch.as_tensor(values, dtype=torch.float64)
    nonzero = torch.nonzero(v != 0).flatten()
    if nonzero.numel() == len(v):
        return None
    last = int(nonzero[-1]) if nonzero.numel() else -1
    return None if last + 1 >= len(v) else float(g[last + 1])


# ---------------------------------------------------------------- check yourself

# The page's "predict, then reveal" questions ask about one head size, picked by
# the seed so that a new seed gives a new question; seed 0 asks the lesson's 256.
EXERCISE_DKS: tuple[int, ...] = (256, 64, 1024, 128, 512)


def exercise_d_k(seed: int) -> int:
    """The head size the exercises ask about for this seed (always one of DK_SWEEP)."""
    return EXERCISE_DKS[seed % len(EXERCISE_DKS)]


def row_median(x: torch.Tensor) -> float:
    """The median over rows, halfway between the two middle ones for an even count.

    (torch.median would return the lower of the two; the page's metrics use this one.)
    """
    return float(torch.quantile(x.detach().double().cpu().flatten(), 0.5))


def top_two_gap(logits: torch.Tensor) -> torch.Tensor:
    """How far each row's winner leads its runner-up. (..., T) -> (...) float64.

    The two largest logits bound how one-hot a row can be: the winner's weight
    is at most 1 / (1 + e^-gap), whatever the other keys do.
    """
    top2 = logits.double().topk(2, dim=-1).values  # (..., 2), largest first
    return top2[..., 0] - top2[..., 1]


def median_ratio(numerator: torch.Tensor, denominator: torch.Tensor) -> float:
    """Median of one over median of the other (rows); inf when the latter is exactly 0.

    The page's exercise compares the median row's Jacobian norm with and
    without ÷√d_k; in float16 a saturated row's norm can be exactly 0.
    """
    a, b = row_median(numerator), row_median(denominator)
    return math.inf if b == 0 else a / b


# How much the median row's Jacobian norm shrinks without ÷√d_k, in four buckets: the
# multiple-choice exercise's answers are "less than 3×", "3× to 30×", "30× to 1,000×", more.
JACOBIAN_DROP_EDGES = (3.0, 30.0, 1000.0)


def jacobian_drop_bucket(ratio: float) -> int:
    """Which of the four buckets (0 … 3) a scaled / unscaled norm ratio falls into."""
    return sum(ratio >= edge for edge in JACOBIAN_DROP_EDGES)
