"""Class mode through AppTest: one server process, so sessions share the rooms (issue 23).

A teacher's session opens a room with `?present=1&room=new`; a student's session joins
with `?room=CODE`. AppTest runs no timers, so each test reruns the student's session where
the browser's poll would.
"""

from __future__ import annotations

import re

import pytest

from tests.support.apptest import no_exception, plotly_specs, run_page
from ui import room as R
from ui.classroom import rooms
from ui.exercises import EXERCISE_LOG
from ui.room import CODE_LEN


def teacher(file: str = "pages/scaling.py", **params):
    at = run_page(file, present="1", room="new", **params)
    no_exception(at)
    return at, at.session_state["_ui_room"]["code"]


def infos(at) -> str:
    return " ".join(str(x.value) for x in at.info)


def warnings(at) -> str:
    return " ".join(str(x.value) for x in at.warning)


def test_the_teacher_gets_a_code_and_keeps_the_token_out_of_the_url():
    at, code = teacher()
    state = at.session_state["_ui_room"]
    assert at.query_params["room"] == code
    assert all(state["token"] not in str(v) for v in at.query_params.values())
    assert len(code) == CODE_LEN and state["key"] not in str(at.query_params)
    # Issue 50: the key is never on the projector (presenter mode), and on the teacher's
    # own screen only on request.
    shown = lambda x: state["key"] in " ".join(m.value for m in x.markdown)  # noqa: E731
    assert not shown(at) and not [b for b in at.button if b.key == "_ui_room_show_key"]
    own = run_page("pages/scaling.py", room="new")
    state = own.session_state["_ui_room"]
    assert not shown(own)
    own.button(key="_ui_room_show_key").click().run()
    assert shown(own)
    old = state["key"]
    own.button(key="_ui_room_new_key").click().run()  # a new key: the old one takes nothing
    assert own.session_state["_ui_room"]["key"] != old
    view = rooms().view(code)
    assert view.page == "scaling" and view.values["d_k"] == 64  # the page's controls


def test_a_student_lands_on_the_teachers_page_and_view_and_follows():
    at, code = teacher()
    at.select_slider(key="d_k").set_value(512).run()
    st = run_page("pages/home.py", room=code.lower())  # the join link, typed in lower case
    no_exception(st)
    assert st.query_params["room"] == code
    assert st.select_slider(key="d_k").value == 512
    assert "Following the teacher" in infos(st)
    at.select_slider(key="d_k").set_value(8).run()
    st.run()  # what the poll does when the version moved
    assert st.select_slider(key="d_k").value == 8


def test_a_student_who_moves_a_control_explores_cannot_drive_and_rejoins():
    at, code = teacher()
    st = run_page("pages/home.py", room=code)
    st.select_slider(key="d_k").set_value(32).run()
    assert "exploring on your own" in infos(st)
    assert rooms().view(code).values["d_k"] == 64  # the student's move drives nothing
    at.select_slider(key="d_k").set_value(256).run()
    st.run()
    assert st.select_slider(key="d_k").value == 32  # not following
    st.button(key="_ui_room_rejoin").click().run()
    assert st.select_slider(key="d_k").value == 256
    assert "Following the teacher" in infos(st)


def test_the_teacher_changes_page_and_the_class_goes_along():
    at, code = teacher()
    st = run_page("pages/home.py", room=code)
    tt = run_page("pages/masks.py", room=code)  # the teacher's session is `at`; this is
    assert rooms().view(code).page == "scaling"  # a second student: pages do not drive
    at.switch_page("pages/masks.py").run()
    no_exception(at)
    assert rooms().view(code).page == "masks"
    st.run()
    no_exception(st)
    assert "Masks" in st.title[0].value or "mask" in st.title[0].value.lower()
    tt.run()
    assert "Following the teacher" in infos(tt)


@pytest.mark.parametrize(
    "room, said",
    [
        ("AAAAAA", "There is no class"),
        ("<script>alert(1)</script>", "is not a class code"),
        ("x" * 5000, "is not a class code"),
        ("**bold** [a](https://e.com)", "is not a class code"),
        ("", None),
    ],
)
def test_bad_room_links_give_a_note_and_the_page_on_its_own(room, said):
    at = run_page("pages/scaling.py", room=room)
    no_exception(at)
    assert "_ui_room" not in at.session_state
    if said:
        assert said in warnings(at)
        outside_code = re.sub(r"`[^`]*`", "", warnings(at))  # a code span shows text as is
        assert "<" not in outside_code and "](" not in outside_code and len(warnings(at)) < 600
    assert at.select_slider(key="d_k").value == 64


