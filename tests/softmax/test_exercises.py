"""The /softmax page's "predict, then reveal" exercises, checked against attn_core."""

import math

import pytest
import torch

import attn_core
from attn_core.lessons.softmax import softmax_quiz
from tests.softmax.test_claims import exp_edge
from tests.support.apptest import no_exception, reveal, run_page, verdicts
from ui.content import Words

PAGE = "pages/softmax.py"
F64 = torch.float64
W = Words("softmax")
SHIFT_OR_SCALE = W.choices("exercise.scale.choices")
NAIVE_OUTCOMES = W.choices("exercise.naive.choices")


def example_scores(example="lesson"):
    """The worked example's scores q·k/√d_k, straight from attn_core's attention."""
    _, q, k, v = attn_core.SOFTMAX_EXAMPLES[example]
    r = attn_core.attention(
        torch.tensor([q], dtype=F64), torch.tensor(k, dtype=F64), torch.tensor(v, dtype=F64)
    )
    return r.scores[0]


def expected(quiz=0, example="lesson"):
    z = softmax_quiz(quiz)
    s = example_scores(example)
    w = torch.softmax(s, -1)
    added = (torch.softmax(s + z.c, -1) - w).abs().max() > 1e-9
    multiplied = (torch.softmax(s * z.c, -1) - w).abs().max() > 1e-9
    scale = SHIFT_OR_SCALE[
        {
            (True, False): "add",
            (False, True): "multiply",
            (True, True): "both",
            (False, False): "neither",
        }[(bool(added), bool(multiplied))]
    ]
    demo = attn_core.stability_demo(z.scores, z.dtype)
    if (
        all(math.isfinite(x) for x in demo.naive)
        and max(abs(a - b) for a, b in zip(demo.naive, demo.stable, strict=True)) < 0.01
    ):
        naive = "works"
    elif any(math.isinf(x) for x in demo.naive_exp):
        naive = "overflow"
    else:
        naive = "underflow"
    d = attn_core.dropout_stats(z.dropout_p, True, quiz)
    return dict(z=z, scale=scale, naive=NAIVE_OUTCOMES[naive], mean=float(d.mean_row_sums.mean()))


def keys(quiz, scores=None):
    """The questions' keys: the class's identity of each, whatever the example's scores."""
    return f"softmax-scale-{quiz}", f"softmax-naive-{quiz}", f"softmax-dropout-{quiz}"


def text(at):
    return " ".join(m.value for m in at.markdown)


@pytest.fixture(scope="module")
def at0():
    at = run_page(PAGE, step="Check yourself")
    no_exception(at)
    return at


def test_three_questions_appear_unrevealed(at0):
    z = softmax_quiz(0)
    t = text(at0)
    assert f"**adding c = {z.c:g}** to every score" in t
    assert f"In **{z.dtype}**, a naive softmax" in t
    assert f"Attention dropout with **p = {z.dropout_p:g}**" in t
    scale_key, naive_key, _ = keys(0, example_scores())
    assert at0.radio(key=f"pick-{scale_key}").options == list(SHIFT_OR_SCALE.values())
    assert at0.radio(key=f"pick-{naive_key}").options == list(NAIVE_OUTCOMES.values())
    assert verdicts(at0) == ([], [])


def test_right_and_wrong_answers_are_judged_against_attn_core(at0):
    e = expected(0)
    scale_key, naive_key, drop_key = keys(0, example_scores())
    # right: adding changes nothing, multiplying sharpens (the lesson's scores differ)
    assert e["scale"] == SHIFT_OR_SCALE["multiply"]
    at0.radio(key=f"pick-{scale_key}").set_value(e["scale"])
    reveal(at0, scale_key)
    ok, bad = verdicts(at0)
    assert len(ok) == 1 and ok[0].startswith(f"Right: **{e['scale']}**") and not bad
    # wrong: the error names the computed outcome of the naive softmax
    pick = next(c for c in NAIVE_OUTCOMES.values() if c != e["naive"])
    at0.radio(key=f"pick-{naive_key}").set_value(pick)
    reveal(at0, naive_key)
    _, bad = verdicts(at0)
    assert len(bad) == 1 and f"**{e['naive']}**" in bad[0]
    # wrong: 1 - p, the classic slip; the computed mean row sum is about 1
    p = e["z"].dropout_p
    at0.number_input(key=f"guess-{drop_key}").set_value(1 - p)
    reveal(at0, drop_key)
    _, bad = verdicts(at0)
    assert abs(e["mean"] - 1) < 0.02
    assert any(f"Computed **{e['mean']:.3f}**" in b for b in bad)
    assert "only sees the *gaps*" in text(at0) and "survivors are scaled up" in text(at0)


