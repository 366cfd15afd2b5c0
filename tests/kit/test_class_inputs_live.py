"""Every input a teacher changes is the class's, on a live server (issue 50).

A teacher and two students over the websocket protocol on /softmax. The teacher edits the
query table (q 1 = 4): both students' pages compute with the teacher's example, and still
follow. Then the teacher asks the step's question: it reaches both students, whose examples
are the teacher's, and their answers count.
"""

from __future__ import annotations

import re

import pytest

from tests.support.attacks import class_code, trigger
from tests.support.browser import streamlit_server
from tests.support.wsclient import WsClient, string_state

pytestmark = pytest.mark.xdist_group("live_class_inputs")
EDIT = '{"edited_rows": {"0": {"q 1": "4"}}, "added_rows": [], "deleted_rows": []}'


@pytest.fixture(scope="module")
def server():
    with streamlit_server() as url:
        yield url


def z_of(run) -> str:
    """The output the Example step writes, z = [x, y], from its formula."""
    for e in run.elements:
        if e.WhichOneof("type") == "markdown" and "z = " in e.markdown.body:
            m = re.search(r"= \[([-\d.]+),\\ ([-\d.]+)\]", e.markdown.body)
            if m:
                return m.group(0)
    raise AssertionError("no z = … on the page")


def following(run) -> bool:
    return any("Following the teacher" in t for t in run.texts)


def test_a_teacher_s_table_edit_reaches_the_class_and_so_does_the_question(server):
    with WsClient(server) as teacher, WsClient(server) as a, WsClient(server) as b:
        first = teacher.run(page="softmax", query="room=new&step=Example")
        code = class_code(first)
        query = f"room={code}&step=Example"
        before = {s: s.run(page="softmax", query=query) for s in (a, b)}
        for run in before.values():
            assert following(run) and z_of(run) == z_of(first)
        edited = teacher.run(query=query, widgets=[string_state(first.widget_id("q_table"), EDIT)])
        assert z_of(edited) != z_of(first)  # the teacher's example moved
        for s in (a, b):
            run = s.read_run(timeout=60)
            assert following(run), "a student followed the teacher's edit"
            assert z_of(run) == z_of(edited)

        # The question of the step the teacher opens next reaches every student (its
        # identity is the class's, not each student's example: issue 50).
        teacher.send_rerun(query=f"room={code}&step=Check+yourself", history=True)
        checked = teacher.read_run(timeout=60)
        for s in (a, b):
            assert following(s.read_run(timeout=60))
        ask = checked.widget_id("_ui_ask_softmax-scale-0")
        asked = teacher.run(query=f"room={code}&step=Check+yourself", widgets=[trigger(ask)])
        assert not asked.exceptions
        for s in (a, b):
            run = s.read_run(timeout=60)
            labels = [e.button.label for e in run.elements if e.WhichOneof("type") == "button"]
            assert "Send my answer" in labels, "the question reached the student"
