"""AppTest: the Example step's two tables take only the edits their tables can hold.

st.data_editor applies the state the browser sends (edited, added and deleted rows) as it
comes; the page cuts it first (issue 39). A forged state here is set the way the page's
own tests edit the tables, through session state before a rerun; tests/softmax/
test_editor_ws.py sends the same over a real websocket, where Streamlit parses it itself.
"""

import time

import pytest

from attn_core.lessons.softmax import MAX_TOKENS, MIN_TOKENS
from tests.support.apptest import no_exception, run_page, warnings
from ui import content

PAGE = "pages/softmax.py"
KV = ["token", "k 1", "k 2", "k 3", "v x", "v y"]
SHIPPED = ["t1", "t2", "t3"]  # the lesson's tokens


def words(key: str, **fields) -> str:
    return content.fill(content.sections("softmax")[key], fields)


def row(name: str) -> dict:
    return {"token": name, **dict.fromkeys(KV[1:], "1")}


def rerun(at, table="kv_table", state=None, timeout=60):
    at.session_state[table] = state
    at.run(timeout=timeout)
    no_exception(at)
    return at


def tokens(at) -> list[str]:
    """The tokens the page computed with: the columns of its table of every step."""
    return [c for c in at.table[0].value.columns if c not in ("step", "sum")]


def cut_note(at) -> str:
    """The one note that says what the tables did not take."""
    start = words("example.cut", what="", min=MIN_TOKENS, max=MAX_TOKENS).split(":")[0]
    notes = [w for w in warnings(at) if w.startswith(start)]
    assert len(notes) == 1, warnings(at)
    return notes[0]


@pytest.fixture
def example():
    at = run_page(PAGE, step="Example")
    no_exception(at)
    assert tokens(at) == SHIPPED and not warnings(at)
    return at


def state(edited=None, added=(), deleted=()) -> dict:
    return {"edited_rows": edited or {}, "added_rows": list(added), "deleted_rows": list(deleted)}


def test_five_thousand_added_rows_keep_the_table_s_limit(example):
    t = time.process_time()
    at = rerun(example, state=state(added=[row(f"x{i}") for i in range(5000)]), timeout=120)
    cpu = time.process_time() - t
    kept = MAX_TOKENS - len(SHIPPED)
    assert tokens(at) == SHIPPED + [f"x{i}" for i in range(kept)]
    assert words("example.cut.rows", n=5000 - kept, max=MAX_TOKENS) in cut_note(at)
    assert cpu < 10, f"{cpu:.1f} s of CPU for one rerun"  # it was 70 s; now a plain rerun's
    at.run()  # the state was cut where Streamlit keeps it: the next rerun finds it cut
    no_exception(at)
    assert tokens(at) == SHIPPED + [f"x{i}" for i in range(kept)] and not warnings(at)


def test_a_million_added_rows_cost_no_more(example):
    hostile = state(added=[row("x")] * 1_000_000, deleted=[999_999] * 1_000_000)
    t = time.process_time()
    at = rerun(example, state=hostile, timeout=120)
    cpu = time.process_time() - t
    assert len(tokens(at)) == MAX_TOKENS
    assert words("example.cut.deleted", n=1_000_000) in cut_note(at)
    assert cpu < 10, f"{cpu:.1f} s of CPU for one rerun"


def test_edits_of_rows_and_columns_the_table_lacks_are_dropped(example):
    edits = {
        999_999: {"k 1": "5"},  # no such row
        -1: {"k 1": "5"},  # a position from the end: not one the browser sends
        "1": {"k 2": "-3", "no such column": "1", "v x": {"a": 1}, "v y": "9" * 100},
        0: "not a row",
    }
    at = rerun(example, state=state(edited=edits))
    note = cut_note(at)
    assert words("example.cut.bad", n=6) in note, note
    assert tokens(at) == SHIPPED
    assert at.table[0].value["t2"].iloc[0] == "-4.3"  # t2's k 2 = -3 was kept


def test_deleting_a_row_the_table_lacks(example):
    at = rerun(example, state=state(deleted=[999_999, 0, 0, "1", True], added=[row("new")]))
    assert words("example.cut.deleted", n=4) in cut_note(at)
    assert tokens(at) == ["t2", "t3", "new"]


NOT_A_STATE = {  # what session state may hold that no editor state is
    "list": [1, 2],
    "text": "abc",
    "none": None,
    "number": 7,
    "edits-list": {"edited_rows": [1]},
    "added-text": {"added_rows": "abc"},
    "deleted-dict": {"deleted_rows": {"0": 1}},
}


@pytest.mark.parametrize("bad", NOT_A_STATE.values(), ids=NOT_A_STATE.keys())
def test_a_state_that_is_no_editor_state_starts_the_table_again(example, bad):
    rerun(example, state=state(edited={1: {"k 2": "-3"}}))
    assert tokens(example) == SHIPPED and not warnings(example)
    at = rerun(example, state=bad)
    assert words("example.cut.unreadable") in cut_note(at)
    assert tokens(at) == SHIPPED
    assert at.table[0].value["t2"].iloc[0] == "-4.3"  # the last valid example stays
    at.run()  # the tables start again from it, without a note
    no_exception(at)
    assert not warnings(at) and at.table[0].value["t2"].iloc[0] == "-4.3"


def test_the_query_keeps_its_one_row(example):
    before = [el.value for el in example.latex]
    at = rerun(example, "q_table", state(added=[{"q 1": "1"}] * 1000, deleted=[0]))
    assert words("example.cut.fixed", n=1001) in cut_note(at)
    assert [el.value for el in at.latex] == before
    at = rerun(at, "q_table", state(edited={0: {"q 1": "0", "q 9": "1"}, 5: {"q 1": "1"}}))
    assert words("example.cut.bad", n=2) in cut_note(at)
    assert [el.value for el in at.latex] != before  # q 1 = 0 was kept


def test_a_seventh_token_is_cut_with_a_note():
    at = run_page(PAGE, step="Example")
    at = rerun(at, state=state(added=[row(f"x{i}") for i in range(4)]))
    assert words("example.cut.rows", n=1, max=MAX_TOKENS) in cut_note(at)
    assert len(tokens(at)) == MAX_TOKENS
