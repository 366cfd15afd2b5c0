"""The /cost page's "predict, then reveal" exercises, checked against attn_core."""

import pytest

import attn_core
from attn_core.tiled import scores_computed
from tests.support.apptest import no_exception, reveal, run_page
from ui import Words

PAGE = "pages/cost.py"
W = Words("cost")
PROJ, ATTN, SAME = W.choices("exercise.macs.choices").values()


def macs_answer(T, d_model):
    p, a = attn_core.projection_macs(T, d_model), attn_core.attention_macs(T, d_model)
    return PROJ if p > a else ATTN if a > p else SAME


def work_share(T, block, causal):
    """% of the T×T scores the tiled loop computes: from its trace, and from the tile grid."""
    q, k, v = attn_core.random_qkv(T, 8, d_v=4, seed=3)
    _, steps = attn_core.tiled_attention(
        q, k, v, block_q=block, block_k=block, causal=causal, trace=True
    )
    grid = sum(
        (min((qi + 1) * block, T) - qi * block) * (min((ki + 1) * block, T) - ki * block)
        for qi, ki, visited in attn_core.tile_grid(T, T, block, block, causal)
        if visited
    )
    assert scores_computed(steps) == grid
    return 100 * grid / (T * T)


@pytest.fixture(scope="module")
def compute():
    at = run_page(PAGE)  # the first step
    no_exception(at)
    return at


@pytest.fixture(scope="module")
def walk():
    at = run_page(PAGE, step="Walkthrough")
    no_exception(at)
    return at


def test_both_new_questions_appear_unrevealed(compute, walk):
    text = " ".join(m.value for m in compute.markdown)
    assert W("exercise.macs.q", T=1024, d_model=512) in text
    assert compute.radio(key="pick-cost-macs-1024-512").options == [PROJ, ATTN, SAME]
    text = " ".join(m.value for m in walk.markdown)
    assert W("exercise.work.q", T=16, block=4, causal="off", full=256) in text
    assert walk.number_input(key="guess-cost-work-16-4-False").value is None
    for at in (compute, walk):
        assert not any(s.value.startswith(("Right", "Close enough")) for s in at.success)
        assert not any(e.value.startswith(("Not quite", "Computed")) for e in at.error)


def test_each_question_lives_in_its_own_step(compute, walk):
    assert not compute.get("number_input")  # no tiling question in the compute step
    assert not any(r.key == "pick-cost-macs-1024-512" for r in walk.radio)


def test_right_answers_succeed(compute, walk):
    # at the defaults T = 1024 = 2 · d_model: the crossover itself
    assert macs_answer(1024, 512) == SAME
    compute.radio(key="pick-cost-macs-1024-512").set_value(SAME)
    reveal(compute, "cost-macs-1024-512")
    assert any(s.value.startswith(f"Right: **{SAME}**") for s in compute.success)
    assert "T / 2d = 1 here" in " ".join(m.value for m in compute.markdown)
    share = work_share(16, 4, False)
    assert share == 100  # no mask: every score is computed, as in full attention
    walk.number_input(key="guess-cost-work-16-4-False").set_value(share)
    reveal(walk, "cost-work-16-4-False")
    assert any(s.value.startswith("Close enough: computed **100 %**") for s in walk.success)
    assert "What it saves is *memory*" in " ".join(m.value for m in walk.markdown)


def test_wrong_answers_show_the_computed_one():
    at = run_page(PAGE)
    at.radio(key="pick-cost-macs-1024-512").set_value(ATTN)
    reveal(at, "cost-macs-1024-512")
    errors = [e.value for e in at.error]
    assert any("you said *" + ATTN in e and f"**{SAME}**" in e for e in errors)
    at = run_page(PAGE, step="Walkthrough")
    at.number_input(key="guess-cost-work-16-4-False").set_value(50.0)
    reveal(at, "cost-work-16-4-False")
    assert any(
        e.startswith("Computed **100 %**; you said 50 %") for e in (x.value for x in at.error)
    )


def test_new_settings_ask_new_questions_with_computed_answers():
    at = run_page(PAGE)
    at.select_slider(key="T").set_value(256).run()
    no_exception(at)
    assert macs_answer(256, 512) == PROJ != macs_answer(1024, 512)
    at.radio(key="pick-cost-macs-256-512").set_value(PROJ)
    reveal(at, "cost-macs-256-512")
    assert any(s.value.startswith(f"Right: **{PROJ}**") for s in at.success)
    # the walkthrough's own controls define the tiling question
    at = run_page(PAGE, step="Walkthrough")
    at.toggle(key="causal").set_value(True).run()
    at.select_slider(key="block").set_value(8).run()
    no_exception(at)
    share = work_share(16, 8, True)
    assert 50 < share < 100  # diagonal tiles are computed whole
    key = "cost-work-16-8-True"
    assert at.number_input(key=f"guess-{key}").value is None  # a new instance starts unrevealed
    at.number_input(key=f"guess-{key}").set_value(50.0)
    reveal(at, key)
    assert any(e.value.startswith(f"Computed **{share:.3g} %**") for e in at.error)
    at.number_input(key=f"guess-{key}").set_value(share)
    reveal(at, key)
    assert any(s.value.startswith(f"Close enough: computed **{share:.3g} %**") for s in at.success)
