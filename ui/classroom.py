"""Class mode (`?room=…`): the teacher's session drives, the students' sessions follow.

- `?present=1&room=new` on any page opens a room. The session keeps the room's secret
  token in its session state (never in the URL, which gets the room's short code). Every
  ui control that session draws publishes its value (`publish`); the end of the run
  (`commit`, from ui.prev_next; a fragment's run commits at once) makes it public.
- `?room=CODE` joins. The page header (`sync`) takes the room's page and values whenever
  the room's version moved. A following session leaves the room a waker (ui.wake): each
  new version reruns its page on the server at once, so nothing polls. Where no waker
  can be made, a small fragment asks for the version every POLL_S seconds instead. A
  student who moves a control (`took_wheel`, every ui control's on_change) or goes to
  another page stops following until they rejoin.
- The teacher can put a page's exercise to the class: the students' answers are counted
  without names and shown beside the computed answer once the teacher reveals it.
- A room belongs to its teacher's session (ui.room): a thread sweeps the rooms every
  SWEEP_S, so when that session's tab reloads or closes the followers are told within
  seconds, and the teacher takes the class back from any tab with the key shown to them
  when the room opened ("I am the teacher"). Rooms, joins, key tries and answers are
  bounded per client: the connection's network address (ui.clients: a proxy's
  X-Forwarded-For only where the operator trusts that proxy), else the browser session.
"""

from __future__ import annotations

import csv
import io
import logging
import re
import secrets
import statistics
import threading
import time
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from . import clients, content, controls, events, replay, wake
from . import room as _room
from .lesson import LESSONS
from .room import CODE_LEN, RECLAIM_S, Opened, Question, Refused, Rooms, normal_code, normal_key
from .share import presenting

_ROOM = "_ui_room"  # session_state: this session's room (code, token or follow state)
_STUDENT = "_ui_room_student"  # session_state: an anonymous id, to count each student once
_SAID = "_ui_room_said"  # session_state: this run's notes about the room link
_DOOR = "_ui_room_door"  # session_state: what the last try of a teacher's key came to
SWEEP_S = 2.0  # how often the rooms look for teachers that have gone (ui.room.Rooms.sweep)
POLL_S = 1.0  # how often a following page asks for news when it cannot be woken
CHECK_S = 30.0  # how often a woken page asks anyway (a class that expired sends no wake)
COUNT_S = 3.0  # how often the teacher's page refreshes its counts
_ECHO_WARNED: list[str] = []  # _echo's missing Streamlit piece, once it has been logged
_STORE: weakref.ref | None = None  # rooms()'s store, for the event loop (no script there)
stats = {"mended": 0}  # follower runs sent round again by commit() (tests, benches)


@st.cache_resource(max_entries=1)
def rooms() -> Rooms:
    """The server's rooms (one process serves every session, as on Community Cloud),
    with the thread that sweeps them while they exist."""
    global _STORE
    store = Rooms()
    ref = _STORE = weakref.ref(store)
    threading.Thread(target=_sweep, args=(ref,), name="ui-rooms-sweep", daemon=True).start()
    return store


def _sweep(ref: weakref.ref) -> None:
    while (store := ref()) is not None:
        try:
            store.sweep()
        except Exception:  # a sweep that failed tries again; the rooms stay as they were
            logging.getLogger(__name__).exception("sweeping the rooms failed")
        del store
        time.sleep(SWEEP_S)


def _state() -> dict | None:
    return st.session_state.get(_ROOM)


def teaching() -> bool:
    """Whether this session drives a room."""
    state = _state()
    return bool(state and state.get("token"))


def _student() -> str:
    return st.session_state.setdefault(_STUDENT, secrets.token_hex(8))


def say(name: str, /, **fields: Any) -> str:
    """Class mode's sentence `name` (content/kit.md, `classroom.<name>`), fields filled."""
    return content.words("kit", f"classroom.{name}", **fields)


def _say(key: str, **fields: Any) -> None:
    st.session_state.setdefault(_SAID, []).append(say(key, **fields))


def _client() -> str:
    """Who a bound counts against: the connection's network address, a proxy's header
    only where the operator trusts that proxy (ui.clients); else (on localhost, in
    AppTest) this browser session."""
    address = clients.connected()
    return f"address {address}" if address else f"session {_student()}"


# ---------------------------------------------------------------- joining and following
def _drop(state: dict | None) -> None:
    """This session leaves its room: a teacher's room ends (a session holds one room at
    a time), a follower stops being woken by it."""
    if state and state.get("token"):
        rooms().close(state["code"], state["token"])
    elif state:
        state["following"] = False  # a wake already on its way reruns nothing (_listen)
        rooms().unlisten(state["code"], _student())


def _teach(opened: Opened, show_key: bool) -> None:
    st.session_state[_ROOM] = {
        "code": opened.code, "token": opened.token, "key": opened.key, "show_key": show_key,
    }  # fmt: skip
    st.query_params["room"] = opened.code


def _open_room(state: dict | None) -> None:
    _drop(state)
    opened = rooms().open(_client(), wake.presence())
    if isinstance(opened, Refused):
        st.session_state.pop(_ROOM, None)
        del st.query_params["room"]
        _say(opened.value, **({"n": _room.ROOMS_PER_CLIENT} if opened.value == "client" else {}))
        return
    _teach(opened, show_key=False)  # never on the projector unasked (issue 50)


