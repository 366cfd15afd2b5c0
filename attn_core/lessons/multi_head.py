"""The multi-head page's experiments, built on `MultiHeadAttention`.

- a tiny deterministic word embedding, so a typed sentence always gives the same picture;
- a seeded multi-head layer run once with every intermediate kept (per-head weights,
  per-head outputs, the concatenation) plus each head's share of the final output;
- the reshape walk-through, including the real error `.view` raises without `.contiguous()`;
- parameter and KV-cache arithmetic for MHA / GQA / MQA;
- the "tired cat" interference example;
- how different the heads are (Jensen–Shannon divergence) and what pruning them does.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass

import torch

from ..attention import attention
from ..cost import kv_cache_bytes
from ..multihead import MultiHeadAttention, valid_head_counts
from ..softmax import entropy
from .positions import sinusoidal_positions

MAX_SENTENCE_TOKENS = 64
# A word, or a run of symbols (punctuation, emoji) between spaces.
_TOKEN = re.compile(r"\w+|[^\w\s]+")


# ----------------------------------------------------------------------------- choices


def kv_head_choices(n: int) -> list[int]:
    """Every positive divisor of n, ascending (valid kv_heads for h = n query heads)."""
    if n < 1:
        raise ValueError(f"n must be positive; got {n}")
    return [g for g in range(1, n + 1) if n % g == 0]


def nearest_choices(x: int, choices: list[int]) -> list[int]:
    """The valid choices just below and just above x (one of them if x is outside)."""
    if not choices:
        raise ValueError("no choices")
    below = [c for c in choices if c <= x]
    above = [c for c in choices if c >= x]
    out = ([below[-1]] if below else []) + ([above[0]] if above else [])
    return sorted(set(out))


def nearest_valid_heads(h: int, d_model: int) -> int:
    """The valid head count closest to h (the larger one on a tie: more heads, same cost)."""
    options = valid_head_counts(d_model)
    return min(options, key=lambda c: (abs(c - h), -c))


def head_kind(h: int, h_kv: int) -> str:
    """'MHA' (one K/V head per query head), 'MQA' (one shared), 'GQA' (in between)."""
    if h_kv == h:
        return "MHA"
    if h_kv == 1:
        return "MQA"
    return "GQA"


# ----------------------------------------------------------------------------- input


def sentence_tokens(sentence: str, max_tokens: int = MAX_SENTENCE_TOKENS) -> tuple[list[str], int]:
    """Words and symbol runs of `sentence`, at most max_tokens; also how many were dropped."""
    tokens = _TOKEN.findall(sentence)
    return tokens[:max_tokens], max(0, len(tokens) - max_tokens)


def _word_seed(word: str) -> int:
    # A cryptographic hash, not Python's hash(): the same word gives the same vector
    # in every process and on every machine (hash() is salted per process).
    digest = hashlib.blake2b(word.lower().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)


def embed_words_fixed(words: list[str], d_model: int) -> torch.Tensor:
    """(T, d_model) float32: a fixed N(0, 1) vector per (lower-cased) word, plus its position.

    The word part depends only on the word, so "cat" is the same vector in every
    sentence; the position part keeps a repeated word ("the … the") from getting
    exactly the same row twice.
    """
    if not words:
        raise ValueError("need at least one word to embed")
    rows = []
    for w in words:
        g = torch.Generator().manual_seed(_word_seed(w))
        rows.append(torch.randn(d_model, generator=g, dtype=torch.float64))
    x = torch.stack(rows) + sinusoidal_positions(len(words), d_model)  # (T, d_model)
    return x.float()


def random_tokens(T: int, d_model: int, seed: int) -> torch.Tensor:
    """(T, d_model) float32 of iid N(0, 1) components: 'random vectors' input."""
    g = torch.Generator().manual_seed(seed)
    return torch.randn(T, d_model, generator=g, dtype=torch.float64).float()


def seeded_mha(d_model: int, h: int, h_kv: int, seed: int, device=None) -> MultiHeadAttention:
    """A MultiHeadAttention whose weights depend only on (shape, seed).

    nn.Linear's default U(±1/√d) gives scores so small that every map is nearly flat.
    Here W_v and W_o are N(0, 1/d_model) (unit-variance in, unit-variance out) and W_q,
    W_k are N(0, 2/d_model), so q and k have variance 2 and the scaled scores a standard
    deviation of about 2: sharp enough that each head's preferences are visible, still
    far from a saturated softmax. Biases are small (std 0.02).
    """
    m = MultiHeadAttention(d_model, h, num_kv_heads=h_kv)
    # A stream of its own: seeding it with `seed` itself would make W_q's first rows
    # equal to the random input tokens (same numbers, same order) and fake a pattern.
    g = torch.Generator().manual_seed(_word_seed(f"weights/{seed}"))
    with torch.no_grad():
        for lin, var in ((m.W_q, 2.0), (m.W_k, 2.0), (m.W_v, 1.0), (m.W_o, 1.0)):
            w = torch.randn(lin.weight.shape, generator=g, dtype=torch.float64)
            lin.weight.copy_(w * math.sqrt(var / d_model))
            lin.bias.copy_(0.02 * torch.randn(lin.bias.shape, generator=g, dtype=torch.float64))
    m.eval()
    return m.to(device) if device is not None else m


# ----------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class HeadsRun:
    weights: torch.Tensor  # (h, T, T), each head's attention weights
    head_outputs: torch.Tensor  # (h, T, d_k), each head's weighted average of its values
    concat: torch.Tensor  # (T, d_model), heads side by side before W_o
    output: torch.Tensor  # (T, d_model), after W_o
    contributions: torch.Tensor  # (h, T, d_model), head j's share of output (bias excluded)
    bias: torch.Tensor  # (d_model,), W_o's bias: the output when every head is pruned


def run_heads(x: torch.Tensor, m: MultiHeadAttention) -> HeadsRun:
    """One self-attention pass over x (T, d_model), keeping everything a page draws."""
    with torch.no_grad():
        xb = x.unsqueeze(0)  # (1, T, d_model)
        r = m.forward_detailed(xb, xb, xb)
        o = r.head_outputs[0]  # (h, T, d_k)
        # W_o is linear, so the output splits into one term per head plus the bias:
        #   y = Σ_j o_j W_o[:, j-th block]ᵀ + b.  Column block j of W_o reads head j only.
        W = m.W_o.weight.view(m.d_model, m.h, m.d_k)  # (d_model, h, d_k)
        contrib = torch.einsum("htk,dhk->htd", o, W)  # (h, T, d_model)
        return HeadsRun(
            weights=r.weights[0],
            head_outputs=o,
            concat=r.concat[0],
            output=r.output[0],
            contributions=contrib,
            bias=m.W_o.bias.detach().clone(),
        )


# ----------------------------------------------------------------------------- diversity


def jensen_shannon(p: torch.Tensor, q: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Jensen–Shannon divergence in bits, 0 (same) … 1 (disjoint): H(m) - (H(p)+H(q))/2."""
    m = 0.5 * (p + q)
    return (entropy(m, dim) - 0.5 * (entropy(p, dim) + entropy(q, dim))) / math.log(2)


