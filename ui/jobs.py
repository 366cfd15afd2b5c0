"""Heavy jobs (training, sweeps, timings) share the server fairly.

One Streamlit server runs every student's session in its own thread of one process. A
heavy button (train, sweep, time) used to start its work at once, so a class pressing Run
with thirty different settings ran thirty CPU-bound jobs together on a 2-core machine, and
every other student's slider rerun waited behind them. These rules fix that:

- A server-wide limit on heavy jobs running at once (`ATTN_HEAVY_JOBS`, default: half the
  cores, at least 1 — on a 2-core machine one job runs and the other core stays free for
  slider reruns). The other presses queue; a queued press shows its place in line and an
  estimate of the wait, refreshed while it waits. Moving a control or pressing Stop ends
  the wait (Streamlit stops the run) and gives the place up.
- The line takes turns between clients, not first come, first served. A client is the
  press's network address (`st.context.ip_address`), else its browser session. When a
  slot frees, the next job is the oldest press of the client with the fewest jobs running,
  and among those, of the client served least recently (one never served goes first).
  So one person holding many tabs gets one turn in each round, and a student from another
  address waits for at most one of their jobs, not for all of them. A whole class behind
  one school router shares one address: its presses run first come, first served among
  themselves and, together, take turns with each other address (the price: such a class
  gets one address's share; `python bench/jobs.py --queue` has the figures). Behind a
  load balancer every press has the balancer's address, so the line is first come, first
  served. Without a runtime (AppTest, a script) a press has no identity and is a client
  of its own: first come, first served too.
- One ticket per browser session: a session's new press withdraws its older press still
  in line (a page reruns on a new press, so the older one is stale anyway). And at most
  `ATTN_JOBS_PER_CLIENT` presses (default 40: a class behind one router fits) from one
  address at once; a press past that is refused with a message. The turn-taking, not this
  cap, is what keeps a busy address from holding up the others; the cap bounds what one
  address can pile onto the server.
- A time budget per job (`ATTN_JOB_BUDGET_S`, default 30 s). A job polls
  `job.should_stop()` between its steps and, once the budget is spent, ends cleanly with
  what it has; the page says so and does not keep that partial result as the final one.
- A cap on the wait itself (`ATTN_JOB_WAIT_S`, default 600 s): a press still in line after
  that is dropped with a message instead of waiting on forever.

Identical settings still run once: a page keeps finished results in a `Results` store
shared by all sessions and takes a slot only when the store has nothing for its key
(`shared()` does both, and waits for another session already running the same key).

Set `ATTN_JOBS_LOG` to a file path to get one JSON line per job (kind, place in line,
seconds waited and run, outcome: finished, stopped, cancelled, error, gave-up, replaced
or refused); bench/load.py reads it.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import itertools
import json
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import streamlit as st

from attn_core import worker

from . import clients, content

POLL_S = 0.5  # how often a queued press checks its place
REDRAW_S = 5.0  # a queued press redraws its message when its place changes, else this often
STALE_S = 30.0  # a queued press not heard from for this long has gone (its thread ended)
EWMA = 0.3  # weight of the newest run in a kind's typical duration
SERVED_MEMORY = 4096  # owners whose last turn the line remembers (the oldest are forgotten)


def _w(name: str, /, **fields: Any) -> str:
    """The job line's sentence `name` (content/kit.md, `jobs.<name>`), fields filled."""
    return content.words("kit", f"jobs.{name}", **fields)


