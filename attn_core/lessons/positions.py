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
from dataclasses import dataclass

import torch

from ..attention import attention

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


def alibi_rule(h: int) -> tuple[int, int]:
    """How the paper builds h slopes: (n, extra), n the largest power of two <= h, whose n
    slopes come first, and `extra` = h − n slopes taken from 2n's (every other one)."""
    if h < 1:
        raise ValueError(f"need at least one head; got h={h}")
    n = 1 << (h.bit_length() - 1)  # the largest power of two <= h
    return n, h - n


def alibi_slopes(h: int) -> torch.Tensor:
    """(h,) float64: ALiBi's per-head slopes (Press et al., 2022).

    For h a power of two: 2^(−8/h), 2^(−16/h), …, 2^(−8) (h = 8 gives 1/2, 1/4, …, 1/256).
    Otherwise the paper's rule (`alibi_rule`): the slopes of the power of two n just below
    h, then every other slope of 2n until there are h.
    """
    n, extra = alibi_rule(h)
    slopes = _alibi_power_of_two(n)
    if extra:
        slopes += _alibi_power_of_two(2 * n)[0::2][:extra]
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


# ----------------------------------------------------------------------------- the page's lab
KINDS = ("none", "learned", "sinusoidal", "rope", "alibi")  # where position enters
SCORE_KINDS = ("none", "learned", "sinusoidal", "rope")  # the repeated-token score maps