def test_a_new_question_seed_gives_new_numbers_and_answers(at0):
    quiz = next(q for q in range(1, 50) if softmax_quiz(q).dtype != softmax_quiz(0).dtype)
    e0, e = expected(0), expected(quiz)
    assert (e["z"].scores, e["z"].dtype) != (e0["z"].scores, e0["z"].dtype)
    at0.number_input(key="quiz").set_value(quiz).run()
    no_exception(at0)
    assert verdicts(at0) == ([], [])  # new instances start unrevealed
    assert f"In **{e['z'].dtype}**, a naive softmax" in text(at0)
    _, naive_key, drop_key = keys(quiz, example_scores())
    at0.radio(key=f"pick-{naive_key}").set_value(e["naive"])
    reveal(at0, naive_key)
    ok, _ = verdicts(at0)
    assert len(ok) == 1 and ok[0].startswith(f"Right: **{e['naive']}**")
    at0.number_input(key=f"guess-{drop_key}").set_value(1.0)
    reveal(at0, drop_key)
    ok, _ = verdicts(at0)
    assert any(f"computed **{e['mean']:.3g}**" in o for o in ok)


def test_the_scale_question_follows_the_worked_example():
    at = run_page(PAGE, step="Check yourself", example="peaked", quiz="5")
    no_exception(at)
    s = example_scores("peaked")
    assert not torch.allclose(s[:3], example_scores("lesson"))
    e = expected(5, "peaked")
    scale_key, _, _ = keys(5, s)
    assert "t4:" in text(at)  # the peaked example has four tokens
    at.radio(key=f"pick-{scale_key}").set_value(SHIFT_OR_SCALE["neither"])
    reveal(at, scale_key)
    _, bad = verdicts(at)
    assert len(bad) == 1 and f"**{e['scale']}**" in bad[0]
    # a query of zeros gives equal scores: then neither a shift nor a scale does anything
    at.query_params["step"] = at.session_state["step"] = "Example"  # where the tables are
    at.run()
    at.session_state["q_table"] = {
        "edited_rows": {0: {"q 1": "0", "q 2": "0", "q 3": "0"}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    at.query_params["step"] = at.session_state["step"] = "Check yourself"  # back, edited
    at.run()
    no_exception(at)
    assert verdicts(at) == ([], [])  # a new instance: the old reveal is gone
    (radio,) = [r for r in at.radio if r.key.startswith("pick-softmax-scale-")]
    radio.set_value(SHIFT_OR_SCALE["neither"])
    reveal(at, radio.key.removeprefix("pick-"))
    ok, _ = verdicts(at)
    assert len(ok) == 1 and ok[0].startswith(f"Right: **{SHIFT_OR_SCALE['neither']}**")


def test_stability_why_numbers_come_from_the_formats():
    """The naive question's explanation, on a float16 question where every e^s underflows."""
    quiz = next(
        q
        for q in range(200)
        if expected(q)["z"].dtype == "float16"
        and expected(q)["naive"] == NAIVE_OUTCOMES["underflow"]
    )
    at = run_page(PAGE, step="Check yourself", quiz=str(quiz))
    no_exception(at)
    _, naive_key, _ = keys(quiz, example_scores())
    at.radio(key=f"pick-{naive_key}").set_value(NAIVE_OUTCOMES["underflow"])
    reveal(at, naive_key)
    why = text(at)
    assert f"{exp_edge(torch.float16, True):.2f} and {exp_edge(torch.float16, False):.2f}" in why
    bits = {
        d: 1 - round(math.log2(torch.finfo(getattr(torch, d)).eps)) for d in ("bfloat16", "float32")
    }
    assert f"only {bits['bfloat16']} significant bits to float32's {bits['float32']}" in why
    assert "has 5 (float16 has 5" in why and "float32's 8" in why
    assert "−2, −1, 0" in why
