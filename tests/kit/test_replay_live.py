"""A class on a live server: followers at one state get one recorded run (ui/replay.py).

The server runs as in a class, and the sessions speak the websocket protocol a browser
speaks (tests/support/wsclient.py): a teacher on /scaling and four students who joined
with the class link. When the teacher moves d_k, the first woken student's page runs and
is recorded whole; the other three get it replayed on the server's event loop, without a
run (`ui.replay.direct`). The server's trace (ATTN_REPLAY_TRACE=1) says which happened.

What must hold:
- every student receives the same page, with the teacher's value, whether their page ran
  or was replayed;
- the replay leaves each session in the state the run left: at the teacher's next move
  all four start from one state again, so again one run is recorded and three replayed
  (a state that differed in anything would need a run of its own);
- a replayed page's fragment (the banner's slow check) is registered for its session,
  and a replayed student can still explore on their own while the others follow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.proto.WidgetStates_pb2 import WidgetState

from tests.support.browser import traced_server
from tests.support.wsclient import WsClient

pytestmark = pytest.mark.xdist_group("live_class")
STUDENTS = 4


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with traced_server(tmp_path_factory.mktemp("replay") / "server.log") as got:
        yield got


def d_k(widget_id: str, value: str) -> WidgetState:
    state = WidgetState(id=widget_id)
    state.string_array_value.data.append(value)
    return state


def shown(run) -> list[dict]:
    """The run's elements as plain dicts, without each session's own download ids."""
    out = []
    for e in run.elements:
        d = MessageToDict(e)
        d.get("downloadButton", {}).pop("deferredFileId", None)
        out.append(d)
    return out


def value_of(run, key: str) -> str:
    for e in run.elements:
        if e.WhichOneof("type") == "slider" and e.slider.id.endswith(f"-{key}"):
            # raw_value: the value the run set (a follower's page takes the teacher's);
            # a control the browser moved itself is not sent back
            return e.slider.raw_value[0] if e.slider.raw_value else None
    raise KeyError(key)


def traced(log: Path, what: str) -> int:
    return log.read_text(errors="replace").count(f"ui.replay: {what}")


def test_followers_at_one_state_get_one_recorded_run(server):
    url, log = server
    with WsClient(url) as teacher:
        first = teacher.run(page="scaling", query="room=new")
        code = re.search(r"Class \*\*([A-Z0-9]+)\*\*", " ".join(first.texts)).group(1)
        query = f"room={code}"
        dial = first.widget_id("d_k")
        students = [WsClient(url).__enter__() for _ in range(STUDENTS)]
        try:
            for s in students:
                joined = s.run(page="scaling", query=query)
                assert joined.finished == "finished" and not joined.exceptions
                assert any("Following the teacher" in t for t in joined.texts)
            for step, value in enumerate(("128", "256")):
                before = (traced(log, "recorded a whole run"), traced(log, "replayed a whole run"))
                moved = teacher.run(query=f"{query}&d_k={value}", widgets=[d_k(dial, value)])
                assert moved.finished == "finished" and not moved.exceptions
                runs = [s.read_run(timeout=60) for s in students]
                for run in runs:
                    assert run.finished == "finished" and not run.exceptions
                    assert value_of(run, "d_k") == value
                    assert shown(run) == shown(runs[0])  # run or replay: the same page
                recorded = traced(log, "recorded a whole run") - before[0]
                replayed = traced(log, "replayed a whole run") - before[1]
                assert (recorded, replayed) == (1, STUDENTS - 1), f"change {step + 1}"
                # every follower's page showed the teacher's values at once: none was sent
                # round again (ui.classroom.commit)
                assert traced(log, "a follower's page showed its own URL") == 0

            # A replayed student's banner fragment is registered for their session: its
            # timer's run (as a browser's) runs it.
            late = students[-1]
            assert runs[-1].timers, "the banner's check asks for a timer"
            late.send_rerun(query=query, fragment=runs[-1].timers[0])
            check = late.read_run(timeout=30)
            assert check.finished == "fragment finished" and not check.exceptions

            # A replayed student explores alone; the others still follow the teacher.
            mine = d_k(runs[-1].widget_id("d_k"), "512")
            own = late.run(query=f"{query}&d_k=512", widgets=[mine])
            assert any("exploring on your own" in t for t in own.texts)
            teacher.run(query=f"{query}&d_k=32", widgets=[d_k(dial, "32")])
            for s in students[:-1]:
                assert value_of(s.read_run(timeout=60), "d_k") == "32"
        finally:
            for s in students:
                s.__exit__(None, None, None)