def _read_link() -> None:
    """Act on the link's `room`: `new` opens a room, a code joins one."""
    raw = st.query_params.get_all("room")
    if not raw:
        return
    asked, state = raw[-1], _state()
    shown = controls.safe_text(asked)
    if len(raw) > 1:
        _say("repeated", n=len(raw), shown=shown)
    if asked.strip().lower() == "new":
        _open_room(state)
        return
    code = normal_code(asked)
    if code is None:
        _say("not_code", shown=shown, n=CODE_LEN)
        return
    if state and state["code"] == code:
        return
    # Rate-limited: codes cannot be guessed quickly; a join link's ticket always gets in.
    join = rooms().join(code, _client(), st.query_params.get("ticket"))
    if not join.ok:
        _say("slow", s=join.wait_s) if join.slow else _say("no_class", code=code)
        return
    _drop(state)
    _follow_room(code)


def _follow_room(code: str) -> dict:
    state = {"code": code, "following": True, "seen": -1, "qid": 0}
    st.session_state[_ROOM] = state
    st.query_params["room"] = code  # one clean parameter, in capitals
    st.query_params.pop("ticket", None)  # used: the student's own links do not pass it on
    return state


def join_box() -> None:
    """Home: "Join a class", a box for the code a teacher's join screen shows (a wrong
    code says so above and leaves the box to try again); nothing for a session in a class."""
    if _state() is not None:
        return
    form = st.form("_ui_join", border=True)
    with form, st.container(horizontal=True, vertical_alignment="bottom"):
        st.text_input(
            "Join a class: its code", key="_ui_join_code", max_chars=16, placeholder="ABC DEF",
            help="The six letters and digits on your teacher's screen",
        )  # fmt: skip
        st.form_submit_button("Join", on_click=_join_typed, icon=":material/group_add:",
                              type="primary")  # fmt: skip


def _join_typed() -> None:
    """The join box's callback: the code goes into the link, which the run reads."""
    typed = str(st.session_state.get("_ui_join_code") or "").strip()[:16]
    if typed:
        st.query_params["room"] = typed


def _ended(state: dict) -> None:
    st.session_state.pop(_ROOM, None)
    if st.query_params.get("room") == state["code"]:
        del st.query_params["room"]
    _say("ended", code=state["code"])


def _lost(state: dict) -> dict | None:
    """A teacher's token no longer drives: another tab took the class back with the
    key (this page follows it), or the class has ended."""
    if not rooms().exists(state["code"]):
        _ended(state)
        return None
    _say("taken", code=state["code"])
    return _follow_room(state["code"])


def sync(url_path: str) -> None:
    """Start of every page run: read the link, and bring a following page up to the room."""
    state = _state()
    mending = bool(state and state.pop("mending", False))  # this run is a mend's (commit)
    if state is not None:
        state["a_mend"] = mending
    if not mending:  # a mend's run keeps what the run before it said
        st.session_state.pop(_SAID, None)
    _read_link()
    state = _state()
    if state is not None and state.get("token"):
        if rooms().show(state["code"], state["token"], url_path):
            state["page"] = url_path
            return
        state = _lost(state)
    if state is None:
        return
    state["page"] = url_path
    state.pop("drawn", None)  # this run's controls note their values again (publish)
    if state.get("console"):  # the teacher's other device: its panel, no following
        if not rooms().exists(state["code"]):
            _ended(state)
        elif not rooms().allowed(state["code"], state["console"]):
            st.session_state.pop(_ROOM, None)
            _say("console_closed", code=state["code"])
            _follow_room(state["code"])
        return
    view = rooms().view(
        state["code"], _student(), count=False, page=url_path, following=state["following"]
    )
    if view is None:
        _ended(state)
        return
    state["gone"], state["paused"] = view.gone, view.paused
    if state["following"]:
        _follow(state, view, url_path)
        _listen(state)


def _listen(state: dict) -> None:
    """A following page leaves the room its waker; one that stopped takes it back."""
    if not state["following"]:
        rooms().unlisten(state["code"], _student())
        state["woken"] = False
        return
    code, store = state["code"], rooms()
    waker = wake.here(stale=lambda: state["following"] and store.version(code) != state["seen"])
    state["woken"] = bool(waker and store.listen(code, _student(), waker, state["seen"]))


def _follow(state: dict, view, url_path: str) -> None:
    if view.version == state["seen"]:
        if view.page is not None and view.page != url_path:
            state["following"] = False  # the room did not move: the student went elsewhere
        return
    if view.page is not None and view.page != url_path:
        target = next((x for x in LESSONS if x.url_path == view.page), None)
        if target is not None:
            replay.carry()  # the new page's run is this wake's too: it may be shared
            # The teacher's parameters in the new page's URL: its controls are new there,
            # and Streamlit writes a control's value into the URL only once it existed.
            link = {k: v for k, v in view.link.items() if v is not None}
            st.switch_page(target.file, query_params={**link, "room": state["code"]})
    # A control new on this page does not write the room's value into the URL (commit).
    state["fresh"] = any(key not in st.session_state for key in view.values)
    for key, value in view.values.items():
        st.session_state[key] = value  # before any widget of this run exists
    state["values"] = view.values  # (a copy): what commit() checks the page shows
    state["link"] = view.link  # ... and what its URL and links must carry
    q = view.question
    if q is not None and q.id != state["qid"]:  # a new question: everyone starts it afresh
        for key in (f"_predict_{q.key}", f"pick-{q.key}", f"guess-{q.key}"):
            st.session_state.pop(key, None)
        state["qid"] = q.id
    state["seen"] = view.version


