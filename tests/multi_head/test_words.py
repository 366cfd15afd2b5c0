"""/multi-head: every chart's words, on every step, recomputed (issue 51).

Each step is opened as a shared link (AppTest, exercises revealed) at five settings: the
defaults; another seed with 16 heads (more panels than the words read one by one) and
the other controls moved; the extremes 64 heads over 64 tokens (GQA) and 1 head over 2
tokens at the smallest d_model; and a typed sentence with a repeated word (MQA). Every
number a chart's words state is recomputed here in float64 from the lesson's inputs (the
seeded layer's weights and the input vectors) by plain torch — the projections, each
head's softmax, the concatenation, W_o, the Jensen–Shannon divergence and the pruning
curve are computed again, not read from the page or its figures — and every sentence
must be accounted for (no number left over). The words' axis order must be the drawn one,
and every head, panel and series is named.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from functools import cache

import numpy as np
import pytest
import torch

from attn_core.lessons import multi_head as core
from tests.support.apptest import no_exception, page_steps, plotly_specs, run_page
from tests.support.grid_words import check_axes, check_grid, trace_names
from tests.support.word_templates import Sentences, items, pattern, same
from tests.support.words import NUMBER, chart_words, value
from ui import content

PAGE = "pages/multi-head.py"
PANELS = 10  # figures.describe.MAX_PANELS: grids read one by one, the rest by their peak
BARS = 12  # figures.describe.MAX_BARS
SENTENCE = "the cat saw the dog on the mat"  # "the" three times: one name, three rows
X_KEY, Y_QUERY = "key (attended to)", "query (attending)"


@dataclass(frozen=True)
class Case:
    """One setting: the link's parameters, and the values they stand for."""

    name: str
    url: dict = field(default_factory=dict, compare=False)  # (its values name the rest)
    d_model: int = 512
    heads: int = 8
    kv: int | None = None  # None: as many as heads (MHA)
    T: int = 10
    seed: int = 0
    words: tuple[str, ...] = ()
    head: int = 1  # the Outputs step's head
    split: float = 0.5  # the tired cat's sliders
    split1: float = 1.0
    split2: float = 0.0
    pruned: tuple[int, ...] = ()  # 1-based


CASES = [
    Case("defaults"),
    Case(
        "seed 5, 16 heads",
        dict(
            seed=5,
            heads=16,
            tokens=13,
            head=11,
            split=0.3,
            split1=0.65,
            split2=0.15,
            pruned="2,9,14",
        ),
        heads=16,
        T=13,
        seed=5,
        head=11,
        split=0.3,
        split1=0.65,
        split2=0.15,
        pruned=(2, 9, 14),
    ),
    Case(
        "64 heads over 64 tokens",
        dict(
            heads=64,
            kv_heads=8,
            tokens=64,
            seed=10000,
            head=64,
            split=1,
            split1=0,
            split2=1,
            pruned="1,64",
        ),
        heads=64,
        kv=8,
        T=64,
        seed=10000,
        head=64,
        split=1.0,
        split1=0.0,
        split2=1.0,
        pruned=(1, 64),
    ),
    Case(
        "1 head over 2 tokens",
        dict(d_model=16, heads=1, tokens=2, seed=1, split=0, pruned="1"),
        d_model=16,
        heads=1,
        T=2,
        seed=1,
        split=0.0,
        pruned=(1,),
    ),
    Case(
        "a sentence, MQA",
        dict(input="sentence", sentence=SENTENCE, heads=4, kv_heads=1, seed=3, head=4),
        heads=4,
        kv=1,
        T=len(SENTENCE.split()),
        seed=3,
        words=tuple(SENTENCE.split()),
        head=4,
    ),
]
STEPS = page_steps(PAGE)
CHARTS = {"Heads": 2, "Outputs": 2, "Reshape": 0, "Cost": 0, "Tired cat": 2, "Diversity": 2}


# ------------------------------------------------------------------ the recomputation


@dataclass(frozen=True)
class Layer:
    w: np.ndarray  # (h, T, T) each head's weights
    o: np.ndarray  # (h, T, d_k) each head's output
    concat: np.ndarray  # (T, d_model)
    y: torch.Tensor  # (T, d_model) float64, after W_o
    concat_t: torch.Tensor  # (T, d_model) float64
    W_o: torch.Tensor
    b_o: torch.Tensor