def head_diversity(weights: torch.Tensor) -> torch.Tensor:
    """(h, T, T) weights -> (h, h): JS divergence between two heads, averaged over queries.

    One head at a time against all others keeps memory at O(h·T²) rather than O(h²·T²).
    """
    h = weights.shape[0]
    w = weights.double()
    out = torch.zeros(h, h, dtype=torch.float64)
    for a in range(h):
        out[a] = jensen_shannon(w[a].unsqueeze(0), w, dim=-1).mean(-1)  # (h,)
    out = 0.5 * (out + out.T)  # exact symmetry despite rounding
    out.fill_diagonal_(0.0)
    return out.clamp_min(0.0)


def mean_focus(weights: torch.Tensor) -> torch.Tensor:
    """(..., T, T) -> (...,): mean over queries of the largest weight in the row."""
    return weights.amax(-1).mean(-1)


# ----------------------------------------------------------------------------- pruning


def prune_mask(h: int, pruned: list[int] | tuple[int, ...]) -> torch.Tensor:
    """(h,) ones with zeros at the pruned heads (0-based indices)."""
    mask = torch.ones(h)
    for j in pruned:
        if not 0 <= j < h:
            raise ValueError(f"head index {j} out of range for h={h}")
        mask[j] = 0.0
    return mask


