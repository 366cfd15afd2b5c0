"""The room store (ui/room.py): who may drive, what followers see, and every bound."""

from __future__ import annotations

import pytest

from ui import room as R


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def store():
    clock = Clock()
    return R.Rooms(clock), clock


def test_codes_are_short_unambiguous_and_checked():
    ok = "".join(R.CODE_CHARS[:4])
    assert R.normal_code(ok.lower()) == ok
    for bad in ("", "ABC", "ABCDE", "AB0D", "AB-D", "<scr", "1111"):
        assert R.normal_code(bad) is None


def test_only_the_token_drives_and_followers_see_commits(store):
    rooms, _ = store
    code, token = rooms.open()
    assert rooms.view(code).page is None
    assert not rooms.show(code, "not-the-token", "scaling")
    assert not rooms.set(code, token[:-1] + "x", "d_k", 512)
    assert rooms.show(code, token, "scaling") and rooms.set(code, token, "d_k", 512)
    assert rooms.view(code).values == {}  # nothing public before the commit
    before = rooms.view(code).version
    assert rooms.commit(code, token) == before + 1
    view = rooms.view(code)
    assert (view.page, view.values) == ("scaling", {"d_k": 512})
    assert rooms.commit(code, token) == view.version  # nothing changed: no new version
    rooms.set(code, token, "d_k", 512)
    assert rooms.commit(code, token) == view.version
    rooms.show(code, token, "masks")  # a new page starts without the old page's values
    rooms.commit(code, token)
    assert (rooms.view(code).page, rooms.view(code).values) == ("masks", {})


def test_values_are_copies(store):
    rooms, _ = store
    code, token = rooms.open()
    heads = ["L0H0"]
    rooms.show(code, token, "heads")
    rooms.set(code, token, "ablate", heads)
    rooms.commit(code, token)
    heads.append("L1H1")
    seen = rooms.view(code).values["ablate"]
    seen.append("x")
    assert rooms.view(code).values["ablate"] == ["L0H0"]


def test_questions_count_answers_without_showing_them_early(store):
    rooms, _ = store
    code, token = rooms.open()
    assert rooms.ask(code, token, "scaling", "spread", ["a", "b"])
    q = rooms.view(code).question
    assert (q.key, q.choices, q.revealed) == ("spread", ("a", "b"), False)
    assert rooms.answer(code, q.id, "s1", "a") == 1
    assert rooms.answer(code, q.id, "s1", "b") == 1  # the last answer counts, once
    assert rooms.answer(code, q.id, "s2", "not a choice") is None
    assert rooms.answer(code, q.id + 1, "s2", "a") is None  # an old question
    assert rooms.view(code).question.answers == {}  # students never see others' answers
    assert rooms.answers(code, token).answers == {"s1": "b"}
    assert rooms.answers(code, "bad") is None
    assert not rooms.reveal(code, "bad")
    assert rooms.reveal(code, token)
    assert rooms.view(code).question.answers == {"s1": "b"}
    assert rooms.answer(code, q.id, "s3", "a") is None  # closed once revealed


def test_followers_are_counted_while_they_poll(store):
    rooms, clock = store
    code, _ = rooms.open()
    for s in ("a", "b", "c"):
        rooms.version(code, s)
    assert rooms.view(code).following == 3
    clock.t += R.SEEN_S + 1
    rooms.version(code, "a")
    assert rooms.view(code).following == 1


class FakeWaker:
    """Stands in for ui.wake.Waker: counts its calls; `open` is whether its page lives."""

    def __init__(self) -> None:
        self.calls, self.open = 0, True

    def __call__(self) -> bool:
        self.calls += 1
        return self.open

    def alive(self) -> bool:
        return self.open


def test_a_new_version_wakes_every_listener_once(store):
    rooms, _ = store
    code, token = rooms.open()
    a, b, gone = FakeWaker(), FakeWaker(), FakeWaker()
    for s, w in (("a", a), ("b", b), ("gone", gone)):
        assert rooms.listen(code, s, w)
    assert rooms.view(code).following == 3  # woken pages count without polling
    rooms.show(code, token, "scaling")
    rooms.set(code, token, "d_k", 512)
    assert (a.calls, b.calls) == (0, 0)  # nothing public before the commit
    gone.open = False
    rooms.commit(code, token)
    assert (a.calls, b.calls, gone.calls) == (1, 1, 1)
    rooms.commit(code, token)  # nothing changed: nobody is woken
    assert a.calls == 1
    rooms.unlisten(code, "b")  # b explores on its own
    rooms.ask(code, token, "scaling", "q", ["x"])
    rooms.reveal(code, token)
    assert (a.calls, b.calls, gone.calls) == (3, 1, 1)  # the closed page was dropped
    assert rooms.view(code).following == 1
    rooms.close(code, token)  # the end of the class wakes its followers too
    assert a.calls == 4
    assert not rooms.listen(code, "a", a)  # no such room any more


def test_a_page_that_listens_after_a_commit_it_did_not_see_is_woken_at_once(store):
    rooms, _ = store
    code, token = rooms.open()
    seen = rooms.view(code).version  # the page takes the room's view ...
    rooms.show(code, token, "scaling")
    rooms.set(code, token, "d_k", 512)
    rooms.commit(code, token)  # ... the teacher moves before its waker is in the room
    late, on_time = FakeWaker(), FakeWaker()
    assert rooms.listen(code, "late", late, seen)
    assert rooms.listen(code, "on-time", on_time, rooms.view(code).version)
    assert (late.calls, on_time.calls) == (1, 0)


def test_listeners_are_bounded_and_closed_pages_give_way(store, monkeypatch):
    rooms, _ = store
    monkeypatch.setattr(R, "MAX_STUDENTS", 3)
    code, _ = rooms.open()
    wakers = [FakeWaker() for _ in range(4)]
    assert all(rooms.listen(code, f"s{i}", wakers[i]) for i in range(3))
    assert not rooms.listen(code, "s3", wakers[3])  # full: that page polls instead
    assert rooms.listen(code, "s0", FakeWaker())  # a reload replaces its own waker
    wakers[1].open = False
    assert rooms.listen(code, "s3", wakers[3])  # a closed page makes room
    assert rooms.view(code).following == 3


def test_bounds(store, monkeypatch):
    rooms, clock = store
    monkeypatch.setattr(R, "MAX_ROOMS", 3)
    monkeypatch.setattr(R, "MAX_STUDENTS", 5)
    monkeypatch.setattr(R, "MAX_VALUES", 4)
    opened = [rooms.open() for _ in range(3)]
    assert rooms.open() is None  # full, and every room is fresh
    code, token = opened[0]
    for i in range(10):
        rooms.set(code, token, f"k{i}", i)
        rooms.version(code, f"student{i}")
    rooms.commit(code, token)
    assert len(rooms.view(code).values) == 4
    assert rooms.view(code).following == 5
    rooms.ask(code, token, "p", "q", ["a"])
    qid = rooms.view(code).question.id
    counts = [rooms.answer(code, qid, f"s{i}", "a") for i in range(10)]
    assert max(counts) == 5
    clock.t += R.EVICT_S + 1  # idle rooms nobody follows give way to a new one
    assert rooms.open() is not None and len(rooms) == 3


def test_rooms_expire_and_close(store):
    rooms, clock = store
    code, token = rooms.open()
    other, other_token = rooms.open()
    assert not rooms.close(code, other_token)
    assert rooms.close(code, token) and not rooms.exists(code)
    clock.t += R.IDLE_S + 1
    assert rooms.view(other) is None and rooms.version(other) is None
    assert not rooms.exists(other) and len(rooms) == 0
