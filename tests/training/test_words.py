"""/training: every chart's words (issue 51), on every step, at the defaults and at two other
settings (another seed; d_k and the initial spread at their ends), and after a short
training run: each number recomputed here — the probe rows' weights with torch.softmax from
the raw scores, each row's softmax Jacobian built from its weights, the histogram's bars
counted afresh, the curves from the runs the page trained — never read from the figure;
every sentence accounted for, so a chart whose words say anything the test did not
recompute fails."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import attn_core
import attn_core.lessons.training as core
from attn_core import DEFAULT_LR
from figures.training import JAC_FLOOR, RUNS
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.grid_words import check_grid
from tests.support.word_templates import Sentences, items, same
from tests.support.words import chart_words

PAGE = "pages/training.py"
DEFAULTS = dict(d_k=64, init_std=1.0, seed=0)
SETTINGS = [{}, {"seed": 3}, {"d_k": 512, "init_std": 4}]  # defaults, a seed, the ends
RUN = dict(d_k=8, steps=50, seed=7)  # a short run, as tests/training/test_page.py trains
STEP = "training step"
PROBE = "example"
KEY = "key (pair) position"
SHOWN = 10  # probe rows drawn
CHARTS_BEFORE = {"Train": 1, "Predict": 0, "Rows": 1, "Heads": 0}  # before any training


def y_down(spec: dict, axis: str = "yaxis") -> bool:
    a = spec["layout"].get(axis) or {}
    r = a.get("range")
    return a.get("autorange") == "reversed" or bool(r and len(r) == 2 and r[0] > r[1])


def check_line(s: Sentences, name: str, y) -> None:
    """A curve over the training steps: its count, span, lowest and highest (any tied
    step), and its end."""
    y = np.asarray(y, float)
    x = np.arange(y.size)
    got = s.take("line", name=name, x=STEP)
    assert got["n"] == y.size and got["x0"] == 0 and got["x1"] == y.size - 1, (name, got)
    assert same(got["lo"], y.min()) and got["at_lo"] in x[np.isclose(y, y.min(), rtol=1e-6)]
    assert same(got["hi"], y.max()) and got["at_hi"] in x[np.isclose(y, y.max(), rtol=1e-6)]
    assert same(got["last"], y[-1]), (name, got, y[-1])


# ------------------------------------------------------------------- the start, recomputed


def start(d_k: int, init_std: float, seed: int):
    """The page's step-0 runs (the scaled and the unscaled model share their weights)."""
    return attn_core.train_pair(d_k, steps=1, init_std=init_std, seed=seed)


def jacobian_norms(w: torch.Tensor) -> np.ndarray:
    """‖∂softmax/∂logits‖_F of each row, from its weights: J = diag(α) − ααᵀ."""
    a = w.double()
    J = torch.diag_embed(a) - a[:, :, None] * a[:, None, :]
    return J.flatten(1).norm(dim=-1).numpy()


def probe(words: str, spec: dict, before, after, position) -> None:
    """Every panel named (run, before or after), each its first rows' weights; the ringed
    keys read as the matching keys, not as data."""
    s = Sentences(words)
    s.take("title", title="Where the query looks: probe examples before and after training")
    panels = [("scaled — before", before[0]), ("unscaled — before", before[1])]
    if after is not None:
        panels += [("scaled — after", after[0]), ("unscaled — after", after[1])]
    got = s.take("panels", down=PROBE, across=KEY)
    assert got["n"] == len(panels)
    for name, w in panels:
        check_grid(s, np.asarray(w[:SHOWN], float), down=PROBE, across=KEY, panel=name)
    got = s.take("values", texts=("items",), name="the matching key (ringed), by example")
    said = [t.split(" ") for t in items(got["items"])]
    pos = [int(p) for p in position[:SHOWN]]
    assert got["n"] == SHOWN and said == [[str(i), str(p)] for i, p in enumerate(pos)], said
    hits = s.take("probe.hits", texts=("hits",))["hits"]  # each panel: peaks on the ring
    want = [f"{name} {int((np.asarray(w[:SHOWN], float).argmax(-1) == pos).sum())} of {SHOWN}"
            for name, w in panels]  # fmt: skip
    assert hits.split("; ") == want, (hits, want)
    s.done()
    assert all(y_down(spec, k) for k in spec["layout"] if k.startswith("yaxis"))  # example 0 on top


