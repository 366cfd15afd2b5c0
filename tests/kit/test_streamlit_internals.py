"""The Streamlit internals the kit relies on, one test each, on the pinned Streamlit.

Streamlit has no public call for what these do (wake another session, tell a fragment's
echo from a move, switch off the automatic pages/ navigation, make a data editor's parse
total), so an upgrade may remove one silently. Each test names the use in ui/ and asserts
the piece exists with the shape that use needs; where the kit falls back to polling when a
piece is missing, a test checks that it says so in the log, once.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import streamlit
from streamlit import runtime
from streamlit.runtime import app_session, pages_manager, session_manager
from streamlit.runtime.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils import script_run_context

from ui import classroom, wake
from ui.runtime import logs


def _assigns(cls: type, attr: str) -> bool:
    """Whether the class's own source assigns `self.<attr>` (instance attributes only
    exist on a live object, which needs a running server)."""
    source = inspect.getsource(cls)
    return f"self.{attr} =" in source or f"self.{attr}: " in source


def test_the_pinned_streamlit_is_the_one_these_tests_describe():
    pinned = next(
        line.split("==")[1].strip()
        for line in Path("requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.lower().startswith("streamlit==")
    )
    assert streamlit.__version__ == pinned


# ui/wake.py: runtime.get_instance()._session_mgr.get_active_session_info(id).session


def test_the_runtime_keeps_its_session_manager():
    assert callable(runtime.exists) and callable(runtime.get_instance)
    assert _assigns(Runtime, "_session_mgr")


def test_the_session_manager_finds_an_active_session_by_id():
    params = inspect.signature(session_manager.SessionManager.get_active_session_info).parameters
    assert list(params) == ["self", "session_id"]
    assert "session" in {f.name for f in dataclasses.fields(session_manager.ActiveSessionInfo)}


# ui/wake.py: s._event_loop.call_soon_threadsafe / call_later, s._state.name,
# s._scriptrunner, s.request_rerun(s._client_state)


def test_an_app_session_can_be_rerun_from_outside_with_its_last_client_state():
    session = app_session.AppSession
    for attr in ("_event_loop", "_state", "_scriptrunner", "_client_state"):
        assert _assigns(session, attr), attr
    params = inspect.signature(session.request_rerun).parameters
    assert list(params) == ["self", "client_state"]
    assert app_session.AppSessionState.SHUTDOWN_REQUESTED.name == "SHUTDOWN_REQUESTED"


# ui/classroom.py (publish, _echo), ui/wake.py (here): the run's context


def test_the_run_context_names_its_session_and_this_run_s_fragments():
    fields = {f.name for f in dataclasses.fields(script_run_context.ScriptRunContext)}
    assert {"session_id", "fragment_ids_this_run"} <= fields
    assert "suppress_warning" in inspect.signature(get_script_run_ctx).parameters


# ui/classroom.py (_echo): ThreadState.get().fragment_id


def test_thread_state_tells_the_fragment_a_callback_belongs_to():
    state = script_run_context.ThreadState
    assert callable(state.get)
    fields = {f.name for f in dataclasses.fields(script_run_context.FragmentThreadState)}
    assert "fragment_id" in fields


# ui/chrome.py (page_header): PagesManager.uses_pages_directory, switched off by hand


def test_the_pages_manager_keeps_the_automatic_pages_mode_on_the_class():
    assert "uses_pages_directory" in vars(pages_manager.PagesManager)


# ui/editors.py (tolerate_forged_states): DataEditorSerde.deserialize, DataEditorState


def test_the_data_editor_s_parse_can_be_wrapped():
    from streamlit.elements.widgets import data_editor

    params = inspect.signature(data_editor.DataEditorSerde.deserialize).parameters
    assert list(params) == ["self", "ui_value"]
    assert callable(data_editor.DataEditorState)


# Falling back: said once in the log, never silently.


def _running_session(monkeypatch):
    """A script run of a live server (as far as ui.wake can tell)."""
    monkeypatch.setattr(wake, "get_script_run_ctx", lambda: SimpleNamespace(session_id="s1"))
    monkeypatch.setattr(runtime, "exists", lambda: True)
    monkeypatch.setattr(wake, "_warned", [])
    logs.forget()  # a topic logged by an earlier test of this process may be said again


def test_a_session_that_closed_during_its_run_is_no_missing_piece(monkeypatch, caplog):
    """Issue 49: followers closing their tab while their woken run went on logged
    "falls back to polling … lacks a piece" (AttributeError 'session'), and, logged once a
    process, that line would have silenced a real missing piece later."""
    _running_session(monkeypatch)
    manager = SimpleNamespace(get_active_session_info=lambda session_id: None)
    monkeypatch.setattr(runtime, "get_instance", lambda: SimpleNamespace(_session_mgr=manager))
    with caplog.at_level(logging.WARNING, logger=wake.__name__):
        assert wake.here() is None
    assert not [r for r in caplog.records if r.name == wake.__name__]
    # A real missing piece after it is still said.
    monkeypatch.setattr(runtime, "get_instance", lambda: SimpleNamespace())
    with caplog.at_level(logging.WARNING, logger=wake.__name__):
        assert wake.here() is None
    assert [r for r in caplog.records if r.name == wake.__name__]


def test_a_missing_session_manager_falls_back_to_polling_with_one_warning(monkeypatch, caplog):
    _running_session(monkeypatch)
    monkeypatch.setattr(runtime, "get_instance", lambda: SimpleNamespace())  # no _session_mgr
    with caplog.at_level(logging.WARNING, logger=wake.__name__):
        assert wake.here() is None
        assert wake.presence() is None
    warned = [r for r in caplog.records if r.name == wake.__name__]
    assert len(warned) == 1 and "polling" in warned[0].getMessage()


def test_no_warning_where_no_server_runs(monkeypatch, caplog):
    monkeypatch.setattr(wake, "_warned", [])
    logs.forget()
    monkeypatch.setattr(wake, "get_script_run_ctx", lambda: None)  # AppTest, a bare script
    with caplog.at_level(logging.WARNING, logger=wake.__name__):
        assert wake.here() is None
    assert not [r for r in caplog.records if r.name == wake.__name__]


def test_a_missing_thread_state_is_logged_once(monkeypatch, caplog):
    monkeypatch.setattr(classroom, "_ECHO_WARNED", [])
    ctx = SimpleNamespace(fragment_ids_this_run=["poll"])
    monkeypatch.setattr(classroom, "get_script_run_ctx", lambda: ctx)
    monkeypatch.delattr(script_run_context, "ThreadState")
    with caplog.at_level(logging.WARNING, logger=classroom.__name__):
        assert classroom._echo() is False
        assert classroom._echo() is False
    warned = [r for r in caplog.records if r.name == classroom.__name__]
    assert len(warned) == 1 and "ThreadState" in warned[0].getMessage()


@pytest.mark.parametrize("missing", ["get_active_session_info", "session"])
def test_a_session_without_a_piece_polls(monkeypatch, missing):
    _running_session(monkeypatch)
    session = SimpleNamespace(
        _event_loop=SimpleNamespace(call_later=print),
        request_rerun=print,
        _client_state=None,
        _scriptrunner=None,
        _state=app_session.AppSessionState.APP_NOT_RUNNING,
    )
    info = SimpleNamespace(session=session)
    mgr = SimpleNamespace(get_active_session_info=lambda sid: info)
    monkeypatch.setattr(runtime, "get_instance", lambda: SimpleNamespace(_session_mgr=mgr))
    assert isinstance(wake.here(), wake.Waker)  # every piece there: a waker
    if missing == "session":
        del session._client_state
    else:
        del mgr.get_active_session_info
    assert wake.here() is None


# ---- ui/plotly_spec: a cached chart's JSON made once (st.plotly_chart's figure path)


def _chart():
    import numpy as np
    import plotly.graph_objects as go

    from figures import Chart

    z = np.arange(12, dtype=np.float32).reshape(3, 4)
    return Chart(go.Figure(go.Heatmap(z=z), layout=dict(title="z")), "what to notice")


def test_plotly_chart_takes_a_figure_by_its_to_dict_and_serialises_with_plotly_io():
    from ui import plotly_spec

    assert plotly_spec.WORKS  # both pieces there: checked at import, on the pinned pair
    assert plotly_spec._works()
    src = inspect.getsource(streamlit.elements.plotly_chart.PlotlyMixin.plotly_chart)
    assert "return_figure_from_figure_or_data" in src and "plotly.io.to_json(" in src


def test_a_sent_chart_gives_streamlit_the_same_spec_as_its_figure():
    from streamlit.testing.v1 import AppTest

    def app():
        import streamlit as st

        from tests.kit.test_streamlit_internals import _chart
        from ui import plotly_spec

        chart = _chart()
        st.plotly_chart(chart.fig, key="plain")
        st.plotly_chart(plotly_spec.sent(chart), key="sent")
        st.plotly_chart(plotly_spec.sent(chart), key="again")  # the kept one

    at = AppTest.from_function(app).run()
    assert not at.exception
    specs = [el.proto.spec for el in at.get("plotly_chart")]
    assert len(specs) == 3 and specs[0] == specs[1] == specs[2]
    assert '"title"' in specs[0] and '"heatmap"' in specs[0]


def test_sent_keeps_one_stand_in_per_chart_and_other_figures_serialise_as_before():
    import plotly.io

    from ui import plotly_spec

    chart = _chart()
    one = plotly_spec.sent(chart)
    assert plotly_spec.sent(chart) is one
    assert one.to_dict() == chart.fig.to_dict()
    assert plotly.io.to_json(one.to_dict(), validate=False) is one.to_dict().json
    other = _chart()  # a plain figure or dict: plotly's own to_json
    assert plotly.io.to_json(other.fig.to_dict(), validate=False) == one.to_dict().json
    assert plotly.io.to_json(other.fig) == plotly_spec._to_json(other.fig)


def test_a_plotly_that_no_longer_calls_to_dict_sends_figures_as_they_are(monkeypatch):
    import plotly.tools

    from ui import plotly_spec

    monkeypatch.setattr(plotly.tools, "return_figure_from_figure_or_data", lambda f, v: {})
    assert plotly_spec._works() is False
    monkeypatch.setattr(plotly_spec, "WORKS", False)
    chart = _chart()
    assert plotly_spec.sent(chart) is chart.fig


# ---- ui/delivery: a session's event-loop callbacks in batches


def test_the_session_method_delivery_replaces_is_the_expected_one():
    from streamlit.runtime.app_session import AppSession

    from ui import delivery

    assert delivery.INSTALLED
    assert AppSession._call_soon_on_event_loop is delivery.batched
    assert delivery._expected() is delivery.batched  # installed, and stays so
    caller = inspect.getsource(AppSession._on_scriptrunner_event)
    assert "self._call_soon_on_event_loop(" in caller  # every script event goes through it
    # the runtime hears of each queued message through this attribute (batched per drain)
    assert _assigns(AppSession, "_message_enqueued_callback")
    assert "self._message_enqueued_callback()" in inspect.getsource(AppSession._enqueue_forward_msg)


def test_a_changed_streamlit_is_left_alone_with_one_warning(monkeypatch, caplog):
    from streamlit.runtime.app_session import AppSession

    from ui import delivery

    def other(self, callback, *, later=False):  # another shape of the method
        self._event_loop.call_soon_threadsafe(callback)

    monkeypatch.setattr(AppSession, "_call_soon_on_event_loop", other)
    with caplog.at_level(logging.WARNING, logger=delivery.__name__):
        assert delivery.install() is False
    assert AppSession._call_soon_on_event_loop is other
    assert len([r for r in caplog.records if r.name == delivery.__name__]) == 1


def test_callbacks_from_a_script_thread_run_on_the_loop_in_order_in_few_turns():
    import asyncio
    import threading

    from ui import delivery

    # The loop runs in a thread of its own, as the server's does (and because a browser
    # test's Playwright may hold this thread's running loop in the same worker).
    loop = asyncio.new_event_loop()
    told: list[bool] = []
    tell = lambda: told.append(True)  # noqa: E731  (the runtime's "messages to send")
    session = SimpleNamespace(_event_loop=loop, _message_enqueued_callback=tell)
    ran, turns, errors = [], [], []
    real = loop.call_soon_threadsafe

    def counted(cb, *args):
        turns.append(cb)
        return real(cb, *args)

    loop.call_soon_threadsafe = counted
    loop.set_exception_handler(lambda _loop, ctx: errors.append(ctx["exception"]))

    def boom():
        raise ValueError("one callback fails")

    def handler(i):  # Streamlit's: the message joins the browser queue, the runtime hears
        ran.append(i)
        session._message_enqueued_callback()

    busy = threading.Event()  # the loop is busy with other sessions while the run sends
    real(busy.wait, 10)
    server = threading.Thread(target=loop.run_forever)
    server.start()
    for i in range(100):  # what a run does: 100 messages, one of whose handlers raises
        delivery.batched(session, boom if i == 50 else (lambda i=i: handler(i)))
    delivery.batched(session, loop.stop)  # the last: every earlier one has run by then
    busy.set()
    server.join(10)
    assert not server.is_alive()
    loop.close()
    assert ran == [i for i in range(100) if i != 50]  # in order, the rest still ran
    assert len(errors) == 1 and isinstance(errors[0], ValueError)
    assert len(turns) == 1  # the 101 waiting callbacks took one turn of the loop
    assert len(told) == 1  # and the runtime heard once
    assert session._message_enqueued_callback is tell  # and its callback is back


def test_a_closed_loop_drops_the_callback_as_streamlit_does():
    import asyncio

    from ui import delivery

    loop = asyncio.new_event_loop()
    loop.close()
    session = SimpleNamespace(_event_loop=loop)
    delivery.batched(session, print)  # no error: dropped
    delivery.batched(session, print)  # and the next is scheduled again, and dropped
    assert session._ui_batch.scheduled is False and not session._ui_batch.items
