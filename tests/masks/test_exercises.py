"""AppTest: the masks page's predict-then-reveal exercises, checked against attn_core."""

import torch

from attn_core import DTYPES, apply_fill, batch_lengths, demo_qkv
from attn_core.lessons.masks import broadcast_lab, broadcast_verdict, custom_mask, empty_row_weights
from tests.support.apptest import no_exception, reveal, run_page
from ui.content import choices

PAGE = "pages/masks.py"
FILL, BUG = "Fill", "Broadcasting bug"  # the steps that hold the exercises
NAN, ZEROS, SPREAD = choices("masks", "exercise.empty.choices").values()
RAISES, RIGHT, WRONG = choices("masks", "exercise.bcast.choices").values()

EMPTY_CASES = [
    ("-inf", "float32", "nan"),
    ("-1e9", "float32", "spread"),
    ("-1e9", "float16", "nan"),  # stored as −inf
    ("-1e4", "float32", "spread"),
]


def questions(at) -> str:
    return "\n".join(m.value for m in at.markdown if "Predict, then reveal" in m.value)


def wrong_pairs(T_q: int, T: int, lengths) -> int:
    """Closed form: row i of example b is masked with example i's padding, so the pair is
    wrong exactly when the two examples' lengths differ."""
    got = batch_lengths(lengths, T_q, T)
    return sum(a != b for a in got for b in got)


def test_three_exercises_appear_unrevealed_in_their_steps():
    assert not questions(run_page(PAGE))  # the first step asks nothing
    at = run_page(PAGE, step=FILL)
    no_exception(at)
    q = questions(at)
    assert "query 0 now may read **no key at all**" in q and "**-inf** in **float32**" in q
    assert "B = T_q" not in q
    assert at.radio(key="pick-mask-empty-8--inf-float32-1").value is None
    assert not at.success
    at = run_page(PAGE, step=BUG)
    no_exception(at)
    q = questions(at)
    assert q.count("**B = T_q = 6**, T_k = 8, key lengths 5, 3, 7, 5, 3, 7") == 2
    assert "how many come out different" in q and "no key at all" not in q
    assert not at.success


def test_empty_row_answer_is_computed_and_follows_the_fill():
    # the truth, independently: plain softmax of row 0 with every key blocked
    keep = custom_mask(8, {(0, 0)})[None]
    q, k, v = demo_qkv(1, 8, 8)
    for fill, dtype, expect in EMPTY_CASES:
        w = apply_fill(q, k, v, keep, fill, DTYPES[dtype]).weights[0, 0]
        assert empty_row_weights(8, fill, DTYPES[dtype])[0] == expect
        assert bool(w.isnan().all()) == (expect == "nan")
        if expect == "spread":
            assert abs(float(w.double().sum()) - 1) < 1e-3 and float(w[1:].sum()) > 0.5

    at = run_page(PAGE, step=FILL)  # -inf, float32: NaN
    at.radio(key="pick-mask-empty-8--inf-float32-1").set_value(NAN)
    reveal(at, "mask-empty-8--inf-float32-1")
    no_exception(at)
    assert any(f"Right: **{NAN}**" in s.value and "[nan, nan" in s.value for s in at.success)

    at = run_page(
        PAGE, fill="-1e9", step=FILL
    )  # float32 keeps -1e9 finite: the row reads the future
    key = "mask-empty-8--1e9-float32-1"
    at.radio(key=f"pick-{key}").set_value(NAN)
    reveal(at, key)
    no_exception(at)
    err = [e.value for e in at.error if "you said" in e.value]
    assert err and f"the computed answer is **{SPREAD}**" in err[0]
    assert "0.125" in err[0]  # −1e9 swamps the scores in float32: an even spread over 8 keys


