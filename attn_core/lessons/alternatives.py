"""Beyond the dot product: other ways to score a query against a key, attention read
as a kernel smoother, and a constructed case where attention weights mislead.

Four ideas, each small enough to test against a closed form:

1. Scoring functions, all (..., T_q, d) × (..., T_k, d) -> (..., T_q, T_k):
   dot qᵀk, scaled dot qᵀk/√d, additive v_aᵀ tanh(W₁q + W₂k), cosine cos(q, k)/τ,
   bilinear qᵀWk. Bilinear adds nothing once W_q is learned: (xW_q) W (xW_k)ᵀ
   is the plain dot product of x(W_q W) and xW_k (`bilinear_absorption`).
2. Speed: additive scoring materialises a (T_q, T_k, d_a) tensor; the dot
   product is one matrix multiply (`time_dot_vs_additive`).
3. Kernel smoothing: softmax attention with query [x, 1]/h² and key [x_j, -x_j²/2]
   is exactly a Gaussian Nadaraya–Watson smoother of bandwidth h; linear attention
   replaces the exponential by an explicit positive feature map (elu + 1) and
   costs O(T) instead of O(T²) (`kernel_smoother_demo`, `time_softmax_vs_linear`).
4. Weights are not explanations: a token can take most of the weight and still
   contribute almost nothing, because its value vector is short (`weights_vs_contributions`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..attention import attention
from ..softmax import entropy, stable_softmax

SCORINGS = ("dot", "scaled dot", "additive", "cosine", "bilinear")
SPEED_TS: tuple[int, ...] = (128, 256, 512, 1024)
SPEED_D = 64
# Largest additive intermediate (T × T × d floats) the page will build: 256 MiB,
# which is T = 1024 at d = 64 in float32. Larger T would swap on a laptop.
ADDITIVE_BUDGET_BYTES = 256 * 2**20


# ---------------------------------------------------------------- scoring functions


def dot_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """qᵀk for every pair: one matrix multiply. (..., T_q, d), (..., T_k, d) -> (..., T_q, T_k)."""
    return q @ k.transpose(-2, -1)


def scaled_dot_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """qᵀk / √d: the same multiply, rescaled so unit-variance inputs give unit-variance scores."""
    return dot_scores(q, k) / math.sqrt(q.shape[-1])


def additive_scores(
    q: torch.Tensor, k: torch.Tensor, W_1: torch.Tensor, W_2: torch.Tensor, v_a: torch.Tensor
) -> torch.Tensor:
    """Additive (Bahdanau) scores v_aᵀ tanh(W₁q_i + W₂k_j).

    q (..., T_q, d_q), k (..., T_k, d_k), W_1 (d_a, d_q), W_2 (d_a, d_k), v_a (d_a,).
    The two projections are cheap (T·d·d_a each); the cost is the tanh, which has
    to be evaluated on a (T_q, T_k, d_a) tensor because it sits *between* the
    query and the key: nothing lets it be folded into a single matrix multiply.
    """
    a = q @ W_1.transpose(0, 1)  # (..., T_q, d_a)
    b = k @ W_2.transpose(0, 1)  # (..., T_k, d_a)
    # (..., T_q, T_k, d_a): the big intermediate. tanh in place: one such tensor, not two
    h = torch.tanh_(a.unsqueeze(-2) + b.unsqueeze(-3))
    return h @ v_a  # (..., T_q, T_k)


def additive_intermediate_bytes(
    T_q: int, T_k: int, d_a: int, dtype: torch.dtype = torch.float32
) -> int:
    """Bytes of the (T_q, T_k, d_a) tanh input/output that additive scoring builds."""
    return T_q * T_k * d_a * torch.empty((), dtype=dtype).element_size()


def additive_T_cap(
    d_a: int = SPEED_D, budget_bytes: int = ADDITIVE_BUDGET_BYTES, dtype=torch.float32
) -> int:
    """Largest power of two T whose T × T × d_a intermediate fits in `budget_bytes`."""
    T = 1
    while additive_intermediate_bytes(2 * T, 2 * T, d_a, dtype) <= budget_bytes:
        T *= 2
    return T


def cosine_scores(
    q: torch.Tensor, k: torch.Tensor, tau: float = 1.0, eps: float = 1e-8
) -> torch.Tensor:
    """cos(q, k) / τ: unit-normalise both sides first, so every raw score lies in [-1, 1].

    Dividing by the temperature τ is the only way to widen that range; a zero
    vector (norm below `eps`) scores 0 against everything instead of NaN.
    """
    if not (tau > 0 and math.isfinite(tau)):
        raise ValueError(f"tau must be a positive finite number; got {tau}")
    q_hat = q / q.norm(dim=-1, keepdim=True).clamp_min(eps)  # (..., T_q, d)
    k_hat = k / k.norm(dim=-1, keepdim=True).clamp_min(eps)  # (..., T_k, d)
    return dot_scores(q_hat, k_hat) / tau  # (..., T_q, T_k)


def bilinear_scores(q: torch.Tensor, k: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """qᵀWk for every pair. q (..., T_q, d_q), W (d_q, d_k), k (..., T_k, d_k)."""
    return (q @ W) @ k.transpose(-2, -1)  # (..., T_q, T_k)


@dataclass(frozen=True)
class Absorption:
    """Bilinear scores next to plain dot-product scores after W is folded into W_q."""

    bilinear: torch.Tensor  # (T, T) (x W_q) W (x W_k)ᵀ
    absorbed: torch.Tensor  # (T, T) (x W_q') (x W_k)ᵀ with W_q' = W_q W
    max_abs_diff: float  # largest |difference|: float rounding only
    max_abs_score: float  # for scale: the largest |score|


def bilinear_absorption(
    x: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, W: torch.Tensor
) -> Absorption:
    """Check that qᵀWk with q = xW_q equals the dot product once W is absorbed: W_q' = W_q W.

    x (T, d_model), W_q and W_k (d_model, d_k), W (d_k, d_k). Matrix products are
    associative, so (xW_q)W = x(W_qW): a learned W_q can always represent W_q W,
    which is why bilinear scoring is more general on paper and redundant in practice.
    """
    q, k = x @ W_q, x @ W_k  # (T, d_k) each
    bil = bilinear_scores(q, k, W)  # (T, T)
    W_q_absorbed = W_q @ W  # (d_model, d_k): one learned matrix instead of two
    dot = dot_scores(x @ W_q_absorbed, k)  # (T, T)
    return Absorption(
        bilinear=bil,
        absorbed=dot,
        max_abs_diff=float((bil - dot).abs().max()),
        max_abs_score=float(bil.abs().max()),
    )


# ---------------------------------------------------------- the side-by-side comparison


@dataclass(frozen=True)
class ScoringSetup:
    """Random tokens and every learned matrix the five scoring functions need."""

    x: torch.Tensor  # (T, d_model) tokens
    W_q: torch.Tensor  # (d_model, d_k)
    W_k: torch.Tensor  # (d_model, d_k)
    W: torch.Tensor  # (d_k, d_k) bilinear's extra matrix
    W_1: torch.Tensor  # (d_a, d_k) additive, query side
    W_2: torch.Tensor  # (d_a, d_k) additive, key side
    v_a: torch.Tensor  # (d_a,) additive, output vector

    @property
    def q(self) -> torch.Tensor:
        return self.x @ self.W_q  # (T, d_k)

    @property
    def k(self) -> torch.Tensor:
        return self.x @ self.W_k  # (T, d_k)


def scoring_setup(
    T: int = 8, d_model: int = 16, d_k: int = 16, *, d_a: int = 16, seed: int = 0
) -> ScoringSetup:
    """Draws in float64 from `seed`. Projections have variance 1/fan_in, so q and k get
    roughly unit-variance components: the starting point the √d_k argument assumes."""
    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int, fan_in: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=torch.float64) / math.sqrt(fan_in)

    return ScoringSetup(
        x=randn(T, d_model, fan_in=1),
        W_q=randn(d_model, d_k, fan_in=d_model),
        W_k=randn(d_model, d_k, fan_in=d_model),
        W=randn(d_k, d_k, fan_in=d_k),
        W_1=randn(d_a, d_k, fan_in=d_k),
        W_2=randn(d_a, d_k, fan_in=d_k),
        v_a=randn(d_a, fan_in=1),  # a sum of d_a tanh terms: spread comparable to q·k
    )


@dataclass(frozen=True)
class ScoringComparison:
    """The five scoring functions on the same queries and keys."""

    scores: dict[str, torch.Tensor]  # name -> (T, T) what softmax sees
    weights: dict[str, torch.Tensor]  # name -> (T, T) rows sum to 1
    mean_entropy: dict[str, float]  # name -> mean row entropy, nats (uniform = ln T)
    absorption: Absorption


def compare_scorings(s: ScoringSetup, tau: float = 1.0) -> ScoringComparison:
    """Every scoring function on q = xW_q, k = xW_k, and softmax of each."""
    q, k = s.q, s.k  # (T, d_k)
    v = torch.zeros(q.shape[0], 1, dtype=q.dtype)  # values do not matter for the weights
    dot = attention(q, k, v, scale=1.0)
    scaled = attention(q, k, v)  # default scale 1/√d_k
    scores = {
        "dot": dot.scores,
        "scaled dot": scaled.scores,
        "additive": additive_scores(q, k, s.W_1, s.W_2, s.v_a),
        "cosine": cosine_scores(q, k, tau),
        "bilinear": bilinear_scores(q, k, s.W),
    }
    weights = {"dot": dot.weights, "scaled dot": scaled.weights}
    for name in ("additive", "cosine", "bilinear"):
        weights[name] = stable_softmax(scores[name])  # (T, T)
    return ScoringComparison(
        scores=scores,
        weights=weights,
        mean_entropy={n: float(entropy(w).mean()) for n, w in weights.items()},
        absorption=bilinear_absorption(s.x, s.W_q, s.W_k, s.W),
    )


def cosine_entropy_vs_tau(q: torch.Tensor, k: torch.Tensor, taus: Sequence[float]) -> torch.Tensor:
    """Mean row entropy (nats) of softmax(cos(q, k)/τ) for each τ. -> (len(taus),)."""
    cos = cosine_scores(q, k, 1.0)  # (T_q, T_k) in [-1, 1]
    return torch.stack([entropy(stable_softmax(cos / t)).mean() for t in taus])


def sharpest_scoring(c: ScoringComparison) -> str:
    """The scoring whose softmax rows are the most peaked (lowest mean row entropy)."""
    return min(c.mean_entropy, key=c.mean_entropy.get)


def typical_row_max(weights: torch.Tensor) -> float:
    """The largest weight of each row, averaged over rows. weights (T_q, T_k) -> float."""
    return float(weights.max(dim=-1).values.mean())


def cosine_max_weight_bound(tau: float, T_k: int) -> float:
    """The most weight softmax(cos/τ) can give one key out of T_k: cosine +1 for that key
    and -1 for every other, so the weight is 1 / (1 + (T_k - 1)·e^(-2/τ))."""
    return 1.0 / (1.0 + (T_k - 1) * math.exp(-2.0 / tau))


@dataclass(frozen=True)
class LoudKey:
    """One query, four keys: a long key 'advertises louder' under the dot product."""

    labels: list[str]
    key_norms: torch.Tensor  # (n,)
    cosines: torch.Tensor  # (n,) angle only
    dot_weights: torch.Tensor  # (n,) softmax(qᵀk/√d)
    cosine_weights: torch.Tensor  # (n,) softmax(cos/τ)


def loud_key_example(tau: float = 1.0, loud_norm: float = 4.0) -> LoudKey:
    """q = [1, 2, 0] against an aligned short key, an off-angle long key, a perpendicular
    and an opposite key. The dot product prefers the long key (it scores |q||k|cos θ);
    cosine keeps only cos θ, so it prefers the aligned one whatever the lengths."""
    q = torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)  # (d,) with d = 3
    u = q / q.norm()
    off = torch.tensor([2.0, 1.0, 2.0], dtype=torch.float64)
    k = torch.stack(
        [u, loud_norm * off / off.norm(), torch.tensor([-2.0, 1.0, 0.0]).double() / 5**0.5, -u]
    )  # (4, d)
    norms = k.norm(dim=-1)
    labels = [
        f"aligned, ‖k‖ = {norms[0]:.3g}",
        f"off-angle, ‖k‖ = {norms[1]:.3g}",
        f"perpendicular, ‖k‖ = {norms[2]:.3g}",
        f"opposite, ‖k‖ = {norms[3]:.3g}",
    ]
    q2, k2 = q.unsqueeze(0), k  # (1, d), (4, d)
    return LoudKey(
        labels=labels,
        key_norms=norms,
        cosines=cosine_scores(q2, k2, 1.0)[0],
        dot_weights=stable_softmax(scaled_dot_scores(q2, k2))[0],
        cosine_weights=stable_softmax(cosine_scores(q2, k2, tau))[0],
    )


# ------------------------------------------------------------ attention as a smoother


def toy_regression(n: int = 80, noise: float = 0.3, seed: int = 0, x_max: float = 10.0):
    """n noisy samples of y = sin(x) + x/10 on [0, x_max], sorted by x. -> (x (n,), y (n,))."""
    g = torch.Generator().manual_seed(seed)
    x = torch.sort(torch.rand(n, generator=g, dtype=torch.float64) * x_max).values
    y = true_curve(x) + noise * torch.randn(n, generator=g, dtype=torch.float64)
    return x, y


def true_curve(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) + 0.1 * x


def nadaraya_watson(
    x_q: torch.Tensor, x_k: torch.Tensor, y: torch.Tensor, bandwidth: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gaussian kernel smoother: ŷ(x) = Σ_j K(x, x_j) y_j / Σ_j K(x, x_j), K = exp(-(x-x_j)²/2h²).

    The normalisation is done on log-kernels (a softmax), so a query far from every
    sample still gets finite weights. -> (fit (n_q,), weights (n_q, n_k)).
    """
    log_K = -((x_q[:, None] - x_k[None, :]) ** 2) / (2 * bandwidth**2)  # (n_q, n_k)
    w = stable_softmax(log_K)  # (n_q, n_k), rows sum to 1
    return w @ y, w


