"""Bounded data editors: an st.data_editor's state cut to the table it edits.

st.data_editor applies its state, the JSON the browser sends (`{"edited_rows": {...},
"added_rows": [...], "deleted_rows": [...]}`), to the table it is given, trusting it: a
row or column the table lacks raises, and every added row is a pandas append (5,000 rows
made one rerun of /softmax take 70–92 s of server CPU, and every later rerun while the
state lasted). So a page calls `bound_editor(key, rows=…, columns=[…], max_rows=…)` for
each editor before it draws (or reads) any of them: the state is cut in place, since the
dict that st.session_state[key] returns is the one the editor then applies (Streamlit
1.67). A state that is no editor's state at all is dropped from session state, so the
editor starts again from the table the page gives it. The returned `EditorCut`s add up, and
`editor_note(cut, W, key)` words them under the editors from the page's content file.

Streamlit parses an editor's state before the page runs, and raised on forged JSON where
no page code could catch it; `tolerate_forged_states()`, installed when this module is
imported, makes that parse total (see its docstring; tests/kit/test_editors.py checks it
against the pinned Streamlit).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st
from streamlit.elements.widgets import data_editor

from . import content, events

CELL_CHARS = 32  # the longest cell text kept: a number, or a short name
CELL_TYPES = (str, int, float, bool, type(None))  # what a cell's edit can be
FIELDS = (("edited_rows", dict), ("added_rows", list), ("deleted_rows", list))
UNREADABLE = "ui_editor_unreadable"  # marks a state Streamlit could not parse
_NO_STATE = object()  # st.session_state has no value for the key


@dataclass
class EditorCut:
    """What was cut from editors' states this run, counted for the note (`a + b` adds)."""

    rows: int = 0  # rows added past a table's max_rows
    fixed: int = 0  # rows added to or deleted from a table whose rows are fixed
    bad: int = 0  # edits of cells or rows the table lacks, or that are no cell's value
    deleted: int = 0  # deletions of rows the table lacks
    unreadable: int = 0  # states that are no editor's state at all: dropped whole

    def __add__(self, other: EditorCut) -> EditorCut:
        return EditorCut(*(a + b for a, b in zip(self.counts(), other.counts(), strict=True)))

    def counts(self) -> tuple[int, ...]:
        return dataclasses.astuple(self)

    def __bool__(self) -> bool:
        return any(self.counts())


def tolerate_forged_states() -> None:
    """Make Streamlit's parse of a data editor's state total, once per process.

    Wraps `streamlit.elements.widgets.data_editor.DataEditorSerde.deserialize`
    (Streamlit 1.67). Streamlit parses every widget's new state before the page runs, to
    see which changed (SessionState._widget_changed), and that method raises on JSON that
    is not an editor's dict (a list, "null", {"edited_rows": [1]}…): an exception no page
    code can catch. Such a state now reads as an empty `DataEditorState` marked
    UNREADABLE, which bound_editor drops. Installed when ui is imported, before any
    st.data_editor of the process draws (a widget keeps the deserializer it was
    registered with)."""
    serde = data_editor.DataEditorSerde
    if getattr(serde.deserialize, "tolerant", False):
        return
    strict = serde.deserialize

    def deserialize(self, ui_value):
        try:
            return strict(self, ui_value)
        except Exception:  # whatever a forged value makes the JSON parse or its checks raise
            empty = {name: kind() for name, kind in FIELDS}
            return data_editor.DataEditorState({**empty, UNREADABLE: True})

    deserialize.tolerant = True
    serde.deserialize = deserialize


def _read_state(key: str):
    """An editor's state as Streamlit keeps it, or _NO_STATE."""
    try:
        return st.session_state[key]
    except KeyError:
        return _NO_STATE


def _clean_cells(change, columns: Sequence[str]) -> tuple[dict, int]:
    """The cells of an edited or added row that the table has, and how many it lacks.

    One look-up per column: a row of a million cells costs no more than one of three."""
    if not isinstance(change, dict):
        return {}, 1
    kept = {
        c: change[c]
        for c in columns
        if c in change
        and isinstance(change[c], CELL_TYPES)
        and not (isinstance(change[c], str) and len(change[c]) > CELL_CHARS)
    }
    return kept, len(change) - len(kept)


