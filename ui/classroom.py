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
"""

from __future__ import annotations

import io
import secrets
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from . import controls, wake  # (controls imports this module: names are read at call time)
from .lesson import LESSONS
from .room import Question, Rooms, normal_code
from .share import presenting

_ROOM = "_ui_room"  # session_state: this session's room (code, token or follow state)
_STUDENT = "_ui_room_student"  # session_state: an anonymous id, to count each student once
_SAID = "_ui_room_said"  # session_state: this run's notes about the room link
POLL_S = 1.0  # how often a following page asks for news when it cannot be woken
CHECK_S = 30.0  # how often a woken page asks anyway (a class that expired sends no wake)
COUNT_S = 3.0  # how often the teacher's page refreshes its counts


@st.cache_resource(max_entries=1)
def rooms() -> Rooms:
    """The server's rooms (one process serves every session, as on Community Cloud)."""
    return Rooms()


def _state() -> dict | None:
    return st.session_state.get(_ROOM)


def teaching() -> bool:
    """Whether this session drives a room."""
    state = _state()
    return bool(state and state.get("token"))


def _student() -> str:
    return st.session_state.setdefault(_STUDENT, secrets.token_hex(8))


def _say(message: str) -> None:
    st.session_state.setdefault(_SAID, []).append(message)


# ---------------------------------------------------------------- joining and following
def _open_room(state: dict | None) -> None:
    if state and state.get("token"):
        rooms().close(state["code"], state["token"])  # a teacher holds one room at a time
    opened = rooms().open()
    if opened is None:
        st.session_state.pop(_ROOM, None)
        del st.query_params["room"]
        _say("This server holds as many classes as it may just now; try again in a while.")
        return
    code, token = opened
    st.session_state[_ROOM] = {"code": code, "token": token}
    st.query_params["room"] = code


def _read_link() -> None:
    """Act on the link's `room`: `new` opens a room, a code joins one."""
    raw = st.query_params.get_all("room")
    if not raw:
        return
    asked, state = raw[-1], _state()
    shown = controls.safe_text(asked)
    if len(raw) > 1:
        _say(f"The link gave `room` {len(raw)} times; using the last one, `{shown}`.")
    if asked.strip().lower() == "new":
        _open_room(state)
        return
    code = normal_code(asked)
    if code is None:
        _say(
            f"The link's `room={shown}` is not a class code (four letters and "
            "digits, as on the teacher's screen); this is the page on its own."
        )
        return
    if state and state["code"] == code:
        return
    if not rooms().exists(code):
        _say(
            f"There is no class **{code}** on this server: it has ended, or the code is "
            "mistyped. This is the page on its own."
        )
        return
    st.session_state[_ROOM] = {"code": code, "following": True, "seen": -1, "qid": 0}
    st.query_params["room"] = code  # one clean parameter, in capitals


def _ended(state: dict) -> None:
    st.session_state.pop(_ROOM, None)
    if st.query_params.get("room") == state["code"]:
        del st.query_params["room"]
    _say(f"The class **{state['code']}** has ended; this is the page on its own.")


def sync(url_path: str) -> None:
    """Start of every page run: read the link, and bring a following page up to the room."""
    st.session_state.pop(_SAID, None)
    _read_link()
    state = _state()
    if state is None:
        return
    state["page"] = url_path
    if state.get("token"):
        if not rooms().show(state["code"], state["token"], url_path):
            _ended(state)
        return
    view = rooms().view(state["code"], _student() if state["following"] else None)
    if view is None:
        _ended(state)
    elif state["following"]:
        _follow(state, view, url_path)
        _listen(state)


def _listen(state: dict) -> None:
    """A following page leaves the room its waker; one that stopped takes it back."""
    if not state["following"]:
        rooms().unlisten(state["code"], _student())
        state["woken"] = False
        return
    code, store = state["code"], rooms()
    waker = wake.here(stale=lambda: store.version(code) != state["seen"])
    state["woken"] = bool(waker and store.listen(code, _student(), waker, state["seen"]))


def _follow(state: dict, view, url_path: str) -> None:
    if view.version == state["seen"]:
        if view.page is not None and view.page != url_path:
            state["following"] = False  # the room did not move: the student went elsewhere
        return
    if view.page is not None and view.page != url_path:
        target = next((x for x in LESSONS if x.url_path == view.page), None)
        if target is not None:
            st.switch_page(target.file, query_params={"room": state["code"]})
    for key, value in view.values.items():
        st.session_state[key] = value  # before any widget of this run exists
    q = view.question
    if q is not None and q.id != state["qid"]:  # a new question: everyone starts it afresh
        for key in (f"_predict_{q.key}", f"pick-{q.key}", f"guess-{q.key}"):
            st.session_state.pop(key, None)
        state["qid"] = q.id
    state["seen"] = view.version


def publish(key: str, value: Any) -> None:
    """A ui control's value, when this session drives a room."""
    state = _state()
    if not state or not state.get("token"):
        return
    store = rooms()
    store.set(state["code"], state["token"], key, value)
    ctx = get_script_run_ctx()
    if ctx is not None and ctx.fragment_ids_this_run:  # a fragment's run ends without
        store.commit(state["code"], state["token"])  # reaching the page's commit()


