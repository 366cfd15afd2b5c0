"""/scaling: every chart's words (issue 51), on every step, at the defaults, at another
seed (with LayerNorm-style vectors and 9 tokens) and at an extreme (d_k = 1024 unscaled,
temperature 0.05, float16, 64 tokens, the last query row), each number recomputed here
from the lesson's own draw of q and k (random_qkv, sweep_raw_scores): the scores, weights,
entropies, Jacobians (checked against autograd), histograms, variances, saturation shares
and two-key gradients worked out in this file with torch and numpy, never read from the
figure; and every sentence accounted for (a chart whose words say anything the test did
not recompute fails). Units: the Jacobian map, the norms and the two-key gradient are
drawn on log scales, and their words must give the values themselves."""

from __future__ import annotations

import math
import re
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attn_core import parse_dtype, random_qkv
from attn_core.lessons import scaling as core
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.curve_words import check_line, near, take_axes, ties
from tests.support.grid_words import check_grid, y_down
from tests.support.word_templates import Sentences, items
from tests.support.words import NUMBER, chart_words, link_params, value
from ui import content

PAGE = "pages/scaling.py"
DEFAULTS = dict(
    d_k=64, tokens=12, scaled=True, temperature=1.0, init="gaussian", dtype="float32", seed=0,
    row=0,
)  # fmt: skip
SETTINGS = {
    "defaults": {},
    "seed 7, layernorm, T = 9": dict(seed=7, init="layernorm", tokens=9, row=4),
    "d_k 1024 unscaled, τ 0.05, float16, T = 64": dict(
        d_k=1024, scaled=False, temperature=0.05, dtype="float16", tokens=64, row=63
    ),
}
CHARTS = {  # each step's charts, by the start of their titles, in page order
    "Scores to weights": ("① Raw scores", "② Logits", "③ Weights", "④ Per query row"),
    "Spread": ("Distribution of the logits", "Variance of the logits"),
    "Saturation": ("Saturated rows", "Mean entropy of a row"),
    "Jacobian": ("Softmax Jacobian", "Jacobian norm of every query row"),
    "Two keys": ("Two keys:",),
    "Check yourself": (),
}
NUM = NUMBER.pattern
ITEM = re.compile(rf"(?P<label>.+) (?P<v>{NUM})")  # "label value" in a list of the words


@cache
def page(setting: str, step: str) -> tuple:
    at = run_page(PAGE, reveal=True, step=step, **link_params(SETTINGS[setting]))
    no_exception(at)
    return tuple(chart_words(at))


def settings(setting: str) -> SimpleNamespace:
    return SimpleNamespace(**(DEFAULTS | SETTINGS[setting]))


def scale(s, d_k: int | None = None, scaled: bool | None = None) -> float:
    d_k = s.d_k if d_k is None else d_k
    scaled = s.scaled if scaled is None else scaled
    return (1 / math.sqrt(d_k) if scaled else 1.0) / s.temperature


def entropy_share(w: torch.Tensor) -> torch.Tensor:
    """-Σ p ln p / ln T per row, 0 ln 0 = 0, in float64."""
    p = w.double()
    terms = torch.where(p > 0, p * torch.log(torch.where(p > 0, p, 1.0)), 0.0)
    return -terms.sum(-1) / math.log(p.shape[-1])


def jacobian(w_row: torch.Tensor) -> torch.Tensor:
    """|diag(α) − ααᵀ| in the weights' own precision (where its zeros are real)."""
    return (torch.diag(w_row) - w_row[:, None] * w_row[None, :]).abs()


@cache
def sequence(setting: str) -> SimpleNamespace:
    """The page's one sequence: its stages in the chosen precision, recomputed."""
    s = settings(setting)
    dt = parse_dtype(s.dtype)
    q, k, _ = random_qkv(s.tokens, s.d_k, d_v=1, init=s.init, seed=s.seed, dtype=dt)
    raw = q @ k.T  # (T, T) in dt
    logits = raw * scale(s)
    w = torch.softmax(logits, -1)  # (T, T) in dt
    J = jacobian(w[s.row])
    if s.dtype != "float16":  # autograd in float64 agrees with the formula in dt
        auto = torch.autograd.functional.jacobian(
            lambda x: torch.softmax(x, -1), logits[s.row].double()
        )
        assert torch.allclose(J.double(), auto.abs(), rtol=1e-3, atol=1e-9)
    norms = torch.stack([torch.linalg.matrix_norm(jacobian(r).double()) for r in w])
    top2 = logits.double().topk(2, -1).values
    return SimpleNamespace(
        raw=raw.double().numpy(),
        logits=logits.double().numpy(),
        w=w.double().numpy(),
        max_w=w.double().amax(-1).numpy(),
        entropy=entropy_share(w).numpy(),
        J=J.double().numpy(),
        norms=norms.numpy(),
        lead=float(np.median((top2[:, 0] - top2[:, 1]).numpy())),
    )


@cache
def draw(init: str, seed: int) -> dict:
    """The sweep's q·k samples for d_k = 1 … 1024 (the page's draw: the inputs)."""
    return {d: r.double() for d, r in core.sweep_raw_scores(init=init, seed=seed).items()}


