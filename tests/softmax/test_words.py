"""/softmax: every chart's words (issue 51), on every step, at the defaults, at another
seed (the peaked example, dropout seed 3, bfloat16) and at both ends of the controls (the
negative example normalised by its sum, c = −50, offset 750 in float16, τ = 0.05, p = 0.9;
then offset −850 in float64, τ = 20, eval mode), each number recomputed here from the
lesson's inputs (the shipped examples, the offset scores, random_qkv) with torch: the
scores, e^s, weights, outputs, hull corners (by brute force), exp's finite range in each
precision (by bisection on torch.exp), entropies and dropout draws (the same seeded
stream, replayed with F.dropout), never read from the figure; and every sentence
accounted for (a chart whose words say anything the test did not recompute fails)."""

from __future__ import annotations

import math
import re
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_core import DTYPES, parse_dtype, random_qkv
from attn_core.lessons import softmax as core
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.curve_words import check_line, near, take_axes
from tests.support.grid_words import check_grid, y_down
from tests.support.word_templates import Sentences, items
from tests.support.words import NUMBER, chart_words, link_params, value

PAGE = "pages/softmax.py"
F64 = torch.float64
DEFAULTS = dict(
    example="lesson", sumnorm=False, shift=5.0, offset=0, dtype="float32", temperature=1.0,
    dropout=0.1, mode="train", seed=0,
)  # fmt: skip
PEAKED = dict(example="peaked", shift=12.5, offset=-30, dtype="bfloat16", temperature=0.2)
FAR = dict(example="negative", sumnorm=True, shift=-50.0, offset=750, dtype="float16")
SETTINGS = {
    "defaults": {},
    "peaked, seed 3": PEAKED | dict(dropout=0.3, seed=3),
    "negative by its sum, c -50, offset 750 float16, τ 0.05, p 0.9": FAR
    | dict(temperature=0.05, dropout=0.9, seed=9999),
    "offset -850 float64, τ 20, eval": dict(
        offset=-850, dtype="float64", temperature=20.0, mode="eval"
    ),
}
CHARTS = {  # each step's charts, by the start of their titles, in page order
    "Example": ("Where the output lands", "From scores to weights"),
    "Shift": ("Adding c = ",),
    "Stability": ("Naive against stable softmax", "Where e^x stays finite"),
    "Temperature": ("Weights at temperature", "Entropy against temperature"),
    "Dropout": ("One draw of the weights after dropout", "Row sums"),
    "Check yourself": (),
}
NUM = NUMBER.pattern
ITEM = re.compile(rf"(?P<label>.+) (?P<v>{NUM}|NaN)")  # "label value" in a list of the words
PAIR = re.compile(rf"\((?P<a>{NUM}), (?P<b>{NUM})\)")


@cache
def page(setting: str, step: str) -> tuple:
    at = run_page(PAGE, reveal=True, step=step, **link_params(SETTINGS[setting]))
    no_exception(at)
    return tuple(chart_words(at))


def settings(setting: str) -> SimpleNamespace:
    return SimpleNamespace(**(DEFAULTS | SETTINGS[setting]))


# ---------------------------------------------------------------- the computation


@cache
def example(start: str) -> SimpleNamespace:
    """The shipped example (the inputs) and every step of its attention, recomputed."""
    names, q, k, v = core.SOFTMAX_EXAMPLES[start]
    q, K, V = (torch.tensor(x, dtype=F64) for x in (q, k, v))
    raw = K @ q  # (T,)
    scores = raw / math.sqrt(len(q))
    w = torch.softmax(scores, 0)
    by_sum = raw / raw.sum()
    return SimpleNamespace(
        names=list(names), V=V.numpy(), raw=raw.numpy(), scores=scores.numpy(),
        exp=torch.exp(scores).numpy(), w=w.numpy(), by_sum=by_sum.numpy(),
        out=(w @ V).numpy(), out_by_sum=(by_sum @ V).numpy(), mean=V.mean(0).numpy(),
    )  # fmt: skip


