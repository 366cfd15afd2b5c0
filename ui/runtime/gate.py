"""The door every browser message comes through: one session cannot crowd out the rest.

All of a server's sessions run in one Python process and take turns at one interpreter
lock, so a session that asks for runs without waiting for them (a script, a stuck key)
slows every other session's run. Streamlit serves each request at once: with its fast
reruns, each new request stops the session's run and starts another in a new thread. One
websocket sending 160 reruns a second took 80-87 % of a core, and another student's
/scaling rerun went from 109 ms to 1,023 ms at its median (issue 49).

So each session has an allowance of runs (`Budget`, a token bucket: BURST at once, then
RATE a second), refilled as time passes. A request within it goes through as before.
Past it the session is *slowed*: its requests are held, and a later one replaces an
earlier (only its latest runs: a browser sends every widget's state with each request,
and a click in a replaced request is kept); the held request starts once the session's
own run has ended and has been idle for SLOW times as long as that run took (at most
MAX_GAP s), so a flooding session uses at most a quarter of the interpreter; one still
flooding after SLOWED_S gets one run each MAX_GAP s (a held key's latest value still
arrives every two seconds, the last one within two seconds of letting go). The run
that then starts says so on the page (`slowed()`, ui.chrome: content/kit.md's
`runtime.slowed`). Reruns that a room's wake starts (ui.wake) do not come through this
door and cost nothing here.

Any rerun request from the browser also ends a wake that has not begun its run
(ui.wake.drop): a run the student asked for is the student's, and is never recorded for
other followers (ui.replay).

And one message no visitor may send: `clear_cache`, which empties every st.cache_data and
st.cache_resource of the server (the rooms, the models) for every session. Streamlit's
menu offers it to developers; it is refused unless `global.developmentMode` is on.

Streamlit has no public hook for any of this: `install()` wraps
`AppSession.handle_backmsg`, passing every argument through, and is a no-op (with one
log line) where that method is missing (tests/kit/test_runtime_gate.py).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

from . import logs

BURST = float(os.environ.get("ATTN_RERUN_BURST", "12"))  # runs a session may ask at once
RATE = float(os.environ.get("ATTN_RERUN_RATE", "4"))  # ... and then a second
SLOW = 3.0  # a slowed session waits this many times its last run before the next
MIN_GAP = 1.0 / RATE if RATE > 0 else 0.25  # ... at least this long
MAX_GAP = 2.0  # ... and at most this long
POLL_S = 0.05  # how often a held request looks whether the session's run has ended
SLOWED_S = 5.0  # a session counts as slowed this long after its last held request
_ATTR = "_ui_budget"  # the Budget, kept on the AppSession
_LOG = logging.getLogger(__name__)
_SLOWED: dict[str, tuple[int, float]] = {}  # session id: (requests held, gap) to say once
_LOCK = threading.Lock()
stats = {"passed": 0, "held": 0, "replaced": 0, "released": 0, "cache_refused": 0}


@dataclass
class Budget:
    """One session's allowance of runs, and the request it holds while slowed."""

    tokens: float = BURST
    at: float = 0.0  # when `tokens` was counted
    pending: Any = None  # the latest held BackMsg (a rerun_script)
    held: int = 0  # requests held since the last one went through
    timer: Any = None  # the loop's handle that will look at `pending` again
    started: float = 0.0  # when this session's last request went through
    took: float = 0.1  # how long its last run took, as last seen
    watching: bool = False  # a held request saw the run going since `started`
    ended: float = 0.0  # when its last run ended, as seen or estimated
    slowed_until: float = 0.0  # a request before this waits its turn, tokens or not
    slowed_since: float | None = None  # when this stretch of being slowed began

    def refill(self, now: float) -> None:
        self.tokens = min(BURST, self.tokens + max(0.0, now - self.at) * RATE)
        self.at = now


def _budget(session: Any, now: float) -> Budget:
    budget = session.__dict__.get(_ATTR)
    if budget is None:
        budget = session.__dict__[_ATTR] = Budget(at=now)
    return budget


def _running(session: Any) -> bool:
    return session._scriptrunner is not None


def _merge(old: Any, new: Any) -> Any:
    """The newer rerun request, keeping a click (a trigger) that only the older carried
    (a browser sends every widget's state with each request, a trigger only once), and a
    whole run where either asked for one (not just a fragment's)."""
    a, b = old.rerun_script, new.rerun_script
    if b.fragment_id and a.fragment_id != b.fragment_id:
        b.fragment_id, b.is_auto_rerun = "", False
    clicked = {}
    for w in old.rerun_script.widget_states.widgets:
        kind = w.WhichOneof("value")
        if kind and kind.endswith("trigger_value") and getattr(w, kind):
            clicked[w.id] = w
    if not clicked:
        return new
    widgets = new.rerun_script.widget_states.widgets
    for i, w in enumerate(widgets):
        if w.id in clicked:
            kind = w.WhichOneof("value")
            if not (kind and kind.endswith("trigger_value") and getattr(w, kind)):
                widgets[i].CopyFrom(clicked[w.id])
            clicked.pop(w.id)
    for w in clicked.values():
        widgets.add().CopyFrom(w)
    return new