def publish(key: str, value: Any) -> None:
    """A ui control's value: the room's, when this session drives one; noted, when it
    follows one (`commit` checks that the page shows the teacher's values)."""
    state = _state()
    if not state:
        return
    if not state.get("token"):
        if state.get("following"):
            state.setdefault("drawn", {})[key] = value
        return
    store = rooms()
    store.set(state["code"], state["token"], key, value)
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:  # a fragment's run ends without
        store.commit(state["code"], state["token"])  # reaching the page's commit()


# A page's own words in its URL, not the class's values.
OWN_PARAMS = frozenset({"room", "present", "ticket"})


def _url(keys: Any = None) -> dict[str, str]:
    """This run's URL parameters (the last of a repeated one): those in `keys`, or all but
    OWN_PARAMS."""
    qp = st.query_params
    return {
        k: qp.get_all(k)[-1]
        for k in qp
        if (k in keys if keys is not None else k not in OWN_PARAMS) and qp.get_all(k)
    }


def commit() -> None:
    """End of a page run: what the teacher's page shows now becomes the room's view, its
    URL parameters with it. On a following page, every control shows the teacher's value
    and the URL (so the links and the copy box) carries the teacher's parameters: a page
    whose URL says otherwise (its Back button, where Streamlit lets the URL win; a join
    link with the student's own values, where a new control does not write the URL) is
    sent round once more to take the room's values as a change, which Streamlit writes
    into the URL (never twice in a row)."""
    state = _state()
    if state and state.get("token"):
        rooms().set_link(state["code"], state["token"], _url())
        rooms().commit(state["code"], state["token"])
        return
    drawn = state.pop("drawn", None) if state else None
    if not state or not state.get("following") or state.get("console"):
        return
    room = state.get("values") or {}
    link = state.get("link") or {}
    keys = [k for k in room if drawn and k in drawn]  # the teacher's controls drawn here
    url = _url(keys)
    shown = any(not _same(drawn[k], room[k]) for k in keys)
    # The URL says what the teacher's does: a parameter it holds says the teacher's (a
    # parameter too long to pass on, None, is not compared), and after a join, where the
    # controls were new, it holds every one the teacher's holds. (Only then: a teacher's
    # URL that spells out a default would send every follower round on every change, as
    # Streamlit leaves a default out of a follower's URL.)
    said = any(
        k in url
        and link.get(k, "") is not None
        and not _same_text(url[k], link.get(k))
        and not _same_text(url[k], str(room[k]))  # it says what is shown (a lagging link)
        for k in keys
    )
    fresh = state.pop("fresh", False)
    said |= fresh and any(link.get(k) is not None and k not in url for k in keys)
    # Never twice in a row: a mend's own run that still differs stays as it is.
    if (shown or said) and not state.get("a_mend"):
        state["seen"], state["mending"] = -1, True  # -1: take the view again
        stats["mended"] += 1
        replay.trace("a follower's page or URL showed its own value: run again")
        if fresh:
            # A join link's own value: Streamlit writes a control's value into the URL
            # only in a run after the control's first whole run, and a rerun asked from
            # inside that run comes too soon. Wake the page once this run has ended.
            waker = wake.here(stale=lambda: state.get("following") and state["seen"] == -1)
            if waker is not None and waker():
                return
        st.rerun()


