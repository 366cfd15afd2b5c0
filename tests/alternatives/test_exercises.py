"""AppTest: the predict-then-reveal exercises of /alternatives, checked against attn_core."""

import numpy as np
import pytest
import torch

from attn_core import compare_scorings, entropy, kernel_smoother_demo, scoring_setup
from attn_core import weights_vs_contributions as contributions
from tests.support.apptest import no_exception, run_page, run_steps
from ui import Words
from ui.lesson import lesson

PAGE = "pages/alternatives.py"
W = Words("alternatives")
STEPS = list(lesson("alternatives").steps)


def _questions(at) -> list[str]:
    return [md.value for md in at.markdown if "Predict, then reveal" in md.value]


def _reveal(at, key: str, answer) -> None:
    """Commit `answer` in exercise `key` (a radio or a number box) and press its Reveal."""
    if isinstance(answer, str):
        at.radio(key=f"pick-{key}").set_value(answer)
    else:
        at.number_input(key=f"guess-{key}").set_value(answer)
    [button] = [b for b in at.button if b.proto.form_id == f"form-{key}"]
    button.click().run()
    no_exception(at)


def _said(at) -> tuple[str, str]:
    return " ".join(s.value for s in at.success), " ".join(e.value for e in at.error)


def _sharpest(seed: int, tau: float) -> str:
    w = compare_scorings(scoring_setup(8, seed=seed), tau).weights
    ent = {name: float(entropy(x).mean()) for name, x in w.items()}
    return min(ent, key=ent.get)


def _cosine_row_max(seed: int, tau: float) -> float:
    w = compare_scorings(scoring_setup(8, seed=seed), tau).weights["cosine"].numpy()
    return float(w.max(axis=1).mean())


def _keys_for_90(bandwidth: float) -> int:
    w = np.sort(kernel_smoother_demo(bandwidth).probe_weights["softmax attention"].numpy())[::-1]
    return int(np.searchsorted(np.cumsum(w), 0.9) + 1)


def _loudest(value_scale: float) -> str:
    c = contributions(value_scale)
    moved = c.weights.numpy() * c.value_norms.numpy()  # ‖α_j v_j‖ = α_j ‖v_j‖
    j = int(moved.argmax())
    return f"{c.tokens[j]} (α = {float(c.weights[j]):.2f})"


def test_every_exercise_asks_about_the_instance_on_screen():
    runs = run_steps(PAGE, STEPS)
    asked = {}
    for label, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        asked[label] = "\n".join(_questions(at))
        assert not at.success and not at.error  # nothing revealed before a commitment
    assert [len(_questions(at)) for at in runs] == [1, 1, 0, 1, 0, 1]  # one per step at most
    assert W("exercise.sharp.q", seed=0, tau=1.0) in asked["Scoring"]
    assert W("exercise.cosmax.q", tau=1.0, seed=0) in asked["Cosine"]
    assert W("exercise.window.q", bandwidth=0.5, x_probe=5.0, n=80) in asked["Smoother"]
    assert W("exercise.knock.q", value_scale=0.02) in asked["Contribution"]


@pytest.mark.parametrize("seed", [0, 2])
def test_sharpest_scoring_follows_the_seed(seed):
    want = _sharpest(seed, 1.0)
    assert (_sharpest(0, 1.0), _sharpest(2, 1.0)) == ("bilinear", "dot")  # the seed matters
    at = run_page(PAGE, seed=seed)
    key = f"alt-sharp-{seed}-1"
    _reveal(at, key, "scaled dot")  # never the sharpest: it divides the spread by √d_k
    ok, bad = _said(at)
    assert not ok and f"the computed answer is **{want}**" in bad
    _reveal(at, key, want)
    ok, _ = _said(at)
    assert f"Right: **{want}**" in ok and "Mean row entropy" in ok


def test_cosine_row_max_is_computed_for_seed_and_tau():
    for seed, tau in ((0, 1.0), (3, 0.1)):
        truth = _cosine_row_max(seed, tau)
        at = run_page(PAGE, seed=seed, tau=tau, step="Cosine")
        key = f"alt-cosmax-{seed}-{tau:g}".replace(".", "_")
        _reveal(at, key, 0.95)
        ok, bad = _said(at)
        assert not ok and f"Computed **{truth:.3f}**" in bad
        _reveal(at, key, round(truth, 3))
        ok, _ = _said(at)
        assert f"Close enough: computed **{truth:.3f}**" in ok
    assert abs(_cosine_row_max(3, 0.1) - _cosine_row_max(0, 1.0)) > 0.3  # τ sharpens


def test_kernel_window_count_follows_the_bandwidth():
    narrow, wide = _keys_for_90(0.5), _keys_for_90(2.0)
    assert narrow < wide <= 80
    for h, truth in ((0.5, narrow), (2, wide)):
        at = run_page(PAGE, bandwidth=h, step="Smoother")
        key = f"alt-window-{h:g}".replace(".", "_")
        _reveal(at, key, 80 if truth < 40 else 1)
        ok, bad = _said(at)
        assert not ok and f"Computed **{truth}**" in bad
        _reveal(at, key, truth)
        assert f"computed **{truth}**" in _said(at)[0]


def test_knockout_answer_turns_from_not_to_sep_with_the_value_length():
    """The question is asked at [SEP]'s default length, before the slider and the metrics
    that answer it; a link's other length changes the live part, not the question."""
    assert _loudest(0.02).startswith("not") and _loudest(1.0).startswith("[SEP]")
    want = _loudest(0.02)
    for link in ({}, {"value_scale": "1"}):
        at = run_page(PAGE, step="Contribution", **link)
        assert not at.slider  # held back until the reveal: it would show the answer
        key = "alt-knock-0_02"
        wrong = "film (α = 0.10)"
        _reveal(at, key, wrong)
        ok, bad = _said(at)
        assert not ok and f"the computed answer is **{want}**" in bad
        _reveal(at, key, want)
        assert f"Right: **{want}**" in _said(at)[0]
        assert at.slider(key="value_scale").value == float(link.get("value_scale", 0.02))


@pytest.mark.parametrize("tau", [0.05, 1.0, 10.0])
def test_cosine_bound_is_the_most_lopsided_row(tau):
    from attn_core.lessons.alternatives import cosine_max_weight_bound

    row = torch.tensor([1.0] + [-1.0] * 7, dtype=torch.float64) / tau  # best case for one key
    assert cosine_max_weight_bound(tau, 8) == pytest.approx(float(torch.softmax(row, 0)[0]))


def test_keys_holding_counts_heaviest_first():
    from attn_core.lessons.alternatives import keys_holding

    w = torch.tensor([0.05, 0.5, 0.3, 0.15])
    assert [keys_holding(w, m) for m in (0.5, 0.8, 0.9, 1.0)] == [1, 2, 3, 4]
    assert keys_holding(torch.full((80,), 1 / 80), 0.9) == 72