def admit(session: Any, msg: Any, handle: Any) -> bool:
    """A rerun request from `session`'s browser: True to handle it now; False when it is
    held (it, or a later one, goes through `handle(session, msg)` in its turn)."""
    from .. import wake

    wake.drop(session.id)  # the student's own run: never recorded for the class
    now = time.monotonic()
    budget = _budget(session, now)
    budget.refill(now)
    if budget.pending is None and budget.tokens >= 1 and now >= budget.slowed_until:
        budget.tokens -= 1
        budget.started, budget.watching = now, False
        budget.slowed_since = None
        stats["passed"] += 1
        return True
    if budget.pending is not None:
        msg = _merge(budget.pending, msg)
        stats["replaced"] += 1
    budget.pending = msg
    budget.held += 1
    if budget.slowed_since is None:
        budget.slowed_since = now
    stats["held"] += 1
    if budget.timer is None:
        budget.timer = session._event_loop.call_soon(_release, session, budget, handle)
    return False


def _release(session: Any, budget: Budget, handle: Any) -> None:
    """On the event loop: start the held request once its turn has come."""
    budget.timer = None
    if budget.pending is None or session._state.name == "SHUTDOWN_REQUESTED":
        budget.pending = None
        return
    loop, now = session._event_loop, time.monotonic()
    if _running(session):  # the session's own run goes on: its turn comes after it
        budget.watching = True
        budget.timer = loop.call_later(POLL_S, _release, session, budget, handle)
        return
    if budget.watching:  # seen going, now ended: how long it took
        budget.watching = False
        budget.ended, budget.took = now, now - budget.started
    elif budget.ended < budget.started:  # it ended unwatched: as long as the last one
        budget.ended = min(now, budget.started + budget.took)
    gap = min(MAX_GAP, max(MIN_GAP, SLOW * budget.took))
    if budget.slowed_since is not None and now - budget.slowed_since > SLOWED_S:
        gap = MAX_GAP  # still flooding after SLOWED_S: one run each MAX_GAP s
    budget.refill(now)
    wait_token = (1 - budget.tokens) / RATE if budget.tokens < 1 and RATE > 0 else 0.0
    ready = max(budget.ended + gap, now + wait_token)
    if now < ready:
        budget.timer = loop.call_later(ready - now, _release, session, budget, handle)
        return
    msg, held = budget.pending, budget.held
    budget.pending, budget.held = None, 0
    budget.tokens = max(0.0, budget.tokens - 1)
    budget.started, budget.watching = now, False
    budget.slowed_until = now + SLOWED_S  # the next requests queue too, for a while
    with _LOCK:
        _SLOWED[session.id] = (held, gap)
    stats["released"] += 1
    handle(session, msg)


def slowed(session_id: str) -> tuple[int, float] | None:
    """(requests held, seconds between runs) when this run is one the door held back:
    once (the page says so, content/kit.md's runtime.slowed)."""
    with _LOCK:
        return _SLOWED.pop(session_id, None)


def _dev() -> bool:
    from streamlit import config

    return bool(config.get_option("global.developmentMode"))


def gated(handle_backmsg: Any) -> Any:
    """AppSession.handle_backmsg behind the door."""

    def handle(self: Any, msg: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            kind = msg.WhichOneof("type")
        except Exception:  # not a BackMsg: Streamlit's own handling says so
            return handle_backmsg(self, msg, *args, **kwargs)
        if kind == "clear_cache" and not _dev():
            stats["cache_refused"] += 1
            logs.say(_LOG, "cache", "a browser asked to clear every cache of the server; "
                     "refused (only in development mode)")  # fmt: skip
            return None
        if kind == "rerun_script" and not admit(
            self, msg, lambda s, m: handle_backmsg(s, m, *args, **kwargs)
        ):
            return None
        return handle_backmsg(self, msg, *args, **kwargs)

    handle._ui_gate = True  # type: ignore[attr-defined]
    handle.__wrapped__ = handle_backmsg  # type: ignore[attr-defined]
    return handle


def install() -> bool:
    """Put every session's browser messages behind the door; False (and a log line)
    where Streamlit's AppSession has no handle_backmsg to wrap."""
    from streamlit.runtime.app_session import AppSession

    own = AppSession.__dict__.get("handle_backmsg")
    if own is None or not callable(own):
        logs.say(_LOG, "gate", "AppSession.handle_backmsg is missing: no rerun budget, "
                 "and a browser may clear the server's caches")  # fmt: skip
        return False
    if not getattr(own, "_ui_gate", False):
        AppSession.handle_backmsg = gated(own)
    return True


def uninstall() -> None:
    """Streamlit's own handle_backmsg back (tests)."""
    from streamlit.runtime.app_session import AppSession

    own = AppSession.__dict__.get("handle_backmsg")
    if getattr(own, "_ui_gate", False):
        AppSession.handle_backmsg = own.__wrapped__