def histogram(words: str, scaled, unscaled, when: str) -> None:
    """Each run's rows: how many, their norms' range, and the fullest bar (the first bar
    holds every row at or below the floor: from 0)."""
    norms = [np.asarray(x, np.float64).ravel() for x in (scaled, unscaled)]
    norms = [x[np.isfinite(x)] for x in norms]
    top = max(float(x.max(initial=1.0)) for x in norms)
    edges = np.logspace(math.log10(JAC_FLOOR), math.log10(max(top, 1.0)) + 0.05, 49)
    s = Sentences(words)
    s.take("title", title=f"Per-row softmax Jacobian norms {when}")
    for x, (name, _) in zip(norms, RUNS, strict=True):
        # issue 51 fix: was "the highest is 1.34 × 10⁻¹² (0.211)", a bin centre for exact zeros,
        # and "the lowest" an arbitrary empty bin
        got = s.take("histogram", name=f"{name}, ‖J‖ of each probe row")
        counts = np.histogram(np.clip(x, edges[0], edges[-1]), bins=edges)[0]
        assert got["n"] == x.size and got["most"] == counts.max(), (name, got, counts.max())
        assert same(got["lo"], x.min(), floor=1e-30) and same(got["hi"], x.max()), (got, x)
        bins = [
            (0.0 if k == 0 else edges[k], edges[k + 1])
            for k in np.flatnonzero(counts == counts.max())
        ]
        assert any(same(got["a"], a) and same(got["b"], b) for a, b in bins), (got, bins)
    s.done()


CASES = [(step, p) for step in page_steps(PAGE) for p in SETTINGS]


def test_every_step_is_checked():
    assert tuple(CHARTS_BEFORE) == page_steps(PAGE)


@pytest.mark.parametrize(
    "step,params",
    CASES,
    ids=[f"{st}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'defaults'}" for st, p in CASES],
)
def test_every_chart_before_training_says_what_the_start_computes(fresh_server, step, params):
    at = run_page(PAGE, reveal=True, step=step, **params)
    no_exception(at)
    charts = chart_words(at)
    assert len(charts) == CHARTS_BEFORE[step], [w[:60] for _, w in charts]
    if not charts:
        return
    p = {**DEFAULTS, **params}
    a0, b0 = start(p["d_k"], float(p["init_std"]), p["seed"])
    raw = a0.probe_scores_start.double()  # q·k of the probe rows, shared by both runs
    weights = (torch.softmax(raw / math.sqrt(p["d_k"]), -1), torch.softmax(raw, -1))
    [(spec, words)] = charts
    if step == "Train":
        assert torch.allclose(weights[0], a0.probe_start.double(), atol=1e-6)
        probe(words, spec, [w.numpy() for w in weights], None, a0.probe_position)
    else:  # Rows: the norms the page computed, each checked against its row's Jacobian
        for w, run in zip(weights, (a0, b0), strict=True):
            ours = jacobian_norms(w)
            assert np.allclose(run.probe_jacobian_start.double().numpy(), ours, atol=1e-6), run
        histogram(words, a0.probe_jacobian_start, b0.probe_jacobian_start, "at step 0")


# ------------------------------------------------------------------- after a training run


@pytest.fixture
def trained(monkeypatch):
    """What the page's own calls of train_pair and head_sweep return, kept for the test
    (in this process: ATTN_JOB_PROCESS=0)."""
    monkeypatch.setenv("ATTN_JOB_PROCESS", "0")
    seen: dict = {"pairs": [], "sweeps": []}
    pair, sweep = core.train_pair, core.head_sweep

    def train_pair(*a, **kw):
        seen["pairs"].append(out := pair(*a, **kw))
        return out

    def head_sweep(*a, **kw):
        seen["sweeps"].append(out := sweep(*a, **kw))
        return out

    monkeypatch.setattr(attn_core, "train_pair", train_pair)  # where the page imports it
    monkeypatch.setattr(core, "head_sweep", head_sweep)
    return seen