def smoother_features(x: torch.Tensor, bandwidth: float, role: str) -> torch.Tensor:
    """Features that make qᵀk reproduce the Gaussian log-kernel up to a per-query constant.

    -(x - x_j)²/2h² = (x·x_j - x_j²/2)/h² - x²/2h². The last term is the same for
    every key, and softmax ignores per-row constants, so
    query [x, 1]/h² and key [x_j, -x_j²/2] give exactly the Gaussian weights.
    """
    if role == "query":
        return torch.stack([x, torch.ones_like(x)], dim=-1) / bandwidth**2  # (n, 2)
    return torch.stack([x, -(x**2) / 2], dim=-1)  # (n, 2)


def softmax_regression(
    x_q: torch.Tensor, x_k: torch.Tensor, y: torch.Tensor, bandwidth: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The same smoother written as attention: softmax(q kᵀ) v with v = y."""
    q = smoother_features(x_q, bandwidth, "query")  # (n_q, 2)
    k = smoother_features(x_k, bandwidth, "key")  # (n_k, 2)
    r = attention(q, k, y[:, None], scale=1.0)  # output (n_q, 1), weights (n_q, n_k)
    return r.output[:, 0], r.weights


def elu_feature_map(u: torch.Tensor) -> torch.Tensor:
    """φ(u) = elu(u) + 1: exp(u) below zero, u + 1 above; always positive."""
    return F.elu(u) + 1.0


def linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    feature_map: Callable[[torch.Tensor], torch.Tensor] = elu_feature_map,
) -> torch.Tensor:
    """Linear attention: φ(q)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q)ᵀ (Σ_j φ(k_j)).

    q (..., T_q, d), k (..., T_k, d), v (..., T_k, d_v) -> (..., T_q, d_v).
    Summing over keys first (a d × d_v matrix) makes the cost O(T·d·d_v), linear in
    T; no T_q × T_k matrix is ever formed. It equals the row-normalised
    φ(q)φ(k)ᵀ @ v (`linear_attention_weights`), which is the closed form tested against.
    """
    phi_q, phi_k = feature_map(q), feature_map(k)  # (..., T_q, d), (..., T_k, d)
    kv = phi_k.transpose(-2, -1) @ v  # (..., d, d_v): keys and values summarised once
    z = phi_k.sum(dim=-2)  # (..., d): the normaliser's key half
    num = phi_q @ kv  # (..., T_q, d_v)
    den = (phi_q * z.unsqueeze(-2)).sum(dim=-1, keepdim=True)  # (..., T_q, 1)
    return num / den.clamp_min(torch.finfo(den.dtype).tiny)


def linear_attention_weights(
    q: torch.Tensor,
    k: torch.Tensor,
    feature_map: Callable[[torch.Tensor], torch.Tensor] = elu_feature_map,
) -> torch.Tensor:
    """The T_q × T_k weights linear attention applies implicitly: φ(q)φ(k)ᵀ, rows normalised."""
    A = feature_map(q) @ feature_map(k).transpose(-2, -1)  # (..., T_q, T_k), all > 0
    return A / A.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(A.dtype).tiny)


def anchor_features(x: torch.Tensor, anchors: torch.Tensor, bandwidth: float) -> torch.Tensor:
    """-(x - c_m)²/h² for M anchors c_m: elu + 1 turns each into a bump exp(-(x - c_m)²/h²).

    Then φ(q)ᵀφ(k) = Σ_m bump_m(x) bump_m(x_j) = exp(-(x - x_j)²/2h²) · Σ_m exp(-2(c_m - x̄)²/h²)
    with x̄ the midpoint: the Gaussian kernel times a factor that is nearly constant
    while the anchors are closer together than about h.  (n,) -> (n, M).
    """
    return -((x[:, None] - anchors[None, :]) ** 2) / bandwidth**2  # (n, M), all <= 0


def linear_regression_fit(
    x_q: torch.Tensor, x_k: torch.Tensor, y: torch.Tensor, bandwidth: float, anchors: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The smoother as linear attention with anchor features. -> (fit (n_q,), weights)."""
    q = anchor_features(x_q, anchors, bandwidth)  # (n_q, M)
    k = anchor_features(x_k, anchors, bandwidth)  # (n_k, M)
    fit = linear_attention(q, k, y[:, None])[:, 0]  # (n_q,)
    return fit, linear_attention_weights(q, k)


