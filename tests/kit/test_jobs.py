"""The server-wide heavy-job limiter (ui/jobs.py) and the budget hooks of the core functions."""

from __future__ import annotations

import json
import os
import threading
import time

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

import ui.jobs as jobs
from attn_core import time_dot_vs_additive, time_softmax_vs_linear, train_pair
from attn_core.lessons import heads as ind


class Clock:
    """A hand-driven clock: tests decide when time passes."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run_many(lim: jobs.Limiter, n: int, hold_s: float) -> tuple[int, list[int]]:
    """n threads each take a slot, hold it, give it back; (most at once, start order)."""
    lock, inside, most, order = threading.Lock(), [0], [0], []

    def worker(i: int) -> None:
        t = lim.join("test", str(i))
        assert lim.acquire(t, timeout=30)
        try:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                order.append(i)
            time.sleep(hold_s)
            with lock:
                inside[0] -= 1
        finally:
            lim.release(t)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    return most[0], order


@pytest.mark.parametrize("slots", [1, 2, 3])
def test_concurrency_never_exceeds_the_limit(slots):
    lim = jobs.Limiter(slots)
    most, order = _run_many(lim, 24, 0.01)
    assert most <= slots
    assert lim.max_running == most == slots  # 24 threads do fill every slot
    assert sorted(order) == list(range(24))  # and every one of them ran
    assert lim.counts() == (0, 0)


def test_first_in_first_out():
    lim = jobs.Limiter(1)
    first = lim.join("test")
    assert lim.acquire(first, timeout=1)
    tickets = [lim.join("test", str(i)) for i in range(6)]  # joined in this order
    order, threads = [], []
    for i, t in reversed(list(enumerate(tickets))):  # threads start in the opposite order

        def worker(i=i, t=t):
            assert lim.acquire(t, timeout=30)
            order.append(i)
            lim.release(t)

        threads.append(threading.Thread(target=worker))
        threads[-1].start()
    time.sleep(0.2)
    assert order == []  # all wait while the first ticket holds the only slot
    lim.release(first)
    for th in threads:
        th.join(30)
    assert order == list(range(6))


def test_positions_and_wait_estimate():
    clock = Clock()
    lim = jobs.Limiter(1, clock=clock)
    a, b, c = (lim.join("train", n) for n in "abc")
    assert [lim.position(t) for t in (a, b, c)] == [1, 2, 3]
    assert not lim.acquire(b, timeout=0)  # not first in line
    assert lim.acquire(a, timeout=0)
    assert [lim.position(t) for t in (a, b, c)] == [0, 1, 2]
    # nothing measured yet: each job counts as the whole budget
    assert lim.wait_estimate(b, 30) == 30
    assert lim.wait_estimate(c, 30) == 60
    clock.now += 8  # a finishes after 8 s: that is now the typical training job
    lim.release(a)
    assert lim.typical_s("train", 30) == 8
    assert lim.acquire(b, timeout=0)
    clock.now += 3
    assert lim.wait_estimate(c, 30) == 5  # b has 8 - 3 s left
    assert lim.position(a) == -1
    text = jobs.queue_text(lim, c, 12.4, 30)
    assert f"{jobs.ordinal(lim.position(c))} in line" in text
    assert "about 5 s to go" in text and "waited 12 s" in text and "at most 30 s" in text


def test_wait_estimate_spreads_over_slots():
    clock = Clock()
    lim = jobs.Limiter(2, clock=clock)
    ts = [lim.join("sweep", expected_s=10) for _ in range(5)]
    assert lim.acquire(ts[0], timeout=0) and lim.acquire(ts[1], timeout=0)
    # two running 10 s jobs; the 3rd and 4th wait 10 s, the 5th waits for one of them: 20 s
    assert [lim.wait_estimate(t, 30) for t in ts[2:]] == [10, 10, 20]


# --- the line takes turns between clients: one person's many tabs cannot hold it (issue 39)

HOG, STUDENT = "10.0.0.9", "10.0.0.7"  # two network addresses


def _hog(lim: jobs.Limiter, n: int, **kw) -> list[jobs.Ticket]:
    """n tabs of one person: n browser sessions from one address, pressed in this order."""
    return [lim.join("train", f"hog {i}", session=f"hog-{i}", client=HOG, **kw) for i in range(n)]


def test_a_student_is_served_before_a_hogs_other_queued_tabs():
    lim = jobs.Limiter(1, clock=Clock())
    hog = _hog(lim, 4)
    assert lim.acquire(hog[0], timeout=0)  # one of the hog's tabs runs, three wait
    student = lim.join("train", "mine", session="s", client=STUDENT)
    assert lim.order() == [student, *hog[1:]]
    assert [lim.position(t) for t in (student, *hog[1:])] == [1, 2, 3, 4]
    assert student.place == 1
    lim.release(hog[0])  # the slot frees: the student goes next, not after the other three
    assert not lim.acquire(hog[1], timeout=0)
    assert lim.acquire(student, timeout=0)
    lim.release(student)
    assert lim.acquire(hog[1], timeout=0)
    lim.release(hog[1])


def test_behind_someone_elses_job_a_student_waits_for_one_hog_job_not_four():
    lim = jobs.Limiter(1, clock=Clock())
    other = lim.join("train", session="x", client="10.0.0.1")
    assert lim.acquire(other, timeout=0)
    hog = _hog(lim, 4)
    student = lim.join("train", session="s", client=STUDENT)
    assert lim.order() == [hog[0], student, *hog[1:]]  # the hog's first press came first
    # Presses without an identity (AppTest, a script) are each a client of their own, and
    # the line is first come, first served: the order before clients took turns.
    plain = jobs.Limiter(1, clock=Clock())
    presses = [plain.join("train", session=f"tab-{i}") for i in range(4)]
    presses.append(plain.join("train"))
    assert plain.order() == presses


def test_busy_clients_take_turns_and_the_line_is_served_in_its_order():
    clock = Clock()
    lim = jobs.Limiter(1, clock=clock)
    a = [lim.join("t", f"a{i}", session=f"a{i}", client="A") for i in range(3)]
    b = [lim.join("t", f"b{i}", session=f"b{i}", client="B") for i in range(2)]
    c = lim.join("t", "c", client="C")  # an address with an unknown session
    predicted = lim.order()
    assert predicted == [a[0], b[0], c, a[1], b[1], a[2]]
    served = []
    while lim.counts()[1]:
        [t] = [t for t in predicted if t.started is None and lim.acquire(t, timeout=0)]
        served.append(t)
        clock.now += 5
        lim.release(t)
    assert served == predicted  # positions shown while waiting were the real order
    # A had the last turn, so with nothing running A's new press waits behind B's, even
    # though A pressed first.
    a_again = lim.join("t", session="a0", client="A")
    b_again = lim.join("t", session="b0", client="B")
    assert lim.order() == [b_again, a_again]
    for t in (a_again, b_again):
        lim.release(t)


def test_wait_estimates_follow_the_line_order():
    clock = Clock()
    lim = jobs.Limiter(2, clock=clock)
    hog = _hog(lim, 5, expected_s=10)
    assert lim.acquire(hog[0], timeout=0) and lim.acquire(hog[1], timeout=0)
    student = lim.join("train", session="s", client=STUDENT, expected_s=10)
    line = lim.order()
    assert line == [student, *hog[2:]]
    # two slots, each busy for 10 s: first come it would have been 20 s for the student
    assert [lim.wait_estimate(t, 30) for t in line] == [10, 10, 20, 20]
    text = jobs.queue_text(lim, student, 0, 30)
    assert "1st in line" in text and "about 10 s to go" in text
    assert "Network addresses take turns" in text


def test_a_session_holds_one_ticket_its_new_press_replaces_the_old():
    lim = jobs.Limiter(1, clock=Clock())
    holder = lim.join("t", session="x", client="10.0.0.1")
    assert lim.acquire(holder, timeout=0)
    old = lim.join("t", "d_k 8", session="s", client=STUDENT)
    other = lim.join("t", session="o", client="10.0.0.2")
    new = lim.join("t", "d_k 16", session="s", client=STUDENT)
    assert old.replaced and not new.replaced
    assert lim.position(old) == -1 and not lim.acquire(old, timeout=0)
    assert lim.counts() == (1, 2) and lim.order() == [other, new]
    lim.release(old)  # its thread's finally: a no-op
    assert lim.counts() == (1, 2)


def test_a_replaced_press_stops_waiting_and_says_why(tmp_path, monkeypatch):
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("ATTN_JOBS_LOG", str(log))
    monkeypatch.setattr(jobs, "POLL_S", 0.05)
    monkeypatch.setattr(jobs, "who", lambda: ("s", STUDENT))  # every press: the same tab
    lim = jobs.Limiter(1)
    holder = lim.join("t", session="x", client="10.0.0.1")
    assert lim.acquire(holder, timeout=0)
    queued, errors = threading.Event(), []

    def first_press() -> None:
        try:
            with jobs.slot("t", "first", lim=lim, show=lambda _: queued.set(), budget=5):
                raise AssertionError("must not run")
        except jobs.GaveUpError as e:
            errors.append(str(e))

    th = threading.Thread(target=first_press)
    th.start()
    assert queued.wait(10)  # the first press is in line and has said so
    second = lim.join("t", "second", session="s", client=STUDENT)
    th.join(10)
    assert len(errors) == 1 and "newer press in this tab" in errors[0]
    assert lim.order() == [second] and lim.counts() == (1, 1)
    assert json.loads(log.read_text().splitlines()[-1])["outcome"] == "replaced"
    for t in (second, holder):
        lim.release(t)


def test_one_address_holds_at_most_its_cap(tmp_path, monkeypatch):
    lim = jobs.Limiter(1, clock=Clock(), per_client=3)
    mine = [lim.join("t", session=f"s{i}", client=STUDENT) for i in range(3)]
    assert lim.acquire(mine[0], timeout=0)  # a running job counts too
    with pytest.raises(jobs.GaveUpError, match="3 heavy jobs from your network address"):
        lim.join("t", session="s9", client=STUDENT)
    again = lim.join("t", session="s2", client=STUDENT)  # a tab's new press replaces its own
    assert mine[2].replaced and lim.counts() == (1, 2)
    lim.join("t", session="o", client="10.0.0.2")  # another address is not held up
    for i in range(5):
        lim.join("t", session=f"n{i}")  # an unknown address has no cap
    lim.release(mine[0])
    assert lim.join("t", session="s9", client=STUDENT).client == STUDENT  # a place freed
    # through slot(): the refused press raises the message and is logged as refused
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("ATTN_JOBS_LOG", str(log))
    monkeypatch.setattr(jobs, "who", lambda: ("s10", STUDENT))
    with pytest.raises(jobs.GaveUpError, match="network address"), jobs.slot("t", lim=lim):
        raise AssertionError("must not run")
    assert json.loads(log.read_text())["outcome"] == "refused"
    assert again.client == STUDENT and lim.counts() == (0, 9)


def test_the_cap_fits_a_class_behind_one_router(monkeypatch):
    monkeypatch.delenv("ATTN_JOBS_PER_CLIENT", raising=False)
    assert jobs.client_cap(1) == 40 and jobs.client_cap(8) == 64
    monkeypatch.setenv("ATTN_JOBS_PER_CLIENT", "5")
    assert jobs.client_cap(1) == 5
    monkeypatch.setenv("ATTN_JOBS_PER_CLIENT", "0")
    assert jobs.client_cap(1) == 40


def test_outside_a_server_a_press_has_no_identity():
    """AppTest gives every test the same session id; without a runtime nobody is named."""
    assert jobs.who() == (None, None)


def test_ordinal():
    names = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 11: "11th", 12: "12th", 13: "13th"}
    names |= {21: "21st", 22: "22nd", 101: "101st", 111: "111th"}
    assert {n: jobs.ordinal(n) for n in names} == names


def test_slot_releases_on_exception_and_on_streamlit_stop(tmp_path, monkeypatch):
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("ATTN_JOBS_LOG", str(log))
    lim = jobs.Limiter(1)
    for exc in (ValueError("boom"), StopException()):
        with pytest.raises(type(exc)), jobs.slot("test", lim=lim, show=print, budget=5):
            assert lim.counts() == (1, 0)
            raise exc
        assert lim.counts() == (0, 0)
    with jobs.slot("test", lim=lim, show=print, budget=5) as job:
        assert not job.stopped
    outcomes = [json.loads(line)["outcome"] for line in log.read_text().splitlines()]
    assert outcomes == ["error", "cancelled", "finished"]


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="per-thread nice is Linux's")
def test_a_job_runs_its_thread_at_a_lower_priority_and_gives_it_back(monkeypatch):
    """Only the job's own thread is lowered, by ATTN_JOB_NICE, and only while it runs."""
    tid = threading.get_native_id()
    before = os.getpriority(os.PRIO_PROCESS, tid)
    if before > 14:
        pytest.skip("this test thread already runs near the lowest priority")
    seen, go = {}, threading.Event()

    def other() -> None:  # another session's thread, started before the job (as they are)
        go.wait(5)
        seen["other"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    t = threading.Thread(target=other)
    t.start()
    monkeypatch.setenv("ATTN_JOB_NICE", "5")
    with jobs.slot("test", lim=jobs.Limiter(1), show=print, budget=5):
        seen["job"] = os.getpriority(os.PRIO_PROCESS, tid)
        go.set()
        t.join()
    assert seen == {"job": before + 5, "other": before}
    after = os.getpriority(os.PRIO_PROCESS, tid)
    if os.geteuid() == 0:  # raising it back needs the privilege root has
        assert after == before
    monkeypatch.setenv("ATTN_JOB_NICE", "0")
    with jobs.slot("test", lim=jobs.Limiter(1), show=print, budget=5):
        assert os.getpriority(os.PRIO_PROCESS, tid) == after


def test_slot_shows_the_queue_while_it_waits(tmp_path, monkeypatch):
    log = tmp_path / "jobs.jsonl"
    monkeypatch.setenv("ATTN_JOBS_LOG", str(log))
    monkeypatch.setattr(jobs, "POLL_S", 0.05)
    lim = jobs.Limiter(1)
    holder = lim.join("other")
    assert lim.acquire(holder, timeout=0)
    shown: list[str] = []
    threading.Timer(0.4, lim.release, args=(holder,)).start()
    with jobs.slot("test", "mine", lim=lim, show=shown.append, budget=5):
        pass
    assert shown and all("1st in line" in s for s in shown)
    entry = json.loads(log.read_text().splitlines()[-1])
    assert entry["place"] == 1 and entry["waited_s"] >= 0.3 and entry["outcome"] == "finished"


def test_a_press_that_waits_past_the_cap_gives_up(monkeypatch):
    monkeypatch.setenv("ATTN_JOB_WAIT_S", "0.2")
    monkeypatch.setattr(jobs, "POLL_S", 0.05)
    lim = jobs.Limiter(1)
    holder = lim.join("other")
    assert lim.acquire(holder, timeout=0)
    with (
        pytest.raises(jobs.GaveUpError, match="still 1st in line"),
        jobs.slot("test", lim=lim, show=lambda s: None, budget=5),
    ):
        raise AssertionError("must not run")
    assert lim.counts() == (1, 0)  # only the holder is left


def test_a_queued_press_that_stops_asking_loses_its_place(monkeypatch):
    clock = Clock()
    lim = jobs.Limiter(1, clock=clock)
    gone, alive = lim.join("a"), lim.join("b")
    clock.now += jobs.STALE_S + 1
    assert lim.acquire(alive, timeout=0)  # gone never asked again, so alive may start
    assert lim.position(gone) == -1


def test_job_budget_and_message():
    clock = Clock()
    job = jobs.Job(2.5, clock=clock)
    assert not job.should_stop() and not job.should_stop(7, "progress", "args")
    clock.now += 2.5
    assert job.should_stop() and job.stopped
    assert job.stopped_text(1234, 2000) == (
        "Stopped after 1,234 of 2,000 steps: the server gives each heavy job at most 2.5 s, "
        "so that a whole class can take turns."
    )


def test_environment_settings(monkeypatch):
    monkeypatch.setenv("ATTN_HEAVY_JOBS", "3")
    monkeypatch.setenv("ATTN_JOB_BUDGET_S", "12.5")
    assert jobs.default_slots() == 3 and jobs.budget_s() == 12.5
    for bad in ("0", "-2", "many", ""):
        monkeypatch.setenv("ATTN_HEAVY_JOBS", bad)
        monkeypatch.setenv("ATTN_JOB_BUDGET_S", bad)
        assert jobs.default_slots() >= 1 and jobs.budget_s() == 30.0
    with pytest.raises(ValueError):
        jobs.Limiter(0)


def test_shared_runs_once_and_does_not_keep_a_stopped_result():
    lim, store, calls = jobs.Limiter(1), jobs.Results(4), []

    def work(job):
        calls.append(1)
        time.sleep(0.2)
        return len(calls)

    out: list = []
    threads = [
        threading.Thread(
            target=lambda: out.append(
                jobs.shared(store, "k", work, kind="t", lim=lim, show=lambda s: None)[0]
            )
        )
        for _ in range(3)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(30)
    assert out == [1, 1, 1] and len(calls) == 1  # three sessions, one computation
    assert jobs.shared(store, "k", work, kind="t", lim=lim, show=print) == (1, None)

    value, job = jobs.shared(store, "cut", lambda job: job.should_stop(), kind="t", lim=lim,
                             show=print, budget=0)  # fmt: skip
    assert value is True and job.stopped and "cut" not in store
    for i in range(6):
        store.put(i, i)
    assert 0 not in store and 5 in store  # bounded, oldest dropped first


# --- the core functions stop where the budget says


def _after(n: int):
    """A stop check that says True from its n-th call on."""
    calls = [0]

    def should_stop(*_):
        calls[0] += 1
        return calls[0] >= n

    return should_stop


def test_train_pair_stops_on_the_budget():
    a, b = train_pair(8, steps=50, on_step=_after(5))
    assert a.done == b.done == 5 < a.steps
    assert a.stopped == b.stopped == "callback" and a.stopped_at == 5
    assert not a.finished and a.probe_end is not None  # stopped cleanly: snapshot taken


def test_train_induction_stops_on_the_budget():
    _, run = ind.train_induction(steps=40, seed=0, on_step=_after(3))
    assert run.stopped and run.done == 3 < run.steps


@pytest.mark.parametrize("fn", [time_dot_vs_additive, time_softmax_vs_linear])
def test_timings_stop_between_lengths(fn):
    Ts = (16, 32, 64)
    rows = fn(Ts, 8, rounds=1, should_stop=_after(3))  # asked before each T: two get timed
    assert [r.T for r in rows] == [16, 32]
    assert fn(Ts, 8, rounds=1, should_stop=lambda: True) == []
    assert [r.T for r in fn(Ts, 8, rounds=1)] == list(Ts)  # no check: every T, as before


# ----------------------------------------------------------------------------- worker process
# ui.jobs.call runs a heavy job in a process of its own (no shared GIL with the reruns).
from tests.support import job_targets as T  # noqa: E402


def test_call_runs_in_another_process_at_the_job_priority(monkeypatch):
    monkeypatch.setenv("ATTN_JOB_NICE", "7")
    base = os.getpriority(os.PRIO_PROCESS, os.getpid())  # the server's main thread
    pid, nice, _ = jobs.call(T.whoami)
    assert pid != os.getpid()
    assert nice == min(19, base + 7)
    seen = []

    def session():  # a session's script thread, lowered while its job runs (ui.jobs.slot)
        with jobs.slot("test", lim=jobs.Limiter(1), show=print, budget=5):
            seen.append(jobs.call(T.whoami)[1])

    t = threading.Thread(target=session)
    t.start()
    t.join()
    assert seen == [min(19, base + 7)]  # the server's nice + 7, not the thread's + 7


def test_a_worker_runs_in_its_own_session_and_scheduling_group(monkeypatch):
    """Where the kernel groups by session, nice alone does not hold a job below a browser
    in another group (attn_core.worker.own_group): the worker gets a group of its own."""
    monkeypatch.setenv("ATTN_JOB_NICE", "7")
    base = os.getpriority(os.PRIO_PROCESS, os.getpid())
    sid, group = jobs.call(T.my_group)
    assert sid != os.getsid(0)  # a session of its own
    if group:  # a kernel with autogroup scheduling: the group has the job's nice
        assert group.endswith(f"nice {min(19, base + 7)}"), group
        with open("/proc/self/autogroup") as f:
            assert f.read().strip() != group  # not the server's group


def test_call_gives_the_same_training_as_a_direct_call():
    kw = dict(steps=40, seed=3)
    a, b = jobs.call(train_pair, 16, **kw)
    a0, b0 = train_pair(16, **kw)
    assert a.loss == a0.loss and b.loss == b0.loss  # same seed, same single-thread CPU maths
    assert a.done == 40 and b.accuracy == b0.accuracy


def test_call_forwards_progress_throttled_and_always_the_last_step():
    seen = []
    done = jobs.call(T.count, 200, on_step=lambda i, n: seen.append(i), every_s=0.05,
                     pause_s=0.002)  # fmt: skip
    assert done == 200
    assert seen[-1] == 200  # the last step always arrives (a bar reaches 100 %)
    assert 2 <= len(seen) < 200  # throttled: not every step crosses the pipe
    assert seen == sorted(seen)


def test_call_stops_the_work_when_on_step_or_should_stop_says_so():
    done = jobs.call(T.count, 10_000, on_step=lambda i, n: i >= 20, every_s=0.0, pause_s=0.001)
    assert 20 <= done < 10_000
    t0 = time.monotonic()
    done = jobs.call(T.count, 100_000, on_step=lambda i, n: False,
                     should_stop=lambda: time.monotonic() - t0 > 0.3, pause_s=0.001)  # fmt: skip
    assert done < 100_000
    a, _ = jobs.call(train_pair, 16, steps=2000, seed=1, on_step=lambda s, a, b: s >= 30,
                     every_s=0.0)  # fmt: skip
    assert 30 <= a.done < 2000 and a.stopped == "callback"


def test_call_raises_the_workers_exception():
    with pytest.raises(ValueError, match="from the worker"):
        jobs.call(T.boom, "from the worker")
    with pytest.raises(RuntimeError, match="UnpicklableError: cannot travel"):
        jobs.call(T.boom_unpicklable)
    with pytest.raises(ValueError, match="d_k must be a positive integer"):
        jobs.call(train_pair, -3, steps=3)


def test_a_worker_that_dies_is_reported():
    with pytest.raises(jobs.WorkerDiedError, match="exit code 3"):
        jobs.call(T.die, 3)


def test_a_stopped_page_stops_and_reaps_its_worker():
    import multiprocessing

    def on_step(i, n):
        if i >= 5:
            raise StopException()  # what Streamlit raises in the script thread on a rerun
        return False

    with pytest.raises(StopException):
        jobs.call(T.count, 10**9, on_step=on_step, every_s=0.0, pause_s=0.001)
    assert not multiprocessing.active_children()


def test_call_runs_here_when_told_to_or_on_an_accelerator(monkeypatch):
    import torch

    pid, _, tid = jobs.call(T.whoami, device=torch.device("meta"))
    assert (pid, tid) == (os.getpid(), threading.get_ident())
    monkeypatch.setenv("ATTN_JOB_PROCESS", "0")
    pid, _, _ = jobs.call(T.whoami)
    assert pid == os.getpid()
    seen = []
    assert jobs.call(T.count, 50, on_step=lambda i, n: seen.append(i) or i >= 10) == 10
    assert seen == list(range(1, 11))  # in this thread: every step, no throttle
    t0 = time.monotonic()
    assert jobs.call(T.count, 10**6, on_step=lambda i, n: False,
                     should_stop=lambda: time.monotonic() - t0 > 0.1) < 10**6  # fmt: skip


def test_the_budget_starts_when_the_worker_does():
    """A worker's start-up (seconds for a server's first job) is not charged to the job."""
    with jobs.slot("test", lim=jobs.Limiter(1), show=print, budget=5) as job:
        time.sleep(0.3)  # as if the forkserver took this long to start
        assert job.elapsed_s >= 0.3
        t0 = time.monotonic()
        jobs.call(T.whoami)
        took = time.monotonic() - t0  # however long a loaded machine takes
        # restarted during the call: at most the call's time, not the 0.3 s before it too
        assert job.elapsed_s <= took
    job.stopped = True
    job.restart()  # a job already stopped stays stopped, with its clock
    assert job.should_stop()


def test_a_job_never_reruns_the_parent_s_main_script(monkeypatch, tmp_path):
    """Streamlit and AppTest make each run's script `__main__` (AppTest.from_function a
    temporary file that only runs with its arguments): a job started then must not
    re-execute it, as multiprocessing's children would (CI: "NameError: __args")."""
    import sys
    import types

    jobs.call(T.whoami)  # the forkserver is up, made with the main script of that time
    script = tmp_path / "page.py"
    script.write_text("raise SystemExit('the main script ran in the job')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    pid, _, _ = jobs.call(T.whoami)
    assert pid != os.getpid()