def _same_text(a: str | None, b: str | None) -> bool:
    """Two URL values that mean the same: equal, or the same number (a hand-typed
    `tokens=020` is the 20 Streamlit writes), or the same yes/no."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    try:
        x, y = float(a), float(b)
    except ValueError:
        return a.strip().lower() == b.strip().lower()
    return x == y or (x != x and y != y)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # values that do not compare (arrays): not this check's business
        return True


def _echo() -> bool:
    """Whether this on_change came with a run its control cannot have started.

    A following page polls from a fragment; that poll can leave for the server while the
    teacher's new values are still on their way to the page, and then it carries the
    controls' old values, which Streamlit takes for moves. A student's own move starts a
    full run, or the run of the fragment the control is drawn in; so a change that
    arrives with the run of some other fragment is that echo. (ThreadState is Streamlit
    1.67's own record of the fragment a callback's widget belongs to.)"""
    ctx = get_script_run_ctx()
    ids = ctx.fragment_ids_this_run if ctx is not None else None
    if not ids:
        return False
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        own = ThreadState.get().fragment_id
    except (ImportError, AttributeError) as e:  # every change then counts as a move
        if not _ECHO_WARNED:
            _ECHO_WARNED.append(repr(e))
            logging.getLogger(__name__).warning(
                "this Streamlit has no ThreadState.get().fragment_id: a poll's echo of old "
                "values will stop a student following (%r)",
                e,
            )
        return False
    return own not in ids


def took_wheel(key: str) -> None:
    """Every ui control's on_change: a student who moves one explores on their own
    (`key` names the control; an echo of an old value is not a move, see `_echo`)."""
    state = _state()
    if not state or state.get("token") or not state.get("following"):
        return
    if _echo():
        state["seen"] = -1  # the poll reruns the page, which takes the room's view again
        return
    state["following"] = False
    rooms().unlisten(state["code"], _student())


def _rejoin() -> None:
    state = _state()
    if state:
        state["following"], state["seen"] = True, -1  # -1: take the room's view at once


def _leave() -> None:
    state = st.session_state.pop(_ROOM, None)
    if state and not state.get("token"):
        rooms().unlisten(state["code"], _student())
    st.query_params.pop("room", None)


def _end() -> None:
    state = _state()
    if state and (state.get("token") or state.get("console")):
        rooms().close(state["code"], state.get("token") or state["console"])
    _leave()


# ---------------------------------------------------------------------------- banners
def _following(code: str) -> None:
    (_woken if (_state() or {}).get("woken") else _polled)(code)


@st.fragment(run_every=CHECK_S)
def _woken(code: str) -> None:
    _check(code, None)


@st.fragment(run_every=POLL_S)
def _polled(code: str) -> None:
    _check(code, _student())


def _check(code: str, student: str | None) -> None:
    """The banner, after asking the room for its version (`student` counts as polling)."""
    state = _state() or {}
    if rooms().version(code, student) != state.get("seen"):
        st.rerun()  # the teacher changed something (or the class ended): the whole page
    if state.get("gone"):  # the teacher's tab reloaded or closed (ui.room's sweep)
        minutes = RECLAIM_S / 60
        st.warning(say("gone", code=code, minutes=minutes), icon=":material/podcasts:")
    elif state.get("paused"):
        st.warning(say("paused", code=code), icon=":material/pause_circle:")
    else:
        st.info(say("following", code=code), icon=":material/podcasts:")


def _exploring(code: str, row) -> None:
    text, join, leave = row
    text.info(say("exploring", code=code), icon=":material/explore:")
    join.button(
        "Rejoin the class", on_click=_rejoin, type="primary", icon=":material/group_add:",
        key="_ui_room_rejoin",
    )  # fmt: skip
    leave.button("Leave the class", on_click=_leave, type="tertiary", key="_ui_room_leave")


def _door(code: str) -> None:
    """For a teacher whose tab reloaded, or who moves to another tab or device: the key
    takes the class back here, or opens the teacher's console here while the projector
    keeps the class (rate-limited with the joins, so a key cannot be guessed either). A
    small link on a student's screen, not a button across it."""
    door = st.popover("I am the teacher", icon=":material/key:", type="tertiary")
    with door, st.form("_ui_room_reclaim", border=False):
        st.text_input("Teacher key", key="_ui_room_key", type="password")
        st.form_submit_button(
            "Take the class back to this tab", type="primary", on_click=_reclaim, args=(code,)
        )
        st.form_submit_button(
            "Open the teacher's console here", on_click=_open_console, args=(code,),
            help="On your phone: reveal, close, pause and end while the projector keeps "
            "the lesson",
        )  # fmt: skip
    door.caption(say("console_no_key"))
    door.button(
        "Ask the teacher's screen to let this device in", on_click=_ask_console,
        args=(code,), icon=":material/smartphone:", key="_ui_room_ask_console",
    )  # fmt: skip


def _ask_console(code: str) -> None:
    """The door's keyless way in: the teacher's own screen allows this device's number."""
    state = _state()
    if not state or state.get("token") or state.get("console"):
        return
    got = rooms().ask_console(code, _client())
    if isinstance(got, tuple):
        state["asking"] = list(got)
        return
    st.session_state[_DOOR] = (
        say("slow", s=got.wait_s) if got.slow
        else say("console_full") if rooms().exists(code)
        else say("ended", code=code)
    )  # fmt: skip


@st.fragment(run_every=2.0)
def _asking(code: str, rid: str, number: str) -> None:
    """This device waits for the teacher to allow its number; then it is a console."""
    got = rooms().paired(code, rid)
    state = _state()
    if state is None or state.get("asking") != [rid, number]:
        return
    if isinstance(got, str):
        _drop(state)  # a console, not a student: no longer woken or counted
        st.session_state[_ROOM] = {"code": code, "console": got, "following": False}
        st.rerun(scope="app")
    if got is False:
        state.pop("asking", None)
        st.session_state[_DOOR] = say("console_refused", code=code)  # kept till shown
        st.rerun(scope="app")
    box = st.container(border=True)
    box.markdown(say("console_asking", number=number))
    box.button("Stop asking", on_click=lambda: state.pop("asking", None),
               key="_ui_room_stop_asking")  # fmt: skip


def _open_console(code: str) -> None:
    """The door's other button: this device becomes the teacher's console."""
    state = _state()
    if not state or state.get("token"):
        return
    typed = st.session_state.pop("_ui_room_key", "")
    got = rooms().console(code, normal_key(typed) or "", _client())
    if isinstance(got, str):
        following = state.get("following")
        _drop(state)
        st.session_state[_ROOM] = {"code": code, "console": got, "following": following}
        return
    st.session_state[_DOOR] = say("slow", s=got.wait_s) if got.slow else say("wrong_key")


def _reclaim(code: str) -> None:
    """The door's callback, before the run it starts: that run is the teacher's."""
    state = _state()
    if not state or state.get("token"):
        return
    typed = st.session_state.pop("_ui_room_key", "")
    following = state["following"]
    _drop(state)  # a follower no more: the reclaim's wake must not rerun this page
    got = rooms().reclaim(code, normal_key(typed) or "", _client(), wake.presence())
    if isinstance(got, Opened):
        _teach(got, show_key=False)
        return
    state["following"] = following  # a wrong key: the page goes on as it was
    _listen(state)
    st.session_state[_DOOR] = say("slow", s=got.wait_s) if got.slow else say("wrong_key")


