"""Hostile clients of a live server, spoken over the websocket protocol (issue 49): a
student who edits a table in the instant a wake starts their run, a session that asks
for runs without waiting, ordinary sessions that keep a server busy. Used by
tests/kit/test_attacks_live.py and bench/attacks.py."""

from __future__ import annotations

import json
import re
import threading
import time

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tests.support.wsclient import WsClient, string_state

MARK = "PWNED"
SLOWED = "faster than the server could draw them"  # content/kit.md, runtime.slowed
CLASS_CODE = re.compile(r"Class \*\*([A-Z0-9]+)\*\*")


def bool_state(widget_id: str, value: bool) -> WidgetState:
    state = WidgetState(id=widget_id)
    state.bool_value = value
    return state


def trigger(widget_id: str) -> WidgetState:
    state = WidgetState(id=widget_id)
    state.trigger_value = True
    return state


def dial(widget_id: str, value: str) -> WidgetState:
    state = WidgetState(id=widget_id)
    state.string_array_value.data.append(value)
    return state


def carries(run, mark: str = MARK) -> bool:
    """Whether any element of the run carries `mark` (text, table, chart)."""
    needle = mark.encode()
    return any(needle in e.SerializeToString() for e in run.elements)


def class_code(run) -> str:
    """The class code a teacher's run shows."""
    return CLASS_CODE.search(" ".join(run.texts)).group(1)


class Busy:
    """`n` ordinary sessions rerunning /scaling back to back (each waits for its run), so
    the server is as busy as in a class: a woken run's thread waits its turn to start."""

    def __init__(self, base: str, n: int) -> None:
        self.base, self.n, self.stop = base, n, threading.Event()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(n)]

    def _loop(self) -> None:
        with WsClient(self.base) as c:
            widget = c.run(page="scaling").widget_id("d_k")
            i = 0
            while not self.stop.is_set():
                c.run(widgets=[dial(widget, ("32", "128")[i % 2])], timeout=60)
                i += 1

    def __enter__(self) -> Busy:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=30)


def _wait_new_session(c: WsClient, timeout: float = 30) -> bool:
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        try:
            raw = c.ws.recv(timeout=left)
        except TimeoutError:
            return False
        if ForwardMsg.FromString(raw).WhichOneof("type") == "new_session":
            return True
    return False


def race_try(
    base: str, teacher: WsClient, code: str, toggle: str, flip: bool, delay_ms: float | None
) -> tuple[bool, bool, float]:
    """One try: the student's edit `delay_ms` after the teacher's request (None: no edit,
    the try measures when the student's woken run begins). (hit, the victim's run
    finished, ms from the teacher's request to the student's woken run's new_session)."""
    query = f"room={code}&step=Example"
    with WsClient(base) as student, WsClient(base) as victim:
        first = student.run(page="softmax", query=query)
        victim.run(page="softmax", query=query)
        editor = first.widget_id("kv_table")
        edit = json.dumps(
            {"edited_rows": {"0": {"token": MARK}}, "added_rows": [], "deleted_rows": []}
        )
        t0 = time.perf_counter()
        teacher.send_rerun(query=query, widgets=[bool_state(toggle, flip)])
        if delay_ms is not None:
            while (time.perf_counter() - t0) * 1000 < delay_ms:
                pass
            student.send_rerun(query=query, widgets=[string_state(editor, edit)])
        woke = _wait_new_session(student)
        began = (time.perf_counter() - t0) * 1000 if woke else float("nan")
        teacher.read_run(timeout=30)
        seen = victim.read_run(timeout=30)
        return carries(seen), seen.finished is not None, began


class Flooder:
    """A session that asks for runs without waiting for them, reading what comes back
    in a thread of its own (a socket nobody reads would stop the server's sends)."""

    def __init__(self, base: str, pages: bool = False, rate: float | None = 200.0) -> None:
        self.c = WsClient(base).__enter__()
        first = self.c.run(page="scaling")
        self.dial = first.widget_id("d_k")
        self.pages, self.sent, self.stop = pages, 0, threading.Event()
        self.rate = rate  # requests a second at most (None: as fast as the socket takes)
        self.runs = 0  # runs the server started for it (new_session messages)
        self.told = False  # a run said the server held its requests back
        self.threads = [threading.Thread(target=f, daemon=True) for f in (self._send, self._read)]

    def _send(self) -> None:
        values = ("16", "64", "256")
        while not self.stop.is_set():
            page = ("scaling", "softmax")[self.sent % 2] if self.pages else ""
            try:
                if page:
                    self.c.page_hash = ""
                    self.c.send_rerun(page=page)
                else:
                    self.c.send_rerun(widgets=[dial(self.dial, values[self.sent % 3])])
            except Exception:
                return
            self.sent += 1
            if self.rate:
                time.sleep(1.0 / self.rate)

    def _read(self) -> None:
        while not self.stop.is_set():
            try:
                fm = ForwardMsg.FromString(self.c.ws.recv(timeout=0.5))
            except TimeoutError:
                continue
            except Exception:
                return
            kind = fm.WhichOneof("type")
            if kind == "new_session":
                self.runs += 1
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                el = fm.delta.new_element
                if el.WhichOneof("type") == "alert" and SLOWED in el.alert.body:
                    self.told = True

    def __enter__(self) -> Flooder:
        self.t0 = time.monotonic()
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.took = time.monotonic() - self.t0
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)
        self.c.__exit__(None, None, None)
