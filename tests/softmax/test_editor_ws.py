"""A scripted client on a real `streamlit run` server: the Example step's tables under
editor states no browser sends (issue 39).

The client (tests/support/wsclient.py) speaks the websocket protocol the way a browser
does: a BackMsg asks for a run, carrying the data editor's state as the JSON string a
browser would send; the run's ForwardMsgs come back until its `script_finished`. Here
Streamlit parses the state itself (tests/softmax/test_editor_state.py sets it through
session state instead), so a state it cannot parse reaches the page as it would.
"""

import json
import tomllib

import pytest

from attn_core.lessons.softmax import MAX_TOKENS, MIN_TOKENS
from tests.support.apptest import ROOT
from tests.support.wsclient import WsClient, string_state
from ui import content

pytestmark = pytest.mark.browser  # the shared server of tests/conftest.py, its xdist group

ROW = {"token": "x", "k 1": "1", "k 2": "1", "k 3": "1", "v x": "1", "v y": "1"}
CONFIG = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
LIMIT = CONFIG["server"]["maxWidgetStateSize"] * 1_000_000  # bytes a browser may send at once


def words(key: str, **fields) -> str:
    return content.fill(content.sections("softmax")[key], fields)


def cut_notes(run) -> list[str]:
    start = words("example.cut", what="", min=MIN_TOKENS, max=MAX_TOKENS).split(":")[0]
    return [t for t in run.texts if t.startswith(start)]


def open_example(client: WsClient):
    run = client.run(page="softmax", query="step=Example", timeout=120)
    assert run.finished == "finished" and not run.exceptions, (run.finished, run.exceptions)
    assert not cut_notes(run)
    return run


def edit(client: WsClient, editor: str, value: str, timeout: float = 60):
    """A rerun with the editor's state `value`; the run, once its script has finished."""
    run = client.run(query="step=Example", widgets=[string_state(editor, value)], timeout=timeout)
    assert run.finished == "finished", f"no finished run within {timeout} s: {run.finished}"
    assert not run.exceptions, run.exceptions
    assert run.widget_id("kv_table")  # the Example step was drawn, its table with it
    return run


def test_five_thousand_added_rows_get_a_finished_run_with_the_note(server_url):
    hostile = json.dumps({"edited_rows": {}, "added_rows": [ROW] * 5000, "deleted_rows": []})
    assert len(hostile) < LIMIT  # under the size limit: the page itself must bound it
    with WsClient(server_url) as c:
        editor = open_example(c).widget_id("kv_table")
        run = edit(c, editor, hostile)
        notes, kept = cut_notes(run), MAX_TOKENS - 3
        assert len(notes) == 1
        assert words("example.cut.rows", n=5000 - kept, max=MAX_TOKENS) in notes[0]
        run = edit(c, editor, hostile)  # a browser sends its whole state with every rerun
        assert len(cut_notes(run)) == 1


FORGED = [  # states Streamlit's deserializer rejects, then two it takes but cannot apply
    "[1, 2]",
    "null",
    '"text"',
    "not json",
    '{"edited_rows": [1]}',
    '{"edited_rows": {"x": {}}}',
    '{"added_rows": "abc"}',
    '{"edited_rows": {"999999": {"k 1": "1"}}, "deleted_rows": [999999]}',
    '{"edited_rows": {"0": {"no such column": "1"}}}',
]


@pytest.mark.parametrize("value", FORGED)
def test_states_streamlit_cannot_apply_leave_a_note_and_no_exception(server_url, value):
    with WsClient(server_url) as c:
        editor = open_example(c).widget_id("kv_table")
        notes = cut_notes(edit(c, editor, value))
        assert len(notes) == 1, notes
        run = edit(c, editor, json.dumps({"edited_rows": {"1": {"k 2": "-3"}}}))
        assert not cut_notes(run)  # the editor works as before


def test_a_message_over_the_size_limit_is_refused_and_the_server_stays_usable(server_url):
    assert LIMIT <= 1_000_000  # issue 39: 25 MB (the default) held ~53 MB of one session
    big = json.dumps({"added_rows": [ROW] * (LIMIT // 60)})  # ~80 bytes a row
    assert len(big) > LIMIT
    with WsClient(server_url) as c:
        editor = open_example(c).widget_id("kv_table")
        c.send_rerun(query="step=Example", widgets=[string_state(editor, big)])
        assert c.close_code() == 1009  # Message Too Big: closed before it is parsed
    with WsClient(server_url) as c:  # a new connection, as a reloaded tab: a normal run
        run = open_example(c)
        run = edit(c, run.widget_id("kv_table"), json.dumps({"added_rows": [ROW]}))
        assert not cut_notes(run)
