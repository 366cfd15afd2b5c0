"""How a run's messages reach the event loop: in batches, not one hand-over each.

Every element a script draws becomes a ForwardMsg, and Streamlit 1.67 hands each one
from the script's thread to the server's event loop on its own
(`AppSession._on_scriptrunner_event` -> `_call_soon_on_event_loop` ->
`loop.call_soon_threadsafe`): one write to the loop's wake-up pipe and one turn of the
loop per message, about 85 for a follower's /scaling run. All of a server's sessions
share one interpreter lock, so while other sessions' scripts run the loop waits for the
lock at each of those turns, and a follower whose run ended early still got its page
late: with a class of 150, the first followers' runs ended 0.1 s after the teacher's
change and their pages arrived 3 s after it (bench/classroom.py, ui/wake.py's line).

`batched` replaces that one method: the callbacks a session schedules join a queue of
that session, and one turn of the loop runs all that are waiting, in the order they came.
The order among one session's events is kept, and each still runs on the event loop; a
callback that raises is reported through the loop's exception handler, as the loop does,
and the rest still run. The runtime hears once per batch, not once per message, that the
session has messages to send (`_message_enqueued_callback`, which wakes its send loop).

Streamlit has no public hook for this. `install()` checks the method it replaces and
leaves Streamlit as it is, with one logged warning, where it differs
(tests/kit/test_streamlit_internals.py checks it on the pinned Streamlit).
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable
from typing import Any

_LOG = logging.getLogger(__name__)
_ATTR = "_ui_batch"  # the per-session queue, kept on the AppSession
_LOCK = threading.Lock()  # makes each session's queue once


class _Batch:
    """One session's callbacks waiting for the event loop."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.items: list[Callable[[], None]] = []
        self.scheduled = False

    def drain(self, loop: Any, session: Any) -> None:
        """On the event loop: run every callback waiting now, in order.

        Each message a callback queues for the browser tells the runtime so (the
        session's `_message_enqueued_callback`, another wake-up of the loop per message);
        during the batch that is noted, and told once at its end."""
        with self.lock:
            items, self.items, self.scheduled = self.items, [], False
        tell = session.__dict__.get("_message_enqueued_callback")
        told: list[bool] = []
        if tell is not None:
            session._message_enqueued_callback = lambda: told.append(True)
        try:
            for callback in items:
                try:
                    callback()
                except Exception as e:  # what the loop does with a callback that raises
                    loop.call_exception_handler(
                        {"message": "Exception in a batched session callback", "exception": e}
                    )
        finally:
            if tell is not None:
                session._message_enqueued_callback = tell
                if told:
                    tell()


def batched(self: Any, callback: Callable[[], None]) -> None:
    """AppSession._call_soon_on_event_loop, one loop turn per batch of callbacks."""
    batch = self.__dict__.get(_ATTR)
    if batch is None:
        with _LOCK:
            batch = self.__dict__.setdefault(_ATTR, _Batch())
    with batch.lock:
        batch.items.append(callback)
        if batch.scheduled:
            return
        batch.scheduled = True
    loop = self._event_loop
    try:
        loop.call_soon_threadsafe(batch.drain, loop, self)
    except RuntimeError:  # as Streamlit's own: a closed loop drops the callbacks
        with batch.lock:
            batch.items.clear()
            batch.scheduled = False
        if not loop.is_closed():
            raise


def _expected() -> Any:
    """The method `batched` replaces, if it is the one this module was written for."""
    from streamlit.runtime.app_session import AppSession

    own = AppSession.__dict__.get("_call_soon_on_event_loop")
    if own is None or own is batched:
        return own
    params = list(inspect.signature(own).parameters)
    source = inspect.getsource(own)
    if params != ["self", "callback"] or "call_soon_threadsafe(callback)" not in source:
        return None
    caller = inspect.getsource(AppSession._on_scriptrunner_event)
    return own if "self._call_soon_on_event_loop(" in caller else None


def install() -> bool:
    """Batch every session's callbacks from now on; False (and a warning) where the
    pinned Streamlit's method is not there as expected."""
    from streamlit.runtime.app_session import AppSession

    try:
        own = _expected()
    except (ImportError, OSError, TypeError, ValueError) as e:
        own, why = None, repr(e)
    else:
        why = "AppSession._call_soon_on_event_loop is not the expected one"
    if own is None:
        _LOG.warning("ui.delivery: %s; each message reaches the event loop on its own", why)
        return False
    AppSession._call_soon_on_event_loop = batched
    return True


INSTALLED = install()


# ------------------------------------------------------------------ the run's theme
# Every run starts with a "new session" message, and Streamlit fills its six theme
# sections from the config anew each time, walking every config option for each (0.8 ms
# of a woken follower's ~10 ms at 150 followers, bench/classroom.py with py-spy). The
# config is read once when the server starts (.streamlit/config.toml, no file watcher),
# so each section's message is made once and copied after that.
_THEMES: dict[str, Any] = {}


def _theme(populate: Callable[..., None]) -> Callable[..., None]:
    def cached_theme(msg: Any, section: str = "theme") -> None:
        made = _THEMES.get(section)
        if made is None:
            made = type(msg)()
            populate(made, section)
            _THEMES[section] = made
        if made.ByteSize():  # an empty one is left unset, as Streamlit leaves it
            msg.CopyFrom(made)

    cached_theme._ui_theme = True  # type: ignore[attr-defined]
    cached_theme.__wrapped__ = populate  # type: ignore[attr-defined]
    return cached_theme


def install_theme() -> bool:
    """Make each theme section once; False (and a warning) where Streamlit's function
    is not the expected one."""
    from streamlit.runtime import app_session

    own = getattr(app_session, "_populate_theme_msg", None)
    if getattr(own, "_ui_theme", False):
        return True
    try:
        ok = own is not None and list(inspect.signature(own).parameters) == ["msg", "section"]
        ok = ok and "_populate_theme_msg(" in inspect.getsource(
            app_session.AppSession._create_new_session_message
        )
    except (OSError, TypeError, ValueError):
        ok = False
    if not ok:
        _LOG.warning("ui.delivery: no app_session._populate_theme_msg(msg, section); "
                     "each run reads the theme from the config")  # fmt: skip
        return False
    app_session._populate_theme_msg = _theme(own)
    return True


THEME_INSTALLED = install_theme()
