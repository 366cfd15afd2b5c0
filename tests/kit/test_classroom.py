"""Class mode through AppTest: one server process, so sessions share the rooms (issue 23).

A teacher's session opens a room with `?present=1&room=new`; a student's session joins
with `?room=CODE`. AppTest runs no timers, so each test reruns the student's session where
the browser's poll would.
"""

from __future__ import annotations

import re

import pytest

from tests.support.apptest import no_exception, run_page
from ui.classroom import rooms
from ui.room import CODE_LEN
from ui.exercises import EXERCISE_LOG


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
    assert state["key"] in " ".join(m.value for m in at.markdown)  # shown to the teacher
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
    at.button(key="_ui_room_end").click().run()
    no_exception(at)
    assert "_ui_room" not in at.session_state
    st.run()
    assert "has ended" in warnings(st) and "_ui_room" not in st.session_state


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
        st.button(key=f"FormSubmitter:form-{key}-Reveal").click().run()
        log = st.session_state[EXERCISE_LOG][0]
        assert not log["revealed"], "a student's answer waits for the teacher's reveal"
        assert "Your answer is in" in infos(st)
    assert len(rooms().answers(code, at.session_state["_ui_room"]["token"]).answers) == 2
    at.run()
    assert "**2** answers" in " ".join(m.value for m in at.markdown)
    at.button(key=f"_ui_reveal_{key}").click().run()
    assert at.session_state[EXERCISE_LOG][0]["revealed"]
    for st in (a, b):
        st.run()
        assert st.session_state[EXERCISE_LOG][0]["revealed"]
        assert "What the class predicted (2 answers)" in str(
            [e.proto.spec for e in st.get("plotly_chart")]
        )
