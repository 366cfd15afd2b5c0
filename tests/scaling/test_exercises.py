"""The /scaling page's "predict, then reveal" exercises, checked against attn_core."""

import math

import numpy as np
import pytest
import torch

import attn_core
from attn_core.lessons.scaling import exercise_d_k, top_two_gap
from tests.support.apptest import no_exception, reveal, run_page, verdicts
from ui.content import choices

PAGE = "pages/scaling.py"
STEP = "Check yourself"  # the tab that holds the exercises
DROPS = tuple(choices("scaling", "exercise.jac.choices").values())  # its answers


def keys(seed=0, tokens=12, init="gaussian", dtype="float32"):
    inst = f"{seed}-{tokens}-{init}-{dtype}"
    return f"scaling-sd-{seed}-{init}", f"scaling-max-{inst}", f"scaling-jac-{inst}"


def expected(seed=0, tokens=12, init="gaussian", dtype=torch.float32):
    """The three answers, computed straight from attn_core (not through the page)."""
    d_k = exercise_d_k(seed)
    raw = attn_core.sweep_raw_scores(init=init, seed=seed)[d_k]
    kw = dict(init=init, seed=seed, dtype=dtype)
    on = attn_core.scaling_sample(tokens, d_k, scaled=True, **kw)
    off = attn_core.scaling_sample(tokens, d_k, scaled=False, **kw)
    n_on, n_off = np.median(on.jacobian_norm.numpy()), np.median(off.jacobian_norm.numpy())
    ratio = math.inf if n_off == 0 else n_on / n_off
    return dict(
        d_k=d_k,
        sd=float(raw.std()),
        max_off=float(np.median(off.max_weight.numpy())),
        max_on=float(np.median(on.max_weight.numpy())),
        lead_off=float(np.median(top_two_gap(off.logits).numpy())),
        saturated_off=float((off.max_weight > 0.99).double().mean()),
        drop=DROPS[int(np.searchsorted([3.0, 30.0, 1000.0], ratio, side="right"))],
    )


@pytest.fixture(scope="module")
def at0():
    at = run_page(PAGE, step=STEP)
    no_exception(at)
    return at


def test_three_questions_appear_unrevealed(at0):
    text = " ".join(m.value for m in at0.markdown)
    d_k = exercise_d_k(0)
    assert d_k == 256  # the example: seed 0 asks about d_k = 256
    assert "what is the standard deviation of q·k" in text and f"d_k = **{d_k}**" in text
    assert "how large is the biggest attention weight" in text
    assert "how much smaller does the median row's norm get" in text
    assert at0.radio(key=f"pick-{keys()[2]}").options == list(DROPS)
    assert verdicts(at0) == ([], [])


def test_right_and_wrong_answers_are_judged_against_attn_core(at0):
    sd_key, max_key, jac_key = keys()
    e = expected()
    # right: the measured spread of q·k (about √256 = 16)
    at0.number_input(key=f"guess-{sd_key}").set_value(round(e["sd"], 1))
    reveal(at0, sd_key)
    ok, bad = verdicts(at0)
    assert len(ok) == 1 and f"{e['sd']:.3g}" in ok[0] and not bad
    assert abs(e["sd"] - 16) < 1.5
    # wrong: a spread-out row, but unscaled rows are nearly one-hot
    wrong = 0.0 if e["max_off"] > 0.2 else 1.0
    at0.number_input(key=f"guess-{max_key}").set_value(wrong)
    reveal(at0, max_key)
    ok, bad = verdicts(at0)
    assert len(bad) == 1 and f"**{e['max_off']:.4g}**" in bad[0]
    # wrong choice: the error names the computed bucket
    pick = next(c for c in DROPS if c != e["drop"])
    at0.radio(key=f"pick-{jac_key}").set_value(pick)
    reveal(at0, jac_key)
    ok, bad = verdicts(at0)
    assert any(f"**{e['drop']}**" in b for b in bad)
    # each reveal shows its why
    text = " ".join(m.value for m in at0.markdown)
    assert "variances of independent terms add up" in text
    # the why of the largest weight quotes this sequence's own numbers, computed here
    assert f"the median lead among these 12 keys is {e['lead_off']:.3g}" in text
    assert f"the typical row's largest weight is **{e['max_off']:.3g}**" in text
    assert f"{e['saturated_off']:.0%} of the rows are above 0.99" in text
    assert f"typical largest weight of **{e['max_on']:.3g}**" in text


