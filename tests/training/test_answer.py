"""The Training lab's up-front answer (assets/training_answer.json) against fresh runs.

bench/training_answer.py wrote the file; here both reference settings train again on the
CPU, the file must agree with them, and the two claims the page builds on it must hold:
at the defaults the unscaled model learns, at the failure setting it never gets a batch 99 %
right while the scaled one does.
"""

import json
import math
from pathlib import Path

import pytest
import torch

from attn_core import train_pair
from attn_core.lessons.training import ANSWER_SETTINGS

FILE = Path(__file__).resolve().parents[2] / "assets" / "training_answer.json"


@pytest.fixture(scope="module")
def fresh() -> dict:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the bench measured it
    try:
        return {n: train_pair(device="cpu", **kw) for n, kw in ANSWER_SETTINGS.items()}
    finally:
        torch.set_num_threads(threads)


def test_the_file_holds_what_the_runs_measure(fresh):
    shipped = json.loads(FILE.read_text())
    for name, (a, b) in fresh.items():
        assert shipped[name]["setting"] == ANSWER_SETTINGS[name]
        for run, got in (("scaled", a.summary()), ("unscaled", b.summary())):
            want = shipped[name][run]
            assert got["steps"] == want["steps"] and got["chance"] == pytest.approx(want["chance"])
            assert got["tail_accuracy"] == pytest.approx(want["tail_accuracy"], abs=0.03)
            assert math.log(got["tail_loss"]) == pytest.approx(math.log(want["tail_loss"]), abs=0.3)
            assert got["saturated_start"] == pytest.approx(want["saturated_start"], abs=0.02)
            for k in ("first_99", "left_chance"):
                assert (got[k] is None) == (want[k] is None), (name, run, k)
                if got[k] is not None:
                    assert abs(got[k] - want[k]) <= 15, (name, run, k)


def test_the_claims_the_page_makes_hold(fresh):
    (s, u), (fs_, fu) = fresh["default"], fresh["failure"]
    assert u.tail_accuracy() >= 0.9  # "it still learns the lookup"
    assert u.tail_loss() > s.tail_loss()  # "its loss stays higher"
    assert fu.saturated[0] > 0.9  # "…% of its rows start above SATURATED"
    assert fs_.tail_accuracy() >= 0.99 and fu.tail_accuracy() < 0.75  # "answers only …"
    assert fs_.summary()["first_99"] is not None  # "answers 99 % of a batch right at …"
    assert fu.summary()["first_99"] is None  # "never answers a batch 99 % right"
    assert fu.tail_loss() > 10 * fs_.tail_loss()  # "(loss … against …)": far apart