def _projections(d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three seeded random (d, d) projections W_q, W_k, W_v with entries N(0, 1/d)."""
    g = torch.Generator().manual_seed(seed)
    return tuple(
        torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d) for _ in range(3)
    )


def learned_positions(T: int, d: int, seed: int = 0) -> torch.Tensor:
    """(T, d) float64: a learned table as it starts, N(0, 1) per entry (seeded)."""
    g = torch.Generator().manual_seed(10_000 + seed)
    return torch.randn(T, d, generator=g, dtype=torch.float64)


def _attend(x: torch.Tensor, kind: str, causal: bool, seed: int, base: float) -> torch.Tensor:
    """One head of attention over x (T, d) with position entering as `kind`: (T, d) output,
    in x's dtype."""
    T, d = x.shape
    wq, wk, wv = (w.to(x.dtype) for w in _projections(d, seed))
    if kind == "learned":
        x = x + learned_positions(T, d, seed).to(x.dtype)
    elif kind == "sinusoidal":
        x = x + sinusoidal_positions(T, d).to(x.dtype)
    q, k, v = x @ wq, x @ wk, x @ wv  # (T, d) each
    bias = None
    if kind == "rope":
        pos = torch.arange(T)
        q, k = rope(q, pos, base), rope(k, pos, base)
    elif kind == "alibi":
        bias = alibi_bias(T, T, 8)[0].to(x.dtype)  # (T, T) the steepest of 8 heads: slope 1/2
    keep = torch.ones(T, T, dtype=torch.bool).tril() if causal else None
    return attention(q, k, v, keep, bias=bias).output


def shuffle_error(
    T: int, d: int, kind: str = "none", *, causal: bool = False, seed: int = 0,
    base: float = ROPE_BASE, dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """Shuffle the tokens, attend, and undo the shuffle: how far each token's output moved.

    Returns (perm, move): perm (T,) the shuffle (row i of the shuffled input is token
    perm[i]); move (T,) float64, max |output of token t shuffled − output of token t|.
    Without positions or a mask the move is float rounding only (~1e-7 in float32).
    """
    perm, out, out_p = _shuffled(T, d, kind, causal, seed, base, dtype)
    move = torch.empty(T, dtype=torch.float64)
    move[perm] = (out_p - out[perm]).abs().amax(dim=-1).double()  # indexed by the token
    return perm, move


def _tokens(T: int, d: int, seed: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The seeded tokens x (T, d) and the shuffle perm (T,) that shuffle_error uses."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(T, d, generator=g, dtype=torch.float64).to(dtype)  # (T, d) the tokens
    perm = torch.randperm(T, generator=g)
    if T > 1 and torch.equal(perm, torch.arange(T)):
        perm = perm.roll(1)  # a shuffle that moves something
    return x, perm


def _shuffled(
    T: int, d: int, kind: str, causal: bool, seed: int, base: float, dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(perm, out, out_p): the outputs of the tokens in order (T, d) and shuffled (row i:
    token perm[i])."""
    x, perm = _tokens(T, d, seed, dtype)
    return perm, _attend(x, kind, causal, seed, base), _attend(x[perm], kind, causal, seed, base)


def shuffle_perm(T: int, d: int, seed: int = 0) -> torch.Tensor:
    """(T,) the shuffle shuffle_error(T, d, seed=seed) applies (row i is token perm[i])."""
    return _tokens(T, d, seed, torch.float64)[1]


def kept_in_place(perm: torch.Tensor) -> torch.Tensor:
    """(T,) bool, indexed by the token: the shuffle left it at its place with the same
    tokens before it, so under a causal mask it reads the same keys as before."""
    T = perm.shape[0]
    here = torch.arange(T)
    at_row = (perm == here) & (perm.cummax(0).values == here)  # row i: {perm[:i+1]} = {0…i}
    kept = torch.zeros(T, dtype=torch.bool)
    kept[perm] = at_row
    return kept


def relative_move(
    T: int, d: int, kind: str = "none", *, causal: bool = False, seed: int = 0,
    base: float = ROPE_BASE, dtype: torch.dtype = torch.float32,
) -> float:  # fmt: skip
    """The largest move of shuffle_error as a share of the moved token's own output size
    (its largest |entry|)."""
    perm, out, out_p = _shuffled(T, d, kind, causal, seed, base, dtype)
    move = (out_p - out[perm]).abs().amax(dim=-1).double()  # (T,) row i: token perm[i]
    size = out[perm].abs().amax(dim=-1).double().clamp_min(torch.finfo(torch.float64).tiny)
    return float((move / size).max())


ORDER_CHOICES = {  # the Order exercise's choices and the relative move each one names
    "zero": float(torch.finfo(torch.float32).eps),  # float32 rounding
    "small": 1e-2,  # around 1 % of its size
    "large": 1.0,  # about its own size
}


def order_choice(relative: float) -> str:
    """The Order exercise's choice a relative move is: the nearest of ORDER_CHOICES on a
    log scale (0 is "zero")."""
    if relative <= 0.0:
        return "zero"
    return min(ORDER_CHOICES, key=lambda k: abs(math.log(relative / ORDER_CHOICES[k])))


def repeated_token_scores(T: int, d: int, kind: str, *, seed: int = 0,
                          base: float = ROPE_BASE) -> torch.Tensor:  # fmt: skip
    """(T, T) float64 scaled scores q_m·k_n/√d when one token sits at every position, so
    only position can tell the rows apart."""
    if kind not in SCORE_KINDS:
        raise ValueError(f"kind must be one of {SCORE_KINDS}; got {kind!r}")
    g = torch.Generator().manual_seed(seed)
    e = torch.randn(1, d, generator=g, dtype=torch.float64).expand(T, d)  # (T, d) one token
    x = e.clone()
    if kind == "learned":
        x = x + learned_positions(T, d, seed)
    elif kind == "sinusoidal":
        x = x + sinusoidal_positions(T, d)
    wq, wk, _ = _projections(d, seed)
    q, k = x @ wq, x @ wk  # (T, d)
    if kind == "rope":
        pos = torch.arange(T)
        q, k = rope(q, pos, base), rope(k, pos, base)
    return q @ k.T / math.sqrt(d)  # (T, T)


def toeplitz_deviation(s: torch.Tensor) -> float:
    """max |s[m, n] − mean of its diagonal (n − m fixed)|: 0 when s depends on m − n only."""
    T = s.shape[-1]
    worst = 0.0
    for off in range(-(T - 1), T):
        diag = torch.diagonal(s, off)
        worst = max(worst, float((diag - diag.mean()).abs().max()))
    return worst


def rope_expected_score(offsets: torch.Tensor, d: int, base: float = ROPE_BASE) -> torch.Tensor:
    """(len(offsets),) float64: E[q·R_Δ k] / E[q·k] for k = q with independent coordinates,
    = (2/d) Σ_i cos(Δ ω_i): how much of a perfect match's score survives at offset Δ."""
    w = rope_frequencies(d, base)  # (d/2,)
    return torch.cos(offsets.to(torch.float64).unsqueeze(-1) * w).mean(dim=-1)


def alibi_reach(h: int, T: int, share: float = 0.9) -> tuple[torch.Tensor, list[int]]:
    """The last query's weights over the keys at distance 0…T−1 when every content score is
    equal, so ALiBi alone decides: (h, T) float64, and per head how many of the nearest keys
    (its own at δ = 0 included) it takes to hold `share` of the weight (its attention span)."""
    bias = alibi_bias(1, T, h)[:, 0].flip(-1)  # (h, T): column δ is the key δ back
    w = torch.softmax(bias, dim=-1)
    # keys needed for `share` of the weight, the query's own key (δ = 0) counted
    spans = [min(T, int((w[i].cumsum(0) < share).sum()) + 1) for i in range(h)]
    return w, spans


# ----------------------------------------------------------------------------- beyond the length
@dataclass(frozen=True)
class CopyTask:
    """Copy the token `offset` back: at position t ≥ offset the answer is token t − offset.
    Only relative position tells the model which key to read."""

    offset: int = 3
    vocab: int = 16
    T_train: int = 16
    d: int = 32
    h: int = 2
    steps: int = 500
    batch: int = 64
    lr: float = 1e-2
    seed: int = 0
    lengths: tuple[int, ...] = (16, 32, 64)  # evaluated: the training length, 2× and 4×

    @property
    def chance(self) -> float:
        return 1.0 / self.vocab


class PositionModel(torch.nn.Module):
    """Embedding, one causal multi-head attention layer with position entering as `kind`,
    and a read-out. A learned table has a row for every length evaluated; the rows past
    the training length are never trained (as in a model asked to read past its table)."""

    def __init__(self, kind: str, task: CopyTask):
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {kind!r}")
        d, self.kind, self.h, self.base = task.d, kind, task.h, ROPE_BASE
        self.embed = torch.nn.Embedding(task.vocab, d)
        self.table = torch.nn.Parameter(torch.randn(max(task.lengths), d) * 0.5)
        self.qkv = torch.nn.Linear(d, 3 * d)  # with biases: a content-free part of q and k
        self.read = torch.nn.Linear(d, task.vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        B, T = ids.shape
        x = self.embed(ids)  # (B, T, d)
        if self.kind == "learned":
            x = x + self.table[:T]
        elif self.kind == "sinusoidal":
            x = x + sinusoidal_positions(T, x.shape[-1]).to(x.dtype)
        q, k, v = self.qkv(x).split(x.shape[-1], dim=-1)  # (B, T, d) each
        q, k, v = (t.view(B, T, self.h, -1).transpose(1, 2) for t in (q, k, v))  # (B, h, T, d_k)
        bias = None
        if self.kind == "rope":
            pos = torch.arange(T, device=ids.device)
            q, k = rope(q, pos, self.base), rope(k, pos, self.base)
        elif self.kind == "alibi":
            bias = alibi_bias(T, T, self.h).to(x.dtype)  # (h, T, T)
        keep = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        o = attention(q, k, v, keep, bias=bias).output  # (B, h, T, d_k)
        return self.read(o.transpose(1, 2).reshape(B, T, -1))  # (B, T, vocab)


def copy_batch(task: CopyTask, T: int, g: torch.Generator) -> torch.Tensor:
    return torch.randint(task.vocab, (task.batch, T), generator=g)  # (B, T)


EVAL_BATCHES = 8  # fresh batches copy_accuracy scores at each length


def copy_answers(task: CopyTask, T: int, n: int = EVAL_BATCHES) -> int:
    """How many answers copy_accuracy scores at length T: n batches × the answerable places."""
    return n * task.batch * (T - task.offset)


def copy_accuracy(model: PositionModel, task: CopyTask, T: int, n: int = EVAL_BATCHES) -> float:
    """Share of the answerable positions (t ≥ offset) right, over n fresh batches of length T."""
    g = torch.Generator().manual_seed(99_000 + T)
    right = total = 0
    with torch.no_grad():
        for _ in range(n):
            ids = copy_batch(task, T, g)
            guess = model(ids)[:, task.offset :].argmax(-1)
            right += int((guess == ids[:, : T - task.offset]).sum())
            total += guess.numel()
    return right / total


@dataclass(frozen=True)
class Extrapolation:
    kind: str
    accuracy: dict[int, float]  # length -> share right
    final_loss: float


def train_copy(kind: str, task: CopyTask = CopyTask()) -> Extrapolation:
    """Train one model on the copy task at task.T_train, then measure it at every length."""
    torch.manual_seed(task.seed)
    model = PositionModel(kind, task)
    opt = torch.optim.Adam(model.parameters(), lr=task.lr)
    g = torch.Generator().manual_seed(task.seed)
    loss = torch.tensor(float("nan"))
    for _ in range(task.steps):
        ids = copy_batch(task, task.T_train, g)
        logits = model(ids)[:, task.offset :]  # (B, T − offset, vocab)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, task.vocab), ids[:, : task.T_train - task.offset].reshape(-1)
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
    acc = {T: copy_accuracy(model, task, T) for T in task.lengths}
    return Extrapolation(kind, acc, float(loss.detach()))


# ----------------------------------------------------------------------------- a real model
def model_positions(P: int = 128) -> tuple[str, torch.Tensor]:
    """all-MiniLM-L6-v2's first P learned position vectors (P, 384) float32, read from its
    hash-checked package file (no model code runs), with the model's name."""
    from safetensors import safe_open

    from .model import MINILM, check_files, shipped_folder

    folder = shipped_folder()
    check_files(folder)
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        table = f.get_tensor("embeddings.position_embeddings.weight")  # (512, 384)
    return MINILM, table[:P].float()


def cosine_matrix(x: torch.Tensor) -> torch.Tensor:
    """(P, P) cosine similarity between the rows of x."""
    u = torch.nn.functional.normalize(x.double(), dim=-1)
    return u @ u.T


def train_all(task: CopyTask = CopyTask()) -> dict[str, Extrapolation]:
    """The extrapolation table: one trained model per way of giving position, in KINDS order."""
    return {kind: train_copy(kind, task) for kind in KINDS}
