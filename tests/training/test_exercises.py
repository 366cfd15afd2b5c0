"""The /training page's "predict, then reveal" exercises: answered from step 0, no training."""

import math

import pytest

import attn_core
from tests.support.apptest import no_exception, reveal, run_page, verdicts
from ui.content import choices

PAGE = "pages/training.py"
STEP = "Predict"  # the step that asks the questions
LOSS = tuple(choices("training", "exercise.loss.choices", band=2).values())


def expected(d_k=64, init_std=1.0, seed=0):
    """Both answers straight from attn_core: one joint step records the start."""
    a, b = attn_core.train_pair(d_k, steps=1, init_std=init_std, seed=seed)
    gap = b.loss[0] / math.log(32) - 1  # the task has 32 symbols: chance is ln 32
    loss = LOSS[0 if gap < -0.02 else 1 if gap <= 0.02 else 2]
    return dict(sat=100 * b.saturated[0], grad=b.qk_grad_norm[0] / a.qk_grad_norm[0], loss=loss)


def keys(d_k=64, init_std=1.0, seed=0):
    inst = f"{d_k}-{init_std:g}-{seed}"
    return f"train-sat-{inst}", f"train-grad-{inst}", f"train-loss-{inst}"


@pytest.fixture(scope="module")
def at0():
    at = run_page(PAGE, step=STEP)
    no_exception(at)
    return at


def test_two_questions_appear_unrevealed_and_nothing_trains(at0):
    text = " ".join(m.value for m in at0.markdown)
    assert "in what percentage of the **unscaled** model's attention rows" in text
    assert "How many times larger is the **unscaled** run's" in text
    assert "d_k = **64**, initial std **1**, seed **0**" in text
    assert "the **unscaled** model's cross-entropy on its first batch is" in text
    for k in keys()[:2]:
        assert at0.number_input(key=f"guess-{k}").value is None
    assert at0.radio(key=f"pick-{keys()[2]}").options == list(LOSS)
    assert verdicts(at0) == ([], [])
    assert not [b for b in at0.button if b.label == "Run both"]  # no lab on this step
    assert not at0.get("plotly_chart")  # nothing trained, nothing drawn


def test_right_answers_are_close_enough(at0):
    sat_key, grad_key, loss_key = keys()
    e = expected()
    at0.number_input(key=f"guess-{sat_key}").set_value(round(e["sat"]))
    reveal(at0, sat_key)
    ok, bad = verdicts(at0)
    assert len(ok) == 1 and f"**{e['sat']:.0f} %**" in ok[0] and not bad
    assert 5 < e["sat"] < 50  # some rows saturate at the defaults, far from all
    at0.number_input(key=f"guess-{grad_key}").set_value(round(e["grad"], 1))
    reveal(at0, grad_key)
    ok, bad = verdicts(at0)
    assert len(ok) == 2 and any(f"**{e['grad']:.3g}**" in o for o in ok) and not bad
    at0.radio(key=f"pick-{loss_key}").set_value(e["loss"])
    reveal(at0, loss_key)
    ok, bad = verdicts(at0)
    assert e["loss"] == LOSS[2]  # at the defaults the unscaled start is confidently wrong
    assert len(ok) == 3 and any(o.startswith(f"Right: **{e['loss']}**") for o in ok) and not bad
    text = " ".join(m.value for m in at0.markdown)
    assert (
        "√d_k · 1² = 8 here" in text
        and "confident mistakes" in text
        and "√d_k = 8 times larger" in text
    )
    # when a row passes 0.99: the rivals' e^(s_j − s_max) must sum below 1/0.99 − 1
    slack, rivals = 1 / 0.99 - 1, 16 - 1
    assert f"1/0.99 − 1 ≈ {slack:.3g}" in text
    assert f"ln(1/{slack:.3g}) ≈ {math.log(1 / slack):.2g} over every rival" in text
    assert f"ln({rivals}/{slack:.3g}) ≈ {math.log(rivals / slack):.2g} if all {rivals}" in text
    assert f"here it is {e['sat']:.0f}%. The other rows still pass gradient" in text
    # the bound is right: a lead of ln(1/slack) over a single rival gives exactly 0.99
    assert 1 / (1 + math.exp(-math.log(1 / slack))) == pytest.approx(0.99)


