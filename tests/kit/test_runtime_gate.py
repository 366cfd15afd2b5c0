"""ui.runtime.gate: one session's rerun requests cannot crowd out the rest (issue 49).

The gate runs on the server's event loop; here a fake loop with a fake clock plays it, and
a fake session stands in for Streamlit's AppSession (only what the gate reads). The live
server's side is in tests/kit/test_attacks_live.py."""

from __future__ import annotations

import heapq
import logging
from types import SimpleNamespace

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg

from ui import wake
from ui.runtime import gate, logs


class Loop:
    """call_soon/call_later on a clock the test moves."""

    def __init__(self, clock) -> None:
        self.clock, self.due, self.n = clock, [], 0

    def call_later(self, delay, fn, *args):
        self.n += 1
        heapq.heappush(self.due, (self.clock.now + delay, self.n, fn, args))
        return object()

    def call_soon(self, fn, *args):
        return self.call_later(0.0, fn, *args)

    def run_until(self, t: float) -> None:
        while self.due and self.due[0][0] <= t:
            when, _, fn, args = heapq.heappop(self.due)
            self.clock.now = max(self.clock.now, when)
            fn(*args)
        self.clock.now = t


class Clock:
    now = 1000.0


@pytest.fixture
def world(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(gate.time, "monotonic", lambda: clock.now)
    loop = Loop(clock)
    session = SimpleNamespace(
        id="s1", _event_loop=loop, _scriptrunner=None, _state=SimpleNamespace(name="RUNNING")
    )
    handled: list[BackMsg] = []

    def handle(s, msg):  # Streamlit's handle_backmsg: a run starts
        handled.append(msg)
        s._scriptrunner = object()

    return SimpleNamespace(clock=clock, loop=loop, session=session, handled=handled,
                           handle=handle)  # fmt: skip


def rerun(value: str = "", click: str = "", fragment: str = "") -> BackMsg:
    msg = BackMsg()
    cs = msg.rerun_script
    if value:
        w = cs.widget_states.widgets.add(id="slider")
        w.string_value = value
    if click:
        w = cs.widget_states.widgets.add(id=click)
        w.trigger_value = True
    if fragment:
        cs.fragment_id = fragment
    return msg


def ask(w, msg) -> bool:
    ok = gate.admit(w.session, msg, w.handle)
    if ok:
        w.handle(w.session, msg)
    return ok


def test_requests_within_the_allowance_go_through_at_once(world):
    for i in range(int(gate.BURST)):
        assert ask(world, rerun(str(i)))
        world.session._scriptrunner = None  # each run ends before the next request
    assert len(world.handled) == gate.BURST


def test_a_flood_is_held_coalesced_to_its_latest_and_run_after_the_session_s_own_run(world):
    sent = 200
    for i in range(sent):  # no waiting: each request while the last run goes on
        ask(world, rerun(str(i)))
    passed = len(world.handled)
    assert passed == gate.BURST  # the allowance, then held
    world.loop.run_until(world.clock.now + 0.3)  # held while the last run goes on
    world.session._scriptrunner = None  # the last run ends
    world.loop.run_until(world.clock.now + 0.04)  # ... seen at the next look
    world.loop.run_until(world.clock.now + gate.MAX_GAP + 0.1)
    assert len(world.handled) == passed + 1  # one run for the 188 held
    latest = world.handled[-1].rerun_script.widget_states.widgets[0].string_value
    assert latest == str(sent - 1)  # the latest request's values
    held, gap = gate.slowed("s1")
    assert held == sent - passed
    assert gate.SLOW * 0.3 <= gap <= gate.SLOW * 0.36  # its run took 0.3 s, seen within 0.05
    assert gate.slowed("s1") is None  # said once


def test_a_slowed_session_waits_slow_times_its_last_run_between_runs(world):
    t0 = world.clock.now
    for i in range(int(gate.BURST) + 5):
        ask(world, rerun(str(i)))
    world.loop.run_until(t0 + 0.2)  # its run takes 0.2 s
    world.session._scriptrunner = None
    world.loop.run_until(t0 + 0.2 + gate.POLL_S)  # the end is seen at the next look
    ended = world.clock.now
    gap = gate.SLOW * (ended - t0)
    world.loop.run_until(ended + gap - 0.01)
    assert len(world.handled) == gate.BURST  # not yet: SLOW times the run it saw
    world.loop.run_until(ended + gap + 0.01)
    assert len(world.handled) == gate.BURST + 1
    # Still slowed: the next request waits for this run too, tokens or not.
    world.clock.now += 3.0
    world.session._scriptrunner = None
    assert not ask(world, rerun("x"))


def test_a_session_that_keeps_flooding_gets_one_run_each_max_gap(world):
    """Flooding past SLOWED_S: one short run each MAX_GAP s, not one each SLOW x run."""
    t0, sent = world.clock.now, 0
    while world.clock.now < t0 + 20:  # 20 s of 100 requests a second, runs of 30 ms
        ask(world, rerun(str(sent)))
        sent += 1
        world.loop.run_until(world.clock.now + 0.01)
        if world.session._scriptrunner is not None and world.clock.now % 0.1 < 0.011:
            world.session._scriptrunner = None  # runs end quickly
    late = [m for m in world.handled[int(gate.BURST) :]]
    # after the first SLOWED_S (a few short gaps), one run each MAX_GAP s
    most = gate.SLOWED_S / gate.MIN_GAP + (20 - gate.SLOWED_S) / gate.MAX_GAP + 2
    assert 0 < len(late) <= most, (len(late), most)
    assert len(late) < 20 * gate.RATE / 2  # well under the rate a slowed session had


def test_a_click_in_a_replaced_request_is_kept_and_a_whole_run_stays_whole(world):
    for i in range(int(gate.BURST)):
        ask(world, rerun(str(i)))
    ask(world, rerun("a", click="button"))
    ask(world, rerun("b", fragment="banner"))  # a fragment's timer after the click
    world.session._scriptrunner = None
    world.loop.run_until(world.clock.now + gate.MAX_GAP + 0.2)
    cs = world.handled[-1].rerun_script
    states = {w.id: w for w in cs.widget_states.widgets}
    assert states["slider"].string_value == "b"
    assert states["button"].trigger_value  # the click survived the newer request
    assert cs.fragment_id == ""  # the click asked for a whole run: it stays one


def test_a_browser_s_request_ends_a_pending_wake(world):
    wake._WOKEN["s1"] = ("whole", "key")
    ask(world, rerun("1"))
    assert "s1" not in wake._WOKEN


def test_a_request_held_for_a_closed_session_is_dropped(world):
    for i in range(int(gate.BURST) + 1):
        ask(world, rerun(str(i)))
    world.session._scriptrunner = None
    world.session._state.name = "SHUTDOWN_REQUESTED"
    world.loop.run_until(world.clock.now + 5)
    assert len(world.handled) == gate.BURST


class FakeSession:
    """An AppSession's class, for install(): its handle_backmsg records what got through."""

    def handle_backmsg(self, msg, *args, **kwargs):
        self.got = (msg.WhichOneof("type"), args, kwargs)


def test_install_wraps_handle_backmsg_passing_every_argument_through(monkeypatch, caplog):
    from streamlit.runtime import app_session

    monkeypatch.setattr(app_session, "AppSession", FakeSession)
    own = FakeSession.handle_backmsg
    assert gate.install() and gate.install()  # twice: wrapped once
    assert FakeSession.handle_backmsg.__wrapped__ is own
    s = FakeSession()
    s.id, s._event_loop, s._scriptrunner = "s2", None, None
    msg = BackMsg()
    msg.app_heartbeat = True
    s.handle_backmsg(msg, "extra", flag=1)
    assert s.got == ("app_heartbeat", ("extra",), {"flag": 1})
    # A browser may not empty every cache of the server (the rooms, the models).
    s.got = None
    msg = BackMsg()
    msg.clear_cache = True
    logs.forget()
    with caplog.at_level(logging.WARNING, logger=gate.__name__):
        s.handle_backmsg(msg)
    assert s.got is None and "refused" in caplog.text
    gate.uninstall()
    assert FakeSession.handle_backmsg is own


def test_the_pinned_streamlit_has_the_method_the_gate_wraps():
    import inspect

    from streamlit.runtime.app_session import AppSession

    assert list(inspect.signature(AppSession.handle_backmsg).parameters) == ["self", "msg"]
    assert "clear_cache" in inspect.getsource(AppSession.handle_backmsg)
    for attr in ("_event_loop", "_scriptrunner", "_state", "id"):
        assert attr in inspect.getsource(AppSession.__init__), attr


def test_logs_say_a_topic_once_a_minute_with_the_count_between(monkeypatch, caplog):
    clock = Clock()
    monkeypatch.setattr(logs.time, "monotonic", lambda: clock.now)
    logs.forget()
    log = logging.getLogger("test.logs")
    with caplog.at_level(logging.WARNING, logger="test.logs"):
        assert logs.say(log, "t", "missing %s", "x")
        assert not logs.say(log, "t", "missing %s", "x")
        assert not logs.say(log, "t", "missing %s", "x")
        clock.now += logs.EVERY_S
        assert logs.say(log, "t", "missing %s", "x")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["missing x", "missing x (2 more times since the last such line)"]
