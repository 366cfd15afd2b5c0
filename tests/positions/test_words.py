"""/positions: every chart's words (issue 51), on every step, at the defaults, at another
seed (with the learned code and another RoPE pair) and at an extreme (T = 2, d_k = 8,
θ = 10⁶, 16 ALiBi heads: each slider's end), each number recomputed here — the sinusoids,
RoPE's turns and its expected score, ALiBi's weights and the real model's cosines from
their formulas; the shuffle moves and the scores of one repeated token as the lesson
computes them; the extrapolation table as shipped — and every sentence accounted for:
words with anything the test did not recompute fail."""

from __future__ import annotations

import json
import math
import re
from functools import cache
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from attn_core.lessons import positions as core
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.word_templates import (
    Sentences,
    check_grid,
    check_line,
    items,
    named,
    same,
)
from tests.support.words import chart_words, value
from ui.content import Words

PAGE = "pages/positions.py"
ROOT = Path(__file__).resolve().parents[2]
W = Words("positions")
KINDS = W.choices("added.kinds")
SETTINGS = {
    "defaults": {},
    "seed 7, learned code, pair 5": {"seed": 7, "code": KINDS["learned"], "pair": 5},
    "T 2, d_k 8, θ 1e+06, 16 heads": {"T": 2, "d_k": 8, "base": "1e+06", "h": 16, "pair": 3},
}
DEFAULTS = dict(T=16, d_k=64, base=10_000.0, h=8, seed=0, code="sinusoidal", pair=0)
KIND_NAMES = {
    "none": "no position",
    "learned": "learned, added to x",
    "sinusoidal": "sinusoidal, added to x",
    "rope": "RoPE (rotated q, k)",
    "alibi": "ALiBi (score bias)",
}
MOVES = {  # the Order step's lines, as the page names them
    "no mask, no position": dict(kind="none"),
    "causal mask": dict(kind="none", causal=True),
    "sinusoidal added": dict(kind="sinusoidal"),
    "RoPE": dict(kind="rope"),
    "ALiBi": dict(kind="alibi"),
}
ROUNDING = 1e-5  # a move this small is float32 rounding (figures.positions.ROUNDING)
MAX_SERIES = 6  # series read one by one; the rest named (figures.describe.MAX_TRACES)
ACROSS = "token (its place before the shuffle)"


@cache
def settings(setting: str) -> SimpleNamespace:
    p = dict(DEFAULTS, **SETTINGS[setting])
    by_label = {v: k for k, v in KINDS.items()}
    return SimpleNamespace(
        T=int(p["T"]), d=int(p["d_k"]), base=float(p["base"]), h=int(p["h"]),
        seed=int(p["seed"]), code=by_label.get(p["code"], p["code"]), pair=int(p["pair"]),
    )  # fmt: skip


