"""AppTest: the multi-head page's predict-then-reveal exercises, checked against attn_core.

The parameter question sits in the "Cost" step, the MQA and pruning questions in "Diversity";
only the open step runs, so each test opens the step that holds its question.
"""

import pytest
import torch

from attn_core import (
    count_parameters,
    output_change,
    pruned_forward,
    random_tokens,
    run_heads,
    seeded_mha,
)
from attn_core.lessons.multi_head import (
    distinct_maps,
    head_diversity,
    heads_to_prune,
    prune_verdict,
)
from tests.support.apptest import no_exception, plotly_specs, reveal, run_page, verdicts
from ui.content import Words

PAGE = "pages/multi-head.py"
DEFAULT = "512-8-8-10-{seed}-0"  # d_model-heads-kv_heads-T-seed-crc32(no words)
COST, DIVERSITY = "Cost", "Diversity"  # the steps holding the questions


def questions(at) -> str:
    return "\n".join(m.value for m in at.markdown if "Predict, then reveal" in m.value)


def prune_truth(d_model: int, h: int, T: int, seed: int) -> tuple[list[int], float]:
    """The pruning question's heads (0-based) and answer in %, straight from attn_core."""
    x, m = random_tokens(T, d_model, seed), seeded_mha(d_model, h, h, seed)
    pruned = heads_to_prune(h, seed)
    return pruned, 100 * output_change(run_heads(x, m).output, pruned_forward(x, m, pruned))[0]


def test_three_exercises_appear_unrevealed_in_their_steps():
    cost = run_page(PAGE, step=COST)
    no_exception(cost)
    q = questions(cost)
    assert "split it into **h = 8 heads**" in q and "1,050,624" in q
    assert "query heads" not in q  # the other questions belong to another step
    assert cost.radio(key="pick-mh-params-512-8").value is None
    assert verdicts(cost) == ([], [])

    div = run_page(PAGE, step=DIVERSITY)
    no_exception(div)
    q = questions(div)
    assert "all **8 query heads** share **one** K" in q
    pruned, _ = prune_truth(512, 8, 10, 0)
    assert f"Prune **head{'s' if len(pruned) > 1 else ''} " in q
    assert ", ".join(str(j + 1) for j in pruned) in q
    assert "split it into" not in q
    assert div.number_input(key=f"guess-mh-prune-{DEFAULT.format(seed=0)}").value is None
    assert verdicts(div) == ([], [])

    heads = run_page(PAGE)  # the first step asks nothing
    assert not questions(heads)


def test_right_and_wrong_answers_show_the_computed_truth():
    at = run_page(PAGE, step=COST)
    p1, p8 = count_parameters(512, 1)["total"], count_parameters(512, 8)["total"]
    assert p1 == p8
    at.radio(key="pick-mh-params-512-8").set_value("The same number")
    reveal(at, "mh-params-512-8")
    ok, bad = verdicts(at)
    assert len(ok) == 1 and ok[0].startswith("Right: **The same number**") and not bad
    assert f"{p8:,}" in ok[0]  # the count, computed on a real 8-head layer

    # MQA: a wrong pick is answered with the count computed on a real kv_heads = 1 layer
    at = run_page(PAGE, step=DIVERSITY)
    n = distinct_maps(run_heads(random_tokens(10, 512, 0), seeded_mha(512, 8, 1, 0)).weights)
    assert n == 8
    key = f"mh-mqa-8-{DEFAULT.format(seed=0)}"
    at.radio(key=f"pick-{key}").set_value(at.radio(key=f"pick-{key}").options[0])
    reveal(at, key)
    _, bad = verdicts(at)
    assert len(bad) == 1
    assert (
        "**8 — every query head still has its own map**" in bad[0]
        and "Counted 8 distinct" in bad[0]
    )

    # pruning: a far-off number is answered with the computed percentage
    _, truth = prune_truth(512, 8, 10, 0)
    key = f"mh-prune-{DEFAULT.format(seed=0)}"
    at.number_input(key=f"guess-{key}").set_value(truth + 40)
    reveal(at, key)
    _, bad = verdicts(at)
    assert any(b.startswith(f"Computed **{truth:.0f} %**") for b in bad)


def test_a_new_seed_asks_a_new_question_with_a_computed_answer():
    (p0, t0), (p1, t1) = prune_truth(512, 8, 10, 0), prune_truth(512, 8, 10, 1)
    assert (p0, round(t0)) != (p1, round(t1))  # the seed really changes the instance
    at = run_page(PAGE, seed="1", step=DIVERSITY)
    key = f"mh-prune-{DEFAULT.format(seed=1)}"
    assert ", ".join(str(j + 1) for j in p1) in questions(at)
    at.number_input(key=f"guess-{key}").set_value(round(t1, 1))
    reveal(at, key)
    ok, _ = verdicts(at)
    assert any(f"computed **{t1:.0f} %**" in s for s in ok)
    # the √(k/h) rule in the explanation is filled in for this instance
    k = len(p1)
    assert any(f"√(k/h) = {(k / 8) ** 0.5:.0%}" in m.value for m in at.markdown)
    # moving the seed in the sidebar keeps the step open and starts a new, unrevealed instance
    at.number_input(key="seed").set_value(0).run()
    no_exception(at)
    assert verdicts(at) == ([], [])
    assert ", ".join(str(j + 1) for j in p0) in questions(at)