def test_a_repeated_room_uses_the_last_and_an_ended_class_says_so():
    at, code = teacher()
    st = run_page("pages/scaling.py")
    st.query_params["room"] = ["AAAAAA", code]
    st.run()
    assert "2 times" in warnings(st) and st.session_state["_ui_room"]["code"] == code
    at.button(key="_ui_room_end").click().run()  # asks first
    assert "_ui_room" in at.session_state and "for everyone?" in warnings(at)
    at.button(key="_ui_room_end_yes").click().run()
    no_exception(at)
    assert "_ui_room" not in at.session_state
    st.run()
    assert "has ended" in warnings(st) and "_ui_room" not in st.session_state


def send(at, key: str):
    """Press the exercise's form button, whatever it says ("Reveal", or a wording of its
    own while the class answers)."""
    button = next(b for b in at.button if b.key.startswith(f"FormSubmitter:form-{key}-"))
    return button.click().run()


def _exercise_key(at) -> str:
    return at.session_state[EXERCISE_LOG][0]["key"]


def test_a_question_to_the_class_is_counted_and_revealed_to_all():
    at, code = teacher("pages/masks.py", step="Fill")
    key = _exercise_key(at)
    a = run_page("pages/home.py", room=code)
    b = run_page("pages/home.py", room=code)
    at.button(key=f"_ui_ask_{key}").click().run()
    no_exception(at)
    assert f"_ui_reveal_{key}" in [x.key for x in at.button]
    for st in (a, b):
        st.run()
        no_exception(st)
        assert not st.session_state[EXERCISE_LOG][0]["revealed"]
    for st, pick in ((a, 0), (b, -1)):
        radio = st.radio(key=f"pick-{key}")
        radio.set_value(radio.options[pick])
        send(st, key)
        log = st.session_state[EXERCISE_LOG][0]
        assert not log["revealed"], "a student's answer waits for the teacher's reveal"
        assert "Your answer is in" in infos(st)
    assert len(rooms().answers(code, at.session_state["_ui_room"]["token"]).answers) == 2
    at.run()
    assert re.search(r"\*\*2 of \d+\*\* answered", " ".join(m.value for m in at.markdown))
    at.button(key=f"_ui_close_{key}").click().run()  # closed: the button says so, spent
    assert at.button(key=f"_ui_close_{key}").label == "Answers closed"
    assert at.button(key=f"_ui_close_{key}").disabled
    at.button(key=f"_ui_reveal_{key}").click().run()
    assert at.session_state[EXERCISE_LOG][0]["revealed"]
    for st in (a, b):
        st.run()
        assert st.session_state[EXERCISE_LOG][0]["revealed"]
        assert "What the class predicted (2 answers)" in str(plotly_specs(st))
    # the teacher's history keeps each revealed question's results (what each choice got)
    at.run()
    radio = a.radio(key=f"pick-{key}")
    first, last = radio.options[0], radio.options[-1]
    line = " ".join(str(c.value) for c in at.caption if "**" in str(c.value))
    want = {c: (first, last).count(c) for c in radio.options}
    for choice, n in want.items():
        assert f"{choice}: **{n}**" in line
    # ... and names each question by its text as asked, not by an internal key
    asked = at.session_state["_ui_exercise_about"][key]["question"]
    plain = " ".join(asked.replace("*", "").replace("`", "").split())
    history = " ".join(m.value for m in at.markdown if m.value.startswith("1. "))
    assert plain[:40] in history and key not in history


# ------------------------------------------------------------------ robust rooms (issue 40)
class Session:
    """Stands in for ui.wake.presence(): whether a session's browser is still connected."""

    def __init__(self) -> None:
        self.open = True

    def alive(self) -> bool:
        return self.open


@pytest.fixture
def sessions(monkeypatch):
    """Every session opened from here on gets a presence the test can end: the last
    one made is `made[-1]`. The rooms are a fresh store, swept by the test."""
    from ui import classroom, wake

    made: list[Session] = []

    def presence() -> Session:
        made.append(Session())
        return made[-1]

    store = R.Rooms()
    monkeypatch.setattr(wake, "presence", presence)
    monkeypatch.setattr(classroom, "rooms", lambda: store)
    return made, store