# ---------------------------------------------------------------- reading the words


def check_items(text: str, labels, values, floor: float = 0.0) -> None:
    """A list of "label value" items, one per label, in order."""
    said = items(text)
    assert len(said) == len(labels), (said, labels)
    for item, label, v in zip(said, labels, values, strict=True):
        m = ITEM.fullmatch(item)
        assert m and m["label"] == str(label), (item, label)
        assert near(value(m["v"]), v, floor), (item, v)


# ---------------------------------------------------------------- the charts


def stage_map(title, z):
    def check(s, spec, w):
        w.take("title", title=title(s))
        assert y_down(spec)  # the words say "query down": row 0 is drawn at the top
        check_grid(w, z(s), down="query", across="key")

    return check


def per_query(s, spec, w):
    seq = sequence(s.setting)
    w.take("title", title="④ Per query row")
    assert y_down(spec)  # query 0 is drawn at the top, as the words say
    w.take("dots", down="query", first="query 0", across="value (0 … 1)")
    rows = range(s.tokens)
    got = w.take("values", texts=("items",), name="largest weight, by query", n=s.tokens)
    check_items(got["items"], rows, seq.max_w)
    got = w.take("values", texts=("items",), name="entropy / log T, by query", n=s.tokens)
    check_items(got["items"], rows, seq.entropy, floor=1e-9)
    n = int((seq.max_w > core.SATURATION).sum())
    w.take("threshold", v=f"{core.SATURATION:g}", n=n, total=s.tokens)


def histogram(s, spec, w):
    label = f"d_k = {s.d_k}, {'÷ √d_k' if s.scaled else 'unscaled'}, temperature {s.temperature:g}"
    w.take("title", title=f"Distribution of the logits ({label})")
    take_axes(w, spec, "logit value", "density")
    x = (draw(s.init, s.seed)[s.d_k] * scale(s)).flatten().numpy()
    lim = 4 * x.std(ddof=1)
    density, edges = np.histogram(x, bins=61, range=(-lim, lim), density=True)
    centres = (edges[:-1] + edges[1:]) / 2
    got = w.take("bars.many", texts=("at_hi", "at_lo"), name="measured logits", n=61)
    width = edges[1] - edges[0]
    for v, at, best in (("hi", "at_hi", density.max()), ("lo", "at_lo", density.min())):
        assert near(got[v], best), (got, best)
        assert any(
            near(value(got[at]), centres[i], floor=width / 100) for i in ties(density, best)
        ), (got, at)
    span = max(abs(edges[0]), abs(edges[-1]), 4.0)
    grid = np.linspace(-span, span, 401)
    curves = [(float(s.d_k), f"N(0, {s.d_k}): the unscaled theory")]
    if s.d_k != 1:
        curves.append((1.0, "N(0, 1): what softmax wants"))
    for var, name in curves:
        pdf = np.exp(-(grid**2) / (2 * var)) / math.sqrt(2 * math.pi * var)
        check_line(w, name, grid, pdf, "logit value")


def variance(s, spec, w):
    w.take("title", title="Variance of the logits against d_k")
    take_axes(w, spec, "d_k", "variance")
    raw = draw(s.init, s.seed)
    d = np.array(core.DK_SWEEP, dtype=float)
    var = np.array([float(raw[k].var()) for k in core.DK_SWEEP])
    slopes = [np.polyfit(np.log(d), np.log(v), 1)[0] for v in (var, var / d)]
    check_line(w, "theory: d_k", d, d, "d_k")
    check_line(w, "theory: 1", d, np.ones_like(d), "d_k")
    for prefix, v, slope in (("unscaled", var, slopes[0]), ("÷ √d_k", var / d, slopes[1])):
        name = re.compile(re.escape(f"{prefix} (slope ") + rf"(?P<slope>{NUM})\)")
        got = check_line(w, name, d, v, "d_k")
        assert abs(got["slope"] - slope) <= 0.0051, (got, slope)
    now = (raw[s.d_k] * scale(s)).flatten().numpy().var(ddof=1)
    check_line(w, "your setting", [s.d_k], [now], "d_k")


@cache
def saturation(setting: str) -> SimpleNamespace:
    """Share of saturated rows and mean entropy share per d_k, both ways, recomputed."""
    s = settings(setting)
    raw, dt, T = draw(s.init, s.seed), parse_dtype(s.dtype), s.tokens
    out = {}
    for scaled in (False, True):
        share, ent = [], []
        for d in core.DK_SWEEP:
            m = raw[d].shape[-1] // T
            rows = raw[d][..., : m * T].reshape(-1, T)[:4096]  # the page's rows of T keys
            w = torch.softmax((rows * scale(s, d, scaled)).to(dt), -1)
            share.append(float((w.double().amax(-1) > core.SATURATION).double().mean()))
            ent.append(float(entropy_share(w).mean()))
        out[scaled] = (np.array(share), np.array(ent))
    return SimpleNamespace(
        share={k: v[0] for k, v in out.items()}, entropy={k: v[1] for k, v in out.items()}
    )


