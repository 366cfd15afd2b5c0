"""Waking another session: how a class follows its teacher without polling (issue 23).

A following page used to ask the room for news once a second, from a fragment: with 60
students that is 60 small runs a second on the server, and each student's browser
redraws its banner as often. Instead, each following session leaves a `Waker` with the
room; when the teacher's view moves, the room calls every waker, and each schedules a
rerun of its own session on the server's event loop. That is the path Streamlit itself
takes to rerun a page whose source file changed (`runner.runOnSave`): the session reruns
with the client state its last run left (its page and query string, no widget states),
so the widgets keep their values and the page's own `sync` takes the room's.

A run already going on is never cut short (it may be the student's own move, whose
widget values it has not read yet): the waker looks again every RETRY_S until the run
has ended, and reruns only if the page is still behind the room (`stale`), so a run that
started after the teacher's change, or a second wake for the same change, costs nothing.

Streamlit has no public call for this, so `here()` checks the pieces it needs and
returns None when any is missing (an older or newer Streamlit, AppTest, bare mode): the
caller then falls back to polling. A missing piece inside a running server is logged as a
warning each time it matters, at most once a minute (ui.runtime.logs); a session that
closed while its run went on is not a missing piece and says nothing
(tests/kit/test_streamlit_internals.py checks each piece on the pinned Streamlit).

A wake's run belongs to the room only until the student asks for a run of their own:
every rerun request from a browser drops the session's pending wake (`drop`, called by
ui.runtime.gate), so a run that carries a student's edit is never taken for the class's.

Woken reruns take turns: at most AT_ONCE of them run at a time (`_Gate`), the rest
wait in line on the event loop and start as runs end. All of a server's sessions run in
one Python process, so 150 followers woken at once do not finish sooner than 150 taking
turns; they only share the interpreter lock 150 ways, handing it over at every message a
run sends, and that hand-over cost a class of 60 about twice the CPU of the runs
themselves (bench/classroom.py). In turns, the first followers have their page after one
run and the last after all of them, instead of every follower after all of them.

A teacher's room keeps `presence()`, a waker that never reruns anything: its `alive()`
(the session still has its browser connected) is how the room knows that its teacher is
there, and that a reloaded or closed tab is not (ui.room's sweep). Where none can be made,
the room goes by when it last heard from the teacher's page instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlit.runtime.scriptrunner import get_script_run_ctx

from .runtime import logs

RETRY_S = 0.05  # how often a wake looks again while the session's run goes on
RETRIES = 200  # for 10 s; past that the page's own slow check (ui.classroom) catches up
# Woken runs at a time. One: the first follower at a state runs the page and the rest
# replay it (ui.replay); with two, the first two both ran it (bench/classroom.py, 150
# followers: p95 1.35-1.60 s with one, 1.72 s with two, 2.14 s with three).
AT_ONCE = max(1, int(os.environ.get("ATTN_WAKE_AT_ONCE", "1")))
CHECK_S = 0.05  # how often the line looks for a woken run that ended without saying so
_warned: list[str] = []  # the missing pieces logged (ui.runtime.logs limits how often)


def _always() -> bool:
    return True


def _never() -> bool:
    return False


@dataclass(frozen=True, eq=False)
class Waker:
    """Reruns one session of this server, while it lives, when `stale()` says it must."""

    session_id: str
    _sessions: Any  # the runtime's session manager
    stale: Callable[[], bool] = _always  # called on the event loop, just before a rerun

    def _session(self):
        info = self._sessions.get_active_session_info(self.session_id)
        return info.session if info is not None else None

    def alive(self) -> bool:
        """Whether the session still has its browser connected."""
        return self._session() is not None

    def __call__(self) -> bool:
        """Schedule a rerun of the session; False when it is gone."""
        s = self._session()
        if s is None:
            return False
        try:  # on the event loop, like a browser's own rerun request
            s._event_loop.call_soon_threadsafe(self._rerun, s, RETRIES)
        except RuntimeError:  # the loop is closed: the server is shutting down
            return False
        return True

    def _rerun(self, s, tries: int) -> None:
        try:
            needed = s._state.name != "SHUTDOWN_REQUESTED" and self.stale()
        except Exception:  # a page torn down meanwhile: nothing to wake
            return
        if not needed:
            return
        if s._scriptrunner is not None:  # a run goes on, or has not handed back its state
            if tries > 0:
                s._event_loop.call_later(RETRY_S, self._rerun, s, tries - 1)
            return
        _GATE.enter(self, s, tries)

    def _start(self, s) -> bool:
        """Bring the session up to the room: False when it was done at once (a run
        alike recorded before was replayed on this loop, ui.replay), True when a run
        started."""
        key = None
        if DIRECT is not None:
            try:
                done, key = DIRECT(self.session_id, s)
            except Exception as e:  # never worse than a run
                _warn_direct(e)
                done, key = False, None
            if done:
                return False
        # This run is the room's, not the student's (woken()); `key` names the state it
        # starts from, so that it may be recorded for the next followers (ui.replay).
        if len(_WOKEN) >= MAX_WOKEN:  # sessions that closed before their run began
            for sid in [k for k in _WOKEN if session(k) is None]:
                _WOKEN.pop(sid, None)
        _WOKEN[self.session_id] = True if key is None else key
        s.request_rerun(s._client_state)  # the state its last run left: page, query string
        return True


class _Gate:
    """The line of woken reruns, AT_ONCE running. Lives on the event loop: every method
    but `finished` is called there."""

    def __init__(self) -> None:
        self.running: dict[str, Any] = {}  # session id: its AppSession
        self.waiting: deque[tuple[Waker, Any, int]] = deque()
        self.loop: Any = None
        self.checking = False
        self.later = False  # a _fill is due on the loop's next turn

    def enter(self, waker: Waker, s, tries: int) -> None:
        self.loop = s._event_loop
        if waker.session_id in self.running:  # its woken run is ending: look again soon
            if tries > 0:
                s._event_loop.call_later(RETRY_S, waker._rerun, s, tries - 1)
            return
        if any(w.session_id == waker.session_id for w, _, _ in self.waiting):
            return  # in line already: its run will read the room's latest view
        self.waiting.append((waker, s, tries))
        self._fill()

    def _fill(self) -> None:
        while self.waiting and len(self.running) < AT_ONCE:
            waker, s, tries = self.waiting.popleft()
            if s._scriptrunner is not None:  # its own run began meanwhile: as before
                waker._rerun(s, tries)
                continue
            try:
                if s._state.name == "SHUTDOWN_REQUESTED" or not waker.stale():
                    continue
                started = waker._start(s)
            except Exception:  # a session torn down meanwhile: the next one
                continue
            if not started:  # replayed at once: the loop sends its messages before the next
                if self.waiting and not self.later:
                    self.later = True
                    self.loop.call_soon(self._next)
                break
            self.running[waker.session_id] = s
        if self.running and not self.checking:
            self.checking = True
            self.loop.call_later(CHECK_S, self._check)

    def _next(self) -> None:
        self.later = False
        self._fill()

    def _check(self) -> None:
        """Runs that ended without `finished` (stopped, failed, another page's script)."""
        self.checking = False
        for sid, s in list(self.running.items()):
            if s._scriptrunner is None or s._state.name == "SHUTDOWN_REQUESTED":
                del self.running[sid]
        self._fill()

    def _done(self, session_id: str) -> None:
        if self.running.pop(session_id, None) is not None:
            self._fill()

    def finished(self, session_id: str) -> None:
        """A run of this session is at its end (any thread): its turn is over."""
        loop = self.loop
        if loop is not None and session_id in self.running:
            with contextlib.suppress(RuntimeError):  # a closed loop: the server stops
                loop.call_soon_threadsafe(self._done, session_id)


_GATE = _Gate()
# Sessions whose next run a wake started, until it begins: True, or the key of the state
# it starts from (ui.replay). A session that closes first leaves its entry; `_start`
# drops those of closed sessions once there are many.
_WOKEN: dict[str, Any] = {}
MAX_WOKEN = 4096
# ui.replay's replay of a whole run on the event loop: (session id, AppSession) ->
# (done, key of the session's state or None). None: every wake starts a run.
DIRECT: Callable[[str, Any], tuple[bool, Any]] | None = None


def _warn_direct(e: Exception) -> None:
    logs.say(logging.getLogger(__name__), "wake.direct",
             "a wake's replay failed; the page runs instead (%r)", e)  # fmt: skip


def woken(session_id: str) -> Any:
    """None when this session's run was not started by a wake; else True or the key of
    the state it started from (once: the flag is taken)."""
    return _WOKEN.pop(session_id, None)


def drop(session_id: str) -> None:
    """The session's browser asked for a run: a wake that has not begun is not its run."""
    _WOKEN.pop(session_id, None)


def session(session_id: str) -> Any:
    """The AppSession of a session of this server that has its browser connected, or
    None (AppTest, bare mode, a closed session)."""
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        info = runtime.get_instance()._session_mgr.get_active_session_info(session_id)
        return info.session if info is not None else None
    except Exception:
        return None


def for_session(session_id: str, stale: Callable[[], bool]) -> Waker | None:
    """A waker for a session named by its id (from the event loop, where no script runs:
    ui.replay), or None where none can be made."""
    try:
        from streamlit import runtime

        return Waker(session_id, runtime.get_instance()._session_mgr, stale)
    except Exception:
        return None


def finished() -> None:
    """Called at the end of every page run (ui.chrome.prev_next): a woken run's turn is
    over, and the next follower in line starts."""
    ctx = get_script_run_ctx()
    if ctx is not None:
        _GATE.finished(ctx.session_id)


def here(stale: Callable[[], bool] = _always) -> Waker | None:
    """A waker for the session running this script, or None where none can be made."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return None
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        sessions = runtime.get_instance()._session_mgr
        info = sessions.get_active_session_info(ctx.session_id)
        if info is None:  # the session closed while this run went on: nothing missing
            return None
        s = info.session
        s._event_loop.call_later, s.request_rerun, s._client_state, s._scriptrunner  # noqa: B018
        s._state.name  # noqa: B018
    except Exception as e:  # any missing piece means: poll instead
        _warn_polling(e)
        return None
    return Waker(ctx.session_id, sessions, stale)


def _warn_polling(e: Exception) -> None:
    """Say that class mode polls because a Streamlit piece is missing: each time it
    matters, at most once a minute (ui.runtime.logs)."""
    _warned.append(repr(e))
    del _warned[:-8]
    logs.say(logging.getLogger(__name__), "wake.polling",
             "class mode falls back to polling: this Streamlit lacks a piece ui.wake "
             "needs to wake a session (%r)", e)  # fmt: skip


def presence() -> Waker | None:
    """This session's connection, for a room to tell whether its teacher is still there
    (`alive()`; calling it reruns nothing), or None where none can be made."""
    return here(stale=_never)