@dataclass(frozen=True)
class SmootherDemo:
    x: torch.Tensor  # (n,) keys: sample positions
    y: torch.Tensor  # (n,) values: noisy samples
    x_query: torch.Tensor  # (n_q,) the query sweep
    truth: torch.Tensor  # (n_q,) the curve the samples came from
    fits: dict[str, torch.Tensor]  # method -> (n_q,)
    probe: float  # one query position whose weights are shown
    probe_weights: dict[str, torch.Tensor]  # method -> (n,) weights of the probe query
    max_gap_softmax: float  # max |softmax attention - Gaussian smoother|
    anchors: torch.Tensor  # (M,) linear attention's feature centres


def keys_holding(w: torch.Tensor, mass: float = 0.9) -> int:
    """How many keys, heaviest first, it takes to collect `mass` of one row of weights.

    w (T_k,) sums to 1. A kernel of width h averages over about this many samples:
    the effective window of a query.
    """
    if not 0 < mass <= 1:
        raise ValueError(f"mass must be in (0, 1]; got {mass}")
    total = torch.sort(w, descending=True).values.cumsum(0)  # (T_k,) running mass
    return min(int((total < mass * float(total[-1]) - 1e-12).sum()) + 1, w.shape[-1])


N_ANCHORS = 24


def kernel_smoother_demo(
    bandwidth: float, *, n: int = 80, n_query: int = 201, seed: int = 0, probe: float = 5.0
) -> SmootherDemo:
    """Gaussian Nadaraya–Watson, softmax attention and linear attention on one toy data set."""
    if not (bandwidth > 0 and math.isfinite(bandwidth)):
        raise ValueError(f"bandwidth must be a positive finite number; got {bandwidth}")
    x, y = toy_regression(n, seed=seed)
    x_max = 10.0
    x_q = torch.linspace(0.0, x_max, n_query, dtype=torch.float64)  # (n_q,)
    anchors = torch.linspace(0.0, x_max, N_ANCHORS, dtype=torch.float64)  # (M,)
    x_all = torch.cat([x_q, torch.tensor([probe], dtype=torch.float64)])  # probe rides along
    fits, weights = {}, {}
    for name, fn in (
        ("Gaussian kernel", nadaraya_watson),
        ("softmax attention", softmax_regression),
    ):
        f, w = fn(x_all, x, y, bandwidth)
        fits[name], weights[name] = f[:-1], w[-1]
    f, w = linear_regression_fit(x_all, x, y, bandwidth, anchors)
    fits["linear attention"], weights["linear attention"] = f[:-1], w[-1]
    gap = (fits["softmax attention"] - fits["Gaussian kernel"]).abs().max()
    return SmootherDemo(
        x=x,
        y=y,
        x_query=x_q,
        truth=true_curve(x_q),
        fits=fits,
        probe=probe,
        probe_weights=weights,
        max_gap_softmax=float(gap),
        anchors=anchors,
    )


