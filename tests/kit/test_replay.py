"""Followers at one setting share one run's output (ui/replay.py, issue 40).

Through AppTest, sessions in one process as on a server: a teacher on /scaling and three
students. Each woken run is marked as ui.wake marks it. The second student's run is a
replay of the first one's, and it must leave what a full run leaves: the same elements,
the same session state, and a page whose controls still work. The Streamlit pieces the
module relies on each get a test on the pinned Streamlit.
"""

from __future__ import annotations

import inspect

import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.runtime import app_session
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.scriptrunner_utils.script_run_context import ScriptRunContext
from streamlit.runtime.state import session_state as ss_module
from streamlit.runtime.state.common import WidgetMetadata

from tests.support.apptest import no_exception, run_page
from ui import delivery, replay, wake

pytestmark = pytest.mark.xdist_group("rooms")  # one process's rooms, as on a server
SESSION = "test session id"  # AppTest's one session id


def woken(at):
    """Rerun `at` as ui.wake reruns a follower."""
    wake._WOKEN[SESSION] = True
    at.run()
    no_exception(at)
    return at


def _elements(node, deferred: list | None = None) -> list:
    """Every element and block the run drew, in order, as plain dicts (a download's
    deferred id, which each session registers for itself, goes to `deferred`)."""
    out = []
    proto = getattr(node, "proto", None)
    if proto is not None:
        shown = MessageToDict(proto)
        if "deferredFileId" in shown and deferred is not None:
            deferred.append(shown.pop("deferredFileId"))
        out.append(shown)
    for child in getattr(node, "children", {}).values():
        out += _elements(child, deferred)
    return out


def _state(at) -> dict:
    s = at.session_state._state._state  # SafeSessionState -> SessionState
    out = {k: v for k, v in s.filtered_state.items() if k not in replay.IDENTITY}
    return out | {"$query": s.query_params._query_params}


@pytest.fixture
def klass(monkeypatch):
    """A teacher on /scaling and three following students, the teacher's d_k moved."""
    replay.clear()
    monkeypatch.setattr(replay, "RECORD_S", 60.0)
    teacher = run_page("pages/scaling.py", room="new")
    no_exception(teacher)
    code = teacher.session_state["_ui_room"]["code"]
    students = [run_page("pages/home.py", room=code) for _ in range(3)]
    for s in students:
        s.run()
    teacher.sidebar.select_slider(key="d_k").set_value(128).run()
    return teacher, students


def test_a_replayed_follower_gets_the_page_and_state_a_full_run_gives(klass, monkeypatch):
    _, (first, second, third) = klass
    before = dict(replay.stats)
    woken(first)  # runs the page and leaves a record
    assert replay.stats["recorded"] == before["recorded"] + 1
    registered: set[str] = set()
    add = MediaFileManager.add_deferred

    def spy(self, *args, **kwargs):
        registered.add(file_id := add(self, *args, **kwargs))
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", spy)
    woken(second)  # the same state: a replay
    assert replay.stats["replayed"] == before["replayed"] + 1
    monkeypatch.setattr(MediaFileManager, "add_deferred", add)
    monkeypatch.setattr(replay, "ON", False)
    woken(third)  # the same state, in full
    assert replay.stats["replayed"] == before["replayed"] + 1
    assert second.sidebar.select_slider(key="d_k").value == 128
    ids: dict[str, list] = {"first": [], "second": [], "third": []}
    assert _elements(second._tree, ids["second"]) == _elements(third._tree, ids["third"])
    _elements(first._tree, ids["first"])
    assert ids["second"] and not set(ids["second"]) & (set(ids["first"]) | set(ids["third"]))
    assert set(ids["second"]) <= registered  # each replayed CSV is this session's own
    assert _state(second) == _state(third)
    assert second.session_state["_ui_room_student"] != first.session_state["_ui_room_student"]


def test_a_replayed_follower_can_still_move_a_control_and_explore(klass):
    _, (first, second, _) = klass
    woken(first)
    before = replay.stats["replayed"]
    woken(second)
    assert replay.stats["replayed"] == before + 1
    second.sidebar.select_slider(key="d_k").set_value(256).run()  # its own move
    no_exception(second)
    said = " ".join(str(x.value) for x in second.info)
    assert "exploring on your own" in said
    assert second.sidebar.select_slider(key="d_k").value == 256
    assert first.session_state["d_k"] == 128  # the other student is untouched


def test_a_page_switch_shares_the_new_page_s_run(klass, monkeypatch):
    teacher, (first, second, third) = klass
    teacher.switch_page("pages/softmax.py").run()  # the class follows to the next lesson
    no_exception(teacher)
    before = dict(replay.stats)
    woken(first)  # switches page, then runs the new page and leaves a record
    woken(second)  # switches page, then gets the new page's body replayed
    assert replay.stats["recorded"] == before["recorded"] + 1
    assert replay.stats["replayed"] == before["replayed"] + 1
    monkeypatch.setattr(replay, "ON", False)
    woken(third)  # the same, in full
    assert second.session_state["_ui_page"] == third.session_state["_ui_page"] == "pages/softmax.py"
    assert _elements(second._tree, []) == _elements(third._tree, [])  # (each its own CSVs)
    assert _state(second) == _state(third)


