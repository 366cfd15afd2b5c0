"""A two-layer, attention-only transformer trained to find induction heads.

The task. Each training sequence is a block of p distinct random tokens
repeated until the sequence is full, with p drawn afresh for every sequence:

    tokens = [17, 4, 52, 9,  17, 4, 52, 9,  17, 4, …]        p = 4 here

The first p tokens are pure noise (nothing in the context predicts them). Every
later token is predictable, but only by *looking up* the context: find where
the current token appeared before and copy whatever came next. Because p
changes from sequence to sequence, "look back a fixed distance" does not work;
the position embeddings alone cannot solve it.

The model. Token + position embeddings, then two pre-LayerNorm attention
layers with residual connections and no MLPs, then a LayerNorm and an unembed:

    x₀ = E_tok[tokens] + E_pos[0..T-1]                       # (B, T, d_model)
    x₁ = x₀ + MHA₀(LN(x₀))                                   # layer 0
    x₂ = x₁ + MHA₁(LN(x₁))                                   # layer 1
    logits = LN(x₂) W_U                                      # (B, T, vocab)

Each MHA is `attn_core.MultiHeadAttention` (so `attn_core.attention` inside)
with a causal mask, which means every head's weights are at hand, and a head
can be switched off through the module's own `head_mask`.

What it learns (the circuit known as an induction head): a head in layer 0
attends to the *previous* position and writes "the token before me was A"
into each position's residual stream. A head in layer 1 then builds its query
from the current token A and its keys from that written-in note, so it finds
the position right after the earlier A and copies that token (B) into the
prediction. Neither layer alone can do it: the pattern needs the composition.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..masks import causal_mask
from ..multihead import MultiHeadAttention

ASSET = Path(__file__).resolve().parents[2] / "assets" / "induction.pt"
PRETRAINED_SEED = 0
PRETRAINED_STEPS = 1500
SCORE_EVERY = 25  # steps between head-score snapshots during training
N_PROBE = 32  # fixed sequences the head scores are measured on while training


@dataclass(frozen=True)
class InductionConfig:
    vocab: int = 64
    seq_len: int = 48
    d_model: int = 64
    heads: int = 4
    layers: int = 2
    min_period: int = 2  # shortest repeated block
    max_period: int | None = None  # longest; None = seq_len // 2, so every block repeats

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads

    @property
    def period_range(self) -> tuple[int, int]:
        hi = self.seq_len // 2 if self.max_period is None else self.max_period
        return self.min_period, min(hi, self.vocab)

    def head_names(self) -> list[str]:
        return [head_name(l, h) for l in range(self.layers) for h in range(self.heads)]


def head_name(layer: int, head: int) -> str:
    return f"L{layer}H{head}"


def parse_head(name: str) -> tuple[int, int]:
    m = re.fullmatch(r"L(\d{1,4})H(\d{1,4})", name.strip())  # bounded: int() of 5,000 digits raises
    if not m:
        raise ValueError(f"a head is named like 'L0H1'; got {name!r}")
    return int(m.group(1)), int(m.group(2))


# --- data


def repeated_sequences(
    batch: int, config: InductionConfig, *, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, T) long, period (B,) long): a block of distinct random tokens, tiled.

    Drawn on the CPU from `generator`, so a seed gives the same data everywhere.
    """
    lo, hi = config.period_range
    if not 1 <= lo <= hi:
        raise ValueError(f"need 1 <= min_period <= max_period; got {lo}, {hi}")
    T, V = config.seq_len, config.vocab
    block = torch.rand(batch, V, generator=generator).argsort(-1)[:, :hi]  # (B, hi), distinct
    period = torch.randint(lo, hi + 1, (batch,), generator=generator)  # (B,)
    idx = torch.arange(T)[None, :] % period[:, None]  # (B, T): position within the block
    return block.gather(1, idx), period


