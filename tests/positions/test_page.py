"""AppTest: /positions as a shared link opens it — every step, the extremes, hostile values,
and the sentences checked against the computation."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core.lessons import positions as core
from tests.support.apptest import (
    all_specs,
    answer_and_reveal,
    no_exception,
    run_page,
    run_steps,
    warnings,
)
from tests.support.apptest import chart_titles as titles
from ui.exercises import EXERCISE_LOG
from ui.lesson import lesson

PAGE = "pages/positions.py"
STEPS = lesson("positions").steps
ROOT = Path(__file__).resolve().parents[2]
STEP_TITLES = {  # at the defaults, every exercise revealed
    "Order": ["How far each token's output moves when the input is shuffled"],
    "Added": [
        "One token at all 16 positions: scores, sinusoidal, added to x",
        "Sinusoidal position codes (T = 16, d = 64)",
        "Dot product of two sinusoidal codes against their distance",
    ],
    "RoPE": [
        "One token at all 16 positions: scores, RoPE (rotated q, k)",
        "Pair 0 of q at positions 0–15: turned 1 rad per position",
        "How fast each pair turns (base θ = 10000)",
        "What RoPE leaves of a perfect match's score at distance Δ (d_k = 64)",
    ],
    "ALiBi": ["ALiBi alone: the last query's weight on the key Δ back (8 heads, T = 16)"],
    "Longer": ["Trained at length 16, tested longer: share of answers right"],
    "In a model": ["all-MiniLM-L6-v2: cosine similarity of its first 128 position vectors"],
}


def text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def test_every_step_draws_its_charts_with_no_note():
    runs = run_steps(PAGE, STEPS, reveal=True)
    for step, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), (step, warnings(at))
        assert titles(at) == STEP_TITLES[step], step
        assert "Try this" in text(at), step
    for spec in all_specs(runs):
        assert spec["layout"]["xaxis"]["title"]["text"] and spec["layout"]["yaxis"]["title"]["text"]


def test_the_order_step_keeps_its_answer_until_the_reveal():
    at = run_page(PAGE)
    no_exception(at)
    assert titles(at) == [] and not at.metric  # the moves are the answer
    (entry,) = at.session_state[EXERCISE_LOG]
    assert not entry["revealed"]
    answer_and_reveal(at, entry["key"])
    no_exception(at)
    moves = core.shuffle_error(16, 64)[1]
    causal = core.shuffle_error(16, 64, causal=True)[1]
    assert moves.max() < 1e-5 and causal.max() > 0.1
    shown = {m.label: m.value for m in at.metric}
    assert shown["Causal mask only"] == f"{causal.max():.3g}"
    verdict = " ".join([s.value for s in at.success] + [e.value for e in at.error])
    assert "not at all, up to float rounding" in verdict and f"{causal.max():.3g}" in verdict


def test_the_rope_sentence_quotes_the_measured_toeplitz_deviation():
    at = run_page(PAGE, step="RoPE")
    no_exception(at)
    s = core.repeated_token_scores(16, 64, "rope")
    dev, added = (
        core.toeplitz_deviation(s),
        core.toeplitz_deviation(core.repeated_token_scores(16, 64, "sinusoidal")),
    )
    assert dev < 1e-12 and added > 0.1  # relative under RoPE, not with an added code
    body = text(at)
    assert "constant within" in body and f"up to {np.abs(s.numpy()).max():.3g}" in body
    assert "turned 1 rad per position" in titles(at)[1]


def test_the_longer_verdict_is_worded_from_the_shipped_table():
    shipped = json.loads((ROOT / "assets" / "positions_extrapolation.json").read_text())
    at = run_page(PAGE, step="Longer")
    no_exception(at)
    body = text(at)
    acc = {k: r["accuracy"] for k, r in shipped["runs"].items()}
    T0, T4 = str(shipped["task"]["T_train"]), str(max(shipped["task"]["lengths"]))
    best = max((k for k in acc if acc[k][T0] >= 0.9), key=lambda k: acc[k][T4])
    names = {"none": "no position", "learned": "learned", "sinusoidal": "sinusoidal",
             "rope": "RoPE", "alibi": "ALiBi"}  # fmt: skip
    assert f"{names[best]} keeps the most ({acc[best][T4]:.0%} right)" in body
    assert any("Measured on a CPU when this app was built" in c.value for c in at.caption)


def test_the_alibi_step_lists_the_papers_slopes():
    at = run_page(PAGE, step="ALiBi")
    assert "slopes 1/2, 1/4, 1/8, 1/16, 1/32, 1/64, 1/128, 1/256" in text(at)
    at = run_page(PAGE, step="ALiBi", h="3")  # not a power of two: the paper's interleave
    assert core.alibi_slopes(3).tolist() == [1 / 16, 1 / 256, 1 / 4]
    assert "slopes 1/16, 1/256, 1/4" in text(at)


EXTREMES = [
    dict(T="2", d_k="8", base="100", h="1", seed="0"),
    dict(T="48", d_k="128", base="1e+06", h="16", seed="99", pair="63"),
]


@pytest.mark.parametrize("params", EXTREMES, ids=["smallest", "largest"])
@pytest.mark.parametrize("step", ["Order", "Added", "RoPE", "ALiBi"])
def test_the_extremes_draw_finite_charts_without_notes(params, step):
    at = run_page(PAGE, reveal=True, step=step, **params)
    no_exception(at)
    assert not warnings(at)
    specs = all_specs([at])
    assert specs
    for spec in specs:
        for trace in spec["data"]:
            for key in ("y", "z"):
                if isinstance(trace.get(key), list):
                    vals = np.asarray(trace[key], dtype=float)
                    assert not np.isnan(vals[~np.isnan(vals)]).any()


BAD = [
    ("T", "abc"), ("T", "999"), ("d_k", "7"), ("base", "-1"), ("h", "0"), ("seed", "1e9"),
    ("code", "<b>x</b>"), ("pair", "99"), ("step", "Nope"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "value"), BAD, ids=[f"{n}={v}" for n, v in BAD])
def test_bad_link_values_fall_back_with_a_note(name, value):
    step = {"code": "Added", "pair": "RoPE"}.get(name, "Order")
    params = {"step": step, name: value}
    at = run_page(PAGE, **params)
    no_exception(at)
    notes = " ".join(warnings(at))
    assert f"`{name}={value}`" in notes, notes  # quoted in a code span: shown, never run


def test_rope_pair_slider_follows_d_k():
    at = run_page(PAGE, step="RoPE", d_k="8", pair="3")
    no_exception(at)
    assert not warnings(at)
    assert titles(at)[1].startswith("Pair 3 of q")
    torch.testing.assert_close(
        core.rope_frequencies(8)[3], torch.tensor(10_000.0 ** (-6 / 8), dtype=torch.float64)
    )


def test_train_here_trains_the_table_on_this_server_and_says_so():
    at = run_page(PAGE, step="Longer")
    at.button[0].click().run(timeout=300)
    no_exception(at)
    assert any("Trained on this server just now" in c.value for c in at.caption)
    assert titles(at) == STEP_TITLES["Longer"]
    assert "Measured verdict" in text(at)