def _wake_key(at) -> tuple:
    """The key ui.wake would name for `at`'s next run (`_prekey`, from its state and the
    page and query string its runs take)."""
    from types import SimpleNamespace

    from streamlit.proto.ClientState_pb2 import ClientState

    seen = {}

    def spy(ctx, key):
        seen.update(page=ctx.page_script_hash, query=ctx.query_string)
        return False

    real = replay._started_as
    replay._started_as = spy
    try:
        wake._WOKEN[SESSION] = ("probe",)
        at.run()
    finally:
        replay._started_as = real
    cs = ClientState(page_script_hash=seen["page"], query_string=seen["query"])
    return replay._prekey(SimpleNamespace(_client_state=cs, _session_state=_ss(at)))


def _ss(at):
    return at.session_state._state._state  # SafeSessionState -> SessionState


def test_a_woken_run_is_recorded_only_when_it_starts_from_the_woken_state(klass, monkeypatch):
    """Issue 49: the student's own rerun may take the wake's place (Streamlit's fast
    reruns replace the woken run). Its run carries the student's input; it must never be
    recorded as the class's, whatever the timing."""
    _, (first, *_) = klass
    first.run()  # on the teacher's page, as the class is
    started = []
    monkeypatch.setattr(replay, "_start_whole", lambda ctx, key: started.append(key))
    key = _wake_key(first)
    wake._WOKEN[SESSION] = key
    first.run()  # the wake's own run: from the state it named
    assert started == [key]
    key = _wake_key(first)
    before = replay.stats["mismatched"]
    wake._WOKEN[SESSION] = key
    first.sidebar.select_slider(key="d_k").set_value(512).run()  # the student's own move
    assert replay.stats["mismatched"] == before + 1
    assert started == [started[0]]  # not recorded
    key = _wake_key(first)
    before = replay.stats["mismatched"]
    wake._WOKEN[SESSION] = key
    _ss(first)["_ui_scroll_n"] = 7  # a state that moved after the wake named it
    first.run()
    assert replay.stats["mismatched"] == before + 1 and len(started) == 1


def test_only_a_woken_run_records_or_replays(klass):
    _, (first, second, _) = klass
    before = dict(replay.stats)
    first.run()  # the student's own rerun (a poll, a click): in full, no record
    second.run()
    assert replay.stats == before


def test_a_record_past_its_age_is_run_again(klass, monkeypatch):
    _, (first, second, _) = klass
    monkeypatch.setattr(replay, "RECORD_S", -1.0)
    before = dict(replay.stats)
    woken(first)
    woken(second)
    assert replay.stats["replayed"] == before["replayed"]
    assert replay.stats["recorded"] == before["recorded"] + 2


def test_a_different_state_is_not_replayed(klass):
    _, (first, second, _) = klass
    woken(first)
    second.session_state["_ui_scroll_n"] = 99  # anything of its own: not the same page
    before = dict(replay.stats)
    woken(second)
    assert replay.stats["replayed"] == before["replayed"]


def test_a_click_that_came_with_the_wake_is_never_replayed():
    states = ss_module.WStates()
    states.set_widget_from_proto(WidgetState(id="$$ID-a-button", trigger_value=True))
    holder = type("S", (), {"_new_widget_state": states})()
    assert replay._triggered(holder)
    states.set_widget_from_proto(WidgetState(id="$$ID-a-button", trigger_value=False))
    assert not replay._triggered(holder)


def test_copies_share_nothing_that_can_change():
    meta = WidgetMetadata("w", lambda x: x, lambda x: x, value_type="int_value")
    value = {"a": [1, {2}], "b": (1, "x"), "c": {"k": [1]}, "m": meta}
    copied = replay._copy(value)
    assert copied == value
    assert copied["a"] is not value["a"] and copied["c"]["k"] is not value["c"]["k"]
    assert copied["b"] is value["b"] and copied["m"] is meta


# ------------------------------------------------- the Streamlit pieces it relies on


def test_session_state_keeps_the_fields_a_replay_copies():
    fields = {f.name for f in ss_module.SessionState.__dataclass_fields__.values()}
    assert set(replay._FIELDS) <= fields
    assert "states" in ss_module.WStates.__dataclass_fields__
    assert "_key_id_mapping" in ss_module.KeyIdMapper.__dataclass_fields__
    params = inspect.signature(ss_module.SessionState.on_script_finished).parameters
    assert list(params)[:2] == ["self", "widget_ids_this_run"]


def test_each_run_gets_new_cursors_the_record_s_token():
    assert "self.cursors = {}" in inspect.getsource(ScriptRunContext.reset)


def test_a_deferred_download_is_registered_per_session():
    params = inspect.signature(MediaFileManager.add_deferred).parameters
    assert list(params)[:5] == ["self", "data_callable", "mimetype", "coordinates", "file_name"]
    assert "element_id" in params
    button = ForwardMsg().delta.new_element.download_button
    assert "deferred_file_id" in button.DESCRIPTOR.fields_by_name


def test_an_app_session_queues_a_message_as_a_replay_does():
    source = inspect.getsource(app_session.AppSession._enqueue_forward_msg)
    assert "self._browser_queue.enqueue(msg)" in source
    assert "self._message_enqueued_callback()" in source
    assert "sender is not self._scriptrunner" in inspect.getsource(
        app_session.AppSession._handle_scriptrunner_event_on_event_loop
    )


def test_the_theme_is_made_once_and_the_same_as_streamlit_makes_it():
    from streamlit.proto.NewSession_pb2 import CustomThemeConfig

    assert delivery.THEME_INSTALLED
    original = app_session._populate_theme_msg.__wrapped__
    for section in ("theme", "theme.light", "theme.dark", "theme.sidebar"):
        ours, theirs = CustomThemeConfig(), CustomThemeConfig()
        app_session._populate_theme_msg(ours, section)
        original(theirs, section)
        assert ours == theirs
