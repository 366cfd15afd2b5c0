"""A student's side of a class (issue 40), through AppTest: the exercise button says what it
does, an empty answer says nothing was sent, a question the teacher has not asked cannot be
revealed ahead of the class, and the page goes where the teacher's step is.

AppTest runs no timers: each test reruns a student's session where the browser's wake or
poll would. (tests/kit/test_classroom.py covers the rooms themselves.)"""

from __future__ import annotations

import json

import pytest

from figures.common import MARK
from tests.support.apptest import no_exception, plotly_specs, run_page
from ui.exercises import AHEAD, EXERCISE_LOG

MASKS = "pages/masks.py"


def teacher(file: str = MASKS, **params):
    at = run_page(file, present="1", room="new", **params)
    no_exception(at)
    return at, at.session_state["_ui_room"]["code"]


def student(code: str):
    st = run_page("pages/home.py", room=code)  # the join link: lands on the teacher's page
    no_exception(st)
    return st


def log(at, key: str) -> dict:
    return next(e for e in at.session_state[EXERCISE_LOG] if e["key"] == key)


def form_buttons(at, key: str) -> list:
    return [b for b in at.button if b.key.startswith(f"FormSubmitter:form-{key}-")]


def said(at) -> str:
    return " ".join(str(x.value) for x in [*at.info, *at.caption, *at.markdown])


def teacher_count(at) -> str:
    at.run()
    return " ".join(m.value for m in at.markdown if "answered" in m.value)


def _choice_key(at) -> str:
    return next(
        e["key"] for e in at.session_state[EXERCISE_LOG] if at.radio(key=f"pick-{e['key']}")
    )


def _number_key(at) -> str:
    keys = {n.key for n in at.number_input}
    return next(e["key"] for e in at.session_state[EXERCISE_LOG] if f"guess-{e['key']}" in keys)


def test_an_exercise_the_teacher_has_not_asked_waits_while_following_then_opens_when_exploring():
    at, code = teacher(step="Fill")
    key = at.session_state[EXERCISE_LOG][0]["key"]
    st = student(code)
    assert "Following the teacher" in said(st)
    [button] = form_buttons(st, key)
    assert button.label == "Reveal" and button.disabled
    assert st.radio(key=f"pick-{key}").disabled
    assert AHEAD in said(st)
    st.run()  # the teacher's next move, or a poll: still waiting
    assert not log(st, key)["revealed"] and form_buttons(st, key)[0].disabled
    slider = st.sidebar.slider[0]  # the student explores on their own
    slider.set_value(slider.max if slider.value != slider.max else slider.min).run()
    assert "exploring on your own" in said(st)
    key = st.session_state[EXERCISE_LOG][0]["key"]  # (a key names its instance)
    [button] = form_buttons(st, key)
    assert not button.disabled and AHEAD not in said(st)
    radio = st.radio(key=f"pick-{key}")
    radio.set_value(radio.options[0])
    button.click().run()
    assert log(st, key)["revealed"]


@pytest.mark.parametrize(
    "step, kind, empty",
    [("Fill", "choice", "Pick an answer"), ("Broadcasting bug", "number", "Type a number")],
)
def test_a_class_question_says_send_my_answer_and_an_empty_send_sends_nothing(step, kind, empty):
    at, code = teacher(step=step)
    key = _choice_key(at) if kind == "choice" else _number_key(at)
    st = student(code)
    at.button(key=f"_ui_ask_{key}").click().run()
    no_exception(at)
    st.run()
    [button] = form_buttons(st, key)
    assert button.label == "Send my answer"  # what it does: the answer goes to the teacher
    button.click().run()  # nothing chosen
    no_exception(st)
    assert f"{empty} first: nothing was sent." in said(st)
    assert "Your answer is in" not in said(st)
    assert "**0 of" in teacher_count(at)
    if kind == "choice":
        radio = st.radio(key=f"pick-{key}")
        radio.set_value(radio.options[0])
    else:
        st.number_input(key=f"guess-{key}").set_value(3.0)
    form_buttons(st, key)[0].click().run()
    assert "Your answer is in" in said(st) and "nothing was sent" not in said(st)
    assert "**1 of" in teacher_count(at)
    assert not log(st, key)["revealed"]
    at.button(key=f"_ui_reveal_{key}").click().run()
    st.run()
    assert log(st, key)["revealed"]
    # the specs decoded: plotly escapes "✓" as \u2713 unless orjson is installed
    specs = " ".join(json.dumps(x, ensure_ascii=False) for x in plotly_specs(st))
    assert "What the class predicted (1 answer)" in specs
    if kind == "choice":
        assert MARK in specs


def _scrolls(at) -> list[str]:
    """Where this run's page scrolls to (ui.chrome's script names it), if anywhere."""
    bodies = [h.proto.body for h in at.get("html")]
    return [w for b in bodies for w in ("step", "top") if f'const where = "{w}"' in b]


def test_next_step_scrolls_the_teacher_s_page_and_the_following_student_s_to_the_step():
    at, code = teacher(step="Mask")
    st = student(code)
    assert _scrolls(st) == ["top"]  # it landed on home and switched to the teacher's page
    st.run()
    assert _scrolls(at) == [] and _scrolls(st) == []  # a plain run does not scroll
    at.button(key="_ui_next_step").click().run()
    no_exception(at)
    assert at.session_state["step"] == "Weights" and _scrolls(at) == ["step"]
    st.run()
    assert st.session_state["step"] == "Weights" and _scrolls(st) == ["step"]
    at.run()
    st.run()
    assert _scrolls(at) == [] and _scrolls(st) == []  # once, not on every rerun


def test_a_following_student_s_first_screen_keeps_the_introduction_in_a_closed_box():
    _, code = teacher(step="Mask")
    st = student(code)
    own = run_page(MASKS, step="Mask")
    assert [e.label for e in st.expander][:1] == ["About this lesson"]
    assert "About this lesson" not in [e.label for e in own.expander]


def test_an_exercise_the_teacher_reveals_without_asking_opens_for_the_class():
    at, code = teacher(step="Fill")
    key = _choice_key(at)
    st = student(code)
    assert form_buttons(st, key)[0].disabled  # waiting for the teacher
    radio = at.radio(key=f"pick-{key}")
    radio.set_value(radio.options[0])
    form_buttons(at, key)[0].click().run()  # the teacher reveals on the projector
    no_exception(at)
    assert log(at, key)["revealed"]
    st.run()  # the room's new version wakes the students
    [button] = form_buttons(st, key)
    assert not button.disabled and AHEAD not in said(st)
    assert "Following the teacher" in said(st)  # still following
    assert not log(st, key)["revealed"]  # free to reveal, not revealed for them
    pick = st.radio(key=f"pick-{key}")
    pick.set_value(pick.options[0])
    button.click().run()
    assert log(st, key)["revealed"]
    at.button(key=f"_ui_ask_{key}").click().run()  # asked after all: it waits for the class
    no_exception(at)
    other = student(code)
    assert form_buttons(other, key)[0].label == "Send my answer"