def corners(points: np.ndarray) -> set[tuple[float, float]]:
    """The convex hull's corners by brute force: the points that are the one farthest out
    in some direction (a point on an edge never is), over 3,600 directions."""
    pts = np.unique(np.asarray(points, dtype=float), axis=0)
    a = np.linspace(0, 2 * np.pi, 3600, endpoint=False)
    reach = np.stack([np.cos(a), np.sin(a)], 1) @ pts.T  # (directions, points)
    alone = np.isclose(reach, reach.max(1, keepdims=True), rtol=0, atol=1e-9).sum(1) == 1
    return {tuple(pts[i]) for i in set(reach.argmax(1)[alone].tolist())}


def entropy(w: torch.Tensor) -> torch.Tensor:
    """-Σ p ln p over the last axis, 0 ln 0 = 0, float64."""
    terms = torch.where(w > 0, w * torch.log(torch.where(w > 0, w, 1.0)), 0.0)
    return -terms.sum(-1)


def exp_edge(dt: torch.dtype, outside: float, broken) -> float:
    """Where torch.exp of a score stored in `dt` starts to break (bisection from 0)."""
    inside = 0.0
    for _ in range(300):
        mid = (inside + outside) / 2
        if mid in (inside, outside):
            break
        e = float(torch.exp(torch.tensor(mid, dtype=F64).to(dt)))
        inside, outside = (inside, mid) if broken(e) else (mid, outside)
    return (inside + outside) / 2


@cache
def bands() -> dict[str, tuple[float, float]]:
    out = {}
    for name in DTYPES:
        dt = parse_dtype(name)
        far = 2 * math.log(torch.finfo(dt).max)
        out[name] = (exp_edge(dt, -far, lambda e: e == 0.0), exp_edge(dt, far, math.isinf))
    return out


@cache
def dropout(p: float, training: bool, seed: int) -> SimpleNamespace:
    """The lesson's 8 × 8 weights and 2,000 dropout draws, replayed from the page's seed."""
    q, k, _ = random_qkv(8, 4, seed=0, dtype=F64)
    clean = torch.softmax(q @ k.T / 2, -1)  # (T, T), d_k = 4
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        w = F.dropout(clean.expand(2000, 8, 8), p, training=training)  # (N, T, T)
    kept = w[0] != 0
    assert torch.allclose(w[0][kept], (clean / (1 - p if training else 1))[kept])
    return SimpleNamespace(sample=w[0].numpy(), sums=w[0].sum(-1).numpy(),
                           mean=w.sum(-1).mean(0).numpy(), n=2000)  # fmt: skip


# ---------------------------------------------------------------- reading the words


def check_bars(w: Sentences, name, labels, values) -> None:
    """A bar series read bar by bar: each label with its value (NaN said as NaN)."""
    got = w.take("bars", texts=("bars",), name=name, n=len(labels))
    said = items(got["bars"])
    assert len(said) == len(labels), (said, labels)
    for item, label, v in zip(said, labels, values, strict=True):
        m = ITEM.fullmatch(item)
        assert m and m["label"] == str(label), (item, label)
        if math.isnan(v):
            assert m["v"] == "NaN", (item, v)
        else:
            assert near(value(m["v"]), v), (item, v)


def point_name(text: str, *fields: str) -> re.Pattern:
    """A series name that holds numbers: `text` with {field} where each stands."""
    out = re.escape(text)
    for f in fields:
        out = out.replace(re.escape("{" + f + "}"), f"(?P<{f}>{NUM})")
    return re.compile(out)


# ---------------------------------------------------------------- the charts


