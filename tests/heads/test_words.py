"""/heads: every chart's words (issue 51), on every step, at the defaults, at another seed
and at an extreme (the last seed with all eight heads switched off), each number
recomputed here from the trained model itself — its weights, logits and head masks, with
the scores, losses and maxima worked out independently (torch.log_softmax, loops over
positions), never read from the figure — and every sentence accounted for: a chart whose
words say anything the test did not recompute fails."""

from __future__ import annotations

import math
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attn_core.lessons import heads as core
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.word_templates import Sentences, check_grid, check_line, items, named, same
from tests.support.words import chart_words, numbers, value

PAGE = "pages/heads.py"
HEADS = ("L0H0", "L0H1", "L0H2", "L0H3", "L1H0", "L1H1", "L1H2", "L1H3")
SETTINGS = {
    "defaults": {},
    "seed 57": {"seed": 57},
    "seed 99, every head off": {"seed": 99, "ablate": ",".join(HEADS)},  # the multiselect's end
}
TYPED = {"typed, no repeat": {"tokens": "one two three four five"}}  # nothing repeats
JOB = {"previous-token": "previous-token head", "induction": "induction head", "": "no clear job"}
POSITION = "position i (predicting the token at i + 1)"


@cache
def shipped() -> SimpleNamespace:
    model, run = core.load_pretrained()
    model.eval()
    c = model.config
    assert tuple(c.head_names()) == HEADS
    return SimpleNamespace(
        model=model, run=run, config=c, batch=core.eval_batch(c), chance=math.log(c.vocab)
    )