def _key_box(state: dict) -> None:
    """The teacher's key, on request, until hidden; never in presenter mode (that screen
    is the projector's). "New key" makes the old one take nothing back."""
    box = st.container(border=True)
    box.markdown(say("key", key=state["key"], minutes=RECLAIM_S / 60))
    left, right = box.columns(2)
    left.button("Hide the key", on_click=_show_key, args=(False,), key="_ui_room_hide_key")
    right.button(
        "New key", on_click=_new_key, icon=":material/autorenew:", type="tertiary",
        key="_ui_room_new_key", help="The old key takes the class back no more",
    )  # fmt: skip


def _new_key() -> None:
    state = _state()
    if state and state.get("token"):
        key = rooms().new_key(state["code"], state["token"])
        if key:
            state["key"], state["show_key"] = key, True


def _show_key(show: bool) -> None:
    state = _state()
    if state and state.get("token"):
        state["show_key"] = show


def banner() -> None:
    """Under the page title: notes about the room link, and where this session stands."""
    # The notes stay until the next run's sync(): a mend's run (commit) says them again.
    for message in [*st.session_state.get(_SAID, []), st.session_state.pop(_DOOR, "")]:
        if message:
            st.warning(message, icon=":material/groups:")
    state = _state()
    if state is None:
        return
    if state.get("token"):
        if not presenting():  # in presenter mode ui.page_header puts it in its top row
            teacher_panel()
        if state.get("show_key") and not presenting():
            _key_box(state)
        if state.get("join_screen"):
            _join_screen(state["code"])
        if state.get("paused_here"):
            st.warning(say("paused_teacher"), icon=":material/pause_circle:")
        return
    if state.get("console"):
        _console(state["code"], state["console"])
        return
    _student_banner(state)


def _student_banner(state: dict) -> None:
    """A student's line: following or exploring, the way back, the teacher's door (and a
    device that asked to be the teacher's console, waiting)."""
    if state.get("asking"):
        _asking(state["code"], *state["asking"])
    if state["following"]:
        text, door = st.columns([5, 1.3], vertical_alignment="center")
        with text:
            _following(state["code"])
        if not presenting():  # a woken follower may take the rest another one ran
            replay.begin(st.session_state.get("_ui_page", ""))
    else:
        *row, door = st.columns([4, 1.3, 1, 1.3], vertical_alignment="center")
        _exploring(state["code"], row)
    with door:
        _door(state["code"])


MAX_HOST = 260  # a longer host name cannot be a real one: the link goes without it


def join_url(code: str) -> str:
    """The address students open: the server's base URL (the app's root, whatever page
    or path the teacher is on) with the room's code and its ticket."""
    from streamlit import config

    parts = urlsplit(st.context.url or "")
    host = parts.netloc.rpartition("@")[2]  # never a user name or password
    root = f"{parts.scheme}://{host}" if parts.scheme in ("http", "https") else ""
    if len(host) > MAX_HOST or not host:
        root = ""
    base = (config.get_option("server.baseUrlPath") or "").strip("/")
    ticket = rooms().ticket(code)  # this link always gets in (Rooms.join)
    return f"{root}/{base + '/' if base else ''}?room={code}&ticket={ticket}"


@st.cache_data(max_entries=8, show_spinner=False)
def qr_png(text: str) -> bytes | None:
    """A QR code of `text`, drawn here (no outside service sees the room's address);
    None when `text` is more than a QR code holds."""
    import segno  # only a teacher's page needs it

    out = io.BytesIO()
    try:
        qr = segno.make(text, error="m")
    except segno.DataOverflowError:
        return None
    qr.save(out, kind="png", scale=10, border=2, dark="#1B1F24")
    return out.getvalue()


@st.fragment(run_every=COUNT_S)
def _count(code: str, token: str) -> None:
    view = rooms().hear(code, token)  # the teacher's page is still there
    if view is None:
        st.rerun()  # another tab took the class back, or it ended: the page says which
    n = view.following
    if presenting():  # short: it shares the title's row
        st.caption(say("count_short", n=n))
    else:
        st.caption(say("count", n=n, s="" if n == 1 else "s"))
    asking = rooms().console_requests(code, token)  # devices that ask to be the console
    if len(asking) > 1:
        st.button("Refuse them all", on_click=_refuse_all, args=(code, token, asking),
                  key="_ui_room_refuse_all", type="tertiary")  # fmt: skip
    for number in asking:
        st.markdown(say("console_request", number=number))
        allow, refuse = st.columns(2)
        allow.button("Allow", on_click=_allow, args=(code, token, number, True), type="primary",
                     key=f"_ui_room_allow_{number}")  # fmt: skip
        refuse.button("Refuse", on_click=_allow, args=(code, token, number, False),
                      key=f"_ui_room_refuse_{number}")  # fmt: skip


def _refuse_all(code: str, token: str, numbers: list[str]) -> None:
    for number in numbers:
        rooms().allow_console(code, token, number, False)


def _allow(code: str, token: str, number: str, allow: bool) -> None:
    rooms().allow_console(code, token, number, allow)


SECONDS = {"none": None, "30 s": 30.0, "60 s": 60.0, "2 min": 120.0}  # time to answer