def induction_targets(tokens: torch.Tensor) -> torch.Tensor:
    """(..., T) long: for each position i, j + 1 where j < i is the most recent earlier
    position holding the same token; -1 where the token has not appeared before.

    This is where an ideal induction head at i looks: the token that followed the
    previous occurrence of the current token. Computed from the tokens alone.
    """
    T = tokens.shape[-1]
    same = tokens[..., :, None] == tokens[..., None, :]  # (..., T, T): token i == token j
    earlier = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril(-1)  # j < i
    j = torch.arange(T, device=tokens.device).expand_as(same)  # (..., T, T): key index
    last = torch.where(same & earlier, j, -1).amax(-1)  # (..., T): most recent j, or -1
    return torch.where(last >= 0, last + 1, -1)


def repeated_positions(tokens: torch.Tensor) -> torch.Tensor:
    """(..., T-1) bool: the predictions (from position i, of token i+1) that the context
    makes possible — the current token has been seen before, so copying can work."""
    return (induction_targets(tokens) >= 0)[..., :-1]


def induction_probe(tokens: torch.Tensor) -> tuple[int, int] | None:
    """(i, j): a position i for asking "where does an induction head look from here?".

    i is the first position whose token has appeared exactly once before, at j >= 1,
    such that i - 1, i, j and j + 1 are four different positions: the token just
    before i, i itself, the earlier copy and the token that followed the copy can
    then not be mistaken for one another. (Position 0 is skipped as the copy because
    heads with nothing to do often park their weight there.) None when no position
    qualifies, e.g. for a block of two tokens repeated (a b a b …), where the token
    before i is always the one that followed the earlier copy.
    """
    t = tokens.tolist()  # (T,)
    for i in range(2, len(t)):
        earlier = [j for j in range(i) if t[j] == t[i]]
        if (
            len(earlier) == 1
            and earlier[0] >= 1
            and len({i - 1, i, earlier[0], earlier[0] + 1}) == 4
        ):
            return i, earlier[0]
    return None


# --- model


@dataclass(frozen=True)
class InductionTrace:
    """Everything one forward pass computed that the page draws."""

    logits: torch.Tensor  # (B, T, vocab)
    weights: torch.Tensor  # (B, layers, h, T, T), attention weights per head
    contribution: torch.Tensor  # (B, layers, h, T, T): ‖α_ij · v_j W_o^h‖, what i gets from j