def test_a_new_seed_asks_a_new_question_with_a_new_computed_answer(at0):
    _, max_key, jac_key = keys(seed=3)
    e0, e3 = expected(0), expected(3)
    assert e3["d_k"] != e0["d_k"] and e3["sd"] != e0["sd"] and e3["max_off"] != e0["max_off"]
    at0.number_input(key="seed").set_value(3).run()
    no_exception(at0)
    assert verdicts(at0) == ([], [])  # a new instance starts unrevealed
    assert f"d_k = **{e3['d_k']}**" in " ".join(m.value for m in at0.markdown)
    at0.number_input(key=f"guess-{max_key}").set_value(e3["max_off"])
    reveal(at0, max_key)
    ok, _ = verdicts(at0)
    assert len(ok) == 1 and f"**{e3['max_off']:.4g}**" in ok[0]
    at0.radio(key=f"pick-{jac_key}").set_value(e3["drop"])
    reveal(at0, jac_key)
    ok, _ = verdicts(at0)
    assert any(o.startswith(f"Right: **{e3['drop']}**") for o in ok)


def test_the_instance_follows_tokens_init_and_precision():
    at = run_page(PAGE, step=STEP, seed="2", tokens="4", init="layernorm", dtype="float16")
    no_exception(at)
    sd_key, max_key, _ = keys(2, 4, "layernorm", "float16")
    e = expected(2, 4, "layernorm", torch.float16)
    at.number_input(key=f"guess-{sd_key}").set_value(round(e["sd"], 1))
    reveal(at, sd_key)
    ok, _ = verdicts(at)
    assert len(ok) == 1 and f"{e['sd']:.3g}" in ok[0]
    assert "d_k²/(d_k − 1)" in " ".join(m.value for m in at.markdown)
    at.number_input(key=f"guess-{max_key}").set_value(e["max_off"])
    reveal(at, max_key)
    assert len(verdicts(at)[0]) == 2


def test_the_metrics_strip_waits_for_all_three_reveals_on_check_yourself():
    """At the questions' own d_k, unscaled, the strip above the steps is their answers (the
    Jacobian norm to the digit): on this step it waits for all three reveals (issue 41)."""
    e = expected()
    at = run_page(PAGE, step=STEP, d_k=str(e["d_k"]), scaled="false")
    no_exception(at)
    off = attn_core.scaling_sample(12, e["d_k"], scaled=False, seed=0)
    norm = f"{np.median(off.jacobian_norm.numpy()):.3g}"
    held = "The four numbers for this page's settings, held until all three questions"

    def strip() -> list[str]:
        return [m.label for m in at.metric]

    def waiting() -> bool:
        return any(held in c.value for c in at.caption)

    assert strip() == [] and waiting()
    assert norm not in " ".join(m.value for m in at.markdown if "Predict" not in m.value)
    for i, key in enumerate(keys()):
        assert strip() == [] and waiting(), i
        if key.startswith("scaling-jac"):
            at.radio(key=f"pick-{key}").set_value(DROPS[0])
        else:
            at.number_input(key=f"guess-{key}").set_value(0.5)
        reveal(at, key)
        no_exception(at)
    assert len(strip()) == 4 and not waiting()
    assert next(m.value for m in at.metric if m.label == "Median Jacobian norm") == norm
    other = run_page(PAGE, step="Jacobian", d_k=str(e["d_k"]), scaled="false")
    assert len([m.label for m in other.metric]) == 4  # the other steps ask nothing: shown