def commit() -> None:
    """End of a page run: what the teacher's page shows now becomes the room's view."""
    state = _state()
    if state and state.get("token"):
        rooms().commit(state["code"], state["token"])


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
    except (ImportError, AttributeError):
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
    if state and state.get("token"):
        rooms().close(state["code"], state["token"])
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
    st.info(
        f"**Following the teacher** · class {code}. Move any control to explore on your own.",
        icon=":material/podcasts:",
    )


def _exploring(code: str) -> None:
    text, join, leave = st.columns([4, 1.3, 1], vertical_alignment="center")
    text.info(
        f"**You are exploring on your own**; class {code} goes on without you.",
        icon=":material/explore:",
    )
    join.button(
        "Rejoin the class", on_click=_rejoin, type="primary", icon=":material/group_add:",
        key="_ui_room_rejoin",
    )  # fmt: skip
    leave.button("Leave the class", on_click=_leave, type="tertiary", key="_ui_room_leave")


def banner() -> None:
    """Under the page title: notes about the room link, and where this session stands."""
    for message in st.session_state.pop(_SAID, []):
        st.warning(message, icon=":material/groups:")
    state = _state()
    if state is None:
        return
    if state.get("token"):
        if not presenting():  # in presenter mode ui.page_header puts it in its top row
            teacher_panel()
    elif state["following"]:
        _following(state["code"])
    else:
        _exploring(state["code"])


def join_url(code: str) -> str:
    """The address students open: the app's root with the room's code."""
    url = (st.context.url or "").split("?")[0]
    page = (_state() or {}).get("page", "")
    if page and url.endswith("/" + page):
        url = url[: -len(page) - 1]
    return url.rstrip("/") + f"/?room={code}"


@st.cache_data(max_entries=8, show_spinner=False)
def qr_png(text: str) -> bytes:
    """A QR code of `text`, drawn here (no outside service sees the room's address)."""
    import segno  # only a teacher's page needs it

    out = io.BytesIO()
    segno.make(text, error="m").save(out, kind="png", scale=10, border=2, dark="#1B1F24")
    return out.getvalue()


@st.fragment(run_every=COUNT_S)
def _count(code: str) -> None:
    view = rooms().view(code)
    n = view.following if view else 0
    st.caption(f":material/groups: **{n}** student{'' if n == 1 else 's'} following")


def teacher_panel() -> None:
    """The teacher's room: its code, the join link and QR code, the count, End."""
    code = _state()["code"]
    url = join_url(code)
    with st.popover(f"Class {code}", icon=":material/groups:", width="stretch"):
        st.markdown(
            f"Students open **{controls.safe_text(url, 120)}** or scan the code. Class **{code}**"
        )
        st.image(qr_png(url), width=280, caption=f"Join class {code}")
        st.caption(
            "Every student's screen follows yours; a student who moves a control explores "
            "alone until they rejoin. Keep this tab: reloading it leaves the class."
        )
        st.button("End the class", on_click=_end, icon=":material/logout:", key="_ui_room_end")
    _count(code)


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
        view = rooms().view(state["code"])
        q = view.question if view else None
    if q is None or q.key != key or q.page != state.get("page"):
        return None
    return Asked(q, bool(state.get("token")))


def _ask(key: str, choices) -> None:
    state = _state()
    if state and state.get("token"):
        rooms().ask(state["code"], state["token"], state.get("page", ""), key, choices)
        for k in (f"_predict_{key}", f"pick-{key}", f"guess-{key}"):
            st.session_state.pop(k, None)  # the projector hides the answer too


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
    n = len(q.answers) if q else 0
    st.markdown(f":material/how_to_vote: **{n}** answer{'' if n == 1 else 's'} so far")


def hold(box, key: str) -> None:
    """The teacher's exercise while the class answers: the count and Reveal."""
    state = _state()
    with box:
        _answers(state["code"], state["token"])
    box.button(
        "Reveal to the class", on_click=_reveal, args=(key,), type="primary",
        icon=":material/visibility:", key=f"_ui_reveal_{key}",
    )  # fmt: skip


def collect(box, a: Asked, sent: bool, answer: Any) -> None:
    """A student's exercise while the class answers: send the answer, say it is in."""
    state = _state()
    if sent and answer is not None:
        n = rooms().answer(state["code"], a.question.id, _student(), answer)
        if n is not None:
            state["answered"] = a.question.id
    if state.get("answered") == a.question.id:
        box.info(
            "Your answer is in (you can change it until the reveal). The teacher reveals "
            "the result to the whole class.",
            icon=":material/how_to_vote:",
        )
    else:
        box.caption(
            ":material/campaign: Your teacher put this question to the class. Answers are "
            "counted without names; the teacher reveals the result."
        )


def results(box, a: Asked, *, correct: str | None = None, truth: float | None = None,
            shown: str = "") -> None:  # fmt: skip
    """After the class's reveal: what the class answered, beside the computed answer."""
    from figures.common import class_choices, class_numbers

    from .chrome import show  # chrome imports the exercises, which import this module

    answers = list(a.question.answers.values())
    if a.question.choices is not None and correct is not None:
        counts = [sum(x == c for x in answers) for c in a.question.choices]
        chart = class_choices(list(a.question.choices), counts, correct)
    elif truth is not None:
        chart = class_numbers([float(x) for x in answers], truth, shown)
    else:
        return
    with box:
        show(chart, key=f"class-{a.question.key}")
