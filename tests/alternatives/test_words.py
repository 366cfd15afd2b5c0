"""/alternatives: every chart's words (issue 51), on every step, at the defaults and at two
other settings (another seed or an extreme of the step's control), each number recomputed
here from the lesson's inputs with torch (the scorings, softmax, entropies, the kernel
smoother, the contributions), never read from the figure; every sentence accounted for, so
a chart whose words say anything the test did not recompute fails."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_core.lessons import alternatives as core
from figures.describe import array
from figures.parts import format_bytes
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.grid_words import check_grid
from tests.support.word_templates import Sentences, items, same
from tests.support.words import NUMBER, chart_words, value
from ui import jobs

PAGE = "pages/alternatives.py"
LABELS = [str(i) for i in range(1, 9)]
SCORINGS = ("dot", "scaled dot", "additive", "cosine", "bilinear")
TAUS = np.logspace(-2, 1, 61)
CASES = {  # each step at its defaults, then another seed or the ends of its own control
    "Scoring": [{}, {"seed": 7}, {"tau": 0.01}],
    "Cosine": [{}, {"seed": 7, "tau": 0.03}, {"tau": 10}],  # 0.03: between the curve's τ
    "Speed": [{}, {"T": 256}, {"T": 4096}],
    "Smoother": [{}, {"bandwidth": 0.1}, {"bandwidth": 5}],
    "Linear attention": [{}],  # nothing drawn until its timing button (test below)
    "Contribution": [{}, {"value_scale": 0}, {"value_scale": 2}],
}
NUM = NUMBER.pattern
ITEM = re.compile(rf"(?P<label>.+) (?P<v>{NUM})")  # a bar or a value: its label, its number
TINY = 1e-30  # weights this small underflow to 0 in the float32 the chart draws


def near(said: float, true: float) -> bool:
    return same(said, true) or (abs(said) <= TINY and abs(true) <= TINY)


def y_down(spec: dict) -> bool:
    a = spec["layout"].get("yaxis") or {}
    r = a.get("range")
    return a.get("autorange") == "reversed" or bool(r and len(r) == 2 and r[0] > r[1])


def axes(s: Sentences, spec: dict, x: str, y: str) -> None:
    """The axes sentence, its order word the one the chart draws."""
    s.take("axes", x=x, y=y, up="down (the first at the top)" if y_down(spec) else "up")


def tied(x: np.ndarray, y: np.ndarray, best: float) -> np.ndarray:
    """The x of every point that holds `best` (to float32's precision)."""
    return x[np.abs(y - best) <= max(1e-5 * abs(best), TINY)]


def check_line(s: Sentences, name, x, y, across: str) -> None:
    """A curve over x: its count, span, lowest and highest (any tied x), and its end."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    got = s.take("line", name=name, x=across)
    assert got["n"] == y.size and same(got["x0"], x[0]) and same(got["x1"], x[-1]), (got, x)
    assert near(got["lo"], y.min()), (name, got, y.min())
    assert any(same(got["at_lo"], t) for t in tied(x, y, y.min())), (name, got)
    assert near(got["hi"], y.max()), (name, got, y.max())
    assert any(same(got["at_hi"], t) for t in tied(x, y, y.max())), (name, got)
    assert near(got["last"], y[-1]), (name, got, y[-1])


def check_bars(s: Sentences, name: str, labels: list[str], values, key: str = "bars") -> None:
    """Bars (or declared values) read one by one: every label in order, with its value."""
    got = s.take(key, texts=(key if key == "bars" else "items",), name=name)
    said = items(got["bars" if key == "bars" else "items"])
    assert got["n"] == len(labels) == len(said), (name, got)
    for text, label, v in zip(said, labels, np.asarray(values, float), strict=True):
        m = ITEM.fullmatch(text)
        assert m and m["label"] == label and near(value(m["v"]), v), (name, text, label, v)


# ------------------------------------------------------------------- the lesson, recomputed


def scorings(seed: int, tau: float) -> dict[str, torch.Tensor]:
    """The five score grids from the lesson's tokens and matrices, each formula written out."""
    s = core.scoring_setup(len(LABELS), seed=seed)
    q, k = s.x @ s.W_q, s.x @ s.W_k  # (T, d_k)
    d_k = q.shape[-1]
    tanh = torch.tanh((q @ s.W_1.T)[:, None, :] + (k @ s.W_2.T)[None, :, :])  # (T, T, d_a)
    return {
        "dot": torch.einsum("id,jd->ij", q, k),
        "scaled dot": torch.einsum("id,jd->ij", q, k) / math.sqrt(d_k),
        "additive": torch.einsum("ija,a->ij", tanh, s.v_a),
        "cosine": F.cosine_similarity(q[:, None, :], k[None, :, :], dim=-1) / tau,
        "bilinear": torch.einsum("id,de,je->ij", q, s.W, k),
    }


def mean_entropy(w: torch.Tensor) -> float:
    return float(-(w * torch.log(w)).nan_to_num().sum(-1).mean())


# ------------------------------------------------------------------- one check per step


def scoring(charts, p) -> None:
    """Ten panels, each named (scoring, scores or weights), each in its own units (the
    scores as softmax sees them, not the per-panel rescaled colours), and every entropy."""
    [(spec, words)] = charts
    s = Sentences(words)
    s.take("title", title=spec["layout"]["title"]["text"])
    grids = scorings(p["seed"], p["tau"])
    weights = {n: torch.softmax(g, -1) for n, g in grids.items()}
    got = s.take("panels", down="query token", across="key token")
    assert got["n"] == 2 * len(SCORINGS)
    for what, mats in (("scores", grids), ("weights", weights)):
        for name in SCORINGS:
            check_grid(s, mats[name].numpy(), down="query token", across="key token",
                       rows=LABELS, cols=LABELS, panel=f"{name}: {what}")  # fmt: skip
    got = s.take("entropies", texts=("items",))
    said = [t.rsplit(" ", 1) for t in items(got["items"])]
    assert [n for n, _ in said] == list(SCORINGS), said
    for (name, v), true in zip(said, (mean_entropy(weights[n]) for n in SCORINGS), strict=True):
        assert abs(value(v) - true) <= 0.0051, (name, v, true)  # said to 2 decimals
    s.done()
    assert y_down(spec)  # query token 1 at the top, as "down" says


def cosine(charts, p) -> None:
    """The entropy curve over τ and the slider's point (the entropy at τ itself), and the
    loud key's weights under both scorings."""
    (spec, words), (spec2, words2) = charts
    setup = core.scoring_setup(len(LABELS), seed=p["seed"])
    q, k = setup.x @ setup.W_q, setup.x @ setup.W_k
    cos = F.cosine_similarity(q[:, None, :], k[None, :, :], dim=-1)
    ent = np.array([mean_entropy(torch.softmax(cos / t, -1)) for t in TAUS])
    tau = p["tau"]
    s = Sentences(words)
    s.take("title", title="Cosine attention stays flat unless τ is small")
    axes(s, spec, "temperature τ (log scale)", "mean row entropy (nats)")
    check_line(s, "cosine / τ", TAUS, ent, "temperature τ (log scale)")
    got = s.take("point", name=f"τ = {tau:g} (slider)", x="temperature τ (log scale)")
    here = mean_entropy(torch.softmax(cos / tau, -1))
    assert same(got["at"], tau) and same(got["y"], here), (got, here)
    drawn = float(np.asarray(array(spec["data"][1]["y"]), float)[0])
    assert drawn == pytest.approx(here, rel=1e-6)  # the fix: the entropy at τ, not a lerp
    s.done()

    qv = torch.tensor([1.0, 2.0, 0.0], dtype=torch.float64)
    u = qv / qv.norm()
    off = torch.tensor([2.0, 1.0, 2.0], dtype=torch.float64)
    keys = torch.stack([u, 4 * off / off.norm(), torch.tensor([-2.0, 1, 0]).double() / 5**0.5, -u])
    norms = keys.norm(dim=-1)
    names = [f"{n}, ‖k‖ = {float(m):.3g}".replace(", ", " ")
             for n, m in zip(("aligned", "off-angle", "perpendicular", "opposite"), norms,
                             strict=True)]  # fmt: skip
    dot_w = torch.softmax(keys @ qv / math.sqrt(3), -1)
    cos_w = torch.softmax(F.cosine_similarity(keys, qv[None], dim=-1) / tau, -1)
    s = Sentences(words2)
    s.take("title", title=spec2["layout"]["title"]["text"])
    axes(s, spec2, "key (its direction relative to q, and its length)", "attention weight")
    check_bars(s, "scaled dot product", names, dot_w)
    check_bars(s, f"cosine, τ = {tau:g}", names, cos_w)
    s.done()


def speed(charts, p) -> None:
    """The intermediate's size per T, in MiB as its title says, and the page's cap named as
    a line, not read as a bar."""
    [(_, words)] = charts
    top = int(p["T"])
    Ts = [2**i for i in range(7, int(math.log2(top)) + 1)]
    mib = [4 * t * t * core.SPEED_D / 2**20 for t in Ts]  # float32: 4 bytes a number
    s = Sentences(words)
    s.take("title", title=f"Memory of additive's T×T×d intermediate (float32, d = {core.SPEED_D})")
    check_bars(s, "additive's intermediate in MiB, by T", [str(t) for t in Ts], mib, "values")
    cap = core.ADDITIVE_BUDGET_BYTES
    # issue 51 fix: the bars were "Series 1" and the cap was not said; now both are named
    got = s.take("level", name=f"the page's cap, {format_bytes(cap)} (bars above it are not timed)")
    assert same(got["y"], cap / 2**20)
    s.done()


def smoother(charts, p) -> None:
    """The samples, the true curve and the three fits over x; then the probe query's
    weights over the samples: the Gaussian kernel and softmax attention written out here,
    linear attention as elu + 1 features on the lesson's anchors."""
    (spec, words), (spec2, words2) = charts
    h = float(p["bandwidth"])
    x, y = core.toy_regression(80, seed=0)
    xq = torch.linspace(0.0, 10.0, 201, dtype=torch.float64)
    anchors = torch.linspace(0.0, 10.0, core.N_ANCHORS, dtype=torch.float64)

    def gauss(at):
        return torch.softmax(-((at[:, None] - x[None, :]) ** 2) / (2 * h * h), -1)

    def attention(at):  # query [x, 1]/h², key [x_j, −x_j²/2]: softmax(q·k) is the kernel
        qf = torch.stack([at, torch.ones_like(at)], -1) / h**2
        kf = torch.stack([x, -(x**2) / 2], -1)
        out = F.scaled_dot_product_attention(qf[None], kf[None], y[None, :, None], scale=1.0)
        return out[0, :, 0], torch.softmax(qf @ kf.T, -1)

    def linear(at):
        phi = lambda u: torch.exp(-((u[:, None] - anchors[None, :]) ** 2) / h**2)  # noqa: E731
        a = phi(at) @ phi(x).T
        return a / a.sum(-1, keepdim=True)

    across = "x (query position; the samples' x are the keys)"
    s = Sentences(words)
    s.take("title", title=f"Attention as a kernel smoother — bandwidth h = {h:g}")
    axes(s, spec, across, "y")
    check_line(s, "samples (keys x_j, values y_j)", x, y, across)
    check_line(s, "true curve", xq, torch.sin(xq) + xq / 10, across)
    check_line(s, "Gaussian kernel", xq, gauss(xq) @ y, across)
    check_line(s, "softmax attention", xq, attention(xq)[0], across)
    check_line(s, "linear attention", xq, linear(xq) @ y, across)
    s.done()

    probe = torch.tensor([5.0], dtype=torch.float64)
    s = Sentences(words2)
    s.take("title", title="Weights of the query at x = 5 over the samples")
    axes(s, spec2, "key position x_j", "attention weight")
    for name, w in (("Gaussian kernel", gauss(probe)[0]), ("softmax attention",
                    attention(probe)[1][0]), ("linear attention", linear(probe)[0])):  # fmt: skip
        assert same(float(w.sum()), 1.0)
        check_line(s, name, x, w, "key position x_j")
    s.done()


def linear_step(charts, p) -> None:
    assert charts == [], "a timing is drawn before anyone asked for it"


def contribution(charts, p) -> None:
    """Each token's weight, and the length of what it adds: its weight times its value's
    length (1, 5 for "not", the slider's for [SEP])."""
    [(spec, words)] = charts
    scale = float(p["value_scale"])
    alpha = torch.softmax(torch.tensor(core._LOGITS, dtype=torch.float64), -1)
    length = torch.tensor([{"not": 5.0, "[SEP]": scale}.get(t, 1.0) for t in core.TOKENS])
    s = Sentences(words)
    s.take("title", title='What the query "good" attends to, and what it actually receives')
    axes(s, spec, "token (key / value)", "weight | length of contribution")
    check_bars(s, "weight α_j", core.TOKENS, alpha)
    check_bars(s, "contribution ‖α_j v_j‖", core.TOKENS, alpha * length)
    s.done()


CHECKS = {
    "Scoring": scoring,
    "Cosine": cosine,
    "Speed": speed,
    "Smoother": smoother,
    "Linear attention": linear_step,
    "Contribution": contribution,
}
DEFAULTS = {"seed": 0, "tau": 1.0, "T": 1024, "bandwidth": 0.5, "value_scale": 0.02}


def test_every_step_is_checked():
    assert tuple(CASES) == tuple(CHECKS) == page_steps(PAGE)


@pytest.mark.parametrize(
    "step,params",
    [(step, p) for step, ps in CASES.items() for p in ps],
    ids=[
        f"{step}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'defaults'}"
        for step, ps in CASES.items()
        for p in ps
    ],
)
def test_every_chart_says_what_the_lesson_computes(step, params):
    at = run_page(PAGE, reveal=True, step=step, **params)
    no_exception(at)
    CHECKS[step](chart_words(at), {**DEFAULTS, **params})


# ------------------------------------------------------------------- the timed charts


@pytest.fixture
def fresh_timings():
    """No timings kept from an earlier test in this process (they are shared per server)."""
    jobs.reset()
    yield
    jobs.reset()


def timed(name: str) -> list[tuple]:
    """The rows the page's one timing of `name` measured (the server's store)."""
    done = list(jobs.results(name, 8)._done.values())
    assert len(done) == 1, done
    return done[0]


def check_timing(words: str, spec: dict, title: str, rows, names: tuple[str, str]) -> None:
    """Both series in milliseconds (the axis's unit) at every timed T, as measured; the
    labels over the points (×ratios) not read as data."""
    Ts = [r[0] for r in rows]
    s = Sentences(words)
    s.take("title", title=title)
    across = "sequence length T (log scale)"
    axes(s, spec, across, "milliseconds (log scale)")
    for i, name in enumerate(names, start=1):
        check_line(s, name, Ts, [r[i] * 1e3 for r in rows], across)
    s.done()


def test_the_timed_charts_say_what_was_measured(fresh_timings):
    at = run_page(PAGE, reveal=True, T="256", step="Speed")
    at.button(key="time_scores").click().run()
    no_exception(at)
    (_, mem), (spec, words) = chart_words(at)
    assert mem.startswith("Memory of additive's")
    names = ("dot product q kᵀ", "additive v_aᵀ tanh(W₁q + W₂k)")
    title = "Time to score every query against every key (d = 64)"
    check_timing(words, spec, title, timed("time_scores"), names)
    at = run_page(PAGE, reveal=True, T="256", step="Linear attention")
    at.button(key="time_linear").click().run()
    no_exception(at)
    [(spec, words)] = chart_words(at)
    check_timing(words, spec, "Softmax attention against linear attention (d = 64)",
                 timed("time_linear"), ("softmax attention (T×T weights)",
                                        "linear attention, elu + 1"))  # fmt: skip
    assert not re.search(rf"×{NUM}", words)  # the ratio labels are not data