def test_broadcast_exercises_right_and_wrong():
    lab = broadcast_lab(6, 6, 8, (5, 3, 7))
    assert lab.torch_error is None and lab.wrong_keep is not None  # runs: the silent case
    n_wrong = wrong_pairs(6, 8, (5, 3, 7))
    assert broadcast_verdict(6, 6, 8, (5, 3, 7)) == ("wrong", n_wrong) and n_wrong == 24

    at = run_page(PAGE, step=BUG)
    at.radio(key="pick-mask-bcast-6-8-5.3.7").set_value(RAISES)
    reveal(at, "mask-bcast-6-8-5.3.7")
    no_exception(at)
    assert any(f"the computed answer is **{WRONG}**" in e.value for e in at.error)

    at.number_input(key="guess-mask-wrong-6-8-5.3.7").set_value(n_wrong)
    reveal(at, "mask-wrong-6-8-5.3.7")
    no_exception(at)
    assert any(f"computed **{n_wrong}**" in s.value for s in at.success)


def test_a_new_instance_changes_the_answer():
    # T_q = 4: lengths 5, 3, 7, 5; and equal lengths: the bug changes nothing
    n4 = wrong_pairs(4, 8, (5, 3, 7))
    assert n4 == 10 and broadcast_verdict(4, 4, 8, (5, 3, 7)) == ("wrong", n4)
    at = run_page(PAGE, T_q="4", step=BUG)
    no_exception(at)
    assert "**B = T_q = 4**, T_k = 8, key lengths 5, 3, 7, 5" in questions(at)
    at.number_input(key="guess-mask-wrong-4-8-5.3.7").set_value(15)  # at most 4 × 4 = 16 here
    reveal(at, "mask-wrong-4-8-5.3.7")
    no_exception(at)
    assert any(f"Computed **{n4}**; you said 15" in e.value for e in at.error)

    assert broadcast_verdict(3, 3, 8, (4, 4, 4)) == ("right", 0)
    diff = broadcast_lab(3, 3, 8, (4, 4, 4)).diff
    assert diff is not None and torch.all(diff == 0)
    at = run_page(PAGE, T_q="3", lengths="4,4,4", step=BUG)
    at.radio(key="pick-mask-bcast-3-8-4.4.4").set_value(WRONG)
    reveal(at, "mask-bcast-3-8-4.4.4")
    no_exception(at)
    assert any(f"the computed answer is **{RIGHT}**" in e.value for e in at.error)


def _shown(at) -> str:
    """The step's text outside the question boxes: markdown, expanders, alerts, captions."""
    parts = [m.value for m in at.markdown if "Predict, then reveal" not in m.value]
    parts += [e.label for e in at.expander]
    parts += [str(x.value) for x in (*at.error, *at.info, *at.success, *at.caption)]
    return "\n".join(parts)


def test_the_bug_steps_experiments_and_explanation_wait_for_both_reveals():
    """Try this ("the error disappears … wrong rows, no warning"), the explanation ("equal
    sizes give every query row another example's padding") and, at B ≠ T_q, "the same line
    runs without a word" answer "What happens?": they wait, with a placeholder (issue 41)."""
    for batch in ("6", "5"):  # B = T_q, and B ≠ T_q (PyTorch refuses: the other case's hint)
        at = run_page(PAGE, step=BUG, batch=batch)
        no_exception(at)
        before = _shown(at)
        giveaways = ["without a word", "the lucky case", "error disappears", "another example's",
                     "Try this", "Shapes: (B, 1, 1, T_k)", WRONG, "no error"]  # fmt: skip
        assert not [g for g in giveaways if g in before], (batch, before)
        assert "Three experiments with B, T_q and the lengths" in before
        (case,) = {k.removeprefix("pick-mask-bcast-") for k in at.session_state if
                   str(k).startswith("pick-mask-bcast-")}  # fmt: skip
        at.radio(key=f"pick-mask-bcast-{case}").set_value(RAISES)
        reveal(at, f"mask-bcast-{case}")
        assert "Try this" not in _shown(at)  # one question is still open
        at.number_input(key=f"guess-mask-wrong-{case}").set_value(0.0)
        reveal(at, f"mask-wrong-{case}")
        after = _shown(at)
        assert "Try this" in after and "Shapes: (B, 1, 1, T_k)" in after
        assert "Three experiments with B, T_q and the lengths" not in after
        if batch == "5":
            assert "the lucky case" in after and "runs without a word" in after