def sweep_chart(title, y_title, field):
    def check(s, spec, w):
        w.take("title", title=title)
        take_axes(w, spec, "d_k", y_title)
        curves = getattr(saturation(s.setting), field)
        d = np.array(core.DK_SWEEP, dtype=float)
        check_line(w, "unscaled", d, curves[False], "d_k")
        check_line(w, "÷ √d_k", d, curves[True], "d_k")
        now = curves[s.scaled][core.DK_SWEEP.index(s.d_k)]
        check_line(w, "your setting", [s.d_k], [now], "d_k")

    return check


def jacobian_map(s, spec, w):
    J = sequence(s.setting).J
    w.take("title", title=f"Softmax Jacobian |∂αᵢ/∂sⱼ| for query {s.row}")
    zero = J == 0
    if zero.all():  # not a grid of 0s: every cell exactly 0, drawn grey
        w.take("blank.zero", n=J.size, total=J.size)
        return
    assert y_down(spec)
    # |J| itself, not the log10 the colours are drawn in (a log would be negative)
    check_grid(w, np.where(zero, np.nan, J), down="weight i", across="logit j", blank="zero")


def jacobian_norms(s, spec, w):
    seq = sequence(s.setting)
    w.take("title", title="Jacobian norm of every query row")
    got = w.take("values", texts=("items",), name="‖J‖ of each query row", n=s.tokens)
    check_items(got["items"], range(s.tokens), seq.norms)  # the norm, not the log axis' floor
    sat = np.flatnonzero(seq.max_w > core.SATURATION)
    rows = ": " + ", ".join(map(str, sat)) if 0 < sat.size < s.tokens else ""
    w.take("rows.saturated", n=sat.size, total=s.tokens, v=f"{core.SATURATION:g}", rows=rows)


def two_keys(s, spec, w):
    across = "logit gap between the two keys"
    w.take("title", title="Two keys: the softmax gradient α(1 − α) against the logit gap")
    take_axes(w, spec, across, "gradient α(1 − α)")
    g = torch.linspace(0, 30, 601, dtype=torch.float64)
    e = torch.exp(-g)
    check_line(w, "exact α(1 − α)", g, e / (1 + e) ** 2, across)
    logits = torch.stack([g, torch.zeros_like(g)], -1).to(parse_dtype(s.dtype))
    logits.requires_grad_(True)
    torch.softmax(logits, -1)[:, 0].sum().backward()  # ∂α₀/∂s₀ = α(1 − α), as backprop gets it
    grad = logits.grad[:, 0].double().numpy()
    check_line(w, f"backprop in {s.dtype}", g, np.where(grad > 0, grad, np.nan), across)
    nonzero = np.flatnonzero(grad != 0)
    if nonzero[-1] + 1 < len(grad):  # exactly 0 from there to the end
        name = f"where backprop in {s.dtype} becomes exactly 0 (shaded from there on)"
        got = w.take("mark", name=name, x=across)
        assert near(got["at"], float(g[nonzero[-1] + 1])), got
    got = w.take("level", name="float32 epsilon")
    assert near(got["y"], 2.0**-23), got
    got = w.take("points", texts=("points",), name="the lesson's two points", n=2)
    pairs = re.findall(rf"\(({NUM}), ({NUM})\)", got["points"])
    assert [value(a) for a, _ in pairs] == [3, 24], got
    for gap, (_, y) in zip((3.0, 24.0), pairs, strict=True):
        assert near(value(y), math.exp(-gap) / (1 + math.exp(-gap)) ** 2), (gap, y)
    lead = sequence(s.setting).lead
    name = content.words("scaling", "two_keys.star")
    if lead > 30:  # the star sits at the right edge: the words give the true lead
        name += " (the star, off the chart: drawn at its right edge)"
    got = w.take("point", name=name, x=across)
    assert near(got["at"], lead), (got, lead)
    assert near(got["y"], math.exp(-lead) / (1 + math.exp(-lead)) ** 2), (got, lead)


CHECKS = {
    "Scores to weights": (
        stage_map(lambda s: f"① Raw scores q·k (d_k = {s.d_k})", lambda s: sequence(s.setting).raw),
        stage_map(lambda s: "② Logits softmax sees", lambda s: sequence(s.setting).logits),
        stage_map(lambda s: "③ Weights after softmax", lambda s: sequence(s.setting).w),
        per_query,
    ),
    "Spread": (histogram, variance),
    "Saturation": (
        sweep_chart("Saturated rows (largest weight > 0.99)", "share of rows", "share"),
        sweep_chart("Mean entropy of a row (share of log T)", "entropy / log T", "entropy"),
    ),
    "Jacobian": (jacobian_map, jacobian_norms),
    "Two keys": (two_keys,),
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
    s.setting = setting
    for (spec, text), start, check in zip(charts, CHARTS[step], CHECKS[step], strict=True):
        assert text.startswith(start), (text, start)
        w = Sentences(text)
        check(s, spec, w)
        w.done()
