"""The extrapolation table (assets/positions_extrapolation.json) against fresh runs, and the
claims the page's verdict builds on it."""

import json
from pathlib import Path

import pytest
import torch

from attn_core.lessons.positions import KINDS, CopyTask, train_all

FILE = Path(__file__).resolve().parents[2] / "assets" / "positions_extrapolation.json"


@pytest.fixture(scope="module")
def shipped() -> dict:
    return json.loads(FILE.read_text())


@pytest.fixture(scope="module")
def fresh(shipped) -> dict:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the bench measured it
    try:
        task = CopyTask(
            **{k: tuple(v) if k == "lengths" else v for k, v in shipped["task"].items()}
        )
        return train_all(task)
    finally:
        torch.set_num_threads(threads)


def test_the_file_holds_what_the_runs_measure(shipped, fresh):
    assert list(shipped["runs"]) == list(KINDS)
    for kind, run in fresh.items():
        for T, acc in run.accuracy.items():
            assert acc == pytest.approx(shipped["runs"][kind]["accuracy"][str(T)], abs=0.05), (
                kind,
                T,
            )


def test_the_verdicts_claims_hold(fresh):
    task = CopyTask()
    T0, T4 = task.T_train, max(task.lengths)
    acc = {k: r.accuracy for k, r in fresh.items()}
    for kind in ("learned", "sinusoidal", "rope"):
        assert acc[kind][T0] >= 0.9, kind  # they learn the task at its length
    assert acc["alibi"][T0] < 0.5  # ALiBi alone cannot point at an exact offset
    assert 1.5 * task.chance < acc["none"][T0] < 0.5  # the causal mask alone: above guessing
    assert acc["learned"][T4] < 0.5  # untrained rows past the training length
    assert acc["rope"][T4] == max(acc[k][T4] for k in ("learned", "sinusoidal", "rope"))