def hull(s, spec, w):
    ex = example(s.example)
    w.take("title", title="Where the output lands among the values")
    name = "convex hull of the values (shaded), by its corners"
    want = corners(ex.V)
    got = w.take("points", texts=("points",), name=name, n=len(want))  # each corner once
    said = {(value(m["a"]), value(m["b"])) for m in PAIR.finditer(got["points"])}
    assert said == want, (said, want)
    take_axes(w, spec, "value component 1", "value component 2")
    got = w.take("points", texts=("points",), name="value vectors", n=len(ex.names))
    pairs = [(value(m["a"]), value(m["b"])) for m in PAIR.finditer(got["points"])]
    assert len(pairs) == len(ex.V) and all(
        near(a, x) and near(b, y) for (a, b), (x, y) in zip(pairs, ex.V, strict=True)
    ), (pairs, ex.V)
    across = "value component 1"
    got = check_line(w, point_name("plain mean [{m1}, {m2}]", "m1", "m2"), [ex.mean[0]],
                     [ex.mean[1]], across)  # fmt: skip
    assert near(got["m1"], ex.mean[0]) and near(got["m2"], ex.mean[1]), got
    out = ex.out
    if s.sumnorm:  # the softmax output stays, for comparison
        check_line(w, "softmax output, for comparison", [out[0]], [out[1]], across)
        out = ex.out_by_sum
    got = check_line(w, point_name("output z = [{z1}, {z2}]", "z1", "z2"), [out[0]], [out[1]],
                     across)  # fmt: skip
    assert abs(got["z1"] - out[0]) <= 6e-4 and abs(got["z2"] - out[1]) <= 6e-4, (got, out)


def steps_bars(s, spec, w):
    ex = example(s.example)
    w.take("title", title="From scores to weights, step by step")
    take_axes(w, spec, "token", "value")
    check_bars(w, "1 · q · k", ex.names, ex.raw)
    check_bars(w, "2 · ÷ √3", ex.names, ex.scores)
    if s.sumnorm:
        check_bars(w, "3 · ÷ Σ (q·k) = weights", ex.names, ex.by_sum)
    else:
        check_bars(w, "3 · e^s", ex.names, ex.exp)
        check_bars(w, "4 · ÷ Σ e^s = weights", ex.names, ex.w)


def shift(s, spec, w):
    ex, c = example(s.example), s.shift
    w.take("title", title=f"Adding c = {c:g} to every score")
    take_axes(w, spec, "token", "score")
    scores = torch.tensor(ex.scores)
    after = f"after adding c = {c:g}"
    check_bars(w, "before", ex.names, ex.scores)
    check_bars(w, after, ex.names, ex.scores + c)
    # the right panel's bars are weights, and say so
    check_bars(w, "weights before", ex.names, torch.softmax(scores, 0).numpy())
    check_bars(w, f"weights {after}", ex.names, torch.softmax(scores + c, 0).numpy())


def stored(s) -> torch.Tensor:
    """The stability scores as the chosen precision holds them."""
    x = torch.tensor([100.0, 101.0, 102.0], dtype=F64) + s.offset
    return x.to(parse_dtype(s.dtype))


def naive_vs_stable(s, spec, w):
    x = stored(s)
    naive = (torch.exp(x) / torch.exp(x).sum()).double().numpy()  # exp, then divide, in dtype
    stable = torch.softmax(x, 0).double().numpy()
    tokens = [f"token {j + 1}" for j in range(3)]
    w.take("title", title=f"Naive against stable softmax in {s.dtype}")
    take_axes(w, spec, "token", "weight")
    nan = " (NaN: no number, drawn as an empty bar)" if np.isnan(naive).any() else ""
    check_bars(w, "naive (exp, then divide)" + nan, tokens, naive)  # NaN said, not its 0 bar
    check_bars(w, "stable (subtract the max first)", tokens, stable)