def curves(charts: list, a, b) -> None:
    """The four curve charts: each line named by its run (and, on a two-panel chart, by
    its panel's quantity), with the run's own numbers; the uniform level named so."""
    (s1, loss), (s2, acc), (s3, shape), (s4, grad) = charts
    for spec, words, title, y_title, field in (
        (s1, loss, f"Training loss — d_k = {a.d_k}, SGD, lr {a.lr:g}",
         "cross-entropy loss (nats, log scale)", "loss"),
        (s2, acc, "Accuracy on each batch", "accuracy", "accuracy"),
    ):  # fmt: skip
        s = Sentences(words)
        s.take("title", title=title)
        s.take("axes", x=STEP, y=y_title, up="up")
        for run, (name, _) in zip((a, b), RUNS, strict=True):
            check_line(s, name, getattr(run, field))
        s.done()
        assert not y_down(spec)
    for spec, words, title, left, right in (
        (s3, shape, "How peaked the attention rows are",
         ("entropy", "mean entropy of a row (nats)"),
         [("max_weight", "mean largest weight in a row"),
          ("saturated", f"share of rows whose largest weight is above {core.SATURATED:g}")]),
        (s4, grad, "How much gradient gets through the softmax",
         ("jacobian_norm", "softmax Jacobian norm ‖J‖, mean per row"),
         [("qk_grad_norm", "gradient norm reaching W_q and W_k")]),
    ):  # fmt: skip
        s = Sentences(words)
        s.take("title", title=title)
        y = f"on the left, {left[1]}; on the right, " + " and ".join(w for _, w in right)
        s.take("axes", x=STEP, y=y, up="up")  # fix: the right panel was read against "nats"
        for run, (name, _) in zip((a, b), RUNS, strict=True):
            for field, what in (left, *right):
                check_line(s, f"{what}, {name}", getattr(run, field))
        if left[0] == "entropy":  # the shape chart: the uniform row's entropy, as a level
            got = s.take("level", name=f"uniform, on the left: ln {a.n_pairs}")
            assert same(got["y"], math.log(a.n_pairs))
        s.done()
        assert not y_down(spec) and not y_down(spec, "yaxis2")


def test_after_training_every_chart_says_what_the_runs_measured(fresh_server, trained):
    at = run_page(PAGE, **RUN)
    at.button(key="run").click().run(timeout=300)
    no_exception(at)
    [(a, b)] = [r for r in trained["pairs"] if r[0].steps == RUN["steps"]]
    assert a.finished and b.finished
    assert (a.d_k, a.seed, a.lr, a.optimizer) == (8, 7, DEFAULT_LR["sgd"], "sgd")
    charts = chart_words(at)
    assert len(charts) == 5, [w[:60] for _, w in charts]
    curves(charts[:4], a, b)
    spec, words = charts[4]
    probe(words, spec, (a.probe_start, b.probe_start), (a.probe_end, b.probe_end),
          a.probe_position)  # fmt: skip

    at = run_page(PAGE, step="Rows", **RUN)
    no_exception(at)
    (_, start_words), (_, end_words) = chart_words(at)
    histogram(start_words, a.probe_jacobian_start, b.probe_jacobian_start, "at step 0")
    for run in (a, b):  # the page's norms after training, against each row's Jacobian
        ours = jacobian_norms(run.probe_end)
        assert np.allclose(run.probe_jacobian_end.double().numpy(), ours, atol=1e-6)
    histogram(end_words, a.probe_jacobian_end, b.probe_jacobian_end, "after training")

    at = run_page(PAGE, step="Heads", **RUN)
    at.button(key="sweep").click().run(timeout=300)
    no_exception(at)
    [runs] = trained["sweeps"]
    [(spec, words)] = chart_words(at)
    s = Sentences(words)
    first = runs[0]
    s.take("title", title=f"Training loss by head width — d_model = {first.d_model}, SGD, "
                          f"lr {first.lr:g}")  # fmt: skip
    s.take("axes", x=STEP, y="cross-entropy loss (nats, log scale)", up="up")
    assert [r.d_k for r in runs] == [8, 16, 32, 64] and all(r.steps == 50 for r in runs)
    for r in runs:
        check_line(s, f"d_k = {r.d_k} (h = {r.heads})", r.loss)
    s.done()