def test_a_teacher_who_reloads_is_told_to_the_class_and_takes_it_back_with_the_key(sessions):
    made, store = sessions
    at, code = teacher()
    key = at.session_state["_ui_room"]["key"]
    assert key not in " ".join(m.value for m in at.markdown)  # never on the projector
    st = run_page("pages/home.py", room=code)
    assert "Following the teacher" in infos(st)
    again = run_page("pages/scaling.py", present="1", room=code)  # the teacher's reload
    no_exception(again)
    assert not again.session_state["_ui_room"].get("token")  # it follows until the key
    made[0].open = False  # the old tab's session has ended
    store.sweep()
    st.run()
    assert "Your teacher's page has closed" in warnings(st)
    assert "Following the teacher" not in infos(st)
    again.text_input(key="_ui_room_key").input("A" * R.KEY_LEN)
    again.button(key="FormSubmitter:_ui_room_reclaim-Take the class back to this tab").click().run()
    assert "not this class's teacher key" in warnings(again)
    again.text_input(key="_ui_room_key").input(f" {key[:4].lower()}-{key[4:]} ")
    again.button(key="FormSubmitter:_ui_room_reclaim-Take the class back to this tab").click().run()
    no_exception(again)
    assert again.session_state["_ui_room"].get("token")  # the teacher again
    store.sweep()
    again.select_slider(key="d_k").set_value(512).run()
    st.run()
    assert st.select_slider(key="d_k").value == 512
    assert "Following the teacher" in infos(st) and "has closed" not in warnings(st)
    at.run()  # the old tab, had it lived, follows now: its token drives nothing
    assert "taught from another tab" in warnings(at)
    assert not at.session_state["_ui_room"].get("token")
    assert store.view(code).values["d_k"] == 512


def text_of(at) -> str:
    return " ".join(str(m.value) for m in [*at.markdown, *at.caption, *at.info, *at.warning])


def test_a_presenting_teacher_lets_their_phone_in_by_its_number_and_it_shows_the_key(sessions):
    at, code = teacher()
    key = at.session_state["_ui_room"]["key"]
    assert key not in text_of(at)  # presenter mode never shows it, and says how to get it
    assert "Ask the teacher's screen to let this device in" in text_of(at)
    phone = run_page("pages/home.py", room=code)
    phone.button(key="_ui_room_ask_console").click().run()
    no_exception(phone)
    number = phone.session_state["_ui_room"]["asking"][1]
    assert f"Its number is **{number}**" in text_of(phone)
    at.run()  # the projector's count shows the request: Allow or Refuse
    assert f"number **{number}**" in text_of(at) and key not in text_of(at)
    at.button(key=f"_ui_room_allow_{number}").click().run()
    phone.run()  # its wait (a timer in a browser) finds the console
    no_exception(phone)
    assert phone.session_state["_ui_room"].get("console")
    assert "Teacher's console" in text_of(phone) and key not in text_of(phone)
    phone.button(key="_ui_console_show_key").click().run()
    assert f"Your teacher key is **{key}**" in text_of(phone)
    assert key not in text_of(at.run())  # still never on the projector

    # a student who asks is refused by the teacher and told so; nothing opens
    student = run_page("pages/home.py", room=code)
    student.button(key="_ui_room_ask_console").click().run()
    theirs = student.session_state["_ui_room"]["asking"][1]
    at.run()
    at.button(key=f"_ui_room_refuse_{theirs}").click().run()
    student.run()
    no_exception(student)
    assert not student.session_state["_ui_room"].get("console")
    assert "did not let this device in" in text_of(student)


def test_throwaway_sessions_neither_refuse_a_teacher_nor_evict_a_live_class(sessions, monkeypatch):
    from ui import classroom

    made, store = sessions
    monkeypatch.setattr(R, "MAX_ROOMS", 4)
    monkeypatch.setattr(R, "ROOMS_PER_CLIENT", 2)
    live, code = teacher()  # a real class: its teacher and one student stay connected
    student = run_page("pages/home.py", room=code)
    store.listen(code, "student", _Waker(Session(), []))  # the student's page, woken
    monkeypatch.setattr(classroom, "_client", lambda: "address 10.0.0.9")
    thrown = [teacher("pages/home.py") for _ in range(2)]  # a script's sessions
    refused = run_page("pages/home.py", present="1", room="new")
    assert "_ui_room" not in refused.session_state
    assert "already holds 2 classes" in warnings(refused)
    monkeypatch.setattr(classroom, "_client", lambda: "address 10.0.0.8")
    teacher("pages/home.py")  # a fourth room: the server is full
    for s in made[1:]:
        s.open = False  # the script's sessions end (and the fourth teacher's)
    made[0].open = False  # the real teacher's tab closes too, but its student is there
    store.sweep()
    for i in range(3):  # new teachers get rooms: the gone ones give way, not the class
        monkeypatch.setattr(classroom, "_client", lambda i=i: f"address 10.0.1.{i}")
        teacher("pages/home.py")
    assert store.exists(code) and len(store) == 4
    assert not any(store.exists(c) for _, c in thrown)
    student.run()
    assert "Your teacher's page has closed" in warnings(student)
    assert live.session_state["_ui_room"]["code"] == code