@cache
def layer(c: Case) -> Layer:
    """The page's layer on the page's input, recomputed in float64 by plain torch."""
    x = (
        core.embed_words_fixed(list(c.words), c.d_model)
        if c.words
        else core.random_tokens(c.T, c.d_model, c.seed)
    ).double()  # (T, d_model)
    m = core.seeded_mha(c.d_model, c.heads, c.kv or c.heads, c.seed)
    h, kv, d_k = c.heads, c.kv or c.heads, c.d_model // c.heads

    def proj(lin, n):  # (T, d_model) -> (n, T, d_k)
        t = x @ lin.weight.detach().double().T + lin.bias.detach().double()
        return t.view(-1, n, d_k).transpose(0, 1)

    q = proj(m.W_q, h)
    k = proj(m.W_k, kv).repeat_interleave(h // kv, 0)  # query heads share K/V in groups
    v = proj(m.W_v, kv).repeat_interleave(h // kv, 0)
    w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d_k), -1)  # (h, T, T)
    o = w @ v  # (h, T, d_k)
    concat = o.transpose(0, 1).reshape(-1, c.d_model)  # head 1's slice first
    W_o, b_o = m.W_o.weight.detach().double(), m.W_o.bias.detach().double()
    return Layer(w.numpy(), o.numpy(), concat.numpy(), concat @ W_o.T + b_o, concat, W_o, b_o)


def moved(L: Layer, d_k: int, gone) -> float:
    """Relative change ‖y' − y‖ / ‖y‖ with the heads `gone` (0-based) zeroed before W_o."""
    c = L.concat_t.clone()
    for j in gone:
        c[:, j * d_k : (j + 1) * d_k] = 0
    return float((c @ L.W_o.T + L.b_o - L.y).norm() / L.y.norm())


def curve(c: Case) -> list[float]:
    """The output change after removing the k least important heads, k = 0..h: importance
    is the change when the head alone is removed."""
    L, d_k = layer(c), c.d_model // c.heads
    solo = [moved(L, d_k, [j]) for j in range(c.heads)]
    order = sorted(range(c.heads), key=lambda j: solo[j])
    return [moved(L, d_k, order[:k]) for k in range(c.heads + 1)]


def js_bits(w: np.ndarray) -> np.ndarray:
    """(h, h) Jensen–Shannon divergence in bits between two heads' rows, mean over queries."""
    p = torch.from_numpy(w)

    def H(a):  # entropy in bits, 0 log 0 = 0
        return -(torch.where(a > 0, a * torch.log2(a), torch.zeros_like(a))).sum(-1)

    a, b = p[:, None], p[None, :]
    return (H((a + b) / 2) - (H(a) + H(b)) / 2).mean(-1).clamp_min(0).numpy()


def tick_names(c: Case) -> list[str]:
    """What names the rows of the mosaic: the words, else positions 1..T."""
    return list(c.words) if c.words else [str(i + 1) for i in range(c.T)]


def token_rows(c: Case) -> list[str]:
    """What names the rows of the output maps: the tokens while ticked (T ≤ 24), else
    positions 0..T-1 as the axis numbers them."""
    if c.T > 24:
        return [str(i) for i in range(c.T)]
    return list(c.words) if c.words else [f"t{i + 1}" for i in range(c.T)]


# ------------------------------------------------------------------ each chart


def heads_mosaic(s: Sentences, c: Case) -> None:
    L = layer(c)
    h = c.heads
    s.take("title", title=f"Every head's attention weights ({min(h, 16)} of {h} heads shown) "
           "and their average")  # fmt: skip
    s.take("panels", n=h + 1, down=Y_QUERY, across=X_KEY, following=True)
    grids = [(f"the average of the {h} heads" if h > 1 else "the average of the one head",
               L.w.mean(0))]  # fmt: skip
    grids += [(f"head {i + 1}", L.w[i]) for i in range(h)]
    names = tick_names(c)
    for name, z in grids[:PANELS]:  # every one named, in order
        check_grid(s, z, down=Y_QUERY, across=X_KEY, rows=names, cols=names, panel=name)
    rest = grids[PANELS:]
    if not rest:
        return
    said = s.take("panels.rest", texts=("peaks",), n=len(rest), down=Y_QUERY, across=X_KEY,
                  following=True)["peaks"]  # fmt: skip
    peaks = items(said)
    assert len(peaks) == len(rest)
    for (name, z), one in zip(rest, peaks, strict=True):
        m = re.fullmatch(pattern("panel.peak", texts=("row", "col"), name=name), one)
        assert m, (name, one)
        v = value(m["v"])
        assert same(v, z.max())
        hit = [(i, j) for i in range(c.T) for j in range(c.T)
               if names[i] == m["row"] and names[j] == m["col"] and same(v, z[i, j])]  # fmt: skip
        assert hit, (one, "not that cell's value")


