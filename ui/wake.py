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
warning, once a process (tests/kit/test_streamlit_internals.py checks each piece on the
pinned Streamlit).

A teacher's room keeps `presence()`, a waker that never reruns anything: its `alive()`
(the session still has its browser connected) is how the room knows that its teacher is
there, and that a reloaded or closed tab is not (ui.room's sweep). Where none can be made,
the room goes by when it last heard from the teacher's page instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlit.runtime.scriptrunner import get_script_run_ctx

RETRY_S = 0.05  # how often a wake looks again while the session's run goes on
RETRIES = 200  # for 10 s; past that the page's own slow check (ui.classroom) catches up
_warned: list[str] = []  # the missing piece, once it has been logged


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
        s.request_rerun(s._client_state)  # the state its last run left: page, query string


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
        s = info.session
        s._event_loop.call_later, s.request_rerun, s._client_state, s._scriptrunner  # noqa: B018
        s._state.name  # noqa: B018
    except Exception as e:  # any missing piece means: poll instead
        _warn_polling(e)
        return None
    return Waker(ctx.session_id, sessions, stale)


def _warn_polling(e: Exception) -> None:
    """Say once a process that class mode polls because a Streamlit piece is missing."""
    if not _warned:
        _warned.append(repr(e))
        logging.getLogger(__name__).warning(
            "class mode falls back to polling: this Streamlit lacks a piece ui.wake "
            "needs to wake a session (%r)",
            e,
        )


def presence() -> Waker | None:
    """This session's connection, for a room to tell whether its teacher is still there
    (`alive()`; calling it reruns nothing), or None where none can be made."""
    return here(stale=_never)