def test_wrong_answers_show_the_computed_ones():
    at = run_page(PAGE, step=STEP)
    sat_key, grad_key, loss_key = keys()
    e = expected()
    at.number_input(key=f"guess-{sat_key}").set_value(100.0)  # "all rows are saturated"
    reveal(at, sat_key)
    at.number_input(key=f"guess-{grad_key}").set_value(0.01)  # "the gradient has vanished"
    reveal(at, grad_key)
    at.radio(key=f"pick-{loss_key}").set_value(LOSS[0])
    reveal(at, loss_key)
    ok, bad = verdicts(at)
    assert not ok and len(bad) == 3
    assert any(b.startswith("Not quite") and f"**{e['loss']}**" in b for b in bad)
    assert any(b.startswith(f"Computed **{e['sat']:.0f} %**; you said 100 %") for b in bad)
    assert any(b.startswith(f"Computed **{e['grad']:.3g}**; you said 0.01") for b in bad)
    assert e["grad"] > 1


def test_the_controls_pick_a_new_instance_with_a_computed_answer():
    at = run_page(PAGE, step=STEP)
    at.number_input(key="seed").set_value(2).run()
    at.select_slider(key="d_k").set_value(256).run()
    no_exception(at)
    e0, e = expected(), expected(256, 1.0, 2)
    assert e["sat"] != e0["sat"] and e["grad"] != e0["grad"]
    sat_key, grad_key, _ = keys(256, 1.0, 2)
    assert verdicts(at) == ([], [])  # a new instance starts unrevealed
    assert "d_k = **256**, initial std **1**, seed **2**" in " ".join(m.value for m in at.markdown)
    at.number_input(key=f"guess-{sat_key}").set_value(e["sat"])
    reveal(at, sat_key)
    at.number_input(key=f"guess-{grad_key}").set_value(math.sqrt(256) * 10)  # far above
    reveal(at, grad_key)
    ok, bad = verdicts(at)
    assert len(ok) == 1 and f"**{e['sat']:.0f} %**" in ok[0]
    assert len(bad) == 1 and f"**{e['grad']:.3g}**" in bad[0]


def test_when_nearly_every_row_starts_saturated_the_explanation_says_so():
    at = run_page(PAGE, d_k="512", init_std="4", step=STEP)
    no_exception(at)
    sat_key, _, _ = keys(512, 4.0, 0)
    e = expected(512, 4.0, 0)
    at.number_input(key=f"guess-{sat_key}").set_value(round(e["sat"]))
    reveal(at, sat_key)
    text = " ".join(m.value for m in at.markdown)
    assert f"here it is {e['sat']:.0f}%." in text
    assert ("Nearly every row starts saturated here" in text) == (e["sat"] >= 90)
    assert ("The other rows still pass gradient" in text) == (e["sat"] < 90)
    assert e["sat"] >= 90  # at the slider's extremes the lesson's limit is reached


def test_with_almost_no_saturation_the_ratio_is_root_d_k():
    at = run_page(PAGE, d_k="16", init_std="0.1", seed="1", step=STEP)
    no_exception(at)
    _, grad_key, loss_key = keys(16, 0.1, 1)
    e = expected(16, 0.1, 1)
    assert e["sat"] == 0 and math.isclose(e["grad"], 4, rel_tol=0.02)
    at.number_input(key=f"guess-{grad_key}").set_value(4.0)
    reveal(at, grad_key)
    ok, _ = verdicts(at)
    assert len(ok) == 1 and f"**{e['grad']:.3g}**" in ok[0]
    # and the loss starts at guessing: nothing is peaked, so nothing is confidently wrong
    assert e["loss"] == LOSS[1]
    at.radio(key=f"pick-{loss_key}").set_value(LOSS[2])
    reveal(at, loss_key)
    assert any(f"**{LOSS[1]}**" in b for b in verdicts(at)[1])
