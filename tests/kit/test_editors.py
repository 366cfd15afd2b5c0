"""ui.editors: a data editor's state cut to its table, and Streamlit's parse of it made total.

The patch wraps a Streamlit internal (`DataEditorSerde.deserialize`); these tests fail
loudly on a Streamlit that moved it, so an upgrade cannot silently bring back the
uncatchable exception a forged editor state raised (issue 39).
"""

import json

import pytest
from streamlit.elements.widgets import data_editor
from streamlit.testing.v1 import AppTest

import ui
from ui import editors


def test_the_streamlit_internals_the_patch_wraps_are_there():
    assert hasattr(data_editor, "DataEditorSerde"), "Streamlit moved DataEditorSerde"
    assert hasattr(data_editor, "DataEditorState"), "Streamlit moved DataEditorState"
    assert callable(getattr(data_editor.DataEditorSerde, "deserialize", None))


def test_importing_ui_installs_the_patch_once():
    deserialize = data_editor.DataEditorSerde.deserialize
    assert getattr(deserialize, "tolerant", False), "ui did not patch DataEditorSerde"
    editors.tolerate_forged_states()  # a second call changes nothing
    assert data_editor.DataEditorSerde.deserialize is deserialize


@pytest.mark.parametrize(
    "forged", ["[1,2]", "null", '"text"', "not json", '{"edited_rows": [1]}', '{"x": {}}x']
)
def test_a_forged_state_reads_as_an_empty_marked_one(forged):
    state = data_editor.DataEditorSerde().deserialize(forged)
    assert isinstance(state, data_editor.DataEditorState)
    assert dict(state) == {
        "edited_rows": {},
        "added_rows": [],
        "deleted_rows": [],
        editors.UNREADABLE: True,
    }


def test_a_browser_s_state_reads_as_before():
    sent = {"edited_rows": {"1": {"a": "2"}}, "added_rows": [{"a": "3"}], "deleted_rows": [0]}
    state = data_editor.DataEditorSerde().deserialize(json.dumps(sent))
    assert dict(state) == {
        "edited_rows": {1: {"a": "2"}},
        "added_rows": [{"a": "3"}],
        "deleted_rows": [0],
    }
    assert data_editor.DataEditorSerde().deserialize(None)["added_rows"] == []


def test_cuts_add_up_and_are_false_when_nothing_was_cut():
    assert not ui.EditorCut()
    total = ui.EditorCut(rows=2, bad=1) + ui.EditorCut(bad=3, unreadable=1)
    assert total == ui.EditorCut(rows=2, bad=4, unreadable=1) and total


def _bound_app():
    """A script that cuts the state it is handed in session state to a 2 × (a, b) table."""
    import streamlit as st

    import ui

    dynamic = st.session_state.get("dynamic", True)
    cut = ui.bound_editor("t", rows=2, columns=["a", "b"], max_rows=3 if dynamic else None)
    st.session_state["cut"] = cut
    st.session_state["left"] = dict(st.session_state["t"]) if "t" in st.session_state else None


def _cut(state, dynamic=True):
    at = AppTest.from_function(_bound_app)
    at.session_state["t"] = state
    at.session_state["dynamic"] = dynamic
    at.run()
    assert not at.exception
    return at.session_state["cut"], at.session_state["left"]


def test_a_state_is_cut_to_its_table_in_place():
    state = {
        "edited_rows": {0: {"a": "1", "z": "9"}, "1": {"b": "x" * 99}, 7: {"a": "1"}},
        "added_rows": [{"a": "1"}, {"b": "2"}, {"a": "3"}],
        "deleted_rows": [1, 1, 5],
    }
    cut, left = _cut(state)
    assert cut == ui.EditorCut(rows=1, bad=3, deleted=2)  # z, the long b, row 7
    assert left == {
        "edited_rows": {0: {"a": "1"}},
        "added_rows": [{"a": "1"}, {"b": "2"}],
        "deleted_rows": [1],
    }


def test_a_table_of_fixed_rows_takes_no_added_or_deleted_row():
    cut, left = _cut(
        {"edited_rows": {}, "added_rows": [{"a": "1"}] * 4, "deleted_rows": [0]}, False
    )
    assert cut == ui.EditorCut(fixed=5)
    assert left["added_rows"] == [] and left["deleted_rows"] == []


@pytest.mark.parametrize("bad", [[1, 2], None, {"edited_rows": [1]}, {editors.UNREADABLE: True}])
def test_a_state_that_is_no_editor_s_state_is_dropped(bad):
    cut, left = _cut(bad)
    assert cut == ui.EditorCut(unreadable=1) and left is None
