"""ui.wake's line: woken followers rerun AT_ONCE at a time, the next as one ends.

Fake sessions on a real event loop: `request_rerun` starts a "run" (the session then has
a script runner) and the test ends runs as a script would, by `finished`, or without a
word (a run stopped or failed), which the line notices by itself within CHECK_S.
"""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace

import pytest

from ui import wake


class Session:
    def __init__(self, loop, sid: str, started: list):
        self.id, self._event_loop, self.started = sid, loop, started
        self._state = SimpleNamespace(name="APP_NOT_RUNNING")
        self._scriptrunner = None
        self._client_state = f"client-of-{sid}"

    def request_rerun(self, client_state):
        assert client_state == self._client_state  # its own last page and query string
        self._scriptrunner = object()
        self.started.append(self.id)

    def end(self, say: bool = True):
        self._scriptrunner = None
        if say:
            wake._GATE.finished(self.id)


@pytest.fixture
def line(monkeypatch):
    monkeypatch.setattr(wake, "_GATE", wake._Gate())
    monkeypatch.setattr(wake, "AT_ONCE", 2)
    loop = asyncio.new_event_loop()
    started: list[str] = []
    sessions = {f"s{i}": Session(loop, f"s{i}", started) for i in range(5)}
    manager = SimpleNamespace(
        get_active_session_info=lambda sid: (
            SimpleNamespace(session=sessions[sid]) if sid in sessions else None
        )
    )
    stale = {sid: True for sid in sessions}
    wakers = {sid: wake.Waker(sid, manager, lambda sid=sid: stale[sid]) for sid in sessions}

    # The loop runs in a thread of its own, as the server's does (and because a browser
    # test's Playwright may hold this thread's running loop in the same worker).
    server = threading.Thread(target=loop.run_forever)
    server.start()

    def turn(seconds: float = 0.0):
        """Let the loop run what is due, and `seconds` more."""
        for wait in (seconds, 0, 0):
            asyncio.run_coroutine_threadsafe(asyncio.sleep(wait), loop).result(10)

    yield SimpleNamespace(sessions=sessions, wakers=wakers, started=started, turn=turn,
                          stale=stale)  # fmt: skip
    loop.call_soon_threadsafe(loop.stop)
    server.join(10)
    loop.close()


def test_two_at_a_time_and_the_next_starts_when_one_finishes(line):
    for w in line.wakers.values():
        assert w()
    line.turn()
    assert line.started == ["s0", "s1"]  # in the order they were woken, two at once
    line.sessions["s0"].end()
    line.turn()
    assert line.started == ["s0", "s1", "s2"]
    for sid in ("s1", "s2"):
        line.sessions[sid].end()
    line.turn()
    assert line.started == ["s0", "s1", "s2", "s3", "s4"]


def test_a_run_that_ends_without_a_word_frees_its_place(line):
    for sid in ("s0", "s1", "s2"):
        line.wakers[sid]()
    line.turn()
    assert line.started == ["s0", "s1"]
    line.sessions["s0"].end(say=False)  # stopped, or an exception: no finished()
    line.turn(2 * wake.CHECK_S)
    assert line.started == ["s0", "s1", "s2"]


def test_a_follower_caught_up_meanwhile_is_skipped(line):
    for sid in ("s0", "s1", "s2", "s3"):
        line.wakers[sid]()
    line.turn()
    line.stale["s2"] = False  # its own run took the room's view while it waited
    line.sessions["s0"].end()
    line.turn()
    assert line.started == ["s0", "s1", "s3"]


def test_a_second_change_during_a_woken_run_reruns_it_after(line):
    line.wakers["s0"]()
    line.turn()
    assert line.started == ["s0"]
    line.wakers["s0"]()  # the teacher moved again: this run may have read the old view
    line.wakers["s0"]()  # (and once more: still one rerun)
    line.turn()
    assert line.started == ["s0"]  # not cut short, not run twice at once
    line.sessions["s0"].end()
    line.turn(3 * wake.RETRY_S)
    assert line.started == ["s0", "s0"]


def test_a_closed_page_is_not_woken(line):
    del line.sessions["s1"]
    assert line.wakers["s1"]() is False
    assert line.wakers["s0"]() is True
    line.turn()
    assert line.started == ["s0"]
