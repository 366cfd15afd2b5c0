"""Followers at one setting share one run (issue 40: 150 followers within 2 s).

When the teacher moves, every following student's page reruns (ui.wake), and with 150
students the server did the same page run 150 times: 26 ms of server CPU each on
/scaling, most of it Streamlit building, hashing and queueing the run's ~65 elements.
But the students' runs are alike: same page, same room view, same session state (bar
each student's own id). So the first woken follower at a state runs its page for real,
this module records what the run did, and the next woken followers at the same state
get the record instead of a run. Two records, two ways to use them:

- **The whole run, replayed on the event loop** (`direct`, called by ui.wake before it
  would start a run). Key: the session's state as the next run would start from it
  (SessionState's compacted state, without the student's id) and its page and query
  string; plus, outside the session, the room version the run took (`WORLD`, set by
  ui.classroom: the record is used only while the room still shows that version).
  What the replay does is what the ScriptRunner and AppSession would have done: the
  new-session message, the run's messages (shared, each download button registered
  anew for this session), its fragment registered for this session, its end state
  (a copy, the student's own id kept), Streamlit's end of a run, the finished message,
  the client state the next run starts from; and the room's side of the run
  (`WORLD.replayed`: the student counts as following, the room gets a new waker). No
  script thread starts: a replay costs the event loop ~1 ms.
- **The page body, from the class banner on** (`begin`/`end`): for a woken follower
  whose whole run has no record but whose state after the header matches another's
  (one who came back to the class, a page switch's second half). The header runs for
  real; the rest is replayed in the script thread, then `st.stop()`.

A record is only made and used when it is safe to:
- the run was started by ui.wake (`woken()`), not by the student: a click, a form's
  submit or a typed answer always runs the page (its callbacks and the answer it sends);
- no widget trigger is set (a click that arrived together with the wake);
- nothing in the run that a replay cannot redo for another session: an image or a lazy
  table registered as the session's own file (`_spoil`), a fragment of the body's own
  (for the body's record), st.rerun or st.switch_page (the record is dropped), a message
  after the record was kept;
- the record is at most RECORD_S old, and a new room version makes a new state anyway.

Streamlit has no public API for this, so every internal it touches is checked once
(`_works`, `_direct_works`), and a missing piece turns sharing off with one logged
warning: the pages then run in full as before (tests/kit/test_replay.py checks the
pieces on the pinned Streamlit; tests/kit/test_replay_live.py replays on a live server).
ATTN_SHARED_RUNS=0 turns it off.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import os
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import streamlit as st
from google.protobuf.message import Message
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner_utils.script_run_context import (
    SCRIPT_RUN_CONTEXT_ATTR_NAME,
    ThreadState,
    get_script_run_ctx,
)
from streamlit.runtime.state.common import TESTING_KEY, WidgetMetadata

from . import wake
from .runtime import logs

ON = os.environ.get("ATTN_SHARED_RUNS", "1") != "0"
TRACE = os.environ.get("ATTN_REPLAY_TRACE", "") == "1"
RECORD_S = 10.0  # a record older than this is run afresh (150 followers take ~1.5 s)
MAX_RECORDS = 8  # a few pages/steps at once; each holds one run's messages and state
IDENTITY = ("_ui_room_student",)  # session keys that name the student, not the view
_NOT_STATE = (*IDENTITY, TESTING_KEY)
_FIELDS = (  # SessionState's fields that a replay copies from the record
    "_old_state",
    "_new_session_state",
    "_new_widget_state",
    "_key_id_mapper",
    "query_params",
    "_query_param_bound_widget_ids",
    "_persist_tracker",
)
_ARMED = "_ui_replay_armed"  # ctx attribute: this run (its cursors) was started by a wake
_RECORDING = "_ui_replay_recording"  # ctx attribute: the record being made this run
_WHOLE = "_ui_replay_whole"  # ctx attribute: the whole run's record being made
_CARRY = "_ui_replay_carry"  # ctx attribute: a woken run goes on as the next (a page switch)
_LOG = logging.getLogger(__name__)
_lock = threading.Lock()
_records: OrderedDict[Any, _Record] = OrderedDict()
_local = threading.local()  # the recording of this script thread (for add_deferred)
_broken: list[str] = []  # the missing piece, once found
stats = {
    "recorded": 0, "replayed": 0, "dropped": 0, "whole_recorded": 0, "whole_replayed": 0,
    "mismatched": 0,
}  # fmt: skip


@dataclasses.dataclass
class _Record:
    key: Any
    messages: list[ForwardMsg]
    deferred: dict[int, tuple]  # message index -> add_deferred's arguments
    state: dict[str, Any] = dataclasses.field(default_factory=dict)
    widget_ids: frozenset[str] = frozenset()
    fragments: frozenset[str] = frozenset()  # fragment ids known when the body began
    made: float = 0.0
    bad: bool = False  # it did what a replay cannot redo (an image, a lazy table)


# ------------------------------------------------------------------------ the key
def _canon(v: Any) -> Any:
    """A hashable form of a session value, equal for equal values (sets sorted)."""
    if v is None or isinstance(v, str | int | float | bool | bytes):
        return v
    if isinstance(v, dict):
        return ("d", tuple(sorted(((repr(k), _canon(x)) for k, x in v.items()), key=repr)))
    if isinstance(v, list | tuple):
        return ("l", tuple(_canon(x) for x in v))
    if isinstance(v, set | frozenset):
        return ("s", tuple(sorted((_canon(x) for x in v), key=repr)))
    if isinstance(v, Message):
        return ("p", type(v).__name__, v.SerializeToString(deterministic=True))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return ("c", type(v).__name__, _canon(_fields(v)))
    return ("r", repr(v))  # an object without a value form: equal only to itself


def _fields(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _key(file: str, ss: Any) -> Any:
    """The page and the session's whole state, without the student's id (nor AppTest's
    record of each widget's format function, made anew by every run)."""
    old = {k: v for k, v in ss._old_state.items() if k not in _NOT_STATE}
    new = {k: v for k, v in ss._new_session_state.items() if k not in _NOT_STATE}
    widgets = ss._new_widget_state.states
    return (
        file,
        _canon(old),
        _canon(new),
        _canon({k: getattr(w, "value", w) for k, w in widgets.items()}),
        _canon(ss._key_id_mapper._key_id_mapping),
        _canon(ss.query_params._query_params),
    )


def _triggered(ss: Any) -> bool:
    """Whether a widget's trigger is set: a click or submit arrived with this run."""
    for w in ss._new_widget_state.states.values():
        value = getattr(w, "value", None)
        if isinstance(value, Message):
            kind = value.WhichOneof("value")
            if kind and kind.endswith("trigger_value") and getattr(value, kind):
                return True
    return False


# ---------------------------------------------------------------- checks, once
def _said_broken() -> bool:
    """Whether a missing piece turned sharing off; said each time it matters, at most
    once a minute (ui.runtime.logs), not once a process."""
    if _broken:
        logs.say(_LOG, "replay.broken", "followers run their pages in full: this Streamlit "
                 "lacks a piece ui.replay needs (%s)", _broken[0])  # fmt: skip
    return bool(_broken)


def _works(ctx: Any) -> bool:
    """Whether every Streamlit internal this module uses is where it expects it."""
    if _said_broken():
        return False
    try:
        from streamlit import runtime

        ss = ctx.session_state._state
        for name in _FIELDS:
            getattr(ss, name)
        ss._new_widget_state.states, ss._key_id_mapper._key_id_mapping  # noqa: B018
        ss.query_params._query_params  # noqa: B018
        ctx.session_state._lock, ctx.session_state.on_script_finished  # noqa: B018
        ctx.shared.widget_ids_this_run.snapshot, ctx.shared.new_fragment_ids.snapshot  # noqa: B018
        ctx.enqueue  # noqa: B018
        if runtime.exists():
            runtime.get_instance().media_file_mgr.add_deferred  # noqa: B018
    except Exception as e:
        _broken.append(repr(e))
        return not _said_broken()
    return True


# -------------------------------------------------------------------- recording
def arm() -> None:
    """Start of every page run (app.py's first line, and ui.page_header for a page run on
    its own): note whether ui.wake started it (the flag is taken now, so it never
    outlives this run), and record the whole run when the wake named its state."""
    ctx = get_script_run_ctx()
    if ctx is None or getattr(ctx, _ARMED, None) is ctx.cursors:
        return  # armed already in this run
    abandon()  # records left by an earlier run of this context are not this one's
    _drop_whole(ctx)
    token = wake.woken(ctx.session_id)
    carried = getattr(ctx, _CARRY, None) is not None  # this run goes on a woken one
    if carried:
        delattr(ctx, _CARRY)
    setattr(ctx, _ARMED, ctx.cursors if token is not None or carried else None)
    whole = token is not None and token is not True and ON and not ctx.fragment_ids_this_run
    if whole and _works(ctx) and not _triggered(ctx.session_state._state):
        if _started_as(ctx, token):
            _start_whole(ctx, token)
        else:  # another run took the wake's place (the student's own): not the class's
            setattr(ctx, _ARMED, None)
            stats["mismatched"] += 1
            trace("a woken run started from another state: not recorded")


def _started_as(ctx: Any, key: Any) -> bool:
    """Whether this run starts from the very state its wake named (`_prekey`'s key,
    taken on the event loop before the run): its page and query string, and the same
    session state, widget values included. A run that carries anything of the
    student's (their edit, a click, their own URL) is not the room's run."""
    try:
        _, page, _name, query, state, ids = key
        ss = ctx.session_state._state
        if (page and ctx.page_script_hash != page) or ctx.query_string != query:
            return False
        # The browser's widget states, where the run carries any, are in the state as
        # this run sees it (with the callbacks they called): equal only when unchanged.
        return _canon(_compacted(ss)) == state and _canon(ss._key_id_mapper._key_id_mapping) == ids
    except Exception:  # a key of another shape, a state that cannot be read: no record
        return False


def carry() -> None:
    """Just before a woken run switches page (ui.classroom, the teacher's new page): the
    run that follows on the new page is the same wake's, so its body may be shared too."""
    ctx = get_script_run_ctx()
    if ctx is not None and getattr(ctx, _ARMED, None) is ctx.cursors:
        setattr(ctx, _CARRY, True)


def begin(file: str) -> None:
    """End of a following page's header: replay a record of this state, or record one.

    A replay ends the run here (st.stop); otherwise the body runs and `end()` keeps what
    it did."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    abandon()  # a record left by an earlier run of this context (st.rerun) is not this one
    if not ON or ctx.fragment_ids_this_run or getattr(ctx, _ARMED, None) is not ctx.cursors:
        return
    if not _works(ctx):
        return
    ss = ctx.session_state._state
    if _triggered(ss):
        return
    key = _key(file, ss)
    with _lock:
        rec = _records.get(key)
        if rec is not None and time.monotonic() - rec.made > RECORD_S:
            del _records[key]
            rec = None
    if rec is not None and _replay(ctx, rec):
        wake.finished()
        st.stop()
    _start(ctx, key)


def _start(ctx: Any, key: Any) -> None:
    rec = _Record(key, [], {}, fragments=ctx.shared.new_fragment_ids.snapshot())
    send, run = ctx.enqueue, ctx.cursors  # ctx.reset() gives each run new cursors

    def recording(msg: ForwardMsg) -> None:
        if ctx.cursors is not run:  # another run of this context: not this record's
            rec.made = -1.0
            send(msg)
            return
        send(msg)  # (which gives it its hash: a replay need not hash it again)
        _keep(rec, msg)

    ctx.enqueue = recording
    setattr(ctx, _RECORDING, (rec, send, run))
    _local.recording = rec


def _keep(rec: _Record | _Whole, msg: ForwardMsg) -> None:
    """A sent message, copied into a record (with the deferred CSV a download noted)."""
    copied = ForwardMsg()
    copied.CopyFrom(msg)
    _note_deferred(rec.deferred, len(rec.messages), copied)
    rec.messages.append(copied)


def end() -> None:
    """End of a page's body (ui.chrome.prev_next): keep this run's records, if it made
    any (the body's from the banner on, and the whole run's)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return
    _end_body(ctx)
    _end_whole(ctx)


def _end_body(ctx: Any) -> None:
    made = getattr(ctx, _RECORDING, None)
    if made is None:
        return
    rec, send, run = made
    ctx.enqueue = send
    delattr(ctx, _RECORDING)
    _local.recording = None
    if ctx.cursors is not run or rec.made < 0 or rec.bad:
        stats["dropped"] += 1  # an earlier run of this context's, or one it cannot copy
        return
    if ctx.shared.new_fragment_ids.snapshot() - rec.fragments:
        stats["dropped"] += 1  # a fragment of the body's own: a replay cannot make it
        return
    try:
        with ctx.session_state._lock:
            ss = ctx.session_state._state
            rec.state = {name: _copy(getattr(ss, name)) for name in _FIELDS}
    except Exception:  # a value that cannot be copied: this state runs in full
        stats["dropped"] += 1
        return
    rec.widget_ids = ctx.shared.widget_ids_this_run.snapshot()
    rec.made = time.monotonic()
    with _lock:
        _records[rec.key] = rec
        _records.move_to_end(rec.key)
        while len(_records) > MAX_RECORDS:
            _records.popitem(last=False)
    stats["recorded"] += 1


def abandon() -> None:
    """A run that ends before `end()` (an exception, st.rerun): record nothing."""
    ctx = get_script_run_ctx()
    made = getattr(ctx, _RECORDING, None) if ctx is not None else None
    if made is not None:
        ctx.enqueue = made[1]
        delattr(ctx, _RECORDING)
    _local.recording = None


# ------------------------------------------------------------------ whole runs
# The first woken follower at a state runs its page; its whole run is recorded, from
# app.py's first line to the body's end. A later wake of a follower whose session starts
# from the same state, while the room still shows the version that run took, needs no
# run at all: ui.wake calls `direct` on the event loop, which does to the session what
# that run did (its messages, its session state, its fragment, its downloads, Streamlit's
# start and end of a run) without a script thread. That is the state key `_prekey`: the
# session's whole state as its last run left it, plus its page and query string.


@dataclasses.dataclass
class _Whole:
    key: Any
    page_hash: str
    messages: list[ForwardMsg] = dataclasses.field(default_factory=list)
    deferred: dict[int, tuple] = dataclasses.field(default_factory=dict)
    registered: list[tuple] = dataclasses.field(default_factory=list)  # fragments
    state: dict[str, Any] = dataclasses.field(default_factory=dict)
    widget_ids: frozenset[str] = frozenset()
    fragment_ids: frozenset[str] = frozenset()
    query_string: str = ""
    world: Any = None  # what the run took from outside the session (the room's version)
    made: float = 0.0
    bad: bool = False


class World(Protocol):
    """What a run reads from outside its session (ui.classroom: the room)."""

    def seen(self, get: Callable[[str], Any]) -> Any:
        """At the end of a run, from its session state: what it took (None: not shared)."""

    def now(self, get: Callable[[str], Any]) -> Any:
        """On the event loop, for a session about to be replayed: what a run would take
        now. A record is replayed only where this equals the record's `seen`."""

    def replayed(self, session_id: str, get: Callable[[str], Any]) -> None:
        """After a replay: what the run would have done outside the session."""


WORLD: World | None = None  # set by ui.classroom; without it no whole run is replayed
_wholes: OrderedDict[Any, _Whole] = OrderedDict()


def _prekey(s: Any) -> Any:
    """The state a woken run of AppSession `s` would start from; None where it would
    carry something of the browser's (widget states, a fragment's run)."""
    cs = s._client_state
    if cs.fragment_id or len(cs.widget_states.widgets):
        return None
    ss = s._session_state
    return (
        "whole", cs.page_script_hash, cs.page_name, cs.query_string,
        _canon(_compacted(ss)), _canon(ss._key_id_mapper._key_id_mapping),
    )  # fmt: skip


def _compacted(ss: Any) -> dict[str, Any]:
    """The session state a run starts from: what SessionState._compact_state leaves at
    the start of every run, computed without changing anything. (Between two changes
    some followers ran a fragment, which compacts, and some did not: the same state.)
    The query parameters are not in it: every run reads them anew from the client's
    query string."""
    out = {k: v for k, v in ss._old_state.items() if k not in _NOT_STATE}
    for k in ss._keys():
        if k not in _NOT_STATE:  # (as _compact_state: a widget state without its
            with contextlib.suppress(KeyError):  # metadata is left out)
                out[k] = ss[k]
    return out


def _start_whole(ctx: Any, key: Any) -> None:
    rec = _Whole(key, ctx.page_script_hash)
    send, run = ctx.enqueue, ctx.cursors

    def recording(msg: ForwardMsg) -> None:
        send(msg)
        if ctx.cursors is not run:  # a later run of this context (or st.rerun's)
            rec.bad = rec.bad or not rec.made
            return
        if rec.made:  # this run went on after its record was kept: it is not the run
            _forget(rec)
            return
        _keep(rec, msg)

    ctx.enqueue = recording
    setattr(ctx, _WHOLE, (rec, send, run))
    _local.whole, _local.storage = rec, ctx.fragment_storage


def _drop_whole(ctx: Any) -> None:
    made = getattr(ctx, _WHOLE, None)
    if made is not None:
        ctx.enqueue = made[1]
        delattr(ctx, _WHOLE)
    _local.whole = _local.storage = None


def _end_whole(ctx: Any) -> None:
    made = getattr(ctx, _WHOLE, None)
    if made is None or made[0].made:
        return
    rec, _send_on, run = made
    _local.whole = _local.storage = None
    ok = ctx.cursors is run and not rec.bad and WORLD is not None
    registered = {r[0] for r in rec.registered}
    rec.fragment_ids = ctx.shared.new_fragment_ids.snapshot()
    if ok and registered != set(rec.fragment_ids):
        ok = False  # a fragment registered before the recording began
    if ok:
        try:
            with ctx.session_state._lock:
                ss = ctx.session_state._state
                rec.state = {name: _copy(getattr(ss, name)) for name in _FIELDS}
            rec.world = WORLD.seen(st.session_state.get)
        except Exception:
            ok = False
    if not ok or rec.world is None:
        _drop_whole(ctx)
        stats["dropped"] += 1
        return
    rec.widget_ids = ctx.shared.widget_ids_this_run.snapshot()
    rec.query_string = ctx.query_string
    rec.made = time.monotonic()  # sealed: a message after this drops it (`recording`)
    with _lock:
        _wholes[rec.key] = rec
        _wholes.move_to_end(rec.key)
        while len(_wholes) > MAX_RECORDS:
            _wholes.popitem(last=False)
    stats["whole_recorded"] += 1
    trace("recorded a whole run")


def _forget(rec: _Whole) -> None:
    with _lock:
        if _wholes.get(rec.key) is rec:
            del _wholes[rec.key]


def direct(session_id: str, s: Any) -> tuple[bool, Any]:
    """ui.wake, on the event loop, before it reruns a follower's page: replay a whole run
    recorded from the same state if there is one (True), and the state's key."""
    if not ON or WORLD is None or not _direct_works(s):
        return False, None
    key = _prekey(s)
    if key is None:
        return False, None
    with _lock:
        rec = _wholes.get(key)
        if rec is not None and time.monotonic() - rec.made > RECORD_S:
            del _wholes[key]
            rec = None
    if rec is None or WORLD.now(_getter(s._session_state)) != rec.world:
        return False, key
    _replay_whole(session_id, s, rec)
    return True, key


def _getter(ss: Any) -> Callable[[str], Any]:
    def get(key: str) -> Any:
        try:
            return ss[key]
        except KeyError:
            return None

    return get


def _replay_whole(session_id: str, s: Any, rec: _Whole) -> None:
    """Do to AppSession `s` what the recorded run did, as the ScriptRunner and AppSession
    would have done it, in the order they do it (on the event loop, no run going on)."""
    from streamlit import runtime
    from streamlit.runtime.app_session import AppSessionState
    from streamlit.runtime.scriptrunner_utils.run_descriptor import RunDescriptor
    from streamlit.runtime.state.session_state import SCRIPT_RUN_WITHOUT_ERRORS_KEY

    ss = s._session_state
    own = {k: ss._new_session_state.get(k, ss._old_state.get(k)) for k in IDENTITY}
    state = {name: _copy(value) for name, value in rec.state.items()}  # may raise: nothing done
    rt = runtime.get_instance()
    files, frames = rt.media_file_mgr, rt.dataframe_source_mgr
    # The run's start: the session's files and lazy tables are let go (remove_orphaned
    # below drops what no session holds any more), its queue cleared, a new run begun.
    files.clear_session_refs(session_id)
    frames.clear_session_refs(session_id)
    msgs = _own_downloads(session_id, rec, files)
    run = RunDescriptor.create()
    queue = s._browser_queue
    s._unsettle()
    was_running = s._state == AppSessionState.APP_IS_RUNNING
    s._state = AppSessionState.APP_IS_RUNNING
    s._clear_queue()
    queue.enqueue(s._create_new_session_message(rec.page_hash, run, s._pages_manager.get_pages()))
    if not was_running:
        queue.enqueue(s._create_session_status_changed_message())
    _register(s._fragment_storage, rec)
    for msg in msgs:
        queue.enqueue(msg)
    s._fragment_storage.clear(new_fragment_ids=rec.fragment_ids)
    # The run's end: its session state, Streamlit's end of a run, the finished message.
    for name, value in state.items():
        setattr(ss, name, value)
    for k, v in own.items():
        if v is not None:
            ss._new_session_state[k] = v
    ss._new_session_state[SCRIPT_RUN_WITHOUT_ERRORS_KEY] = True  # (what ss[...] = does)
    with _AsSession(session_id, rec.page_hash):  # it reads the run's page from its context
        ss.on_script_finished(rec.widget_ids)
    s._state = AppSessionState.APP_NOT_RUNNING
    queue.enqueue(s._create_script_finished_message(ForwardMsg.FINISHED_SUCCESSFULLY, run))
    queue.enqueue(s._create_session_status_changed_message())
    files.remove_orphaned_files()
    frames.remove_orphaned_sources()
    _settle(s, rec)
    stats["whole_replayed"] += 1
    trace("replayed a whole run")
    WORLD.replayed(session_id, _getter(ss))


def _register(storage: Any, rec: _Whole) -> None:
    """The run's fragments, registered for this session as the run registered them (a
    fragment holds no session of its own: it finds its run's context when it runs)."""
    storage.clear_outside_wrappers()
    for fragment_id, fragment, parent, target, more in rec.registered:
        storage.register(
            fragment_id, fragment, parent_fragment_id=parent, target_key=target, **more
        )


def _own_downloads(session_id: str, rec: _Whole, files: Any) -> list[ForwardMsg]:
    """The record's messages (shared: nothing on their way to a browser changes them),
    each download button a copy with its CSV registered for this session."""
    from streamlit.runtime.forward_msg_cache import populate_hash_if_needed

    msgs = list(rec.messages)
    with _AsSession(session_id, rec.page_hash):
        for i, (fn, mime, coords, name, element_id) in rec.deferred.items():
            out = ForwardMsg()
            out.CopyFrom(msgs[i])
            _download_button(out).deferred_file_id = files.add_deferred(
                fn, mime, coords, file_name=name, element_id=element_id
            )
            out.hash = ""  # its content changed
            populate_hash_if_needed(out)
            msgs[i] = out
    return msgs


def _settle(s: Any, rec: _Whole) -> None:
    """What the run's script thread leaves behind when it ends: the client state the
    next run starts from, and the runtime told that there is something to send."""
    s._client_state.query_string = rec.query_string
    s._client_state.page_script_hash = rec.page_hash
    s._settle_once_delivered()
    if s._message_enqueued_callback:
        s._message_enqueued_callback()


class _AsSession:
    """On the event loop, what Streamlit reads from the running script's context sees a
    run of this session: its id (add_deferred) and its page, a full run's (SessionState's
    removal of stale widgets at the end of a run)."""

    def __init__(self, session_id: str, page_hash: str = "") -> None:
        self.stand_in = types.SimpleNamespace(
            session_id=session_id, page_script_hash=page_hash, fragment_ids_this_run=None
        )

    def __enter__(self) -> None:
        self.thread = threading.current_thread()
        self.before = getattr(self.thread, SCRIPT_RUN_CONTEXT_ATTR_NAME, None)
        setattr(self.thread, SCRIPT_RUN_CONTEXT_ATTR_NAME, self.stand_in)

    def __exit__(self, *exc: Any) -> None:
        if self.before is None:
            delattr(self.thread, SCRIPT_RUN_CONTEXT_ATTR_NAME)
        else:
            setattr(self.thread, SCRIPT_RUN_CONTEXT_ATTR_NAME, self.before)


_SESSION_PIECES = (
    "_client_state", "_session_state", "_browser_queue", "_fragment_storage",
    "_pages_manager", "_state", "_message_enqueued_callback", "_clear_queue", "_unsettle",
    "_create_new_session_message", "_create_script_finished_message",
    "_create_session_status_changed_message", "_settle_once_delivered",
)  # fmt: skip


def _direct_works(s: Any) -> bool:
    """Whether every piece of an AppSession and the runtime a whole replay uses is there
    (once; a missing one turns replays off, said at most once a minute)."""
    if _said_broken():
        return False
    if _checked:
        return True
    try:
        from streamlit import runtime
        from streamlit.runtime.app_session import AppSessionState
        from streamlit.runtime.scriptrunner_utils.run_descriptor import RunDescriptor
        from streamlit.runtime.state.session_state import SCRIPT_RUN_WITHOUT_ERRORS_KEY

        for name in _SESSION_PIECES:
            getattr(s, name)
        ss = s._session_state
        for name in _FIELDS:
            getattr(ss, name)
        ss.on_script_finished, s._client_state.widget_states.widgets  # noqa: B018
        s._fragment_storage.clear_outside_wrappers, s._fragment_storage.clear  # noqa: B018
        s._pages_manager.get_pages  # noqa: B018
        rt = runtime.get_instance()
        rt.media_file_mgr.clear_session_refs, rt.media_file_mgr.remove_orphaned_files  # noqa: B018
        rt.dataframe_source_mgr.clear_session_refs  # noqa: B018
        rt.dataframe_source_mgr.remove_orphaned_sources  # noqa: B018
        AppSessionState.APP_IS_RUNNING, RunDescriptor.create, SCRIPT_RUN_WITHOUT_ERRORS_KEY  # noqa: B018
    except Exception as e:
        _broken.append(repr(e))
        return not _said_broken()
    _checked.append(True)
    return True


_checked: list[bool] = []


def trace(what: str) -> None:
    """ATTN_REPLAY_TRACE=1: one line on stderr per record and replay (tests, benches)."""
    if TRACE:
        print(f"ui.replay: {what}", file=sys.stderr, flush=True)


_SHARED = (str, int, float, bool, bytes, type(None), Message, WidgetMetadata)


def _copy(value: Any) -> Any:
    """A copy of session state that no other session shares anything mutable with.

    copy.deepcopy took ~1 ms a replay; this copies containers and shares what cannot
    change: plain values, Streamlit's frozen records (widget metadata, Value,
    Serialized: their own docs say immutable) when what they hold cannot change
    either, and protobuf messages held by those."""
    if isinstance(value, _SHARED) or callable(value):
        return value  # widget state protos and metadata: Streamlit never changes them
    kind = type(value)
    if kind is dict:
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind is tuple:
        items = tuple(_copy(v) for v in value)
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if kind in (set, frozenset):
        return kind(value)  # members are hashable: values that do not change
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = getattr(kind, "__dataclass_params__", None)
        fields = _fields(value)
        copied = {k: _copy(v) for k, v in fields.items()}
        if params is not None and params.frozen:
            if all(copied[k] is fields[k] for k in fields):
                return value  # frozen, and nothing in it can change: share it
            return dataclasses.replace(value, **copied)
        out = copy.copy(value)
        for k, v in copied.items():
            setattr(out, k, v)
        return out
    return copy.deepcopy(value)


# ---------------------------------------------------------------------- replay
def _replay(ctx: Any, rec: _Record) -> bool:
    """Send the record's messages and take its state; False if nothing was sent."""
    from streamlit import runtime

    ss = ctx.session_state._state
    own = {k: ss._new_session_state.get(k, ss._old_state.get(k)) for k in IDENTITY}
    try:
        state = {name: _copy(value) for name, value in rec.state.items()}
    except Exception:
        return False
    files = runtime.get_instance().media_file_mgr if runtime.exists() else None
    if rec.deferred and (
        files is None
        or any(_download_button(m) is None for m in (rec.messages[i] for i in rec.deferred))
    ):
        return False  # a download this session could not register: run in full
    out_msgs = []
    for i, msg in enumerate(rec.messages):
        out = ForwardMsg()
        out.CopyFrom(msg)
        args = rec.deferred.get(i)
        if args is not None:
            button = _download_button(out)
            fn, mime, coords, name, element_id = args
            button.deferred_file_id = files.add_deferred(
                fn, mime, coords, file_name=name, element_id=element_id
            )
            out.hash = ""  # its content changed: Streamlit hashes it again
        out_msgs.append(out)
    _send(ctx, out_msgs)
    with ctx.session_state._lock:
        for name, value in state.items():
            setattr(ss, name, value)
        for k, v in own.items():
            if v is not None:
                ss._new_session_state[k] = v
    ctx.session_state.on_script_finished(rec.widget_ids | ctx.shared.widget_ids_this_run.snapshot())
    stats["replayed"] += 1
    return True


def _send(ctx: Any, msgs: list[ForwardMsg]) -> None:
    """The messages, in order, to this session's browser queue, in one loop turn.

    A script's message goes through ctx.enqueue -> ScriptRunner -> a signal ->
    AppSession -> the event loop, ~0.1 ms each on a busy server; a replay of 60 sends
    them as one callback that does the last step, which is what the others arrive at.
    Where a piece is missing (AppTest has no session), each goes the usual way."""
    session = _session(ctx)
    runner = getattr(ctx._enqueue, "__self__", None)
    if session is None or runner is None:
        for msg in msgs:
            ctx.enqueue(msg)
        return
    from streamlit.runtime.forward_msg_cache import (
        create_reference_msg,
        populate_hash_if_needed,
    )

    cached, page = ctx.cached_message_hashes, ThreadState.get().active_script_hash
    for i, msg in enumerate(msgs):  # what ctx.enqueue does to each
        msg.metadata.active_script_hash = page
        populate_hash_if_needed(msg)
        if msg.metadata.cacheable and msg.hash and msg.hash in cached:
            msgs[i] = create_reference_msg(msg)

    def deliver() -> None:  # on the loop: what AppSession does with each, minus the
        if runner is not session._scriptrunner:  # dispatch (a stopped run sends nothing)
            return
        enqueue = session._browser_queue.enqueue
        for msg in msgs:
            enqueue(msg)
        if session._message_enqueued_callback:
            session._message_enqueued_callback()

    session._call_soon_on_event_loop(deliver)


def _session(ctx: Any) -> Any:
    """The run's AppSession, with the pieces the bulk send uses; None without one."""
    s = wake.session(ctx.session_id)
    try:
        s._browser_queue.enqueue, s._message_enqueued_callback, s._call_soon_on_event_loop  # noqa: B018
        s._scriptrunner  # noqa: B018
    except AttributeError:
        return None
    return s


def _download_button(msg: ForwardMsg):
    el = msg.delta.new_element
    return el.download_button if el.WhichOneof("type") == "download_button" else None


def _recording() -> bool:
    """Whether this script thread records a run (its body's or the whole of it)."""
    return (
        getattr(_local, "recording", None) is not None or getattr(_local, "whole", None) is not None
    )


def _spoil() -> None:
    """The run did what a replay cannot redo for another session (an image or a lazy
    table registered for this session alone): neither of its records is kept."""
    for name in ("recording", "whole"):
        rec = getattr(_local, name, None)
        if rec is not None:
            rec.bad = True


def _note_deferred(into: dict[int, tuple], index: int, msg: ForwardMsg) -> None:
    """A download button's message: note the deferred CSV it registered, to register it
    again for each session it is replayed to (a button whose file is unknown spoils)."""
    button = _download_button(msg)
    if button is None or not button.deferred_file_id:
        if button is not None and button.url:
            _spoil()  # its data was registered as this session's file
        return
    args = _deferred_ids().get(button.deferred_file_id)
    if args is None:
        _spoil()
    else:
        into[index] = args


def _deferred_ids() -> dict[str, tuple]:
    ids = getattr(_local, "deferred_ids", None)
    if ids is None:
        ids = _local.deferred_ids = {}
    return ids


def _patch() -> None:
    """Streamlit's registries a run writes to besides its messages and session state:
    deferred downloads are noted (a replay registers them again), fragments are noted
    for the whole run's record (the replay registers them for its session), and an image
    or a lazy table spoils the records (a replay does not redo them)."""
    from streamlit.runtime.dataframe_source_manager import DataframeSourceManager
    from streamlit.runtime.fragment import MemoryFragmentStorage
    from streamlit.runtime.media_file_manager import MediaFileManager

    add_deferred = MediaFileManager.add_deferred
    if getattr(add_deferred, "_ui_replay", False):
        return

    def deferred(self, data_callable, mimetype, coordinates, file_name=None, *,
                 element_id=""):  # fmt: skip
        file_id = add_deferred(
            self, data_callable, mimetype, coordinates, file_name=file_name,
            element_id=element_id,
        )  # fmt: skip
        if _recording():
            ids = _deferred_ids()
            if len(ids) > 4096:  # a thread that recorded long ago: nothing refers to these
                ids.clear()
            ids[file_id] = (data_callable, mimetype, coordinates, file_name, element_id)
        return file_id

    def spoiling(original):
        def spoils(self, *args, **kwargs):
            if _recording():
                _spoil()
            return original(self, *args, **kwargs)

        return spoils

    register = MemoryFragmentStorage.register

    def registering(self, key, fragment, *, parent_fragment_id=None, target_key=None,
                    **kwargs):  # fmt: skip
        whole = getattr(_local, "whole", None)
        if whole is not None and getattr(_local, "storage", None) is self:
            whole.registered.append((key, fragment, parent_fragment_id, target_key, kwargs))
        return register(
            self, key, fragment, parent_fragment_id=parent_fragment_id,
            target_key=target_key, **kwargs,
        )  # fmt: skip

    deferred._ui_replay = True  # type: ignore[attr-defined]
    MediaFileManager.add_deferred = deferred
    MediaFileManager.add = spoiling(MediaFileManager.add)
    DataframeSourceManager.register_source = spoiling(DataframeSourceManager.register_source)
    MemoryFragmentStorage.register_outside_wrapper = spoiling(
        MemoryFragmentStorage.register_outside_wrapper
    )
    MemoryFragmentStorage.register = registering


try:
    _patch()
except (ImportError, AttributeError) as e:  # checked again, loudly, by _works
    _broken.append(repr(e))


def clear() -> None:
    """Forget every record (tests)."""
    with _lock:
        _records.clear()


if ON:
    wake.DIRECT = direct  # every wake first looks for a whole run to replay
