"""The heavy buttons under the server's job rules: a queue with a visible place, a time
budget that stops a job and says so, and no stopped result kept as the final one."""

from __future__ import annotations

import json
import re
import threading
import time

import pytest
import torch

import ui.jobs as jobs
from attn_core import plan_sweep
from attn_core.lessons import heads as ind
from tests.support.apptest import chart_titles, no_exception, run_page, warnings

STOPPED = re.compile(
    r"Stopped after ([\d,]+) of ([\d,]+) (steps|measurements|sequence lengths|pairs of runs): "
    r"the server gives each heavy job at most ([\d.]+) s"
)


@pytest.fixture(autouse=True)
def fresh_limiter():
    """Each test starts with an empty line and no stored results; none leaks a slot."""
    lim = jobs.reset(1)
    yield lim
    assert lim.counts()[0] == 0, "a test left a heavy-job slot taken"
    jobs.reset()


def _budget(monkeypatch, seconds: float) -> None:
    monkeypatch.setenv("ATTN_JOB_BUDGET_S", str(seconds))


def _press(at, label: str):
    next(b for b in at.button if b.label.startswith(label)).click().run()
    no_exception(at)
    return at


def _stopped(at) -> tuple[int, int, str, float]:
    """(done, total, unit, budget) from the page's 'Stopped after …' warning."""
    hits = [m for w in warnings(at) if (m := STOPPED.search(w))]
    assert len(hits) == 1, warnings(at)
    done, total, unit, budget = hits[0].groups()
    return int(done.replace(",", "")), int(total.replace(",", "")), unit, float(budget)


def test_training_stops_at_the_budget_says_so_and_is_not_kept(monkeypatch):
    _budget(monkeypatch, 0.5)
    params = dict(d_k="512", steps="2000", lr="0.0001", seed="4321")
    at = _press(run_page("pages/training.py", reveal=True, **params), "Run both")
    done, total, unit, budget = _stopped(at)
    assert (total, unit, budget) == (2000, "steps", 0.5)
    assert 1 <= done < total
    # the partial curves are drawn for this session …
    assert any("Training loss" in t for t in chart_titles(at))
    # … but not kept for everyone: a fresh session with the same link has nothing to show
    again = run_page("pages/training.py", reveal=True, **params)
    assert not [w for w in warnings(again) if "Stopped after" in w]
    assert any("**Run both** trains" in c.value for c in again.caption)


def test_a_press_that_waits_too_long_in_line_says_where_it_was(monkeypatch, fresh_limiter):
    monkeypatch.setenv("ATTN_JOB_WAIT_S", "0.5")
    holder = fresh_limiter.join("someone else's training")
    assert fresh_limiter.acquire(holder, timeout=0)
    try:
        at = _press(
            run_page("pages/training.py", reveal=True, d_k="8", steps="50", seed="4322"), "Run both"
        )
    finally:
        fresh_limiter.release(holder)
    [gave_up] = [w for w in warnings(at) if "The server is busy" in w]
    assert "still 1st in line" in gave_up and "Press again" in gave_up
    assert fresh_limiter.counts() == (0, 0)  # the dropped press left the line


@pytest.mark.parametrize(
    "file,params,label",
    [
        ("pages/training.py", dict(d_k="8", steps="50", seed="4323"), "Run both"),
        ("pages/heads.py", dict(seed="92", step="Train"), "Train from scratch"),
        ("pages/cost.py", dict(step="Sweep", d_model="64", heads="1"), "Run the sweep"),
        ("pages/alternatives.py", dict(step="Linear attention", T="256"), "Time softmax"),
        ("pages/alternatives.py", dict(step="Speed", T="256"), "Time dot product"),
        ("pages/cost.py", dict(step="Parallel", width="16"), "Time both"),
        ("pages/masks.py", dict(step="Cost", T_time="256"), "Measure both"),
    ],
)
def test_a_queued_press_waits_its_turn_then_runs(
    file, params, label, monkeypatch, tmp_path, fresh_limiter
):
    """Each page draws the queue message while another job holds the only slot, then runs
    its own job once the slot is free (the log records the wait)."""
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("ATTN_JOBS_LOG", str(log))
    monkeypatch.setattr(ind, "PRETRAINED_STEPS", 30)  # /heads: a CI-sized run
    monkeypatch.setattr(jobs, "POLL_S", 0.1)
    at = run_page(file, **params)
    holder = fresh_limiter.join("someone else's job")
    assert fresh_limiter.acquire(holder, timeout=0)
    queued = threading.Event()

    def free_once_the_press_is_in_line() -> None:  # an event, not a guess at how long
        while fresh_limiter.counts()[1] == 0 and not queued.wait(0.02):
            pass
        queued.set()
        time.sleep(0.3)  # let it wait a little, so the log must count a wait
        fresh_limiter.release(holder)

    watcher = threading.Thread(target=free_once_the_press_is_in_line)
    watcher.start()
    try:
        _press(at, label)
    finally:
        queued.set()
        watcher.join()
    assert not [w for w in warnings(at) if "Stopped after" in w or "server is busy" in w]
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(entries) == 1 and entries[0]["outcome"] == "finished", entries
    assert entries[0]["waited_s"] >= 0.3 and entries[0]["place"] == 1