def losses(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """(B, T-1): −log p(token i+1) from position i, by log_softmax (not cross_entropy)."""
    lp = torch.log_softmax(logits[:, :-1].double(), -1)
    return -lp.gather(-1, tokens[:, 1:, None]).squeeze(-1)


def seen_before(tokens: torch.Tensor) -> torch.Tensor:
    """(B, T-1) bool: position i's token appeared earlier (copying can predict i+1)."""
    t = tokens.tolist()
    return torch.tensor([[row[i] in row[:i] for i in range(len(row) - 1)] for row in t])


def repeated_loss(tokens: torch.Tensor, ablate=()) -> float:
    """Mean loss over the predictions from repeated tokens, with `ablate` heads off."""
    sh = shipped()
    mask = torch.ones(sh.config.layers, sh.config.heads)
    for name in ablate:
        l, h = core.parse_head(name)
        mask[l, h] = 0.0
    with torch.no_grad():
        logits = sh.model.trace(tokens, mask).logits
    return float(losses(logits, tokens)[seen_before(tokens)].mean())


@cache
def truth(setting: str) -> SimpleNamespace:
    """The sequence a setting shows and everything its words say, recomputed."""
    sh, p = shipped(), {**SETTINGS, **TYPED}[setting]
    seed = int(p.get("seed", 0))
    ablate = tuple(sorted(p["ablate"].split(","))) if p.get("ablate") else ()
    if p.get("tokens"):  # typed: the words' own ids
        ids = core.parse_tokens(p["tokens"], sh.config.vocab, sh.config.seq_len).ids
        tokens = torch.tensor([ids])
    else:
        g = torch.Generator().manual_seed(seed)
        tokens = core.repeated_sequences(1, sh.config, generator=g)[0]  # (1, T)
    with torch.no_grad():
        tr = sh.model.trace(tokens)
    w = tr.weights[0]  # (L, h, T, T)
    T = tokens.shape[1]
    t = tokens[0].tolist()
    # the two scores, position by position
    prev = torch.stack([w[..., i, i - 1] for i in range(1, T)], -1).mean(-1)
    target = {i: max(j for j in range(i) if t[j] == t[i]) + 1 for i in range(T) if t[i] in t[:i]}
    ind = torch.full(prev.shape, float("nan"))  # no token repeats: no induction score
    if target:
        ind = torch.stack([w[..., i, k] for i, k in target.items()], -1).mean(-1)
    uniform_prev = float(np.mean([1 / (i + 1) for i in range(1, T)]))
    uniform_ind = float(np.mean([1 / (i + 1) for i in target])) if target else float("nan")
    # the jobs, by the lesson's rule on the page's scores of this sequence
    s = core.scores_from_weights(tr.weights, tokens)
    base = core.scores_from_weights(core.uniform_weights(T)[None], tokens)
    assert torch.allclose(s.previous_token, prev, atol=1e-6)
    assert torch.allclose(s.induction, ind, atol=1e-6, equal_nan=True)
    out = SimpleNamespace(
        seed=seed, ablate=ablate, tokens=tokens, w=w.numpy(), c=tr.contribution[0].numpy(),
        prev=prev.numpy(), ind=ind.numpy(), uniform_prev=uniform_prev, uniform_ind=uniform_ind,
        jobs=s.jobs(base), loss=losses(tr.logits, tokens)[0].numpy(),
        rep=seen_before(tokens)[0].numpy(), ablated=None,
    )  # fmt: skip
    if ablate:
        mask = core.ablation_mask(sh.config, ablate)
        with torch.no_grad():
            out.ablated = losses(sh.model.trace(tokens, mask).logits, tokens)[0].numpy()
    return out


@cache
def batch_losses() -> SimpleNamespace:
    """The Switch-off bars: each head off on its own, on the 128 held-out sequences."""
    sh = shipped()
    single = [repeated_loss(sh.batch, (n,)) for n in HEADS]
    return SimpleNamespace(full=repeated_loss(sh.batch), single=single)


# ---------------------------------------------------------------- one check per step


def maps(charts, t) -> None:
    """Every head named by its job, each panel's range and peak (query → key positions),
    the cells above the diagonal counted as what they are; no head dropped or hidden."""
    [words] = charts
    s = Sentences(words)
    s.take("title", title="Every head's attention map, named by its job")
    L, H, T, _ = t.w.shape
    got = s.take("panels", down="query position", across="key position")
    assert got["n"] == L * H == len(HEADS)
    causal = np.tril(np.ones((T, T), bool))
    for k, name in enumerate(HEADS):
        l, h = divmod(k, H)
        z = np.where(causal, t.w[l, h], np.nan)
        # each panel named by its job and the two scores the job is read from
        both = np.isfinite(t.ind[l, h])
        text = f"{name} ({JOB[t.jobs[l][h]]}; previous-token score {{p}}"
        text += ", induction score {i})" if both else ")"
        said = named(text, *("p", "i")[: 1 + both])
        check_grid(s, z, "query position", "key position", name=said, blank="future",
                   following=True)  # fmt: skip
        m = said.search(words)
        assert same(value(m["p"]), t.prev[l, h]), (name, m["p"], t.prev[l, h])
        assert not both or same(value(m["i"]), t.ind[l, h]), (name, m["i"], t.ind[l, h])
    s.done()
    assert "blank until" not in words  # revealed: the asked head's map is open (the fix)


def scores(charts, t) -> None:
    """Each head's two bars, and uniform attention's two levels, as the scores are."""
    [words] = charts
    s = Sentences(words)
    s.take("title", title="How much each head looks at the two places that matter")
    s.take("axes", x="head (layer, head)", y="mean attention weight", up="up")
    for name, true in (("previous-token score", t.prev), ("induction score", t.ind)):
        if np.isnan(true).all():  # no token repeats: no induction bars (not bars of 0)
            assert name not in words, words
            continue
        got = s.take("bars", texts=("bars",), name=name)
        assert got["n"] == len(HEADS)
        bars = [b.rsplit(" ", 1) for b in items(got["bars"])]
        assert [b[0] for b in bars] == list(HEADS), bars
        for (head, v), x in zip(bars, true.ravel(), strict=True):
            assert same(value(v), x), (name, head, v, x)
    uniform = (("previous-token score", t.uniform_prev), ("induction score", t.uniform_ind))
    for what, true in uniform:
        if math.isnan(true):
            continue
        got = s.take("level", name=named(f"uniform attention, {what} ({{v}})", "v"))
        assert same(got["v"], true) and same(got["y"], true), (what, got, true)
    s.done()


def loss_words(words: str, t) -> None:
    """The loss at first occurrences and at repeated tokens (and with the selection off),
    by position; the blind guess as a level line."""
    sh = shipped()
    s = Sentences(words)
    s.take("title", title="How surprised the model is by each next token")
    s.take("axes", x=POSITION, y="loss (nats)", up="up")
    x = np.arange(t.loss.size)
    check_line(s, "first occurrence (nothing to copy)", x[~t.rep], t.loss[~t.rep], POSITION)
    if t.rep.any():
        check_line(s, "repeated token (copying can work)", x[t.rep], t.loss[t.rep], POSITION)
    if t.ablate:
        check_line(s, f"with {', '.join(t.ablate)} switched off", x, t.ablated, POSITION)
    else:
        assert "switched off" not in words
    got = s.take("level", name=named("blind guess, ln(vocab) = {v}", "v"))
    assert same(got["v"], sh.chance) and same(got["y"], sh.chance)
    s.done()


def loss(charts, t) -> None:
    [words] = charts
    loss_words(words, t)


def switch_off(charts, t) -> None:
    """Each head off on its own (the 128 held-out sequences), all heads on, a blind guess,
    the selection off; with a selection, its loss chart too."""
    sh, b = shipped(), batch_losses()
    words = charts[0]
    s = Sentences(words)
    s.take("title", title="Switch off one head at a time: loss on the repeated tokens")
    s.take("axes", x="head switched off", y="loss on repeated tokens (nats)", up="up")
    got = s.take("bars", texts=("bars",), name="loss with that head off")
    bars = [x.rsplit(" ", 1) for x in items(got["bars"])]
    assert got["n"] == len(HEADS) and [x[0] for x in bars] == list(HEADS), bars
    for (head, v), true in zip(bars, b.single, strict=True):
        assert same(value(v), true), (head, v, true)
    levels = [("all heads on: {v}", b.full), ("blind guess: {v}", sh.chance)]
    if t.ablate:
        levels.append(("your selection off: {v}", repeated_loss(sh.batch, t.ablate)))
    for name, true in levels:
        got = s.take("level", name=named(name, "v"))
        assert same(got["v"], true) and same(got["y"], true), (name, got, true)
    s.done()
    assert len(charts) == (2 if t.ablate else 1)
    if t.ablate:
        loss_words(charts[1], t)


def contribution(charts, t) -> None:
    """Per head, one dot per key at the largest weight any query gives it (above 0.01) and
    what that pair writes: every head read, none summarised away."""
    [words] = charts
    s = Sentences(words)
    s.take("title", title="Attention weight versus what the head actually writes")
    s.take("axes", x="largest attention weight α the key receives (log scale)",
           y="size of what is written, ‖α · v · W_o‖ (log)", up="up")  # fmt: skip
    H, T = t.w.shape[1], t.w.shape[2]
    w = torch.from_numpy(t.w).masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), -1.0)
    best, q = w.max(dim=-2)  # (L, H, T): over queries, per key
    c = torch.from_numpy(t.c).gather(-2, q[..., None, :]).squeeze(-2)
    for k, name in enumerate(HEADS):
        l, h = divmod(k, H)
        keep = best[l, h] > 0.01
        x, y = best[l, h][keep].numpy(), c[l, h][keep].numpy()
        if x.size == 1:
            got = s.take("point", name=name, x="across")
            assert same(got["at"], x[0]) and same(got["y"], y[0])
            continue
        got = s.take("cloud", name=name)
        assert got["n"] == x.size, (name, got, x.size)
        for f, true in (("x0", x.min()), ("x1", x.max()), ("y0", y.min()), ("y1", y.max())):
            assert same(got[f], true), (name, f, got, true)
        assert any(same(got["at"], v) for v in x[y >= y.max() * (1 - 1e-6)]), (name, got)
    s.done()