def test_the_parameter_question_follows_d_model_and_heads():
    at = run_page(PAGE, d_model="64", heads="4", step=COST)
    no_exception(at)
    p = count_parameters(64, 4)["total"]
    assert p == 4 * 64 * 64 + 4 * 64
    assert "split it into **h = 4 heads**" in questions(at)
    at.radio(key="pick-mh-params-64-4").set_value("4× as many")
    reveal(at, "mh-params-64-4")
    _, bad = verdicts(at)
    assert any("the computed answer is **The same number**" in b and f"{p:,}" in b for b in bad)
    assert p == count_parameters(64, 1)["total"]


@pytest.mark.parametrize("measured,word", [(70.0, "undercounts"), (40.0, "is not below")])
def test_prune_verdict_compares_the_guess_with_the_measurement(measured, word):
    text = Words("multi_head")(
        f"exercise.prune.verdict.{prune_verdict(4, 8, measured)}", share=50.0, measured=measured
    )
    assert word in text and "k/h = 50 %" in text and f"measured {measured:.0f} %" in text


# ----------------------------------------------------------------------------- secrets (issue 41)
def _try_box(at) -> str:
    return "\n".join(m.value for m in at.markdown if m.value.startswith("- **"))


def _held(at) -> str:
    return "\n".join(c.value for c in at.caption if "shown once you reveal" in c.value)


def test_the_mqa_answer_waits_in_try_this_the_metrics_and_the_mqa_layers_map():
    """The Try-this item on MQA, the "distributions per token" metric and (on an MQA layer)
    its divergence map answer the MQA question: each waits for its reveal, in plain sight."""
    at = run_page(PAGE, step=DIVERSITY, kv_heads="1")
    no_exception(at)
    key = "mh-mqa-8-512-8-1-10-0-0"
    box = _try_box(at)
    assert "distinct maps" not in box and "attend alike" not in box and "(MQA)" not in box
    assert "once you reveal the MQA question above" in box
    assert "Distributions per token" in _held(at) and "divergence map of this MQA layer" in _held(
        at
    )
    assert "distributions per token" not in [m.label for m in at.metric]
    assert not any(s["layout"]["title"]["text"].startswith("How different") for s in
                   plotly_specs(at))  # fmt: skip
    at.radio(key=f"pick-{key}").set_value(at.radio(key=f"pick-{key}").options[0])
    reveal(at, key)
    no_exception(at)
    x = random_tokens(10, 512, 0)
    w = run_heads(x, seeded_mha(512, 8, 1, 0)).weights
    n, js = distinct_maps(w), head_diversity(w)[~torch.eye(8, dtype=torch.bool)].min()
    box = _try_box(at)
    assert f"{n} distinct maps of 8, the closest pair of heads {js:.3g} bits apart" in box
    assert "divergence map of this MQA layer" not in _held(at)
    assert "distributions per token" in [m.label for m in at.metric]
    assert any(s["layout"]["title"]["text"].startswith("How different") for s in plotly_specs(at))


@pytest.mark.parametrize(("d_model", "h"), [(16, 2), (64, 4), (512, 8), (64, 16), (1024, 64)])
def test_an_mqa_layers_heads_do_not_attend_alike(d_model, h):
    """The Try-this claim after the reveal: sharing one K and V leaves every map distinct."""
    for seed in range(0, 40, 7):
        w = run_heads(random_tokens(10, d_model, seed), seeded_mha(d_model, h, 1, seed)).weights
        assert distinct_maps(w) == h, (d_model, h, seed)
        assert head_diversity(w)[~torch.eye(h, dtype=torch.bool)].min() > 0


def test_with_one_head_the_pruning_curve_and_its_end_wait_for_the_pruning_reveal():
    """With one head the question prunes every head: the curve, its caption and the Try-this
    item "the curve ends at …" are its answer."""
    at = run_page(PAGE, step=DIVERSITY, heads="1")
    no_exception(at)
    _, truth = prune_truth(512, 1, 10, 0)
    assert "the curve ends at" not in _try_box(at) and f"{truth:.0f} %" not in _try_box(at)
    assert "pruning question's answer" in _try_box(at) and "pruning curve" in _held(at)
    captions = " ".join(c.value for c in at.caption)
    assert f"{truth:.0f} %" not in captions
    reveal_key = "mh-prune-512-1-1-10-0-0"
    at.number_input(key=f"guess-{reveal_key}").set_value(50.0)
    reveal(at, reveal_key)
    no_exception(at)
    assert f"the curve ends at {truth:.0f} %" in _try_box(at)
    assert "pruning curve" not in _held(at)