# ------------------------------------------------------- weights are not explanations

TOKENS = ["[CLS]", "the", "film", "was", "not", "good", "[SEP]"]
# Hand-picked logits for the query "good": [SEP] gets most of the weight.
_LOGITS = [0.3, 0.1, 0.6, 0.2, -0.1, 0.5, 2.4]
_LOUD = "not"  # lightly attended, but its value vector is long
_LOUD_NORM = 5.0


@dataclass(frozen=True)
class Contributions:
    tokens: list[str]
    weights: torch.Tensor  # (T,) α_j
    value_norms: torch.Tensor  # (T,) ‖v_j‖
    contributions: torch.Tensor  # (T,) ‖α_j v_j‖
    output: torch.Tensor  # (d,) o = Σ α_j v_j
    knockout_change: torch.Tensor  # (T,) ‖o - o without α_j v_j‖ (others keep their weights)
    renorm_change: torch.Tensor  # (T,) ‖o - o'‖, token deleted and softmax re-spread
    renorm_angle_deg: torch.Tensor  # (T,) angle between o and that o', degrees
    top: int  # most-attended token
    light: int  # the lightly attended token with the long value


def weights_vs_contributions(value_scale: float = 0.02, d: int = 8, seed: int = 0):
    """The constructed example: [SEP] takes most of the weight but its value is
    `value_scale` long; "not" takes little weight but its value is long.

    Two ways to remove token j: knock out its term (the others keep their weights,
    so o changes by exactly α_j v_j), or delete it and let softmax re-spread the
    weight (o' = (o - α_j v_j)/(1 - α_j): a short v_j mostly rescales o).
    """
    if not (value_scale >= 0 and math.isfinite(value_scale)):
        raise ValueError(f"value_scale must be a finite number >= 0; got {value_scale}")
    g = torch.Generator().manual_seed(seed)
    T = len(TOKENS)
    v = torch.randn(T, d, generator=g, dtype=torch.float64)
    v = v / v.norm(dim=-1, keepdim=True)  # (T, d) unit values
    top, light = TOKENS.index("[SEP]"), TOKENS.index(_LOUD)
    v[top] *= value_scale
    v[light] *= _LOUD_NORM
    alpha = stable_softmax(torch.tensor(_LOGITS, dtype=torch.float64))  # (T,)
    terms = alpha[:, None] * v  # (T, d): what each token adds to the output
    o = terms.sum(dim=0)  # (d,)
    o_renorm = (o[None, :] - terms) / (1 - alpha[:, None])  # (T, d): o' with token j deleted
    cos = F.cosine_similarity(o_renorm, o[None, :].expand_as(o_renorm), dim=-1)
    return Contributions(
        tokens=list(TOKENS),
        weights=alpha,
        value_norms=v.norm(dim=-1),
        contributions=terms.norm(dim=-1),
        output=o,
        knockout_change=terms.norm(dim=-1),
        renorm_change=(o_renorm - o).norm(dim=-1),
        renorm_angle_deg=torch.rad2deg(torch.arccos(cos.clamp(-1.0, 1.0))),
        top=top,
        light=light,
    )


