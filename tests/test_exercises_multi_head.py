"""AppTest: the multi-head page's predict-then-reveal exercises, checked against attn_core."""

from attn_core import (
    count_parameters,
    output_change,
    pruned_forward,
    random_tokens,
    run_heads,
    seeded_mha,
)
from attn_core.multihead_lab import distinct_maps, heads_to_prune
from tests.support.apptest import no_exception, run_page

PAGE = "pages/multi-head.py"
DEFAULT = "512-8-8-10-{seed}-0"  # d_model-heads-kv_heads-T-seed-crc32(no words)


def reveal(at, key: str):
    next(b for b in at.button if b.label == "Reveal" and f"form-{key}-" in str(b.key)).click()
    return at.run()


def questions(at) -> str:
    return "\n".join(m.value for m in at.markdown if "Predict, then reveal" in m.value)


def prune_truth(d_model: int, h: int, T: int, seed: int) -> tuple[list[int], float]:
    """The pruning question's heads (0-based) and answer in %, straight from attn_core."""
    x, m = random_tokens(T, d_model, seed), seeded_mha(d_model, h, h, seed)
    pruned = heads_to_prune(h, seed)
    return pruned, 100 * output_change(run_heads(x, m).output, pruned_forward(x, m, pruned))[0]


def test_three_exercises_appear_unrevealed():
    at = run_page(PAGE)
    no_exception(at)
    q = questions(at)
    assert "split it into **h = 8 heads**" in q and "1,050,624" in q
    assert "all **8 query heads** share **one** K" in q
    pruned, _ = prune_truth(512, 8, 10, 0)
    assert f"Prune **head{'s' if len(pruned) > 1 else ''} " in q
    assert ", ".join(str(j + 1) for j in pruned) in q
    assert at.radio(key="pick-mh-params-512-8").value is None
    assert at.number_input(key=f"guess-mh-prune-{DEFAULT.format(seed=0)}").value is None
    assert not at.success and not [e for e in at.error if "computed" in e.value.lower()]


def test_right_and_wrong_answers_show_the_computed_truth():
    at = run_page(PAGE)
    p1, p8 = count_parameters(512, 1)["total"], count_parameters(512, 8)["total"]
    assert p1 == p8
    at.radio(key="pick-mh-params-512-8").set_value(f"The same: {p8:,}")
    reveal(at, "mh-params-512-8")
    no_exception(at)
    assert any(f"Right: **The same: {p8:,}**" in s.value for s in at.success)

    # MQA: a wrong pick is answered with the count computed on a real kv_heads = 1 layer
    n = distinct_maps(run_heads(random_tokens(10, 512, 0), seeded_mha(512, 8, 1, 0)).weights)
    assert n == 8
    key = f"mh-mqa-8-{DEFAULT.format(seed=0)}"
    at.radio(key=f"pick-{key}").set_value(at.radio(key=f"pick-{key}").options[0])
    reveal(at, key)
    no_exception(at)
    err = " ".join(e.value for e in at.error)
    assert "**8 — every query head still has its own map**" in err and "Counted 8 distinct" in err

    # pruning: a far-off number is answered with the computed percentage
    _, truth = prune_truth(512, 8, 10, 0)
    key = f"mh-prune-{DEFAULT.format(seed=0)}"
    at.number_input(key=f"guess-{key}").set_value(truth + 40)
    reveal(at, key)
    no_exception(at)
    assert any(f"Computed **{truth:.0f} %**" in e.value for e in at.error)


def test_a_new_seed_asks_a_new_question_with_a_computed_answer():
    (p0, t0), (p1, t1) = prune_truth(512, 8, 10, 0), prune_truth(512, 8, 10, 1)
    assert (p0, round(t0)) != (p1, round(t1))  # the seed really changes the instance
    at = run_page(PAGE, seed="1")
    key = f"mh-prune-{DEFAULT.format(seed=1)}"
    assert ", ".join(str(j + 1) for j in p1) in questions(at)
    at.number_input(key=f"guess-{key}").set_value(round(t1, 1))
    reveal(at, key)
    no_exception(at)
    assert any(f"computed **{t1:.0f} %**" in s.value for s in at.success)
    # the √(k/h) rule in the explanation is filled in for this instance
    k = len(p1)
    assert any(f"√(k/h) = {(k / 8) ** 0.5:.0%}" in m.value for m in at.markdown)


def test_the_parameter_question_follows_d_model_and_heads():
    at = run_page(PAGE, d_model="64", heads="4")
    no_exception(at)
    p = count_parameters(64, 4)["total"]
    assert p == 4 * 64 * 64 + 4 * 64
    assert "split it into **h = 4 heads**" in questions(at)
    at.radio(key="pick-mh-params-64-4").set_value(f"4× as many: {4 * p:,}")
    reveal(at, "mh-params-64-4")
    no_exception(at)
    assert any(f"the computed answer is **The same: {p:,}**" in e.value for e in at.error)
    assert p == count_parameters(64, 1)["total"]