def train(charts, t) -> None:
    """The shipped run's curves on one step axis, each panel's unit said, the blind guess
    as a level line and the phase change as a vertical line at its step."""
    sh = shipped()
    run = sh.run
    [words] = charts
    s = Sentences(words)
    s.take("title", title=named("Training curves — the shipped model (seed {seed})", "seed"))
    s.take("axes", x="training step", y="loss (nats) in the top panel, head score in the bottom",
           up="up")  # fmt: skip
    steps = np.arange(1, len(run.loss_first) + 1)
    check_line(s, "loss on first occurrences", steps, run.loss_first, "step")
    check_line(s, "loss on repeated tokens", steps, run.loss_repeated, "step")
    prev = [max(p[0]) for p in run.previous_token]  # the best layer-0 head at each snapshot
    ind = [max(p[-1]) for p in run.induction]  # the best last-layer head
    check_line(s, "best previous-token score, layer 0", run.score_steps, prev, "step")
    check_line(s, "best induction score, layer 1", run.score_steps, ind, "step")
    got = s.take("level", name=named("blind guess, ln(vocab) = {v}", "v"))
    assert same(got["v"], sh.chance) and same(got["y"], sh.chance)
    # the phase change: the first 25-step mean of the repeated loss under half a blind guess
    r = np.asarray(run.loss_repeated)
    phase = next(i - 12 for i in range(24, r.size) if r[i - 24 : i + 1].mean() < 0.5 * sh.chance)
    got = s.take("mark", name="phase change", x="step")
    assert got["at"] == phase
    s.done()
    assert numbers(words[: words.index(".")]) == [run.seed]


CHECKS = {
    "Maps": maps,
    "Scores": scores,
    "Loss": loss,
    "Switch off": switch_off,
    "Contribution": contribution,
    "Train": train,
}


def test_every_step_is_checked():
    assert set(page_steps(PAGE)) == set(CHECKS)


@pytest.mark.parametrize("step", list(CHECKS))
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_chart_says_what_the_model_computes(setting, step):
    at = run_page(PAGE, timeout=120, reveal=True, step=step, **SETTINGS[setting])
    no_exception(at)
    t = truth(setting)
    said = [w for _, w in chart_words(at)]
    CHECKS[step](said, t)


@pytest.mark.parametrize("step", ["Scores", "Loss"])
def test_a_sequence_without_repeats_has_no_induction_score_in_words(step):
    """Typed words that never repeat: no head has an induction score (NaN), so the Scores
    chart draws no induction bars and its words give none (they used to read 0 for every
    head), nor uniform attention's; the Loss chart has no repeated-token points."""
    at = run_page(PAGE, timeout=120, reveal=True, step=step, **TYPED["typed, no repeat"])
    no_exception(at)
    t = truth("typed, no repeat")
    assert np.isnan(t.ind).all() and not t.rep.any()
    CHECKS[step]([w for _, w in chart_words(at)], t)