# ------------------------------------------------------------------------- timing


def _sync(device: torch.device) -> Callable[[], None]:
    if device.type == "cuda":
        return torch.cuda.synchronize
    return lambda: None


def _interleaved_best(
    fns: dict[str, Callable[[], object]],
    rounds: int,
    device: torch.device,
    *,
    min_seconds: float = 0.3,
    max_seconds: float = 3.0,
    max_rounds: int = 30,
) -> dict[str, float]:
    """Fastest seconds per call of each fn, timed A, B, A, B … so noise hits both alike.

    Each sample repeats the call enough times to last ~20 ms, so tiny kernels are not
    lost in timer resolution. The minimum, as `timeit` recommends, is the estimate
    least disturbed by other processes: noise only ever adds time. Cheap kernels get
    extra rounds (up to `max_rounds`, until `min_seconds` have passed) so a busy
    machine still offers some undisturbed samples; after two rounds the loop stops
    once `max_seconds` have passed.
    """
    sync = _sync(device)
    inner = {}
    for name, fn in fns.items():
        warm = []
        for _ in range(3):  # warm-up calls (allocator, kernels) double as a first timing
            sync()
            t = time.perf_counter()
            fn()
            sync()
            warm.append(time.perf_counter() - t)
            if sum(warm) > 0.05:
                break
        inner[name] = max(1, min(200, int(0.02 / max(min(warm), 1e-7))))
    times: dict[str, list[float]] = {name: [] for name in fns}
    start = time.perf_counter()
    for r in range(max_rounds):
        spent = time.perf_counter() - start
        if (r >= rounds and spent > min_seconds) or (r >= 2 and spent > max_seconds):
            break
        for name, fn in fns.items():
            sync()
            t = time.perf_counter()
            for _ in range(inner[name]):
                fn()
            sync()
            times[name].append((time.perf_counter() - t) / inner[name])
    return {name: min(ts) for name, ts in times.items()}