class InductionModel(nn.Module):
    """Token + position embeddings, `layers` causal attention layers, unembed. No MLPs."""

    def __init__(self, config: InductionConfig):
        super().__init__()
        self.config = c = config
        if c.d_model % c.heads:
            raise ValueError(f"heads={c.heads} must divide d_model={c.d_model}")
        self.E_tok = nn.Embedding(c.vocab, c.d_model)
        self.E_pos = nn.Embedding(c.seq_len, c.d_model)
        self.ln = nn.ModuleList(nn.LayerNorm(c.d_model) for _ in range(c.layers))
        self.attn = nn.ModuleList(MultiHeadAttention(c.d_model, c.heads) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.d_model)
        self.W_U = nn.Linear(c.d_model, c.vocab, bias=False)

    def _check(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() == 1:
            tokens = tokens[None]  # (1, T)
        T = tokens.shape[-1]
        if tokens.dim() != 2 or not 1 <= T <= self.config.seq_len:
            raise ValueError(
                f"tokens must be (B, T) with 1 <= T <= {self.config.seq_len}; "
                f"got shape {tuple(tokens.shape)}"
            )
        if bool((tokens < 0).any()) or bool((tokens >= self.config.vocab).any()):
            raise ValueError(f"token ids must be in [0, {self.config.vocab})")
        return tokens.long()

    def trace(self, tokens: torch.Tensor, head_mask: torch.Tensor | None = None) -> InductionTrace:
        """Run the model. `head_mask` (layers, h): 1 keeps a head, 0 switches it off."""
        tokens = self._check(tokens.to(self.E_tok.weight.device))
        T = tokens.shape[-1]
        c = self.config
        pos = torch.arange(T, device=tokens.device)
        x = self.E_tok(tokens) + self.E_pos(pos)  # (B, T, d_model): the residual stream
        mask = causal_mask(T, device=tokens.device)  # (T, T): query i sees keys 0..i
        weights, contribution = [], []
        for l, (ln, mha) in enumerate(zip(self.ln, self.attn, strict=True)):
            hm = None if head_mask is None else head_mask[l].to(x)
            y = ln(x)
            r = mha.forward_detailed(y, y, y, mask, head_mask=hm)
            x = x + r.output  # each layer adds what its heads write
            # What head h writes when it puts all its weight on key j: v_j W_o^h, where
            # W_o^h is the slice of W_o that reads head h's part of the concatenation.
            W_o = mha.W_o.weight.view(c.d_model, c.heads, c.d_k)  # (d_model, h, d_k)
            write = torch.einsum("bhjk,dhk->bhjd", r.v, W_o).norm(dim=-1)  # (B, h, T)
            if hm is not None:
                write = write * hm.view(1, c.heads, 1)  # a switched-off head writes nothing
            weights.append(r.weights)  # (B, h, T, T)
            # α ≥ 0, so ‖α_ij v_j W_o^h‖ = α_ij ‖v_j W_o^h‖
            contribution.append(r.weights * write[:, :, None, :])  # (B, h, T, T)
        logits = self.W_U(self.ln_f(x))  # (B, T, vocab)
        return InductionTrace(logits, torch.stack(weights, 1), torch.stack(contribution, 1))

    def forward(self, tokens: torch.Tensor, head_mask: torch.Tensor | None = None):
        return self.trace(tokens, head_mask).logits  # (B, T, vocab)


def ablation_mask(config: InductionConfig, ablate: Iterable[str | tuple[int, int]] = ()):
    """(layers, h) float: 0 for every head named in `ablate` ("L1H2" or (1, 2)), else 1."""
    m = torch.ones(config.layers, config.heads)
    for a in ablate:
        l, h = parse_head(a) if isinstance(a, str) else a
        if not (0 <= l < config.layers and 0 <= h < config.heads):
            raise ValueError(f"no head {head_name(l, h)} in a {config.layers}×{config.heads} model")
        m[l, h] = 0.0
    return m


def per_position_loss(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(B, T-1): cross-entropy of predicting token i+1 from position i."""
    if tokens.dim() == 1:
        tokens = tokens[None]
    V = logits.shape[-1]
    nll = F.cross_entropy(
        logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1), reduction="none"
    )
    return nll.view(tokens.shape[0], -1)  # (B, T-1)


def split_loss(loss: torch.Tensor, tokens: torch.Tensor) -> tuple[float, float]:
    """(mean loss on repeated positions, mean loss on first occurrences); NaN where empty."""
    rep = repeated_positions(tokens if tokens.dim() == 2 else tokens[None])  # (B, T-1)
    rep = rep.to(loss.device)

    def mean(sel):
        n = int(sel.sum())
        return float(loss[sel].sum() / n) if n else float("nan")

    return mean(rep), mean(~rep)


# --- head scores


@dataclass(frozen=True)
class HeadScores:
    """Mean attention of each head, (layers, h), to two places the tokens define."""

    previous_token: torch.Tensor  # (layers, h): mean weight from i to i-1
    induction: torch.Tensor  # (layers, h): mean weight from i to the token after i's last copy
    n_previous: int  # how many (sequence, position) pairs the first mean is over
    n_induction: int  # … and the second (0 when no token repeats: the score is NaN)

    def jobs(self, baseline: HeadScores | None = None, floor: float = 0.2, ratio: float = 3.0):
        """(layers, h) list of "previous-token", "induction" or "" (no clear job).

        A head gets a job when its score is at least `floor` and at least `ratio`
        times what uniform causal attention (`baseline`) would score.
        """
        L, H = self.previous_token.shape
        out = [["" for _ in range(H)] for _ in range(L)]
        for l in range(L):
            for h in range(H):
                p, i = float(self.previous_token[l, h]), float(self.induction[l, h])
                bp = float(baseline.previous_token.max()) if baseline else 0.0
                bi = float(baseline.induction.max()) if baseline else 0.0
                is_prev = p >= max(floor, ratio * bp)
                is_ind = self.n_induction > 0 and i >= max(floor, ratio * bi)
                if is_prev and (not is_ind or p >= i):
                    out[l][h] = "previous-token"
                elif is_ind:
                    out[l][h] = "induction"
        return out


def named_jobs(jobs: list[list[str]]) -> dict[str, list[str]]:
    """{"previous-token": ["L0H1"], "induction": ["L1H0", …]} from a (layers, h) job grid."""
    out: dict[str, list[str]] = {"previous-token": [], "induction": []}
    for l, row in enumerate(jobs):
        for h, job in enumerate(row):
            if job:
                out[job].append(head_name(l, h))
    return out


def scores_from_weights(weights: torch.Tensor, tokens: torch.Tensor) -> HeadScores:
    """Previous-token and induction scores from attention maps.

    weights (B, L, h, T, T) or (L, h, T, T); tokens (B, T) or (T,).
    """
    if tokens.dim() == 1:
        tokens, weights = tokens[None], weights[None]
    if weights.dim() != 5:
        raise ValueError(f"weights must be (B, L, h, T, T) or (L, h, T, T); got {weights.shape}")
    B, L, H, T, _ = weights.shape
    w = weights.float()
    prev = w.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, L, h, T-1): weight of i on i-1
    n_prev = B * (T - 1)
    prev_score = prev.sum((0, -1)) / n_prev if n_prev else torch.full((L, H), float("nan"))
    tgt = induction_targets(tokens.to(w.device))  # (B, T)
    has = tgt >= 0  # (B, T)
    idx = tgt.clamp(min=0)[:, None, None, :, None].expand(B, L, H, T, 1)
    at = w.gather(-1, idx).squeeze(-1)  # (B, L, h, T): weight of i on its induction target
    n_ind = int(has.sum())
    ind = (at * has[:, None, None, :]).sum((0, -1))
    ind_score = ind / n_ind if n_ind else torch.full((L, H), float("nan"))
    return HeadScores(prev_score.cpu(), ind_score.cpu(), n_prev, n_ind)


def uniform_weights(T: int, layers: int = 1, heads: int = 1) -> torch.Tensor:
    """(layers, h, T, T): causal attention that spreads evenly over keys 0..i."""
    m = causal_mask(T).float()  # (T, T)
    return (m / m.sum(-1, keepdim=True)).expand(layers, heads, T, T)


def head_scores(model: InductionModel, tokens: torch.Tensor, head_mask=None) -> HeadScores:
    """Run `model` on `tokens` and score every head."""
    with torch.no_grad():
        tr = model.trace(tokens, head_mask)
    return scores_from_weights(tr.weights, tokens if tokens.dim() == 2 else tokens[None])


# --- training


def probe_sequences(config: InductionConfig, seed: int) -> torch.Tensor:
    """(N_PROBE, T): the fixed sequences a run's head scores are measured on."""
    gen = torch.Generator().manual_seed(seed + 2)  # seed: init, seed + 1: training batches
    return repeated_sequences(N_PROBE, config, generator=gen)[0]


_THREADS = threading.Lock()


@contextlib.contextmanager
def _torch_threads(n: int | None):
    """Run the block with `n` intra-op threads, then restore the old count.

    The matrices here are tiny (32 × 48 × 64): OpenMP's hand-offs cost more than
    the arithmetic, and on a busy 2-core machine two spinning threads per process
    made training over ten times slower than one. None leaves the setting alone.
    """
    if n is None:
        yield
        return
    with _THREADS:
        old = torch.get_num_threads()
        torch.set_num_threads(n)
    try:
        yield
    finally:
        with _THREADS:
            torch.set_num_threads(old)


@dataclass
class InductionRun:
    """One training run's history (plain floats, so it pickles and saves cheaply)."""

    config: InductionConfig
    seed: int
    steps: int
    batch: int
    lr: float
    loss_repeated: list[float] = field(default_factory=list)  # per step
    loss_first: list[float] = field(default_factory=list)  # per step
    score_steps: list[int] = field(default_factory=list)  # steps at which scores were taken
    previous_token: list[list[list[float]]] = field(default_factory=list)  # (n, L, h)
    induction: list[list[list[float]]] = field(default_factory=list)  # (n, L, h)
    seconds: float = 0.0
    stopped: bool = False  # on_step asked to stop early

    @property
    def chance(self) -> float:
        """ln(vocab): the loss of a uniform guess."""
        return math.log(self.config.vocab)

    @property
    def done(self) -> int:
        return len(self.loss_repeated)

    def last_scores(self) -> HeadScores:
        """The head scores at the last snapshot (on the run's fixed probe sequences)."""
        probe = probe_sequences(self.config, self.seed)  # (N_PROBE, T), regenerated
        prev = torch.tensor(self.previous_token[-1])  # (L, h)
        induction = torch.tensor(self.induction[-1])  # (L, h)
        n_ind = int((induction_targets(probe) >= 0).sum())
        return HeadScores(prev, induction, probe.numel() - probe.shape[0], n_ind)

    def tail(self, name: str, n: int = 50) -> float:
        xs = getattr(self, name)[-n:]
        return sum(xs) / len(xs) if xs else float("nan")

    def phase_change_step(self, level: float = 0.5) -> int | None:
        """First step where the repeated-position loss (mean of 25 steps) falls below
        `level` × ln(vocab); None if it never does."""
        xs = self.loss_repeated
        for i in range(len(xs)):
            w = xs[max(0, i - 24) : i + 1]
            if len(w) == 25 and sum(w) / 25 < level * self.chance:
                return i - 12
        return None


def running_mean(xs: Sequence[float], window: int) -> tuple[np.ndarray, np.ndarray]:
    """(means of every `window` consecutive steps of a logged curve, the step at each
    window's centre; steps count from 1)."""
    x = np.asarray(xs, np.float64)
    m = np.convolve(x, np.ones(window) / window, mode="valid")
    return m, np.arange(m.size) + 1 + (window - 1) // 2


def halfway_step(steps: Sequence[int], score: Sequence[float]) -> int | None:
    """First snapshot step where a score has made half of its rise from start to end;
    None when it did not rise."""
    s = np.asarray(score, np.float64)
    if s.size < 2 or s[-1] <= s[0]:
        return None
    return int(np.asarray(steps)[np.argmax(s >= s[0] + (s[-1] - s[0]) / 2)])


def train_induction(
    *,
    steps: int = PRETRAINED_STEPS,
    seed: int = PRETRAINED_SEED,
    vocab: int = 64,
    seq_len: int = 48,
    d_model: int = 64,
    heads: int = 4,
    batch: int = 32,
    lr: float = 3e-3,
    device=None,
    threads: int | None = 1,
    on_step: Callable[[int, InductionRun], bool | None] | None = None,
) -> tuple[InductionModel, InductionRun]:
    """Train from scratch; deterministic per seed (weights and batches from `seed`).

    `on_step(step, run)` runs after every step; returning True stops training.
    `threads`: torch intra-op threads while training (see `_torch_threads`).
    """
    with _torch_threads(threads):
        return _train(steps, seed, vocab, seq_len, d_model, heads, batch, lr, device, on_step)


def _train(steps, seed, vocab, seq_len, d_model, heads, batch, lr, device, on_step):
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a whole number >= 0; got {steps}")
    config = InductionConfig(vocab=vocab, seq_len=seq_len, d_model=d_model, heads=heads)
    dev = torch.device("cpu") if device is None else torch.device(device)
    with torch.random.fork_rng(devices=[]):  # seeded init without touching the global RNG
        torch.manual_seed(seed)
        model = InductionModel(config)
    model.to(dev)
    data = torch.Generator().manual_seed(seed + 1)
    probe = probe_sequences(config, seed).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    run = InductionRun(config=config, seed=seed, steps=int(steps), batch=batch, lr=lr)

    def snapshot(step: int) -> None:
        model.eval()
        s = head_scores(model, probe)
        model.train()
        run.score_steps.append(step)
        run.previous_token.append(s.previous_token.tolist())
        run.induction.append(s.induction.tolist())

    t0 = time.perf_counter()
    snapshot(0)
    model.train()
    for step in range(1, int(steps) + 1):
        tokens, _ = repeated_sequences(batch, config, generator=data)
        tokens = tokens.to(dev)
        loss = per_position_loss(model(tokens), tokens)  # (B, T-1)
        rep = repeated_positions(tokens)  # (B, T-1)
        opt.zero_grad(set_to_none=True)
        loss.mean().backward()
        opt.step()
        with torch.no_grad():
            both = torch.stack([loss[rep].mean(), loss[~rep].mean()]).tolist()
        run.loss_repeated.append(both[0])
        run.loss_first.append(both[1])
        if step % SCORE_EVERY == 0 or step == steps:
            snapshot(step)
        run.seconds = time.perf_counter() - t0
        if on_step is not None and on_step(step, run):
            run.stopped = True
            break
    model.eval()
    return model, run


# --- evaluation


def eval_batch(config: InductionConfig, n: int = 128, seed: int = 12345) -> torch.Tensor:
    """(n, T) fixed held-out sequences (a seed no training run draws its batches from)."""
    tokens, _ = repeated_sequences(n, config, generator=torch.Generator().manual_seed(seed))
    return tokens


def evaluate(model: InductionModel, tokens: torch.Tensor, head_mask=None) -> tuple[float, float]:
    """(repeated-position loss, first-occurrence loss) of `model` on `tokens` (B, T)."""
    with torch.no_grad():
        dev = model.E_tok.weight.device
        tokens = tokens.to(dev)
        hm = None if head_mask is None else head_mask.to(dev)
        return split_loss(per_position_loss(model(tokens, hm), tokens), tokens)


def single_head_ablation(model: InductionModel, tokens: torch.Tensor) -> torch.Tensor:
    """(layers, h): the repeated-position loss with that one head switched off."""
    c = model.config
    out = torch.empty(c.layers, c.heads)
    for l in range(c.layers):
        for h in range(c.heads):
            out[l, h] = evaluate(model, tokens, ablation_mask(c, [(l, h)]))[0]
    return out


# --- user input


@dataclass(frozen=True)
class ParsedTokens:
    """The user's text turned into model input, and what was changed (the page words it)."""

    ids: list[int]  # token ids in [0, vocab), at most seq_len of them
    labels: list[str]  # what each token was in the user's text
    mode: str  # "ids", "words" or "characters"
    total: int  # tokens before capping
    capped: bool = False  # more than seq_len tokens: only the first seq_len are used
    bad_id: str | None = None  # the first number that names no id (so numbers were read as words)
    distinct: int = 0  # distinct tokens; past vocab, later ones share ids with earlier ones


def _token_id(p: str, vocab: int) -> int | None:
    """The id a numeral names, or None when it names none (sign, range, length).

    The digits are counted after leading zeros go, and only those few reach int(): a
    number of more than 9 significant digits is no id, and int() refuses past 4,300."""
    digits = p.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 9:
        return None
    v = int(digits)
    return v if v < vocab and not (p.startswith("-") and v) else None


def parse_tokens(text: str, vocab: int = 64, seq_len: int = 48) -> ParsedTokens:
    """Read "a b c a b c", "3, 7, 3, 7" or "abcabc" as tokens.

    Whitespace or commas separate tokens; a single word with no separators is read
    one character at a time. A list of whole numbers in [0, vocab) is used as token
    ids directly; anything else is read as words, each distinct word getting its
    own id in order of first appearance (the model was trained on random ids, so
    which id a word gets does not matter — only which tokens are equal does).
    """
    text = str(text).strip()
    if not text:
        return ParsedTokens([], [], "words", 0)
    if re.search(r"[\s,]", text):
        pieces = [p for p in re.split(r"[\s,]+", text) if p]
        mode = "words"
    else:
        pieces = list(text) if len(text) > 1 else [text]
        mode = "characters" if len(text) > 1 else "words"
    total = len(pieces)
    pieces = pieces[:seq_len]
    capped, bad_id = total > seq_len, None
    numbers = [p for p in pieces if re.fullmatch(r"[+-]?\d+", p)]
    if pieces and len(numbers) == len(pieces):
        values = [_token_id(p, vocab) for p in pieces]
        bad = [p for p, v in zip(pieces, values, strict=True) if v is None]
        if not bad:
            return ParsedTokens(values, pieces, "ids", total, capped, None, len(set(values)))
        bad_id = bad[0]
    ids: dict[str, int] = {}
    for p in pieces:
        ids.setdefault(p, len(ids))
    out = [ids[p] % vocab for p in pieces]
    return ParsedTokens(out, pieces, mode, total, capped, bad_id, len(ids))


# --- shipped weights


def save_pretrained(model: InductionModel, run: InductionRun, path: Path | str = ASSET) -> Path:
    """Write the weights, the config and the training curves (plain types + tensors)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {k: v for k, v in asdict(run).items() if k != "config"}
    for name in ("loss_repeated", "loss_first"):
        meta[name] = torch.tensor(meta[name], dtype=torch.float32)  # compact on disk
    state = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    blob = {"config": asdict(model.config), "state_dict": state, "run": meta}
    torch.save(blob, path)
    return path


def load_pretrained(path: Path | str = ASSET, device=None) -> tuple[InductionModel, InductionRun]:
    """The shipped model (trained by `python -m attn_core.lessons.heads`) and its training run."""
    blob = torch.load(Path(path), map_location="cpu", weights_only=True)
    config = InductionConfig(**blob["config"])
    model = InductionModel(config)
    model.load_state_dict(blob["state_dict"])
    model.eval()
    meta = dict(blob["run"])
    for name in ("loss_repeated", "loss_first"):
        meta[name] = [float(x) for x in meta[name].tolist()]
    run = InductionRun(config=config, **meta)
    return model.to(torch.device("cpu") if device is None else torch.device(device)), run


def main(argv: list[str] | None = None) -> None:
    """Train the shipped model deterministically and write it to assets/."""
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--steps", type=int, default=PRETRAINED_STEPS)
    ap.add_argument("--seed", type=int, default=PRETRAINED_SEED)
    ap.add_argument("--out", type=Path, default=ASSET)
    a = ap.parse_args(argv)
    torch.use_deterministic_algorithms(True)
    model, run = train_induction(steps=a.steps, seed=a.seed)
    path = save_pretrained(model, run, a.out)
    s = head_scores(model, eval_batch(model.config))
    print(f"trained {run.done} steps in {run.seconds:.1f} s; wrote {path}")
    print(
        f"loss, last 50 steps: repeated {run.tail('loss_repeated'):.3f}, "
        f"first occurrence {run.tail('loss_first'):.3f} (ln vocab = {run.chance:.3f})"
    )
    print("previous-token scores:", [[round(x, 3) for x in r] for r in s.previous_token.tolist()])
    print("induction scores:     ", [[round(x, 3) for x in r] for r in s.induction.tolist()])


if __name__ == "__main__":
    main()