def test_a_press_goes_ahead_of_one_clients_queued_tabs(monkeypatch, tmp_path, fresh_limiter):
    """One address holds the slot and three more places in line; a press from elsewhere
    (this AppTest) is 1st in line and runs as soon as the slot frees."""
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("ATTN_JOBS_LOG", str(log))
    monkeypatch.setattr(jobs, "POLL_S", 0.1)
    hog = [fresh_limiter.join("training", session=f"tab-{i}", client="10.0.0.9") for i in range(4)]
    assert fresh_limiter.acquire(hog[0], timeout=0)
    at = run_page("pages/training.py", reveal=True, d_k="8", steps="50", seed="4324")
    timer = threading.Timer(1.0, fresh_limiter.release, args=(hog[0],))
    timer.start()
    try:
        _press(at, "Run both")
    finally:
        timer.join()
        for t in hog:
            fresh_limiter.release(t)
    [entry] = [json.loads(line) for line in log.read_text().splitlines()]
    assert entry["place"] == 1 and entry["outcome"] == "finished", entry  # not 4th
    assert entry["waited_s"] >= 0.5
    assert all(t.started is None for t in hog[1:])  # the hog's other tabs still wait


def test_heads_live_training_stops_at_the_budget(monkeypatch):
    _budget(monkeypatch, 0.5)
    at = _press(
        run_page("pages/heads.py", reveal=True, seed="93", step="Train"), "Train from scratch"
    )
    done, total, unit, budget = _stopped(at)
    assert (total, unit, budget) == (ind.PRETRAINED_STEPS, "steps", 0.5)
    assert 1 <= done < total
    assert any("your live run, seed 93" in t for t in chart_titles(at))
    assert any(f"{done:,} steps in" in c.value for c in at.caption)


def test_cost_sweep_stops_at_the_budget(monkeypatch):
    _budget(monkeypatch, 0.3)
    at = _press(run_page("pages/cost.py", reveal=True, step="Sweep"), "Run the sweep")
    done, total, unit, budget = _stopped(at)
    plan = plan_sweep(1024, batch=1, heads=8, d_k=64, dtype="float32", device="cpu")
    assert (total, unit, budget) == (len(plan.points), "measurements", 0.3)
    assert done < total


def test_alternatives_timing_stops_at_the_budget(monkeypatch):
    _budget(monkeypatch, 0.2)
    at = run_page("pages/alternatives.py", reveal=True, step="Speed", T="1024")
    at = _press(at, "Time dot product vs additive")
    done, total, unit, budget = _stopped(at)
    assert (total, unit, budget) == (4, "sequence lengths", 0.2)  # T = 128, 256, 512, 1024
    assert done < total
    # a rerun shows the same cut timing without queueing again
    at.run()
    assert _stopped(at)[0] == done


def test_all_eight_heads_can_be_switched_off_by_link():
    model, _ = ind.load_pretrained()
    names = model.config.head_names()
    at = run_page("pages/heads.py", reveal=True, ablate=",".join(names), step="Switch off")
    no_exception(at)
    assert not warnings(at)
    batch = ind.eval_batch(model.config)
    with torch.no_grad():
        loss = ind.evaluate(model, batch, ind.ablation_mask(model.config, names))[0]
    label = f"Loss on repeated tokens with {', '.join(sorted(names))} off (128 sequences)"
    [metric] = [m for m in at.metric if m.label == label]
    assert metric.value == f"{loss:.3f}"