def omegas(d: int, base: float) -> np.ndarray:
    """RoPE's turn per position of each pair: base^(−2i/d)."""
    return base ** (-2.0 * np.arange(d // 2) / d)


def sinusoids(T: int, d: int) -> np.ndarray:
    """(T, d): sin(p ω_i) at dimension 2i, cos(p ω_i) at 2i + 1, ω_i = 10000^(−2i/d)."""
    angle = np.arange(T)[:, None] * omegas(d, 10_000.0)[None, :]
    pe = np.empty((T, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def scores_words(words: str, s: SimpleNamespace, kind: str) -> None:
    """One token at every position: the scores grid, from the lesson's projections."""
    z = core.repeated_token_scores(s.T, s.d, kind, seed=s.seed, base=s.base).numpy()
    said = Sentences(words)
    said.take("title", title=f"One token at all {s.T} positions: scores, {KIND_NAMES[kind]}")
    check_grid(said, z, "query position m", "key position n")
    said.done()


# ---------------------------------------------------------------- one check per step


def order(charts, s) -> None:
    """How far each token's output moves under a shuffle, five ways, each a true move (a
    move of exactly 0 said as 0, not as the log axis' floor); rounding noise as noise."""
    [words] = charts
    said = Sentences(words)
    said.take("title", title="How far each token's output moves when the input is shuffled")
    said.take("axes", x=ACROSS, y="max |change| of its output (log axis)", up="up")
    for name, kw in MOVES.items():
        m = core.shuffle_error(s.T, s.d, seed=s.seed, **kw)[1].numpy().astype(float)
        check_line(said, name, np.arange(s.T), m, ACROSS, floor=ROUNDING)
    said.done()


def added(charts, s) -> None:
    """The scores with the chosen code, the sinusoidal codes, and the dot product of two
    codes against their distance from a few starts, as sums of cosines."""
    grid, codes, dots = charts
    scores_words(grid, s, s.code)
    pe = sinusoids(s.T, s.d)
    assert np.allclose(pe, core.sinusoidal_positions(s.T, s.d).numpy())
    said = Sentences(codes)
    said.take("title", title=f"Sinusoidal position codes (T = {s.T}, d = {s.d})")
    check_grid(said, pe, "position", "dimension")
    said.done()
    said = Sentences(dots)
    said.take("title", title="Dot product of two sinusoidal codes against their distance")
    across = "distance Δ = n − m (positions)"
    said.take("axes", x=across, y="p_m · p_(m+Δ)", up="up")
    w = omegas(s.d, 10_000.0)
    for m in sorted({0, s.T // 4, s.T // 2}):
        delta = np.arange(s.T - m)
        true = np.cos(delta[:, None] * w[None, :]).sum(-1)  # Σ_i cos(Δ ω_i), start m aside
        check_line(said, f"from m = {m}", delta, true, across)
    said.done()


def angles_said(text: str) -> list[tuple[int, float]]:
    return [(int(a), value(b)) for a, b in (x.split(" ") for x in items(text))]


def rope(charts, s) -> None:
    """RoPE's scores; the pair's arrows (length, turn per position in degrees, turns, each
    position's angle); every pair's ω; the expected score against distance per base."""
    grid, pair, spectrum, decay = charts
    scores_words(grid, s, "rope")
    w = omegas(s.d, s.base)
    om = w[s.pair]
    said = Sentences(pair)
    got = said.take("title", title=named(f"Pair {s.pair} of q at positions 0–{s.T - 1}: turned "
                                         "{w} rad per position", "w"))  # fmt: skip
    assert same(got["w"], om)
    got = said.take("rope.pair", length=1)
    assert got["n"] == s.T and same(got["step"], math.degrees(om)), got
    assert same(got["turns"], om * (s.T - 1) / (2 * math.pi)), got
    got = said.take("values", texts=("items",), name="position → angle in degrees")
    assert got["n"] == s.T
    for (p, a), true in zip(angles_said(got["items"]), np.arange(s.T) * om, strict=True):
        turned = (math.degrees(true) + 180) % 360 - 180  # within (−180, 180]
        assert same(a, turned) or same(a, turned + 360) or same(a, turned - 360), (p, a, turned)
    said.done()
    said = Sentences(spectrum)
    said.take("title", title=f"How fast each pair turns (base θ = {s.base:g})")
    said.take("axes", x="pair i", y="radians per position, ω_i = θ^(−2i/d) (log)", up="up")
    check_line(said, "ω_i", np.arange(w.size), w, "pair i")
    said.done()
    said = Sentences(decay)
    said.take("title", title=f"What RoPE leaves of a perfect match's score at distance Δ "
               f"(d_k = {s.d})")  # fmt: skip
    across = "distance Δ (positions, log)"
    said.take("axes", x=across, y="E[q·R_Δ q] / E[q·q]", up="up")
    offsets = np.unique(np.round(np.logspace(0, 4, 60)))
    for base in dict.fromkeys([s.base, *(b for b in (100.0, 500_000.0) if b != s.base)]):
        true = np.cos(offsets[:, None] * omegas(s.d, base)[None, :]).mean(-1)
        check_line(said, f"θ = {base:g}", offsets, true, across)
    said.done()


def alibi(charts, s) -> None:
    """The last query's weight on each key Δ back, per head: softmax(−slope·Δ); the first
    six heads read, every other one named with its slope."""
    [words] = charts
    said = Sentences(words)
    heads = "head" if s.h == 1 else "heads"
    said.take("title", title=f"ALiBi alone: the last query's weight on the key Δ back "
              f"({s.h} {heads}, T = {s.T})")  # fmt: skip
    across = "distance Δ (positions)"
    said.take("axes", x=across, y="attention weight", up="up")
    assert s.h & (s.h - 1) == 0  # a power of two: the slopes are 2^(−8k/h), k = 1 … h
    slopes = 2.0 ** (-8.0 * np.arange(1, s.h + 1) / s.h)
    delta = np.arange(s.T)
    for i, m in enumerate(slopes[:MAX_SERIES]):
        e = np.exp(-m * delta)
        got = check_line(said, named(f"head {i} (slope {{m}})", "m"), delta, e / e.sum(), across)
        assert same(got["m"], m), (i, got, m)
    if s.h > MAX_SERIES:
        got = said.take("more", texts=("names",))
        assert got["n"] == s.h - MAX_SERIES
        rest = got["names"].split("; ")
        assert len(rest) == s.h - MAX_SERIES
        for i, (text, m) in enumerate(zip(rest, slopes[MAX_SERIES:], strict=True), MAX_SERIES):
            e = np.exp(-m * delta)
            w = e / e.sum()  # every head past the ones read in full: named, and summed up
            x = re.fullmatch(named(f"head {i} (slope {{m}})", "m").pattern
                             + r" from (?P<a>\S+) to (?P<b>\S+), lowest (?P<lo>\S+), "
                             r"highest (?P<hi>\S+)", text)  # fmt: skip
            assert x and same(value(x["m"]), m), (text, m)
            for k, true in (("a", w[0]), ("b", w[-1]), ("lo", w.min()), ("hi", w.max())):
                assert same(value(x[k]), true), (text, k, true)
    said.done()


def longer(charts, s) -> None:
    """The shipped extrapolation table, one line per way of giving position."""
    [words] = charts
    data = json.loads((ROOT / "assets" / "positions_extrapolation.json").read_text())
    said = Sentences(words)
    said.take("title", title=f"Trained at length {data['task']['T_train']}, tested longer: "
              "share of answers right")  # fmt: skip
    across = "sequence length (log)"
    said.take("axes", x=across, y="share right", up="up")
    for kind, run in data["runs"].items():
        acc = {int(T): a for T, a in run["accuracy"].items()}
        Ts = sorted(acc)
        check_line(said, KIND_NAMES[kind], Ts, [acc[T] for T in Ts], across)
    said.done()


def in_a_model(charts, s) -> None:
    """The real model's first 128 position vectors: their cosines, worked out here."""
    try:
        name, table = core.model_positions(128)
    except Exception:  # the package is missing: the page says why, with no chart
        assert not charts
        return
    [words] = charts
    u = table.double().numpy()
    u = u / np.linalg.norm(u, axis=-1, keepdims=True)
    said = Sentences(words)
    said.take("title", title=f"{name}: cosine similarity of its first 128 position vectors")
    check_grid(said, u @ u.T, "position", "position")
    said.done()


CHECKS = {
    "Order": order,
    "Added": added,
    "RoPE": rope,
    "ALiBi": alibi,
    "Longer": longer,
    "In a model": in_a_model,
}


def test_every_step_is_checked():
    assert set(page_steps(PAGE)) == set(CHECKS)


@pytest.mark.parametrize("step", list(CHECKS))
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_every_chart_says_what_the_lesson_computes(setting, step):
    at = run_page(PAGE, timeout=120, reveal=True, step=step, **SETTINGS[setting])
    no_exception(at)
    CHECKS[step]([w for _, w in chart_words(at)], settings(setting))


def test_a_move_of_exactly_zero_is_said_as_zero():
    """With two tokens a shuffle swaps them, and without a mask or positions (or with ALiBi,
    which sees |m − n| only) each output comes back, up to float32's round-off (exactly on
    most machines; one CI run measured 6e-08, the order of a sum): the chart draws a 0 at
    the log axis' floor (10⁻⁹), and its words say the move, never the floor."""
    at = run_page(PAGE, reveal=True, step="Order", T=2)
    no_exception(at)
    [words] = [w for _, w in chart_words(at)]
    for name in ("no mask, no position", "ALiBi"):
        got = Sentences(words).take("line", name=name, x=ACROSS)
        assert max(abs(got[k]) for k in ("lo", "hi", "last")) < 1e-6, (name, got)
    assert "10⁻⁹" not in words