def _timed_per_T(
    Ts: Sequence[int],
    calls: Callable[[int], dict[str, Callable[[], torch.Tensor]]],
    rounds: int,
    device: torch.device,
    should_stop: Callable[[], bool] | None,
) -> list[tuple[int, dict[str, float]]]:
    """(T, best seconds per call name) for each T in order, the calls made by `calls(T)`.

    `should_stop()` is asked before each T; once it says True the Ts timed so far are
    returned (fewer than len(Ts): the caller can tell the sweep was cut short).
    """
    out = []
    with torch.no_grad():
        for T in Ts:
            if should_stop is not None and should_stop():
                break
            out.append((T, _interleaved_best(calls(T), rounds, device)))
    return out


@dataclass(frozen=True)
class ScoreTiming:
    T: int
    dot_s: float  # seconds for all T×T dot-product scores
    additive_s: float  # seconds for all T×T additive scores
    intermediate_bytes: int  # the (T, T, d) tanh tensor additive builds

    @property
    def ratio(self) -> float:
        return self.additive_s / self.dot_s


def time_dot_vs_additive(
    Ts: Sequence[int] = SPEED_TS,
    d: int = SPEED_D,
    *,
    rounds: int = 5,
    device=None,
    should_stop: Callable[[], bool] | None = None,
) -> list[ScoreTiming]:
    """Measured time of the T×T score matrix, dot product against additive, d = d_a = d_k.

    `should_stop()` is asked before each T; once it says True the rows timed so far are
    returned (fewer than len(Ts): the caller can tell the sweep was cut short).
    """
    device = torch.device(device or "cpu")
    g = torch.Generator().manual_seed(0)
    W_1, W_2 = (torch.randn(d, d, generator=g).div(d**0.5).to(device) for _ in range(2))
    v_a = torch.randn(d, generator=g).to(device)

    def calls(T: int) -> dict[str, Callable[[], torch.Tensor]]:
        q, k = (torch.randn(T, d, generator=g).to(device) for _ in range(2))  # (T, d)
        return {
            "dot": lambda: dot_scores(q, k),
            "additive": lambda: additive_scores(q, k, W_1, W_2, v_a),
        }

    return [
        ScoreTiming(T, best["dot"], best["additive"], T * T * d * 4)
        for T, best in _timed_per_T(Ts, calls, rounds, device, should_stop)
    ]