def pruned_forward(x: torch.Tensor, m: MultiHeadAttention, pruned) -> torch.Tensor:
    """(T, d_model): the layer's output with the given heads (0-based) pruned, via head_mask."""
    with torch.no_grad():
        xb = x.unsqueeze(0)  # (1, T, d_model)
        mask = prune_mask(m.h, pruned).to(x.device)  # (h,)
        return m.forward_detailed(xb, xb, xb, head_mask=mask).output[0]


def pruned_output(run: HeadsRun, pruned: list[int] | tuple[int, ...]) -> torch.Tensor:
    """(T, d_model): the output with the given heads (0-based) zeroed before W_o."""
    keep = prune_mask(run.contributions.shape[0], pruned).to(run.contributions.dtype)
    return torch.einsum("h,htd->td", keep, run.contributions) + run.bias


def output_change(full: torch.Tensor, other: torch.Tensor) -> tuple[float, float]:
    """(relative change ‖Δy‖/‖y‖, mean cosine similarity per token) between two outputs."""
    rel = float((other - full).norm() / full.norm().clamp_min(1e-12))
    cos = torch.nn.functional.cosine_similarity(full, other, dim=-1, eps=1e-12)
    return rel, float(cos.mean())


def pruning_curve(run: HeadsRun) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Remove heads one by one, least important first.

    Returns (solo, curve, order): solo[j] is the relative output change when only
    head j is removed; curve[k] the change after removing the k least important
    heads (curve[0] = 0, curve[h] = everything but the bias gone); order the heads
    (0-based) in removal order.
    """
    h = run.contributions.shape[0]
    solo = torch.stack([torch.tensor(output_change(run.output, pruned_output(run, [j]))[0])
                        for j in range(h)])  # fmt: skip
    order = [int(j) for j in torch.argsort(solo, stable=True)]
    curve = [0.0] + [output_change(run.output, pruned_output(run, order[:k]))[0]
                     for k in range(1, h + 1)]  # fmt: skip
    return solo, torch.tensor(curve), order


# ----------------------------------------------------------------------------- the reshape


@dataclass(frozen=True)
class ReshapeStep:
    code: str
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    contiguous: bool
    key: str  # which step: content/multi_head.md `reshape.steps` says what it means


@dataclass(frozen=True)
class ReshapeWalk:
    steps: list[ReshapeStep]
    view_error: str | None  # what .view says without .contiguous(); None if it happens to work
    reshape_copies: bool  # .reshape on the transposed tensor allocated new memory
    reshape_matches: bool  # …and holds the same numbers as .contiguous().view


def reshape_walkthrough(B: int, T: int, d_model: int, h: int) -> ReshapeWalk:
    """Follow one tensor through the head split and back, on real tensors of these shapes."""
    d_k = d_model // h
    if d_k * h != d_model:
        raise ValueError(f"h={h} does not divide d_model={d_model}")
    g = torch.Generator().manual_seed(0)
    x = torch.randn(B, T, d_model, generator=g)  # (B, T, d_model): one projection's output

    def step(t: torch.Tensor, code: str, key: str) -> ReshapeStep:
        return ReshapeStep(code, tuple(t.shape), tuple(t.stride()), t.is_contiguous(), key)

    split = x.view(B, T, h, d_k)  # (B, T, h, d_k): same memory, last axis cut in h pieces
    heads = split.transpose(1, 2)  # (B, h, T, d_k): only the strides change, nothing moves
    scores = heads @ heads.transpose(-2, -1) / math.sqrt(d_k)  # (B, h, T, T)
    out = torch.softmax(scores, -1) @ heads  # (B, h, T, d_k)
    back = out.transpose(1, 2)  # (B, T, h, d_k): a non-contiguous view again
    merged = back.contiguous().view(B, T, d_model)  # (B, T, d_model): copy, then re-read
    steps = [
        step(x, "x = W_q(tokens)", "project"),
        step(split, "x.view(B, T, h, d_k)", "split"),
        step(heads, ".transpose(1, 2)", "heads_first"),
        step(scores, "q @ k.transpose(-2, -1) / √d_k", "scores"),
        step(out, "softmax(scores) @ v", "average"),
        step(back, "out.transpose(1, 2)", "time_first"),
        step(merged, ".contiguous().view(B, T, d_model)", "merge"),
    ]
    try:
        back.view(B, T, d_model)  # the bug: .view cannot walk a transposed layout
        view_error = None
    except RuntimeError as e:  # the live message from PyTorch, shown as-is
        view_error = str(e)
    reshaped = back.reshape(B, T, d_model)
    return ReshapeWalk(
        steps=steps,
        view_error=view_error,
        reshape_copies=reshaped.data_ptr() != back.data_ptr(),
        reshape_matches=bool(torch.equal(reshaped, merged)),
    )


# ----------------------------------------------------------------------------- d_v ≠ d_k


@dataclass(frozen=True)
class ShapeRow:
    code: str
    shape: tuple[int, ...]
    key: str  # which row: content/multi_head.md `value_width.rows` says what it means


@dataclass(frozen=True)
class ValueWidthWalk:
    d_k: int
    d_v: int
    rows: list[ShapeRow]
    head_output: tuple[int, ...]  # (B, h, T, d_v): what each head returns
    merged: tuple[int, ...]  # (B, T, h·d_v): the heads side by side, before W_o
    W_o: tuple[int, ...]  # (h·d_v, d_model)
    output: tuple[int, ...]  # (B, T, d_model)
    sdpa_max_diff: float  # largest |attention − F.scaled_dot_product_attention| on these q, k, v
    mismatch_error: str  # what `attention` says when k's width differs from q's


def value_width_walkthrough(
    B: int, T: int, d_model: int, h: int, d_v: int, seed: int = 0
) -> ValueWidthWalk:
    """One multi-head layer whose values are d_v wide while queries and keys are d_k wide.

    q and k meet in a dot product, so they must share d_k; v is only averaged with the
    weights, so any d_v works: each head returns (T, d_v) and W_o maps h·d_v back to d_model.
    """
    d_k = d_model // h
    if d_k * h != d_model:
        raise ValueError(f"h={h} does not divide d_model={d_model}")
    if d_v < 1:
        raise ValueError(f"d_v must be positive; got {d_v}")
    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g)

    # Scaled in place and dropped once used: at d_model 1024, h 64, d_v 128 W_v, W_o are 32 MB
    x = randn(B, T, d_model)  # (B, T, d_model)
    W_q, W_k = (randn(d_model, h * d_k).div_(math.sqrt(d_model)) for _ in range(2))
    q = (x @ W_q).view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k)
    k = (x @ W_k).view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k)
    W_v = randn(d_model, h * d_v).div_(math.sqrt(d_model))  # (d_model, h·d_v): its own width
    v = (x @ W_v).view(B, T, h, d_v).transpose(1, 2)  # (B, h, T, d_v)
    W_v_shape, W_v = tuple(W_v.shape), None
    r = attention(q, k, v)  # scores (B, h, T, T): d_k is summed away in q·k
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v)  # (B, h, T, d_v)
    merged = r.output.transpose(1, 2).contiguous().view(B, T, h * d_v)  # (B, T, h·d_v)
    W_o = randn(h * d_v, d_model).div_(math.sqrt(h * d_v))  # (h·d_v, d_model): to d_model
    y = merged @ W_o  # (B, T, d_model)
    wrong = d_v if d_v != d_k else d_k + 1  # the slip: keys made as wide as the values
    try:
        attention(q, randn(B, h, T, wrong), v)
        error = ""
    except ValueError as e:  # the live message, shown as-is
        error = str(e)
    rows = [
        ShapeRow("x", tuple(x.shape), "x"),
        ShapeRow("q = split(x @ W_q)", tuple(q.shape), "q"),
        ShapeRow("k = split(x @ W_k)", tuple(k.shape), "k"),
        ShapeRow("W_v", W_v_shape, "W_v"),
        ShapeRow("v = split(x @ W_v)", tuple(v.shape), "v"),
        ShapeRow("q @ k.transpose(-2, -1)", tuple(r.scores.shape), "scores"),
        ShapeRow("softmax(scores) @ v", tuple(r.output.shape), "heads_out"),
        ShapeRow("merge heads", tuple(merged.shape), "merged"),
        ShapeRow("W_o", tuple(W_o.shape), "W_o"),
        ShapeRow("merged @ W_o", tuple(y.shape), "output"),
    ]
    return ValueWidthWalk(
        d_k=d_k,
        d_v=d_v,
        rows=rows,
        head_output=tuple(r.output.shape),
        merged=tuple(merged.shape),
        W_o=tuple(W_o.shape),
        output=tuple(y.shape),
        sdpa_max_diff=float((r.output - ref).abs().max()),
        mismatch_error=error,
    )


# ----------------------------------------------------------------------------- what heads cost


def count_parameters(d_model: int, h: int, h_kv: int | None = None) -> dict[str, int]:
    """Parameters of a real MultiHeadAttention, counted on the meta device (no memory used)."""
    with torch.device("meta"):
        m = MultiHeadAttention(d_model, h, num_kv_heads=h_kv)
    parts = {name: sum(p.numel() for p in getattr(m, name).parameters()) for name in
             ("W_q", "W_k", "W_v", "W_o")}  # fmt: skip
    parts["total"] = sum(parts.values())
    return parts


def mha_parameter_formula(d_model: int) -> int:
    """4 projections of d_model × d_model plus 4 biases: 4·d² + 4·d, whatever h is."""
    return 4 * d_model * d_model + 4 * d_model


def gqa_example(h: int) -> int | None:
    """A grouped-query setting for h heads: groups as close to 8 query heads as h allows."""
    middle = [g for g in kv_head_choices(h) if 1 < g < h]
    if not middle:
        return None
    return min(middle, key=lambda g: (abs(h // g - 8), g))


@dataclass(frozen=True)
class KVRow:
    kind: str  # MHA / GQA / MQA
    h_kv: int
    kv_params: int  # W_k + W_v weights and biases
    bytes_per_token: int  # K and V for one token in one layer
    cache_bytes: int  # for the stated context, layers, batch and dtype
    ratio: float  # cache relative to MHA


def kv_table(
    d_model: int,
    h: int,
    h_kv: int,
    *,
    context: int = 8192,
    layers: int = 32,
    batch: int = 1,
    dtype: str = "float16",
) -> list[KVRow]:
    """KV cache for MHA, a GQA setting (the current one if it is GQA) and MQA."""
    d_k = d_model // h
    settings = [h]
    middle = h_kv if 1 < h_kv < h else gqa_example(h)
    if middle is not None:
        settings.append(middle)
    if h > 1:
        settings.append(1)
    full = kv_cache_bytes(batch, context, layers, h, d_k, dtype)
    rows = []
    for g in settings:
        params = count_parameters(d_model, h, g)
        cache = kv_cache_bytes(batch, context, layers, g, d_k, dtype)
        rows.append(
            KVRow(
                kind=head_kind(h, g),
                h_kv=g,
                kv_params=params["W_k"] + params["W_v"],
                bytes_per_token=kv_cache_bytes(1, 1, 1, g, d_k, dtype),
                cache_bytes=cache,
                ratio=cache / full,
            )
        )
    return rows


# ----------------------------------------------------------------------------- the tired cat

V_CAT = (4.0, 0.0)
V_TIRED = (0.0, 4.0)


def _read(weight_on_cat: torch.Tensor) -> torch.Tensor:
    """(n,) weights on "cat" -> (n, 2) outputs, through `attention` itself.

    q and k are zero, so every score is 0, and the float mask log(w) is added to
    the logits: softmax(log w) = w exactly, including the ends (log 0 = -inf).
    """
    a = weight_on_cat.double().clamp(0.0, 1.0).view(-1, 1, 1)  # (n, 1 query, 1)
    n = a.shape[0]
    w = torch.cat([a, 1.0 - a], dim=-1)  # (n, 1, 2 keys): [cat, tired]
    v = torch.tensor([V_CAT, V_TIRED], dtype=torch.float64).expand(n, 2, 2)  # (n, 2 keys, 2)
    zeros = torch.zeros(n, 1, 1, dtype=torch.float64)
    r = attention(zeros, zeros.expand(n, 2, 1), v, torch.log(w), scale=1.0)
    return r.output[:, 0, :]  # (n, 2)


def tired_cat_one_head(weight_on_cat: float) -> torch.Tensor:
    """One head over [cat, tired]: the output α·v_cat + (1-α)·v_tired, shape (2,)."""
    return _read(torch.tensor([weight_on_cat]))[0]


def tired_cat_two_heads(head1_on_cat: float, head2_on_cat: float) -> torch.Tensor:
    """Two heads, each in its own 2-d slice, concatenated: shape (4,)."""
    return _read(torch.tensor([head1_on_cat, head2_on_cat])).reshape(4)  # [head 1 | head 2]


# ----------------------------------------------------------------------------- exercises


def heads_to_prune(h: int, seed: int) -> list[int]:
    """A seeded question: which heads (0-based, sorted) to prune, between 1 and max(1, h/2).

    At most half, so that the naive guess k/h and the real answer (about √(k/h) for
    heads that write in unrelated directions) are far apart.
    """
    g = torch.Generator().manual_seed(_word_seed(f"prune/{h}/{seed}"))
    k = 1 + int(torch.randint(max(1, h // 2), (1,), generator=g))
    return sorted(int(j) for j in torch.randperm(h, generator=g)[:k])


def distinct_maps(weights: torch.Tensor, tol: float = 1e-6) -> int:
    """(h, T, T) -> how many different attention maps the heads have (max |Δw| > tol)."""
    kept: list[torch.Tensor] = []
    for w in weights:
        if all(float((w - u).abs().max()) > tol for u in kept):
            kept.append(w)
    return len(kept)


@dataclass(frozen=True)
class HalfPruned:
    """What pruning the least useful half of the heads does, read off a pruning curve."""

    h: int  # heads in the layer
    k: int  # heads pruned: h // 2 (0 when h = 1)
    moved: float  # relative output change after pruning them, in % (curve[k])
    share: float  # k / h: a cost in proportion to the heads removed
    root: float  # √(k/h): the cost when the heads write in unrelated directions
    closer_to_root: bool  # the measurement is nearer √(k/h) than k/h


def half_pruned(curve: torch.Tensor) -> HalfPruned:
    """curve[k]: relative output change after removing the k least useful heads (0…h)."""
    c = [float(x) for x in curve]
    h = len(c) - 1
    k = h // 2
    share, root = k / h, math.sqrt(k / h)
    closer = abs(c[k] - root) <= abs(c[k] - share)
    return HalfPruned(h=h, k=k, moved=100 * c[k], share=share, root=root, closer_to_root=closer)


def prune_verdict(k: int, h: int, measured_pct: float) -> str:
    """How the naive guess k/h compares with the measured change (in %) on this layer:
    'under' (the guess undercounts), 'not_below', or 'one_head' (nothing but the bias left)."""
    if measured_pct > 100 * k / h:
        return "under"
    return "not_below" if h > 1 else "one_head"