def _clean_edits(edited: dict, rows: int, columns: Sequence[str], cut: EditorCut) -> None:
    """Keep the edits of rows 0 … rows - 1 (keys as Streamlit writes them, or as text)."""
    kept, seen = {}, 0
    for pos in range(rows):
        for k in (pos, str(pos)):
            if k in edited:
                seen += 1
                cells, bad = _clean_cells(edited[k], columns)
                cut.bad += bad
                if cells:
                    kept.setdefault(pos, {}).update(cells)
    cut.bad += len(edited) - seen
    edited.clear()
    edited.update(kept)


def _clean_deletions(deleted: list, rows: int, dynamic: bool, cut: EditorCut) -> int:
    """Keep each deletion of an existing row once; the number of rows deleted."""
    ok = (d for d in deleted[:rows] if type(d) is int and 0 <= d < rows) if dynamic else ()
    keep = list(dict.fromkeys(ok))
    if dynamic:
        cut.deleted += len(deleted) - len(keep)
    else:
        cut.fixed += len(deleted)
    deleted[:] = keep
    return len(keep)


def _clean_additions(
    added: list, room: int, columns: Sequence[str], dynamic: bool, cut: EditorCut
) -> None:
    """Keep the first `room` added rows, each with the cells the table has."""
    keep = []
    for row in added[:room]:
        cells, bad = _clean_cells(row, columns)
        cut.bad += bad
        if isinstance(row, dict):
            keep.append(cells)
    past = max(0, len(added) - room)
    if dynamic:
        cut.rows += past
    else:
        cut.fixed += past
    added[:] = keep


def _parts(state) -> list | None:
    """A state's edited rows, added rows and deleted rows, as Streamlit keeps them (so that
    cutting them cuts what the editor applies); None when it is no editor's state."""
    if not isinstance(state, dict):
        return None
    parts = [dict.get(state, name, kind()) for name, kind in FIELDS]  # dict's get: unwrapped
    return parts if all(isinstance(p, k) for p, (_, k) in zip(parts, FIELDS, strict=True)) else None


def bound_editor(
    key: str, *, rows: int, columns: Sequence[str], max_rows: int | None = None
) -> EditorCut:
    """Cut the state of the st.data_editor `key`, in place, to its table; what was cut.

    `rows` and `columns` are the table the editor is given; `max_rows` None means its
    rows are fixed (`num_rows="fixed"`: every added or deleted row is cut), else the
    most rows it may hold with its additions (`num_rows="dynamic"`). Call it before the
    editor is drawn. A state that is no editor's state is removed from session state."""
    cut = EditorCut()
    state = _read_state(key)
    if state is _NO_STATE:
        return cut
    parts = _parts(state)
    if parts is None or dict.get(state, UNREADABLE):
        st.session_state.pop(key, None)
        cut.unreadable += 1
        return cut
    edited, added, deleted = parts
    dynamic = max_rows is not None
    _clean_edits(edited, rows, columns, cut)
    gone = _clean_deletions(deleted, rows, dynamic, cut)
    room = max_rows - (rows - gone) if dynamic else 0
    _clean_additions(added, max(0, room), columns, dynamic, cut)
    return cut


def editor(key: str, data: Any, **kwargs: Any) -> Any:
    """st.data_editor `key` as every ui control is: an edit is the user's move (class
    mode: a following student who edits a table explores on their own, ui.events)."""
    return st.data_editor(data, key=key, on_change=events.moved, args=(key,), **kwargs)


def editor_note(cut: EditorCut, words: Callable[..., str], key: str, **fields: Any) -> None:
    """A warning under the editors when their states were cut: what, and how much.

    `words` is the page's `ui.Words`; its section `key` is the note, with the field
    `{{what}}` and `fields`; `key.<count>` words one count of `EditorCut` (`rows`, `fixed`,
    `bad`, `deleted`, `unreadable`) with `{{n}}` where it asks for it, and those of
    `fields` it names. Counts that are zero say nothing; no count, no note."""
    said = []
    for name, n in zip((f.name for f in dataclasses.fields(cut)), cut.counts(), strict=True):
        if n:
            section = f"{key}.{name}"
            asked = content.fields(words.raw(section))
            given = {k: v for k, v in {"n": n, **fields}.items() if k in asked}
            said.append(words(section, **given))
    if said:
        note = words(key, what="; ".join(said), **fields)
        st.warning(note, icon=":material/content_cut:")


tolerate_forged_states()
