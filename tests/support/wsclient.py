"""A scripted Streamlit client: the websocket protocol a browser speaks, nothing drawn.

It connects to `/_stcore/stream` (subprotocol `streamlit`, the server's own origin, as
bench/classroom.py's WsFollower does), asks for runs with `BackMsg.rerun_script` and
reads the `ForwardMsg`s back until the run's `script_finished`. A test can send any
widget state a browser could, or one no browser would:

    with WsClient(server_url) as c:
        run = c.run(page="softmax", query="step=Example")
        editor = run.widget_id("kv_table")
        run = c.run(widgets=[string_state(editor, '{"added_rows": []}')])
        assert run.finished and not run.exceptions

No message cache is announced, so every element arrives in full.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

FINISHED = {
    ForwardMsg.FINISHED_SUCCESSFULLY: "finished",
    ForwardMsg.FINISHED_WITH_COMPILE_ERROR: "compile error",
    ForwardMsg.FINISHED_EARLY_FOR_RERUN: "early for rerun",
    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY: "fragment finished",
}


def string_state(widget_id: str, value: str) -> WidgetState:
    """A widget's state as a `string_value` (st.data_editor's JSON, a text input's text)."""
    state = WidgetState(id=widget_id)
    state.string_value = value
    return state


@dataclass
class Run:
    """What one run sent: its elements in order and how it finished (None: it did not)."""

    elements: list = field(default_factory=list)  # Element protos (delta.new_element)
    finished: str | None = None
    page_hash: str = ""
    timers: list = field(default_factory=list)  # fragment ids the run asked to rerun
    places: dict = field(default_factory=dict)  # delta path: index in `elements`
    fragments: dict = field(default_factory=dict)  # index in `elements`: its fragment's id
    bytes: int = 0  # the run's ForwardMsgs as they came over the wire (bench/split.py)
    query: str | None = None  # the URL's query as the run last set it (None: it did not)

    def of(self, kind: str) -> list:
        return [getattr(e, kind) for e in self.elements if e.WhichOneof("type") == kind]

    @property
    def exceptions(self) -> list[str]:
        return [f"{e.type}: {e.message}" for e in self.of("exception")]

    @property
    def texts(self) -> list[str]:
        """Every alert's and markdown's body: what the page said."""
        return [a.body for a in self.of("alert")] + [m.body for m in self.of("markdown")]

    def widget_id(self, key: str) -> str:
        """The id of the widget whose user key is `key` (ids end with `-<key>`)."""
        for e in self.elements:
            kind = e.WhichOneof("type")
            wid = getattr(getattr(e, kind), "id", "") if kind else ""
            if isinstance(wid, str) and wid.endswith(f"-{key}"):
                return wid
        raise KeyError(key)


class WsClient:
    """One browser tab's session, spoken by hand; use as a context manager."""

    def __init__(self, base_url: str, open_timeout: float = 60, headers=None) -> None:
        self.uri = "ws" + base_url.removeprefix("http") + "/_stcore/stream"
        self.origin, self.open_timeout = base_url, open_timeout
        self.headers = dict(headers or {})  # extra request headers (X-Forwarded-For…)
        self.page_hash = ""
        self.ws = None

    def __enter__(self) -> WsClient:
        self.ws = connect(
            self.uri,
            subprotocols=["streamlit"],
            origin=self.origin,
            max_size=None,
            open_timeout=self.open_timeout,
            ping_interval=None,
            compression=None,  # frames as large as they are: the server's limit is on them
            proxy=None,  # 127.0.0.1 directly, whatever the environment's proxy
            additional_headers=self.headers or None,
        )
        return self

    def __exit__(self, *exc) -> None:
        self.ws.close()

    def send_rerun(
        self, page: str = "", query: str = "", widgets=(), fragment: str = "",
        history: bool = False, auto: bool = True,
    ) -> None:  # fmt: skip
        """Ask for a run: `page` is the URL path's page name (first run), later runs stay
        on the page the last run drew; `widgets` are WidgetState protos; `fragment` asks
        for that fragment's run, as its timer in a browser does (`auto=False`: as a move of
        a control drawn in it does); `history`: the browser's Back or Forward button
        brought this URL."""
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string, cs.page_script_hash = query, self.page_hash
        cs.is_history_navigation = history
        if page:
            cs.page_name = page
        if fragment:
            cs.fragment_id, cs.is_auto_rerun = fragment, auto
        cs.widget_states.widgets.extend(widgets)
        self.ws.send(msg.SerializeToString())

    def read_run(self, timeout: float = 60) -> Run:
        """Read ForwardMsgs until a run's script_finished (or `timeout` seconds pass)."""
        run, end = Run(), time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                raw = self.ws.recv(timeout=left)
            except TimeoutError:
                break
            fm = ForwardMsg.FromString(raw)
            kind = fm.WhichOneof("type")
            run.bytes += len(raw)
            if kind == "new_session":
                run.bytes = len(raw)
                run.elements.clear()  # a new run started: what came before was another's
                run.places.clear()
                run.fragments.clear()
                run.timers.clear()
            elif kind == "navigation":
                # The page this run draws. new_session's hash can be app.py's own on a
                # session's first run, which opens the default page when asked for again.
                self.page_hash = run.page_hash = fm.navigation.page_script_hash
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                # What a browser shows: a later element at the same place (an st.empty
                # filled at the run's end) replaces the earlier one there.
                path = tuple(fm.metadata.delta_path)
                at = run.places.get(path)
                if at is None:
                    run.places[path] = at = len(run.elements)
                    run.elements.append(fm.delta.new_element)
                else:
                    run.elements[at] = fm.delta.new_element
                if fm.delta.fragment_id:
                    run.fragments[at] = fm.delta.fragment_id
            elif kind == "page_info_changed":
                run.query = fm.page_info_changed.query_string
            elif kind == "auto_rerun":
                run.timers.append(fm.auto_rerun.fragment_id)
            elif kind == "script_finished":
                run.finished = FINISHED.get(fm.script_finished, str(fm.script_finished))
                if fm.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return run
        return run

    def run(
        self, page: str = "", query: str = "", widgets=(), timeout: float = 60,
        fragment: str = "",
    ) -> Run:  # fmt: skip
        """A run, as a browser asks for it: `fragment`, the id of the fragment a moved
        control is drawn in (that fragment's run alone)."""
        self.send_rerun(page, query, widgets, fragment=fragment, auto=False)
        return self.read_run(timeout)

    def close_code(self, timeout: float = 60) -> int | None:
        """Read until the server closes the connection; its close code (None: still open
        after `timeout` seconds)."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                self.ws.recv(timeout=left)
            except TimeoutError:
                return None
            except ConnectionClosed as e:
                return e.rcvd.code if e.rcvd else None
        return None