@dataclass(frozen=True)
class AttnTiming:
    T: int
    softmax_s: float  # explicit softmax(qkᵀ/√d) v: builds the T×T weights
    linear_s: float  # linear attention with elu + 1: never does

    @property
    def ratio(self) -> float:
        return self.softmax_s / self.linear_s


def time_softmax_vs_linear(
    Ts: Sequence[int] = SPEED_TS,
    d: int = SPEED_D,
    *,
    rounds: int = 5,
    device=None,
    should_stop: Callable[[], bool] | None = None,
) -> list[AttnTiming]:
    """Measured time of one attention layer's mixing step, softmax against linear.

    `should_stop()` is asked before each T, as in `time_dot_vs_additive`.
    """
    device = torch.device(device or "cpu")
    g = torch.Generator().manual_seed(1)

    def calls(T: int) -> dict[str, Callable[[], torch.Tensor]]:
        q, k, v = (torch.randn(T, d, generator=g).to(device) for _ in range(3))  # (T, d)
        return {
            "softmax": lambda: attention(q, k, v).output,
            "linear": lambda: linear_attention(q, k, v),
        }

    return [
        AttnTiming(T, best["softmax"], best["linear"])
        for T, best in _timed_per_T(Ts, calls, rounds, device, should_stop)
    ]


def growth_exponent(Ts: Sequence[int], seconds: Sequence[float]) -> float:
    """Slope of log(time) against log(T) between the last two points: ~1 linear, ~2 quadratic."""
    if len(Ts) < 2:
        raise ValueError("need at least two sequence lengths to measure a growth rate")
    return math.log(seconds[-1] / seconds[-2]) / math.log(Ts[-1] / Ts[-2])