def teacher_panel() -> None:
    """The teacher's room: joining (the code, link and QR code, a join screen), the
    count, the time to answer, pause, the class's questions, the key, End."""
    state = _state()
    code = state["code"]
    with st.popover(f"Class {code}", icon=":material/groups:", width="stretch"):
        _join_box(code)
        st.button(
            "Hide the join screen" if state.get("join_screen") else "Show the join screen",
            on_click=_toggle, args=("join_screen",), icon=":material/qr_code_2:",
            key="_ui_room_join_screen",
        )  # fmt: skip
        st.caption(say("panel"))
        st.selectbox(
            "Time to answer a question", list(SECONDS), key="_ui_room_seconds",
            help="Answers close by themselves after this long (none: when you close or reveal)",
        )  # fmt: skip
        _pause_button(code, state["token"], bool(state.get("paused_here")))
        _history(code, state["token"])
        if presenting():
            st.caption(say("key_hidden"))
        else:
            st.button(
                "Show my teacher key", on_click=_show_key, args=(True,), type="tertiary",
                icon=":material/key:", key="_ui_room_show_key",
            )  # fmt: skip
        _end_button(state)
    _count(code, state["token"])


def _join_box(code: str) -> None:
    url = join_url(code)
    png = qr_png(url)
    st.markdown(say("join" if png else "join_no_qr", url=controls.safe_text(url, 120), code=code))
    if png:
        st.image(png, width=280, caption=f"Join class {code}")


def _join_screen(code: str) -> None:
    """What a teacher projects while the class joins: the code in large type, the link
    and the QR code (the join screen, until hidden)."""
    box = st.container(border=True, key="ui_join_screen")
    left, right = box.columns([3, 2], vertical_alignment="center")
    url = join_url(code)
    left.markdown(say("join_screen", code=" ".join([code[:3], code[3:]]),
                      url=controls.safe_text(url, 120)))  # fmt: skip
    png = qr_png(url)
    if png:
        right.image(png, width=320, caption=f"Join class {code}")
    box.button("Hide the join screen", on_click=_toggle, args=("join_screen",),
               key="_ui_room_join_hide")  # fmt: skip


def _toggle(name: str) -> None:
    state = _state()
    if state:
        state[name] = not state.get(name)


def _pause_button(code: str, token: str, paused: bool) -> None:
    st.button(
        "Go on with the class" if paused else "Pause the class",
        on_click=_pause, args=(code, token, not paused),
        icon=":material/play_circle:" if paused else ":material/pause_circle:",
        key="_ui_room_pause", help=say("pause_help"),
    )  # fmt: skip


def _pause(code: str, token: str, paused: bool) -> None:
    if rooms().pause(code, token, paused):
        state = _state()
        if state and state.get("token"):
            state["paused_here"] = paused


def _end_button(state: dict) -> None:
    """End the class, after a second press that confirms it."""
    if not state.get("confirm_end"):
        st.button("End the class", on_click=_toggle, args=("confirm_end",),
                  icon=":material/logout:", key="_ui_room_end")  # fmt: skip
        return
    st.warning(say("end_confirm", code=state["code"]), icon=":material/logout:")
    yes, no = st.columns(2)
    yes.button("End it", on_click=_end, type="primary", key="_ui_room_end_yes")
    no.button("Keep the class", on_click=_toggle, args=("confirm_end",), key="_ui_room_end_no")


def history_csv(questions: list[Question]) -> str:
    """The class's questions and answers, one row per question and answer given (a
    choice with its count, or a number with its count), oldest question first."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["question", "page", "exercise", "asked_s", "revealed", "answer", "count"])
    start = questions[0].asked_at if questions else 0.0
    for n, q in enumerate(questions, 1):
        counts = Counter(q.answers.values())
        rows = [(c, counts.get(c, 0)) for c in q.choices] if q.choices else sorted(counts.items())
        for answer, k in rows or [("", 0)]:
            w.writerow([n, q.page, q.key, f"{q.asked_at - start:.0f}", q.revealed, answer, k])
    return out.getvalue()


def _history(code: str, token: str) -> None:
    """The class's questions so far, with their answers, and all of them as one CSV."""
    past = rooms().history(code, token)
    if not past:
        return
    with st.expander(f"This class's questions ({len(past)})", icon=":material/history:"):
        for n, q in enumerate(past, 1):
            what = q.text or q.key  # the question as asked (its key if none was kept)
            st.markdown(say("history_line", n=n, page=q.page, key=controls.safe_text(what, 100),
                            answers=len(q.answers), s="" if len(q.answers) == 1 else "s",
                            state=say("history_revealed" if q.revealed else
                                      "history_open" if q.open_at(time.monotonic())
                                      else "history_closed")))  # fmt: skip
            if q.revealed and q.answers:  # what the class said, once the class has seen it
                st.caption(_results(q))
        st.download_button(
            "All answers (CSV)", data=history_csv(past), file_name=f"class-{code}.csv",
            mime="text/csv", icon=":material/download:", type="tertiary",
            key="_ui_room_history_csv", on_click="ignore",
        )  # fmt: skip


def _results(q: Question) -> str:
    """A revealed question's answers in one line: each choice's count, or the numbers'
    range and median (the earlier questions' results stay at hand)."""
    if q.choices:
        counts = Counter(q.answers.values())
        return " · ".join(f"{c}: **{counts.get(c, 0)}**" for c in q.choices)
    values = sorted(float(v) for v in q.answers.values())
    mid = statistics.median(values)
    return say("history_numbers", lo=values[0], hi=values[-1], mid=mid, n=len(values))