def focus_bars(s: Sentences, c: Case) -> None:
    L = layer(c)
    focus = L.w.max(-1).mean(-1)  # (h,) mean largest weight of a row
    avg = float(L.w.mean(0).max(-1).mean())
    s.take("title", title="How sharply each head focuses")
    s.take("axes", x="head", up="up", y="mean largest weight in a row")
    if c.heads <= BARS:
        bars = s.take("bars", texts=("bars",), name="one head", n=c.heads)["bars"]
        said = items(bars)
        assert [b.split(" ")[0] for b in said] == [str(i + 1) for i in range(c.heads)]
        for b, f in zip(said, focus, strict=True):
            assert same(value(b.split(" ")[1]), f), (b, f)
    else:
        got = s.take("bars.many", name="one head", n=c.heads)
        hi, lo = int(got["at_hi"]) - 1, int(got["at_lo"]) - 1
        assert same(got["hi"], focus.max()) and same(focus[hi], got["hi"])
        assert same(got["lo"], focus.min()) and same(focus[lo], got["lo"])
    named = re.compile(rf"the averaged map: (?P<named>{NUMBER.pattern})")
    got = s.take("level", name=named)
    assert same(got["named"], avg) and same(got["y"], avg), (got, avg)
    assert same(s.take("level", name=f"uniform, 1/T = {1 / c.T:.3g}")["y"], 1 / c.T)


def head_output(s: Sentences, c: Case) -> None:
    L = layer(c)
    d_k = c.d_model // c.heads
    s.take("title", title=f"Head {c.head}'s output: T × d_k = {c.T} × {d_k}")
    check_grid(s, L.o[c.head - 1], down="token", across="component of the head's subspace (d_k)",
               rows=token_rows(c))  # fmt: skip


def concat_map(s: Sentences, c: Case) -> None:
    L = layer(c)
    d_k = c.d_model // c.heads
    s.take("title", title=f"All heads concatenated before W_o: T × d_model = {c.T} × {c.d_model}")
    slices = [f"head {j // d_k + 1} · component {j % d_k}" for j in range(c.d_model)]
    check_grid(s, L.concat, down="token", across="column", rows=token_rows(c), cols=slices)


def cat_plane(s: Sentences, c: Case) -> None:
    a = c.split
    cat, tired = np.array(core.V_CAT), np.array(core.V_TIRED)
    out = a * cat + (1 - a) * tired  # a weighted average of the two values
    s.take("title", title=f"One head: {a:.2f} on cat, {1 - a:.2f} on tired")

    def at(v):
        return f"({v[0]:g}, {v[1]:g})"

    s.take("segment", name="every output one head can make", a=at(cat), b=at(tired))
    s.take("points", name="value vectors", n=2, points=f"v_cat {at(cat)}, v_tired {at(tired)}")
    s.take("axes", x="coordinate 1", up="up", y="coordinate 2")
    got = s.take("point", name="one head's output", x="coordinate 1")
    assert same(got["at"], out[0], floor=1e-9) and same(got["y"], out[1], floor=1e-9), got


def cat_concat(s: Sentences, c: Case) -> None:
    a1, a2 = c.split1, c.split2
    cat, tired = np.array(core.V_CAT), np.array(core.V_TIRED)
    y = np.concatenate([a1 * cat + (1 - a1) * tired, a2 * cat + (1 - a2) * tired])
    t = [f"{v:.3g}" for v in y]
    s.take("title", title=f"Two heads: [head 1 | head 2] = [{t[0]}, {t[1]} | {t[2]}, {t[3]}]")
    s.take("axes", x="coordinate of the concatenation", up="up", y="value")
    bars = items(s.take("bars", texts=("bars",), name="the concatenation", n=4)["bars"])
    labels = ["head 1 · c1", "head 1 · c2", "head 2 · c1", "head 2 · c2"]
    for b, label, v in zip(bars, labels, y, strict=True):
        assert b.startswith(label + " ") and same(value(b[len(label) + 1 :]), v, floor=1e-9), b


def diversity(s: Sentences, c: Case) -> None:
    js = js_bits(layer(c).w)
    np.fill_diagonal(js, np.nan)  # a head against itself: left blank
    s.take("title", title="How different are the heads? Jensen–Shannon divergence")
    heads = [str(i + 1) for i in range(c.heads)]
    check_grid(s, js, down="head", across="head", rows=heads, cols=heads, blank="self")