def test_a_follower_who_opens_a_room_stops_listening_to_the_old_one(sessions, monkeypatch):
    from ui import wake

    _, store = sessions
    at, code = teacher()
    woken = Session()
    calls = []
    monkeypatch.setattr(wake, "here", lambda stale=None: _Waker(woken, calls))
    st = run_page("pages/home.py", room=code)
    assert store.view(code).following == 1
    at.select_slider(key="d_k").set_value(512).run()
    assert len(calls) == 1  # the follower's page is woken by the teacher's change
    st.query_params["room"] = "new"
    st.query_params["present"] = "1"
    st.run()
    assert st.session_state["_ui_room"]["token"] and st.session_state["_ui_room"]["code"] != code
    at.select_slider(key="d_k").set_value(8).run()
    assert len(calls) == 1  # not woken by the old class any more


class _Waker:
    def __init__(self, session: Session, calls: list) -> None:
        self.session, self.calls = session, calls

    def __call__(self) -> bool:
        self.calls.append(1)
        return self.session.open

    def alive(self) -> bool:
        return self.session.open


def test_the_join_link_is_the_servers_base_url_and_the_code(monkeypatch):
    from ui import classroom

    at, code = teacher()
    long = "http://class.example:8501/" + "scaling/" * 400  # 3,000+ characters of path
    monkeypatch.setattr(type(st_context()), "url", property(lambda self: long))
    at.run()
    no_exception(at)
    # ... and its ticket, with which the link always gets in (ui.room.Rooms.join)
    link = rf"http://class\.example:8501/\?room={code}&ticket=[0-9A-F]{{{R.TICKET_LEN}}}\b"
    assert re.search(link, " ".join(m.value for m in at.markdown))
    assert at.get("imgs") or at.get("image")  # the QR code is drawn
    assert classroom.qr_png("x" * 5000) is None  # more than a QR code holds: no image


def st_context():
    import streamlit as st

    return st.context


def _flood(n_students: int, code: str, key: str) -> list:
    out = []
    for i in range(n_students):
        st = run_page("pages/masks.py", room=code)
        radio = st.radio(key=f"pick-{key}")
        radio.set_value(radio.options[i % len(radio.options)])
        send(st, key)
        out.append(st)
    return out


def test_an_answer_flood_from_one_address_is_capped_and_never_confirmed(monkeypatch):
    from ui import classroom

    monkeypatch.setattr(R, "ANSWERS_PER_CLIENT", 2)
    at, code = teacher("pages/masks.py", step="Fill")
    key = _exercise_key(at)
    at.button(key=f"_ui_ask_{key}").click().run()
    monkeypatch.setattr(classroom, "_client", lambda: "address 10.0.0.7")
    students = _flood(3, code, key)
    for st in students[:2]:
        assert "Your answer is in" in infos(st)
    assert "Your answer was not counted" in warnings(students[2])
    assert "Your answer is in" not in infos(students[2])
    token = at.session_state["_ui_room"]["token"]
    assert len(rooms().answers(code, token).answers) == 2
    monkeypatch.setattr(classroom, "_client", lambda: "address 10.0.0.6")
    assert "Your answer is in" in infos(_flood(1, code, key)[0])  # another address counts


def test_outlying_numbers_are_drawn_with_the_rest():
    """Issue 50: every answer is drawn, however far (1e308 beside 1): on a log axis when
    they spread over orders of magnitude."""
    at, code = teacher("pages/scaling.py", step="Check yourself")
    key = _exercise_key(at)
    at.button(key=f"_ui_ask_{key}").click().run()
    sent = (1e308, 1e6, 1.0)
    for value in sent:
        st = run_page("pages/scaling.py", room=code)
        st.number_input(key=f"guess-{key}").set_value(value)
        send(st, key)
        assert "Your answer is in" in infos(st)
    at.button(key=f"_ui_reveal_{key}").click().run()
    no_exception(at)
    chart = next(s for s in plotly_specs(at) if "What the class predicted" in str(s))
    dots = chart["data"][1]
    assert sorted(dots["y"]) == [1, 1, 1] and len(dots["x"]) == 3
    assert chart["layout"]["xaxis"]["type"] == "log"
    assert "orders of magnitude" in " ".join(c.value for c in at.caption)