@st.fragment(run_every=COUNT_S)
def _console(code: str, token: str) -> None:
    """The teacher's console on another device: the open question and its answers
    (reveal, close, clear), pause, the class's questions, End. The projector's tab keeps
    the pages and asks the questions."""
    store = rooms()
    q = store.answers(code, token)
    if not store.allowed(code, token):
        st.rerun()  # the class ended, or a new key closed this console: sync says which
    box = st.container(border=True)
    box.markdown(say("console", code=code))
    if q is not None:
        _question_state(box, code, token, q)
        c1, c2, c3 = box.columns(3)
        c1.button("Reveal to the class", on_click=_console_do, args=("reveal", code, token),
                  type="primary", key="_ui_console_reveal", disabled=q.revealed)  # fmt: skip
        c2.button("Close answers", on_click=_console_do, args=("close", code, token),
                  key="_ui_console_close", disabled=q.closed or q.revealed)  # fmt: skip
        c3.button("Clear without revealing", on_click=_console_do, args=("clear", code, token),
                  key="_ui_console_clear")  # fmt: skip
    else:
        box.caption(say("console_no_question"))
    view = store.view(code, count=False)
    with box:
        _pause_button(code, token, bool(view and view.paused))
        _history(code, token)
        state = _state() or {}
        _console_key(state, code, token)
        _end_button(state)


def _console_key(state: dict, code: str, token: str) -> None:
    """The teacher key on the console, on request (a phone is not the projector): what
    takes the class back after the projector's tab reloads."""
    if not state.get("show_key"):
        st.button("Show my teacher key", on_click=_toggle, args=("show_key",), type="tertiary",
                  icon=":material/key:", key="_ui_console_show_key")  # fmt: skip
        return
    key = rooms().key_for(code, token)
    if key:
        st.markdown(say("console_key", key=key, minutes=RECLAIM_S / 60))
    st.button("Hide the key", on_click=_toggle, args=("show_key",), key="_ui_console_hide_key")


def _console_do(what: str, code: str, token: str) -> None:
    store = rooms()
    {"reveal": store.reveal, "close": store.close_question, "clear": store.clear_question}[what](
        code, token
    )


def _question_state(box, code: str, token: str, q: Question) -> None:
    """For the teacher: how many answered of how many it reaches, why not everyone, and
    the time left."""
    reach = rooms().reach(code, token)
    n = len(q.answers)
    here = reach.here if reach else 0
    box.markdown(say("answered", n=n, of=max(here, n)))
    if reach and (reach.elsewhere or reach.exploring):
        box.caption(say("reach", elsewhere=reach.elsewhere, exploring=reach.exploring))
    now = time.monotonic()
    if q.revealed:
        return
    if q.closed or not q.open_at(now):
        box.caption(say("closed_answers"))
    elif q.deadline is not None:
        box.caption(say("time_left", s=q.deadline - now))


# --------------------------------------------------------------- a question to the class
@dataclass(frozen=True)
class Asked:
    """This exercise, when the room has put it to the class."""

    question: Question
    teacher: bool

    @property
    def waiting(self) -> bool:
        return not self.question.revealed


def asked(key: str) -> Asked | None:
    """The room's question, when it is exercise `key` of the page this session is on."""
    state = _state()
    if state is None:
        return None
    if state.get("token"):
        q = rooms().answers(state["code"], state["token"])
    else:
        view = rooms().view(state["code"], count=False)
        q = view.question if view else None
    if q is None or q.key != key or q.page != state.get("page"):
        return None
    return Asked(q, bool(state.get("token")))


def _plain(markdown: str) -> str:
    """A question's markdown as one plain line for the history (its figures stay)."""
    line = re.sub(r"[*_`]|:material/[a-z_]+:", "", " ".join(markdown.split()))
    return line if len(line) <= 100 else line[:99] + "…"


def _ask(key: str, choices) -> None:
    state = _state()
    if state and state.get("token"):
        seconds = SECONDS.get(st.session_state.get("_ui_room_seconds", "none"))
        text = _plain(
            st.session_state.get("_ui_exercise_about", {}).get(key, {}).get("question", "")
        )
        rooms().ask(state["code"], state["token"], state.get("page", ""), key, choices, seconds,
                    text=text)  # fmt: skip
        for k in (f"_predict_{key}", f"pick-{key}", f"guess-{key}"):
            st.session_state.pop(k, None)  # the projector hides the answer too


def opened(key: str) -> None:
    """This session's page shows exercise `key`'s answer: when it is the teacher's, and
    the class was not asked, the students' copies of it are free to reveal too."""
    state = _state()
    if state and state.get("token"):
        rooms().opened_answer(state["code"], state["token"], state.get("page", ""), key)


def teacher_opened(key: str) -> bool:
    """Whether the teacher revealed exercise `key` of this page on their own page."""
    state = _state()
    if not state or state.get("token"):
        return False
    return (state.get("page"), key) in rooms().opened_answers(state["code"])


def _reveal(key: str) -> None:
    state = _state()
    if state and state.get("token") and rooms().reveal(state["code"], state["token"]):
        st.session_state[f"_predict_{key}"] = True