def exp_range(s, spec, w):
    w.take("title", title="Where e^x stays finite, per precision")
    top = spec["layout"]["yaxis"]["categoryarray"][::-1]  # drawn from the top down
    assert [c.split(" ")[0] for c in top] == list(DTYPES)
    name = "x where e^x is finite and non-zero, one bar per precision from the top"
    got = w.take("bars", texts=("bars",), name=name, n=len(DTYPES))
    band = re.compile(rf"(?P<d>\S+) from (?P<a>{NUM}) to (?P<b>{NUM})")
    said = items(got["bars"])
    assert len(said) == len(DTYPES), said
    for item, d in zip(said, DTYPES, strict=True):
        m = band.fullmatch(item)
        lo, hi = bands()[d]
        assert m and m["d"] == d and near(value(m["a"]), lo) and near(value(m["b"]), hi), (
            item, lo, hi,
        )  # fmt: skip
    name = f"the current scores (× marks on the {s.dtype} band)"
    got = w.take("values", texts=("items",), name=name, n=3)
    said = items(got["items"])
    for j, (item, x) in enumerate(zip(said, stored(s).double().tolist(), strict=True)):
        m = ITEM.fullmatch(item)
        assert m and m["label"] == f"token {j + 1}" and near(value(m["v"]), x), (item, x)


def temperature_bars(s, spec, w):
    ex, tau = example(s.example), s.temperature
    scores = torch.tensor(ex.scores)
    w.take("title", title=f"Weights at temperature τ = {tau:g}")
    take_axes(w, spec, "token", "weight")
    if tau != 1.0:
        check_bars(w, "τ = 1", ex.names, torch.softmax(scores, 0).numpy())
    check_bars(w, f"τ = {tau:g}", ex.names, torch.softmax(scores / tau, 0).numpy())


def entropy_curve(s, spec, w):
    ex, tau = example(s.example), s.temperature
    scores = torch.tensor(ex.scores)
    across = "temperature τ (log scale)"
    w.take("title", title="Entropy against temperature")
    take_axes(w, spec, across, "entropy (nats)")
    taus = torch.logspace(-2, 2, 161, dtype=F64)
    h = entropy(torch.softmax(scores[None, :] / taus[:, None], -1))
    # τ itself along the log axis, not log τ
    check_line(w, "entropy of the weights", taus.numpy(), h.numpy(), across)
    now = entropy(torch.softmax(scores / tau, 0))
    check_line(w, f"τ = {tau:g}", [tau], [float(now)], across)


def dropout_map(s, spec, w):
    train = s.mode == "train"
    d = dropout(s.dropout, train, s.seed)
    mode = f"training, p = {s.dropout:g}" if train else "eval"
    w.take("title", title=f"One draw of the weights after dropout ({mode})")
    assert y_down(spec)  # "query down": query 0 at the top
    check_grid(w, d.sample, down="query", across="key")


def row_sums(s, spec, w):
    d = dropout(s.dropout, s.mode == "train", s.seed)
    w.take("title", title="Row sums")
    take_axes(w, spec, "query row", "sum of the row's weights")
    check_bars(w, "this draw", list(range(8)), d.sums)
    check_line(w, f"mean over {d.n} draws", np.arange(8), d.mean, "query row")


CHECKS = {
    "Example": (hull, steps_bars),
    "Shift": (shift,),
    "Stability": (naive_vs_stable, exp_range),
    "Temperature": (temperature_bars, entropy_curve),
    "Dropout": (dropout_map, row_sums),
    "Check yourself": (),
}


def test_every_step_of_the_page_is_read():
    assert tuple(CHARTS) == page_steps(PAGE) == tuple(CHECKS)


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("step", list(CHARTS))
def test_every_chart_s_words_are_the_computation_s(step, setting):
    charts = page(setting, step)
    titles = [text for _, text in charts]
    assert len(charts) == len(CHARTS[step]), titles
    s = settings(setting)
    for (spec, text), start, check in zip(charts, CHARTS[step], CHECKS[step], strict=True):
        assert text.startswith(start), (text, start)
        w = Sentences(text)
        check(s, spec, w)
        w.done()
