"""Home: the first look's chart in words (issue 51), at the defaults, at another seed and at
the far end of the d_k slider without scaling (nearly one-hot rows), each number
recomputed here from the lesson's draw of q and k (random_qkv) with torch.softmax, never
read from the figure; a repeated word ("the") may name either of its rows or columns; and
every sentence accounted for."""

from __future__ import annotations

import math
from functools import cache

import pytest
import torch

from attn_core import random_qkv
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.grid_words import check_grid, y_down
from tests.support.word_templates import Sentences
from tests.support.words import chart_words

PAGE = "pages/home.py"
WORDS = ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"]
DEFAULTS = dict(d_k=64, scaled=True, seed=0)
SETTINGS = {
    "defaults": {},
    "seed 5, d_k 1": dict(seed=5, d_k=1),
    "d_k 1024 unscaled, seed 10000": dict(d_k=1024, scaled=False, seed=10_000),
}


@cache
def page(setting: str) -> tuple:
    p = {k: str(v).lower() if isinstance(v, bool) else v for k, v in SETTINGS[setting].items()}
    at = run_page(PAGE, reveal=True, **p)
    no_exception(at)
    return tuple(chart_words(at))


def weights(d_k: int, scaled: bool, seed: int):
    """softmax(q kᵀ · scale) for the sentence's random q and k, in float32 as the page."""
    q, k, _ = random_qkv(len(WORDS), d_k, seed=seed)
    return torch.softmax(q @ k.T * (1 / math.sqrt(d_k) if scaled else 1.0), -1).double().numpy()


def test_home_has_no_steps():
    assert page_steps(PAGE) == ("",)


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_the_first_look_s_words_are_the_computation_s(setting):
    s = DEFAULTS | SETTINGS[setting]
    charts = page(setting)
    assert len(charts) == 1, [text for _, text in charts]
    spec, text = charts[0]
    w = Sentences(text)
    title = f"Who attends to whom — d_k = {s['d_k']}, {'scaled' if s['scaled'] else 'unscaled'}"
    w.take("title", title=title)
    assert y_down(spec)  # the words say the queries run down: the first word on top
    check_grid(
        w,
        weights(s["d_k"], s["scaled"], s["seed"]),
        down="query (attending)",
        across="key (attended to)",
        rows=WORDS,
        cols=WORDS,
    )
    w.done()