def ask_button(box, key: str, choices) -> None:
    """For the teacher, under an exercise: put it to the class."""
    if not teaching():
        return
    box.button(
        "Ask the class", on_click=_ask, args=(key, choices), icon=":material/campaign:",
        key=f"_ui_ask_{key}", help="Every student's page asks this; you reveal when ready",
    )  # fmt: skip


@st.fragment(run_every=COUNT_S)
def _answers(code: str, token: str) -> None:
    q = rooms().answers(code, token)
    if q is None:
        st.rerun()  # cleared from the console: the page shows the exercise again
    _question_state(st, code, token, q)


def hold(box, key: str) -> None:
    """The teacher's exercise while the class answers: "12 of 58 answered", who it cannot
    reach and why, the time left; Reveal, Close answers, Clear without revealing."""
    state = _state()
    with box:
        _answers(state["code"], state["token"])
    reveal, close, clear = box.columns([1.2, 1, 1.2])
    reveal.button(
        "Reveal to the class", on_click=_reveal, args=(key,), type="primary",
        icon=":material/visibility:", key=f"_ui_reveal_{key}",
    )  # fmt: skip
    q = rooms().answers(state["code"], state["token"])
    shut = q is not None and not q.open_at(time.monotonic())  # closed, or its time ran out
    close.button("Answers closed" if shut else "Close answers", on_click=_console_do,
                 args=("close", state["code"], state["token"]), key=f"_ui_close_{key}",
                 disabled=shut)  # fmt: skip
    clear.button("Clear without revealing", on_click=_console_do, args=("clear", state["code"],
                 state["token"]), type="tertiary", key=f"_ui_clear_{key}")  # fmt: skip


def collect(box, a: Asked, sent: bool, answer: Any) -> bool | None:
    """A student's exercise while the class answers: send the answer and say truthfully
    whether the room kept it. Returns whether it was kept (None: nothing was sent)."""
    state = _state()
    kept = None
    if sent and answer is not None:
        got = rooms().answer(state["code"], a.question.id, _student(), answer, _client())
        kept = got.kept
        if got.kept:
            state["answered"] = a.question.id
        else:
            box.warning(
                say(f"kept_not.{got.why}", **({"n": got.count} if got.why == "full" else {})),
                icon=":material/block:",
            )
    q, now = a.question, time.monotonic()
    if state.get("answered") == q.id and kept is not False:
        box.info(say("answer_in"), icon=":material/how_to_vote:")
    elif kept is None:
        box.caption(say("asked"))
    if not q.open_at(now):
        box.caption(say("closed_answers"))
    elif q.deadline is not None:
        box.caption(say("time_left", s=q.deadline - now))
    return kept


def results(box, a: Asked, *, correct: str | None = None, truth: float | None = None,
            shown: str = "") -> None:  # fmt: skip
    """After the class's reveal: what the class answered, beside the computed answer."""
    from figures.common import class_choices, class_numbers

    answers = list(a.question.answers.values())
    if a.question.choices is not None and correct is not None:
        counts = [sum(x == c for x in answers) for c in a.question.choices]
        chart = class_choices(list(a.question.choices), counts, correct)
    elif truth is not None:
        chart = class_numbers([float(x) for x in answers], truth, shown)  # every one drawn
    else:
        return
    with box:  # ui.chrome draws it (subscribed to events.CHART): no import back up the kit
        events.announce(events.CHART, chart, key=f"class-{a.question.key}")


def following() -> bool:
    """Whether this session follows a class's teacher (not a teacher, not exploring)."""
    state = _state()
    return bool(state and not state.get("token") and state.get("following"))


# Class mode listens to the kit (ui.events): controls and exercises never import this module.
events.subscribe(events.VALUE_SET, publish)
events.subscribe(events.MOVED, took_wheel)
events.subscribe(events.FOLLOWING, following)
events.subscribe(events.ASKED, asked)
events.subscribe(events.HOLD, hold)
events.subscribe(events.ASK_BUTTON, ask_button)
events.subscribe(events.ANSWERED, collect)
events.subscribe(events.REVEALED, results)
events.subscribe(events.OPENED, opened)
events.subscribe(events.TEACHER_OPENED, teacher_opened)


class _World:
    """What a follower's run takes from its room, for ui.replay: a whole run recorded at
    one room version is replayed to followers that start from the same state only while
    the room still shows that version."""

    @staticmethod
    def _following(get) -> dict | None:
        state = get(_ROOM)
        ok = isinstance(state, dict) and not state.get("token") and state.get("following")
        return state if ok else None

    def seen(self, get) -> Any:
        state = self._following(get)
        return (state["code"], state.get("seen")) if state and state.get("woken") else None

    def now(self, get) -> Any:
        state, store = self._following(get), _STORE() if _STORE else None
        return (state["code"], store.version(state["code"])) if state and store else None

    def replayed(self, session_id: str, get) -> None:
        """What `sync` does outside the session: the student counts as following, and
        the room gets a waker that reads this session's new state."""
        state, student = self._following(get), get(_STUDENT)
        store = _STORE() if _STORE else None
        if not state or not student or store is None:
            return
        code = state["code"]
        store.version(code, student)
        waker = wake.for_session(
            session_id, stale=lambda: state["following"] and store.version(code) != state["seen"]
        )
        state["woken"] = bool(waker and store.listen(code, student, waker, state["seen"]))


replay.WORLD = _World()
