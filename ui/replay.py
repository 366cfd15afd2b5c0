"""Followers at one setting share one run's output (issue 40: 150 followers within 2 s).

When the teacher moves, every following student's page reruns (ui.wake), and with 150
students the server did the same page run 150 times: 26 ms of server CPU each on
/scaling, most of it Streamlit building, hashing and queueing the run's ~65 elements.
But the students' runs are alike: same page, same room view, same session state (bar
each student's own id). So the first woken follower at a state runs the page's body for
real and this module records what the body did; the next woken followers whose state
is the same get that record replayed instead of running the body:

- the messages the body sent (copies, with each download button's deferred CSV
  registered again for this session, so a click downloads through its own session);
- the session state the body left (a deep copy: widget values, their metadata, the
  kit's own keys, the URL's query parameters), with this student's own id kept;
- the end of the run Streamlit would do (`on_script_finished`: triggers reset, stale
  widgets dropped), then `st.stop()`.

What decides "the same": the session's whole state (every field of Streamlit's
SessionState that a run reads: values set by the script, widget values and their keys,
the query parameters) in a canonical form, plus the page. Two sessions with equal state
run the same code on the same caches and room, so the body's output and effects are the
same. The page header (title, class banner with its fragment, the sidebar's share box)
always runs for real: it is where each session listens to the room and says whether it
follows.

A record is only made and used when it is safe to:
- the run was started by ui.wake (`woken()`), not by the student: a click, a form's
  submit or a typed answer always runs the body (its callbacks and the answer it sends);
- no widget trigger is set (a click that arrived together with the wake);
- the body registered no fragment of its own (a replay could not register it) and
  raised nothing (st.rerun, st.switch_page: the recording is dropped);
- the record is at most RECORD_S old, and a new room version makes a new state anyway.

Streamlit has no public API for this, so every internal it touches is checked once
(`_works`), and each missing piece turns sharing off with one logged warning: the pages
then run in full as before (tests/kit/test_replay.py checks the pieces on the pinned
Streamlit). ATTN_SHARED_RUNS=0 turns it off.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import os
import threading
import time
from collections import OrderedDict
from typing import Any

import streamlit as st
from google.protobuf.message import Message
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.scriptrunner_utils.script_run_context import (
    ThreadState,
    get_script_run_ctx,
)
from streamlit.runtime.state.common import TESTING_KEY, WidgetMetadata

from . import wake

ON = os.environ.get("ATTN_SHARED_RUNS", "1") != "0"
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
_LOG = logging.getLogger(__name__)
_lock = threading.Lock()
_records: OrderedDict[Any, _Record] = OrderedDict()
_local = threading.local()  # the recording of this script thread (for add_deferred)
_broken: list[str] = []  # the missing piece, once found
stats = {"recorded": 0, "replayed": 0, "dropped": 0}  # counts, for the tests


@dataclasses.dataclass
class _Record:
    key: Any
    messages: list[ForwardMsg]
    deferred: dict[int, tuple]  # message index -> add_deferred's arguments
    state: dict[str, Any] = dataclasses.field(default_factory=dict)
    widget_ids: frozenset[str] = frozenset()
    fragments: frozenset[str] = frozenset()  # fragment ids known when the body began
    made: float = 0.0


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
def _works(ctx: Any) -> bool:
    """Whether every Streamlit internal this module uses is where it expects it."""
    if _broken:
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
        _LOG.warning("followers run their pages in full: this Streamlit lacks a piece "
                     "ui.replay needs (%r)", e)  # fmt: skip
        return False
    return True


# -------------------------------------------------------------------- recording
def arm() -> None:
    """Start of every page run: note whether ui.wake started it (the flag is taken now,
    so it never outlives this run)."""
    ctx = get_script_run_ctx()
    if ctx is not None:
        setattr(ctx, _ARMED, ctx.cursors if wake.woken(ctx.session_id) else None)


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
        copied = ForwardMsg()
        copied.CopyFrom(msg)
        deferred = getattr(_local, "deferred", None)
        if deferred is not None:  # the deferred CSV this download button registered
            rec.deferred[len(rec.messages)] = deferred
            _local.deferred = None
        rec.messages.append(copied)

    ctx.enqueue = recording
    setattr(ctx, _RECORDING, (rec, send, run))
    _local.recording = rec
    _local.deferred = None


def end() -> None:
    """End of a page's body (ui.chrome.prev_next): keep this run's record, if it made one."""
    ctx = get_script_run_ctx()
    made = getattr(ctx, _RECORDING, None) if ctx is not None else None
    if made is None:
        return
    rec, send, run = made
    ctx.enqueue = send
    delattr(ctx, _RECORDING)
    _local.recording = None
    if ctx.cursors is not run or rec.made < 0:
        stats["dropped"] += 1  # the record began in an earlier run of this context
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
    try:
        from streamlit import runtime

        if not runtime.exists():
            return None
        info = runtime.get_instance()._session_mgr.get_active_session_info(ctx.session_id)
        s = info.session
        s._browser_queue.enqueue, s._message_enqueued_callback, s._call_soon_on_event_loop  # noqa: B018
        s._scriptrunner  # noqa: B018
        return s
    except Exception:
        return None


def _download_button(msg: ForwardMsg):
    el = msg.delta.new_element
    return el.download_button if el.WhichOneof("type") == "download_button" else None


def _patch_add_deferred() -> None:
    """Note, in a recording script thread, what each deferred download registered."""
    try:
        from streamlit.runtime.media_file_manager import MediaFileManager
    except ImportError:
        return
    original = MediaFileManager.add_deferred
    if getattr(original, "_ui_replay", False):
        return

    def add_deferred(self, data_callable, mimetype, coordinates, file_name=None, *,
                     element_id=""):  # fmt: skip
        if getattr(_local, "recording", None) is not None:
            _local.deferred = (data_callable, mimetype, coordinates, file_name, element_id)
        return original(
            self, data_callable, mimetype, coordinates, file_name=file_name,
            element_id=element_id,
        )  # fmt: skip

    add_deferred._ui_replay = True  # type: ignore[attr-defined]
    MediaFileManager.add_deferred = add_deferred


_patch_add_deferred()


def clear() -> None:
    """Forget every record (tests)."""
    with _lock:
        _records.clear()