def _env_number(name: str, default: float, *, cast=float, low: float = 0) -> float:
    """An environment setting; a missing or unusable value gives the default."""
    try:
        value = cast(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value >= low else default


def default_slots() -> int:
    """Heavy jobs at once: ATTN_HEAVY_JOBS, else half the cores (at least one)."""
    return int(_env_number("ATTN_HEAVY_JOBS", max(1, (os.cpu_count() or 1) // 2), cast=int, low=1))


def budget_s() -> float:
    """Seconds one job may run: ATTN_JOB_BUDGET_S (default 30)."""
    return _env_number("ATTN_JOB_BUDGET_S", 30.0, low=1e-3)


def wait_cap_s() -> float:
    """Seconds a press may wait in line: ATTN_JOB_WAIT_S (default 600)."""
    return _env_number("ATTN_JOB_WAIT_S", 600.0, low=0.0)


def client_cap(slots: int) -> int:
    """Presses one network address may have running or in line at once:
    ATTN_JOBS_PER_CLIENT, else 40 (a class behind one school router fits) or 8 a slot."""
    return int(_env_number("ATTN_JOBS_PER_CLIENT", max(40, 8 * slots), cast=int, low=1))


def who() -> tuple[str | None, str | None]:
    """(browser session id, network address) of the calling script thread; None for
    what is unknown. Outside a server's runtime (AppTest, a bare script) both are None:
    AppTest gives every test the same session id, and a press there is its own client."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True) if runtime.exists() else None
    if ctx is None:
        return None, None
    return ctx.session_id, clients.connected()  # a header only where trusted (ui.clients)


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th', 23 -> '23rd'."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


@dataclass(eq=False)
class Ticket:
    """One press's place: in line (started is None), then running."""

    kind: str
    what: str
    serial: int
    joined: float
    seen: float  # last time its thread asked (a queued press that stops asking has gone)
    expected_s: float | None = None
    started: float | None = None
    place: int = 0  # its place in line when it joined (1 = next to run)
    session: str | None = None  # the browser session that pressed (None: unknown)
    client: str | None = None  # its network address (None: unknown)
    replaced: bool = False  # a newer press of the same session took its place in line

    @property
    def owner(self) -> Hashable:
        """Who takes turns: the address, else the session, else this press alone."""
        if self.client is not None:
            return ("client", self.client)
        return ("session", self.session) if self.session is not None else ("press", self.serial)


class Limiter:
    """At most `slots` tickets run at once; the others wait, taking turns between owners.

    Thread-safe and shared: every session's script thread calls it. `acquire` blocks
    (up to a timeout) until the ticket is first in line and a slot is free; `release`
    frees the slot (or the place in line) and must run in a `finally`. The line's order
    is `order()`: tickets whose owners (`Ticket.owner`) have the fewest jobs running go
    first, then those of the owner served least recently, then the oldest.
    `per_client` caps the tickets one address holds at once (None: no cap).
    """

    def __init__(
        self,
        slots: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        per_client: int | None = None,
    ):
        if int(slots) != slots or slots < 1:
            raise ValueError(f"slots must be a positive integer; got {slots}")
        self.slots = int(slots)
        self.clock = clock
        self.per_client = per_client
        self._cond = threading.Condition()
        self._waiting: list[Ticket] = []  # in the order they joined (serial)
        self._running: list[Ticket] = []
        self._typical: dict[str, float] = {}  # kind -> typical seconds (moving average)
        self._serial = itertools.count(1)
        self._turns = itertools.count(1)  # numbers each start, for "served least recently"
        self._served: OrderedDict[Hashable, int] = OrderedDict()  # owner -> its last start
        self.max_running = 0  # the most tickets that ever ran at once (for tests and benches)

    def join(
        self,
        kind: str,
        what: str = "",
        expected_s: float | None = None,
        *,
        session: str | None = None,
        client: str | None = None,
    ) -> Ticket:
        """A new ticket in line. It replaces the session's older ticket still in line;
        raises GaveUpError if the client already holds `per_client` tickets."""
        now = self.clock()
        with self._cond:
            self._withdraw(session)
            held = sum(x.client == client for x in (*self._waiting, *self._running))
            if client is not None and self.per_client is not None and held >= self.per_client:
                raise GaveUpError(_w("per_client", held=held))
            t = Ticket(kind, what, next(self._serial), now, now, expected_s,
                       session=session, client=client)  # fmt: skip
            self._waiting.append(t)
            t.place = self._order().index(t) + 1
            return t

    def _withdraw(self, session: str | None) -> None:
        """Take `session`'s ticket out of the line (its thread sees `replaced`)."""
        if session is None:
            return
        for old in [x for x in self._waiting if x.session == session]:
            old.replaced = True
            self._waiting.remove(old)
            self._cond.notify_all()

    def _order(self, first: int | None = None) -> list[Ticket]:
        """The line (its `first` tickets) in the order it will be served if no running job
        ends first: each pick counts as one more job running for its owner, who is then
        the one served most recently. Call with the lock held."""
        queues: dict[Hashable, deque[Ticket]] = {}
        for x in self._waiting:
            queues.setdefault(x.owner, deque()).append(x)
        running: dict[Hashable, int] = {}
        for x in self._running:
            running[x.owner] = running.get(x.owner, 0) + 1
        heap = [
            (running.get(o, 0), self._served.get(o, 0), q[0].serial, o) for o, q in queues.items()
        ]
        heapq.heapify(heap)  # serials are unique, so ties never compare owners
        order, turn = [], itertools.count(next(iter(reversed(self._served.values())), 0) + 1)
        while heap and (first is None or len(order) < first):
            busy, _, _, o = heapq.heappop(heap)
            order.append(queues[o].popleft())
            if queues[o]:
                heapq.heappush(heap, (busy + 1, next(turn), queues[o][0].serial, o))
        return order

    def order(self) -> list[Ticket]:
        """The tickets in line, next to run first."""
        with self._cond:
            return self._order()

    def _drop_stale(self) -> None:
        now = self.clock()
        gone = [t for t in self._waiting if now - t.seen > STALE_S]
        for t in gone:
            self._waiting.remove(t)
        if gone:
            self._cond.notify_all()

    def _may_start(self, t: Ticket) -> bool:
        self._drop_stale()
        if t.replaced or len(self._running) >= self.slots or t not in self._waiting:
            return False
        return self._order(1)[0] is t

    def acquire(self, t: Ticket, timeout: float | None = None) -> bool:
        """Wait until `t` may run (True), or `timeout` seconds pass (False). A ticket
        replaced by its session's newer press never runs (False at once)."""
        with self._cond:
            if t.started is not None:
                return True
            if t.replaced:
                return False
            if t not in self._waiting:  # dropped as stale (its thread was held up): back
                bisect.insort(self._waiting, t, key=lambda x: x.serial)  # to its old place
            t.seen = self.clock()
            ready = self._cond.wait_for(lambda: t.replaced or self._may_start(t), timeout)
            if not ready or t.replaced:
                t.seen = self.clock()
                return False
            self._start(t)
            return True

    def _start(self, t: Ticket) -> None:
        self._waiting.remove(t)
        t.started = self.clock()
        self._running.append(t)
        self.max_running = max(self.max_running, len(self._running))
        if t.client is not None or t.session is not None:  # a press alone has no next turn
            self._served[t.owner] = next(self._turns)
            self._served.move_to_end(t.owner)
        while len(self._served) > SERVED_MEMORY:  # forget the owners served longest ago
            self._served.popitem(last=False)
        self._cond.notify_all()  # the next in line may start too, if a slot is left

    def release(self, t: Ticket) -> None:
        """Free `t`'s slot (recording how long it ran) or its place in line. Idempotent."""
        with self._cond:
            if t in self._running:
                self._running.remove(t)
                ran = self.clock() - t.started
                old = self._typical.get(t.kind)
                self._typical[t.kind] = ran if old is None else (1 - EWMA) * old + EWMA * ran
            elif t in self._waiting:
                self._waiting.remove(t)
            self._cond.notify_all()

    def position(self, t: Ticket) -> int:
        """0 while running, 1 when next in line, 2 behind one other…; -1 once gone."""
        with self._cond:
            if t in self._running:
                return 0
            try:
                return self._order().index(t) + 1
            except ValueError:
                return -1

    def typical_s(self, kind: str, fallback: float) -> float:
        """How long a job of this kind usually takes here (measured), else `fallback`."""
        with self._cond:
            return self._typical.get(kind, fallback)

    def wait_estimate(self, t: Ticket, cap_s: float) -> float:
        """Seconds until `t` starts if every job ahead takes its typical time (≤ cap_s).

        Jobs are handed, in the line's order (`order()`), to whichever slot frees first,
        the way `acquire` hands them out. A kind never measured on this server counts as
        `expected_s` if the page gave one, else as the whole budget `cap_s`.
        """
        now = self.clock()
        with self._cond:

            def typical(x: Ticket) -> float:
                guess = x.expected_s if x.expected_s is not None else cap_s
                return min(self._typical.get(x.kind, guess), cap_s)

            free = sorted(max(0.0, typical(r) - (now - r.started)) for r in self._running)
            free += [0.0] * (self.slots - len(free))  # idle slots are free now
            for x in self._order():
                if x is t:
                    return free[0]
                free[0] += typical(x)
                free.sort()
            return 0.0

    def counts(self) -> tuple[int, int]:
        """(running, waiting) right now."""
        with self._cond:
            return len(self._running), len(self._waiting)


class Job:
    """A running job's time budget. Pass `should_stop` to the work as its stop check."""

    def __init__(self, budget: float, *, clock: Callable[[], float] = time.monotonic):
        self.budget_s = float(budget)
        self.clock = clock
        self.t0 = clock()
        self.stopped = False  # True once should_stop() has said the budget is spent

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self.t0

    def restart(self) -> None:
        """Start the budget now: the job's worker process has just begun its work (its
        start-up, seconds for the first job of a server, is the server's cost, not the job's)."""
        if not self.stopped:
            self.t0 = self.clock()

    def should_stop(self, *_: Any) -> bool:
        """True once the budget is spent (accepts and ignores a progress callback's args)."""
        if not self.stopped and self.elapsed_s >= self.budget_s:
            self.stopped = True
        return self.stopped

    def stopped_text(self, done: int, total: int, unit: str = "steps") -> str:
        """The sentence a page shows for a job that ran out of time."""
        return _w("stopped", done=done, total=total, unit=unit, budget=self.budget_s)


class GaveUpError(Exception):
    """A press waited longer than the server's cap and was dropped (the message says so)."""


_LIMITER: Limiter | None = None
_RESULTS: dict[str, Results] = {}  # name -> that kind's finished results, for every session
_LIMITER_LOCK = threading.Lock()
_LOG_LOCK = threading.Lock()


def limiter() -> Limiter:
    """The server's one limiter (created on first use with `default_slots()`)."""
    global _LIMITER
    with _LIMITER_LOCK:
        if _LIMITER is None:
            slots = default_slots()
            _LIMITER = Limiter(slots, per_client=client_cap(slots))
        return _LIMITER


def reset(slots: int | None = None) -> Limiter:
    """A fresh limiter (with `slots`, or the default) and no stored results: for tests."""
    global _LIMITER
    with _LIMITER_LOCK:
        slots = default_slots() if slots is None else slots
        _LIMITER = Limiter(slots, per_client=client_cap(slots))
        _RESULTS.clear()
        return _LIMITER


def _log(**fields: Any) -> None:
    path = os.environ.get("ATTN_JOBS_LOG")
    if not path:
        return
    line = json.dumps({"time": time.time(), **fields})
    with _LOG_LOCK, open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")


def queue_text(lim: Limiter, t: Ticket, waited: float, budget: float) -> str:
    """What a queued press shows: its place, the estimated wait, why there is a line."""
    place = lim.position(t)
    running, _ = lim.counts()
    eta = lim.wait_estimate(t, budget)
    return _w(
        "queued", place=ordinal(place), eta=eta, waited=waited, slots=lim.slots,
        s="s" if lim.slots > 1 else "", running=running, budget=budget,
    )  # fmt: skip


def _info(box) -> Callable[[str], None]:
    return lambda text: box.info(text, icon=":material/hourglass_top:")


def job_nice() -> int:
    """How much lower a heavy job's thread runs than the slider reruns: ATTN_JOB_NICE
    (default 10; 0 leaves it alone)."""
    return int(_env_number("ATTN_JOB_NICE", 10, cast=int, low=0))


@contextlib.contextmanager
def _lower_priority() -> Iterator[None]:
    """Run the body at a higher nice value for this thread only (Linux gives each thread
    its own), so the scheduler serves every other session's rerun before the heavy job.

    Only the job's own thread changes, and Streamlit ends a script thread with its run.
    Raising the priority back needs a privilege a hosted app may lack; then the rest of
    this run stays lowered, which only delays drawing the job's own result a little.
    """
    nice, tid, before = job_nice(), threading.get_native_id(), None
    if nice:
        try:
            before = os.getpriority(os.PRIO_PROCESS, tid)
            os.setpriority(os.PRIO_PROCESS, tid, min(19, before + nice))
        except (AttributeError, OSError):  # not Linux, or not allowed: run as it is
            before = None
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, tid, before)


@contextlib.contextmanager
def slot(
    kind: str,
    what: str = "",
    *,
    show: Callable[[str], None] | None = None,
    expected_s: float | None = None,
    lim: Limiter | None = None,
    budget: float | None = None,
) -> Iterator[Job]:
    """Wait for a heavy-job slot, showing the place in line; yield the running Job.

    `show(markdown)` draws the queue message (default: an st.info in a fresh st.empty(),
    cleared once the job starts); it runs when the press's place changes, else every
    REDRAW_S seconds, and each call is a point where Streamlit can stop the run (a new
    rerun, Stop, a closed tab) — the `finally` then gives the place up. Raises
    GaveUpError after ATTN_JOB_WAIT_S, when a newer press of the same session replaced
    this one in line, or when the press's address (`who()`) already holds
    ATTN_JOBS_PER_CLIENT tickets.
    """
    lim = limiter() if lim is None else lim
    budget = budget_s() if budget is None else budget
    box = None
    if show is None:
        box = st.empty()
        show = _info(box)
    t = _join(lim, kind, what, expected_s)
    outcome, job = "cancelled", None
    try:
        try:
            shown = _wait_for_turn(lim, t, show, budget)
        except GaveUpError:
            outcome = "replaced" if t.replaced else "gave-up"
            raise
        if shown and box is not None:
            box.empty()
        _start_workers()  # before this thread is lowered: workers inherit the forkserver's nice
        job = Job(budget, clock=lim.clock)
        _CURRENT.job = job  # ui.jobs.call restarts its budget once the worker is up
        try:
            with _lower_priority():
                yield job
        finally:
            _CURRENT.job = None
        outcome = "stopped" if job.stopped else "finished"
    except GaveUpError:
        raise
    except Exception:
        outcome = "error"
        raise
    finally:
        now = lim.clock()
        lim.release(t)
        started = t.started if t.started is not None else now
        _log(
            kind=kind, what=what, place=t.place, waited_s=round(started - t.joined, 3),
            ran_s=round(now - started, 3) if t.started is not None else 0.0, outcome=outcome,
        )  # fmt: skip


def _join(lim: Limiter, kind: str, what: str, expected_s: float | None) -> Ticket:
    """This session's ticket in line (`who()` says whose); a refused press is logged."""
    session, client = who()
    try:
        return lim.join(kind, what, expected_s, session=session, client=client)
    except GaveUpError:
        _log(kind=kind, what=what, place=0, waited_s=0.0, ran_s=0.0, outcome="refused")
        raise


def _wait_for_turn(lim: Limiter, t: Any, show: Callable[[str], None], budget: float) -> bool:
    """Block until ticket `t` holds a slot, showing its place; True if anything was shown.
    Raises GaveUpError after ATTN_JOB_WAIT_S, or once a newer press of its session
    replaced it in line."""
    cap, shown, last = wait_cap_s(), False, (None, 0.0)
    while not lim.acquire(t, timeout=POLL_S):
        waited = lim.clock() - t.joined
        if t.replaced:
            raise GaveUpError(_w("replaced"))
        if waited >= cap:
            raise GaveUpError(_w("gave_up", waited=waited, place=ordinal(lim.position(t))))
        # redraw when the place changes, else every REDRAW_S: thirty queued presses
        # redrawing every POLL_S would send 60 messages a second for a ticking clock
        now, place = lim.clock(), lim.position(t)
        if place != last[0] or now - last[1] >= REDRAW_S:
            show(queue_text(lim, t, waited, budget))
            shown, last = True, (place, now)
    return shown


# ----------------------------------------------------------------------------- worker process
# Measured with bench/load.py (8 pressers, 9 probes, 2 cores): with the training loops in
# a thread of the server, the probes' slider p95 went from 685 ms (no jobs) to 1.96 s, and
# the server process got only 30 % of one core. A training loop of tiny tensors is mostly
# Python, so it holds the GIL most of the time; lowered to nice +10, it is preempted by
# the browsers while holding it, and every session's rerun then waits for a thread the
# scheduler is not running (a priority inversion). In a process of its own a job shares
# no GIL with the reruns, and the whole process, not one thread, runs at the lower priority.

_CURRENT = threading.local()  # the running Job of this session's thread, inside slot()
STEP_EVERY_S = 0.25  # a worker forwards progress at most this often (the pages redraw less)
_CTX_LOCK = threading.Lock()
_CTX: Any = None


def in_process() -> bool:
    """Run heavy work in a worker process: ATTN_JOB_PROCESS (default 1; 0 keeps it in the
    session's thread, as a platform without multiprocessing would)."""
    return os.environ.get("ATTN_JOB_PROCESS", "1").strip() not in ("0", "false", "no")


def _context():
    """A forkserver: one clean process (no server threads) that imports torch and attn_core
    once; each job is a fork of it (10 ms, the imports shared copy-on-write). Where
    forkserver does not exist (Windows), spawn."""
    global _CTX
    import multiprocessing as mp

    with _CTX_LOCK:
        if _CTX is None:
            if "forkserver" in mp.get_all_start_methods():
                # attn_core.worker, preloaded, makes jobs skip re-running the main script
                _CTX = mp.get_context("forkserver")
                _CTX.set_forkserver_preload(["torch", "attn_core", "attn_core.worker"])
            else:
                _CTX = mp.get_context("spawn")
        return _CTX


def _start_workers() -> None:
    """Start the forkserver now, from a thread at the server's own priority, if it is not
    running: it passes its nice on to every worker, which can then only go lower."""
    if not in_process():
        return
    if _context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def _job_priority() -> int:
    """The nice value a worker should run at: the server's own (its main thread's) plus
    ATTN_JOB_NICE. Absolute, because the forkserver inherits the nice of whichever thread
    started it, which may be a job's lowered one."""
    try:
        base = os.getpriority(os.PRIO_PROCESS, os.getpid())  # the main thread's, on Linux
    except (AttributeError, OSError):
        base = 0
    return min(19, base + job_nice())


def _on_accelerator(args: tuple, kwargs: dict) -> bool:
    """True if the job is handed a non-CPU torch device. Such a job runs in this thread:
    CUDA does not survive a fork once initialised, and on a GPU these jobs take seconds."""
    import torch

    return any(isinstance(v, torch.device) and v.type != "cpu" for v in (*args, *kwargs.values()))


class WorkerDiedError(RuntimeError):
    """The worker process ended without a result (killed, or out of memory)."""


def call(
    fn: Callable[..., Any],
    /,
    *args: Any,
    on_step: Callable[..., Any] | None = None,
    hook: str = "on_step",
    should_stop: Callable[[], bool] | None = None,
    every_s: float = STEP_EVERY_S,
    **kwargs: Any,
) -> Any:
    """`fn(*args, **kwargs)` in a worker process (see above); its result, or its exception.

    `fn` and its arguments must pickle (a module-level function such as
    `attn_core.train_pair`). Given `on_step` or `should_stop`, `fn` gets a `hook=`
    callback (`on_step=` by default; `hook="should_stop"` for the timings, which only ask
    whether to stop). That callback forwards its calls here, at most every `every_s`
    seconds and always the last one; `on_step` runs in this thread (so it may draw), and
    once it returns True, or `should_stop()` does (checked several times a second), the
    worker's callback returns True, which is how these functions are told to stop. If this
    thread is stopped (Streamlit ends the run on a rerun) or anything else goes wrong
    here, the worker is told to stop, then killed. ATTN_JOB_PROCESS=0 calls `fn` right
    here instead, with the same contract, and so does a job given a GPU device
    (see `_on_accelerator`).
    """
    relayed = on_step is not None or should_stop is not None
    if not in_process() or _on_accelerator(args, kwargs):
        if not relayed:
            return fn(*args, **kwargs)

        def direct(*a):
            return bool(on_step and on_step(*a)) or bool(should_stop and should_stop())

        return fn(*args, **{**kwargs, hook: direct})
    ctx = _context()
    recv, send = ctx.Pipe(duplex=False)
    stop = ctx.Event()
    proc = ctx.Process(
        target=worker.run,
        args=(send, stop, fn, args, kwargs, hook if relayed else None, every_s, _job_priority()),
        daemon=True,
    )
    proc.start()
    send.close()  # the worker holds the only writing end: EOF means it has gone
    try:
        return _relay(proc, recv, stop, on_step, should_stop)
    finally:
        stop.set()
        proc.join(timeout=2.0)
        if proc.is_alive():
            proc.kill()
            proc.join()
        recv.close()


def _relay(proc, recv, stop, on_step, should_stop) -> Any:
    """Read the worker's messages until its result: progress goes to `on_step`, a stop
    request goes back through `stop`, an exception raised there is raised here."""
    import pickle

    while True:
        if not recv.poll(POLL_S / 5):
            if should_stop is not None and should_stop():
                stop.set()
            if proc.is_alive() and not recv.poll(0):
                continue  # still working; a dead worker falls through to EOF below
        try:
            what, value = pickle.loads(recv.recv_bytes())
        except EOFError:  # the pipe closed with nothing in it: the worker has gone
            proc.join(timeout=1.0)
            raise WorkerDiedError(_w("worker_died", code=proc.exitcode)) from None
        if what == "started":
            if (job := getattr(_CURRENT, "job", None)) is not None:
                job.restart()
        elif what == "step":
            if (on_step is not None and on_step(*value)) or (should_stop and should_stop()):
                stop.set()
        elif what == "done":
            return value
        else:
            raise value


class Results:
    """Finished results of one kind of job, shared by every session (oldest dropped first).

    Also knows which keys are being computed right now, so a second session asking for
    the same key waits for the first instead of running it again.
    """

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._done: OrderedDict[Hashable, Any] = OrderedDict()
        self._busy: dict[Hashable, threading.Event] = {}

    def get(self, key: Hashable, default: Any = None) -> Any:
        with self._lock:
            if key in self._done:
                self._done.move_to_end(key)
                return self._done[key]
            return default

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._done

    def put(self, key: Hashable, value: Any) -> Any:
        with self._lock:
            self._done[key] = value
            self._done.move_to_end(key)
            while len(self._done) > self.max_entries:
                self._done.popitem(last=False)
        return value

    def claim(self, key: Hashable) -> threading.Event | None:
        """None if this caller should compute `key` (call `unclaim` after), else the
        event that the session computing it will set."""
        with self._lock:
            if key in self._busy:
                return self._busy[key]
            self._busy[key] = threading.Event()
            return None

    def unclaim(self, key: Hashable) -> None:
        with self._lock:
            ev = self._busy.pop(key, None)
        if ev is not None:
            ev.set()


def results(name: str, max_entries: int = 16) -> Results:
    """The server's store for `name` (created on first use; pages rerun, this module does not)."""
    with _LIMITER_LOCK:
        if name not in _RESULTS:
            _RESULTS[name] = Results(max_entries)
        return _RESULTS[name]


def shared(
    store: Results,
    key: Hashable,
    work: Callable[[Job], Any],
    *,
    kind: str,
    what: str = "",
    show: Callable[[str], None] | None = None,
    expected_s: float | None = None,
    lim: Limiter | None = None,
    budget: float | None = None,
) -> tuple[Any, Job | None]:
    """`work(job)`'s result for `key`, computed at most once across sessions.

    A finished result comes straight from `store` (no slot, job None). If another session
    is computing `key`, this one waits for it (saying so) and takes its result. Otherwise
    it queues for a slot and runs `work(job)`; the result is stored only if the job was
    not stopped by its budget, and returned either way with its Job (job.stopped tells).
    """
    while True:
        if key in store:
            return store.get(key), None
        event = store.claim(key)
        if event is None:
            break
        box = None
        if show is None:
            box = st.empty()
            say = _info(box)
        else:
            say = show
        t0 = time.monotonic()
        while not event.wait(POLL_S):
            say(_w("same_settings", waited=time.monotonic() - t0))
        if box is not None:
            box.empty()
        # its result is in the store now, unless it was stopped or cancelled: then try again
    try:
        with slot(kind, what, show=show, expected_s=expected_s, lim=lim, budget=budget) as job:
            value = work(job)
        if not job.stopped:
            store.put(key, value)
        return value, job
    finally:
        store.unclaim(key)