def pruning(s: Sentences, c: Case) -> None:
    y = 100 * np.array(curve(c))
    x = "heads removed (least important first)"
    s.take("title", title="How far the output moves when heads are pruned")
    s.take("axes", x=x, up="up", y="relative change of the output (%)")
    got = s.take("line", name="least important first", n=c.heads + 1, x=x, x0=0, x1=c.heads)
    assert same(got["lo"], y.min(), floor=1e-9) and same(y[int(got["at_lo"])], got["lo"])
    assert same(got["hi"], y.max()) and same(y[int(got["at_hi"])], got["hi"])
    assert same(got["last"], y[-1])
    L, d_k = layer(c), c.d_model // c.heads
    mine = 100 * moved(L, d_k, [j - 1 for j in c.pruned])
    got = s.take("point", name="your pruned heads", x=x, at=len(c.pruned))
    assert same(got["y"], mine, floor=1e-9), (got, mine)


READ = {  # a chart's title start -> its check
    "Every head's attention weights": heads_mosaic,
    "How sharply each head focuses": focus_bars,
    "Head ": head_output,
    "All heads concatenated": concat_map,
    "One head:": cat_plane,
    "Two heads:": cat_concat,
    "How different are the heads?": diversity,
    "How far the output moves": pruning,
}


# ------------------------------------------------------------------ the tests


def test_the_cases_are_the_page_s_settings():
    """Each case's values are ones the page's controls take (else the link would be
    repaired to another setting, and the recomputation would check something else)."""
    for c in CASES:
        assert c.heads in core.valid_head_counts(c.d_model)
        assert (c.kv or c.heads) in core.kv_head_choices(c.heads)
        assert 2 <= c.T <= core.MAX_SENTENCE_TOKENS and 1 <= c.head <= c.heads
    assert core.sentence_tokens(SENTENCE)[0] == list(CASES[-1].words)
    assert set(CHARTS) == set(STEPS)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_every_chart_s_words_are_the_recomputed_numbers(c: Case, step: str):
    at = run_page(PAGE, reveal=True, step=step, **{k: str(v) for k, v in c.url.items()})
    no_exception(at)
    shown = {m.label: m.value for m in at.metric}  # the link was taken as it is
    assert shown[f"d_k = d_model / h = {c.d_model} / {c.heads}"] == str(c.d_model // c.heads)
    assert shown["tokens T"] == str(c.T)
    charts = chart_words(at)
    assert len(charts) == CHARTS[step], [w[:50] for _, w in charts]
    for spec, text in charts:
        s = Sentences(text)
        check = next(f for start, f in READ.items() if text.startswith(start))
        check(s, c)
        s.done()  # nothing said that was not recomputed
        check_axes(spec, text)
        if (spec["layout"].get("meta") or {}).get("words") != "declared":
            for name in trace_names(spec):  # every series named, none dropped
                assert name in text, (name, text)
    assert len(plotly_specs(at)) == len(charts)


# ------------------------------------------------------------------ the fixes (issue 51)


def test_fix_the_concatenation_names_rows_as_its_axis_and_the_head_output_do():
    """At 64 tokens the maps tick positions 0..63, not the tokens: the concatenation's
    words named its rows t1..t64 while the head's output beside it said 0..63."""
    c = CASES[2]
    at = run_page(PAGE, step="Outputs", **{k: str(v) for k, v in c.url.items()})
    one, glued = (w for _, w in chart_words(at))
    row = re.compile(r"is at token (\S+),")
    assert row.search(one)[1].isdigit() and row.search(glued)[1].isdigit(), (one, glued)


def test_fix_the_tired_cat_segment_is_a_segment_and_each_value_is_named():
    at = run_page(PAGE, step="Tired cat")
    words = chart_words(at)[0][1]
    assert "every output one head can make: 2 points" not in words
    assert content.words("charts", "segment", name="every output one head can make",
                         a="(4, 0)", b="(0, 4)") in words  # fmt: skip
    assert "v_cat (4, 0), v_tired (0, 4)" in words


def test_fix_the_focus_lines_are_named_with_the_value_they_are_read_at():
    """At 64 tokens the uniform line was named "1/T = 0.02" and read "at 0.0156"."""
    c = CASES[2]
    at = run_page(PAGE, step="Heads", **{k: str(v) for k, v in c.url.items()})
    words = chart_words(at)[1][1]
    assert "uniform, 1/T = 0.0156: a level line at 0.0156." in words, words


def test_fix_the_concatenation_bars_are_named_and_the_diagonal_is_said_for_what_it_is():
    bars = chart_words(run_page(PAGE, step="Tired cat"))[1][1]
    assert "Series 1" not in bars and "the concatenation, 4 bars" in bars
    js = chart_words(run_page(PAGE, reveal=True, step="Diversity"))[0][1]
    assert content.words("charts", "blank.self", n=8, total=64) in js
