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
    ok = R.CODE_CHARS[: R.CODE_LEN]
    assert R.normal_code(ok.lower()) == ok
    assert R.normal_code(f" {ok[:3]}-{ok[3:]} ") == ok  # as read off a projector, grouped
    for bad in ("", ok[:-1], ok + "A", "0" + ok[1:], "<scr" + ok, "1" * R.CODE_LEN, "x" * 5000):
        assert R.normal_code(bad) is None
    key = R.CODE_CHARS[-R.KEY_LEN :]
    assert R.normal_key(key.lower()) == key and R.normal_key(ok) is None


def opened(rooms, *args, **kw) -> tuple[str, str]:
    got = rooms.open(*args, **kw)
    assert isinstance(got, R.Opened), got
    return got.code, got.token


def test_only_the_token_drives_and_followers_see_commits(store):
    rooms, _ = store
    code, token = opened(rooms)
    assert rooms.view(code).page is None
    assert not rooms.show(code, "not-the-token", "scaling")
    wrong = token[:-1] + ("y" if token.endswith("x") else "x")  # one character off, never the token
    assert not rooms.set(code, wrong, "d_k", 512)
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
    code, token = opened(rooms)
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
    code, token = opened(rooms)
    assert rooms.ask(code, token, "scaling", "spread", ["a", "b"])
    q = rooms.view(code).question
    assert (q.key, q.choices, q.revealed) == ("spread", ("a", "b"), False)
    assert rooms.answer(code, q.id, "s1", "a") == R.Answer(True, 1)
    assert rooms.answer(code, q.id, "s1", "b") == R.Answer(True, 1)  # the last one counts
    assert rooms.answer(code, q.id, "s2", "not a choice").why == "invalid"
    assert rooms.answer(code, q.id + 1, "s2", "a").why == "closed"  # an old question
    assert rooms.view(code).question.answers == {}  # students never see others' answers
    assert rooms.answers(code, token).answers == {"s1": "b"}
    assert rooms.answers(code, "bad") is None
    assert not rooms.reveal(code, "bad")
    assert rooms.reveal(code, token)
    assert rooms.view(code).question.answers == {"s1": "b"}
    assert not rooms.answer(code, q.id, "s3", "a").kept  # closed once revealed


def test_followers_are_counted_while_they_poll(store):
    rooms, clock = store
    code, _ = opened(rooms)
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
    code, token = opened(rooms)
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


def test_an_answer_the_teacher_opens_unasked_is_told_once_and_closes_when_asked(store):
    rooms, _ = store
    code, token = opened(rooms)
    a = FakeWaker()
    rooms.listen(code, "a", a)
    assert not rooms.opened_answer(code, "not-the-token", "scaling", "q")
    assert rooms.opened_answers(code) == frozenset() and a.calls == 0
    assert rooms.opened_answer(code, token, "scaling", "q")
    assert rooms.opened_answer(code, token, "scaling", "q")  # every teacher run says so
    assert a.calls == 1  # the class is woken once
    assert rooms.view(code).opened == {("scaling", "q")} == rooms.opened_answers(code)
    rooms.ask(code, token, "scaling", "q", ["x"])  # put to the class after all
    assert rooms.opened_answers(code) == frozenset()
    assert rooms.opened_answers("NOSUCH") == frozenset()


def test_a_page_that_listens_after_a_commit_it_did_not_see_is_woken_at_once(store):
    rooms, _ = store
    code, token = opened(rooms)
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
    code, _ = opened(rooms)
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
    held = [opened(rooms, f"client{i}") for i in range(3)]
    assert rooms.open("client9") is R.Refused.FULL  # full, and every teacher is here
    code, token = held[0]
    for i in range(10):
        rooms.set(code, token, f"k{i}", i)
        rooms.version(code, f"student{i}")
    rooms.commit(code, token)
    assert len(rooms.view(code).values) == 4
    assert rooms.view(code).following == 5
    rooms.ask(code, token, "p", "q", ["a"])
    qid = rooms.view(code).question.id
    got = [rooms.answer(code, qid, f"s{i}", "a", f"client{i}") for i in range(10)]
    assert [a.kept for a in got] == [True] * 5 + [False] * 5, "never confirm a dropped one"
    assert {a.why for a in got[5:]} == {"full"} and max(a.count for a in got) == 5
    clock.t += R.HEARD_S + 1  # no teacher heard from (no presence here), nobody following
    assert isinstance(rooms.open("client9"), R.Opened) and len(rooms) == 3


class Session:
    """Stands in for ui.wake.presence(): a teacher's session, connected or not."""

    def __init__(self) -> None:
        self.open = True

    def alive(self) -> bool:
        return self.open


def test_throwaway_sessions_neither_refuse_a_teacher_nor_evict_a_live_class(store):
    rooms, clock = store
    # the script: 49 sessions of one address open rooms and stay connected
    script = [Session() for _ in range(49)]
    got = [rooms.open("address 10.0.0.9", s) for s in script]
    kept = [g for g in got if isinstance(g, R.Opened)]
    assert len(kept) == R.ROOMS_PER_CLIENT and got[-1] is R.Refused.CLIENT
    teacher = Session()
    code, token = opened(rooms, "address 10.0.0.1", teacher)  # a real teacher gets one
    follower = FakeWaker()
    rooms.listen(code, "student", follower)
    # many addresses (the worst case) fill the server with rooms that stay connected
    others = [Session() for _ in range(R.MAX_ROOMS)]
    for i, s in enumerate(others):
        rooms.open(f"address 10.1.{i}.1", s)
    assert len(rooms) == R.MAX_ROOMS
    assert rooms.open("address 10.0.0.2", Session()) is R.Refused.FULL  # all connected
    # hours pass; the class is quiet (woken followers never touch the room)
    clock.t += 2 * 3600
    for s in script + others:
        s.open = False  # the throwaway sessions end
    for i in range(R.MAX_ROOMS - 1):  # every room but the live class's gives way
        assert isinstance(rooms.open(f"address 10.2.{i}.1", Session()), R.Opened)
    assert rooms.view(code) is not None and rooms.set(code, token, "d_k", 8)  # still live
    teacher.open = False  # the teacher's tab closed, but a student is still connected
    rooms.sweep()
    assert rooms.open("address 10.3.0.1", Session()) is R.Refused.FULL
    assert rooms.view(code).gone


def test_a_client_at_its_cap_gives_up_its_own_rooms_that_nobody_is_in(store, monkeypatch):
    rooms, _ = store
    monkeypatch.setattr(R, "ROOMS_PER_CLIENT", 2)
    a, b = Session(), Session()
    first, _ = opened(rooms, "address x", a)
    opened(rooms, "address x", b)
    assert rooms.open("address x", Session()) is R.Refused.CLIENT
    a.open = False  # its teacher's session ended: that room is the one to give way
    assert isinstance(rooms.open("address x", Session()), R.Opened)
    assert not rooms.exists(first) and len(rooms) == 2


def test_a_teacher_who_leaves_is_told_to_the_class_and_the_key_takes_it_back(store):
    rooms, clock = store
    session = Session()
    got = rooms.open("address t", session)
    code, token, key = got.code, got.token, got.key
    follower = FakeWaker()
    rooms.listen(code, "s", follower)
    rooms.sweep()
    assert follower.calls == 0 and not rooms.view(code).gone  # the teacher is here
    session.open = False  # the teacher's tab reloads
    rooms.sweep()
    assert follower.calls == 1 and rooms.view(code).gone  # the class is told at once
    rooms.sweep()
    assert follower.calls == 1  # once
    assert rooms.reclaim(code, "A" * R.KEY_LEN, "address t") == R.Join(False)
    back = Session()
    again = rooms.reclaim(code, key, "address t", back)
    assert isinstance(again, R.Opened) and again.key == key and again.token != token
    assert not rooms.show(code, token, "scaling"), "the old tab drives no more"
    assert rooms.show(code, again.token, "scaling") and not rooms.view(code).gone
    assert follower.calls == 2  # following again
    back.open = False
    rooms.sweep()
    clock.t += R.RECLAIM_S + 1
    rooms.sweep()  # nobody came back with the key: the class ends, and says so
    assert not rooms.exists(code) and follower.calls == 4


def test_joins_and_key_tries_are_rate_limited_per_client(store):
    rooms, clock = store
    code, _ = opened(rooms, "address t", Session())
    # A lecture hall behind one address (issue 50): every student joins at once.
    assert all(rooms.join(code, "address a").ok for _ in range(R.MAX_STUDENTS))
    # Wrong codes spend the allowance; past it, even the right code waits (else the
    # refusal itself would tell a guesser which codes are wrong).
    misses = 0
    while not rooms.join("A" * R.CODE_LEN, "address a").slow:
        misses += 1
    assert misses == int(R.JOIN_BURST / R.MISS_COST)
    slow = rooms.join(code, "address a")
    assert not slow.ok and slow.slow and slow.wait_s > 0
    assert rooms.join(code, "address b").ok  # another client is not held up
    clock.t += slow.wait_s
    assert rooms.join(code, "address a").ok
    # a guesser: a code that names no room costs MISS_COST joins; over a long while it
    # gets JOIN_PER_S / MISS_COST guesses a second, wrong keys the same
    tries, allowed, seconds = 0, 0, 600
    start = clock.t
    while clock.t - start < seconds:
        guess = rooms.join("A" * R.CODE_LEN, "address g") if tries % 2 else None
        if guess is None:
            guess = rooms.reclaim(code, "A" * R.KEY_LEN, "address g")
        allowed += not guess.slow
        tries += 1
        clock.t += 0.05  # 20 tries a second, the rate the issue measured from one session
    assert allowed <= (R.JOIN_BURST + seconds * R.JOIN_PER_S) / R.MISS_COST + 1
    assert allowed >= seconds * R.JOIN_PER_S / R.MISS_COST - 1  # and it does get them


def test_a_join_link_s_ticket_gets_in_when_a_guesser_has_spent_the_address_s_allowance(store):
    """The second outside review of issue 49: every visitor from one address (this machine,
    a school's router, Streamlit Cloud's proxy) shares one allowance, so a stranger
    guessing codes kept the whole class out, right code and all."""
    rooms, _ = store
    code, _ = opened(rooms, "address t", Session())
    other, _ = opened(rooms, "address u", Session())
    while not rooms.join("A" * R.CODE_LEN, "address a").slow:  # the guesser
        pass
    assert rooms.join(code, "address a").slow  # a typed code waits, as before
    ticket = rooms.ticket(code)
    assert len(ticket) == R.TICKET_LEN and ticket != rooms.ticket(other)
    assert all(rooms.join(code, "address a", ticket).ok for _ in range(R.MAX_STUDENTS))
    assert rooms.join(code, "address a", ticket.lower()).ok  # as a phone may type it
    # A ticket opens its own room only, and a made-up one pays like a typed code.
    assert rooms.join(other, "address a", ticket).slow
    assert rooms.join(code, "address a", "0" * R.TICKET_LEN).slow
    assert not rooms.join("B" * R.CODE_LEN, "address a", ticket).ok
    assert R.Rooms().ticket(code) != ticket  # another server's secret, another ticket


def test_answers_are_bounded_per_client_and_numbers_must_be_finite(store, monkeypatch):
    rooms, _ = store
    monkeypatch.setattr(R, "ANSWERS_PER_CLIENT", 3)
    code, token = opened(rooms, "address t", Session())
    rooms.ask(code, token, "scaling", "sd")  # a number
    qid = rooms.view(code).question.id
    for bad in (float("inf"), float("nan"), True, "3", None, [1]):
        assert rooms.answer(code, qid, "s", bad, "address a").why == "invalid"
    got = [rooms.answer(code, qid, f"s{i}", 1.5, "address flood") for i in range(5)]
    assert [a.kept for a in got] == [True, True, True, False, False]
    assert got[-1].why == "client"
    assert rooms.answer(code, qid, "s0", 2.5, "address flood").kept  # a change always fits
    assert rooms.answer(code, qid, "real", 1e308, "address b") == R.Answer(True, 4)
    assert sorted(rooms.answers(code, token).answers.values()) == [1.5, 1.5, 2.5, 1e308]


def test_rooms_expire_and_close(store):
    rooms, clock = store
    code, token = opened(rooms)
    other, other_token = opened(rooms)
    assert not rooms.close(code, other_token)
    assert rooms.close(code, token) and not rooms.exists(code)
    clock.t += R.IDLE_S + 1
    assert rooms.view(other) is None and rooms.version(other) is None
    assert not rooms.exists(other) and len(rooms) == 0


# ------------------------------------------------------------- the teacher's console (issue 50)
def test_a_paused_class_holds_what_it_shows_and_takes_the_teacher_s_view_on_resume(store):
    rooms, _ = store
    code, token = opened(rooms)
    rooms.show(code, token, "scaling")
    rooms.set(code, token, "d_k", 64)
    rooms.commit(code, token)
    assert rooms.pause(code, token, True)
    paused = rooms.view(code)
    assert paused.paused
    rooms.set(code, token, "d_k", 512)  # the teacher prepares the next view
    rooms.commit(code, token)
    held = rooms.view(code)
    assert held.values == {"d_k": 64} and held.version == paused.version
    assert rooms.pause(code, token, False)
    on = rooms.view(code)
    assert not on.paused and on.values == {"d_k": 512} and on.version > held.version


def test_questions_close_clear_and_time_out_and_stay_in_the_history(store):
    rooms, clock = store
    code, token = opened(rooms)
    rooms.ask(code, token, "scaling", "spread", ["a", "b"])
    q = rooms.view(code).question
    assert rooms.answer(code, q.id, "s1", "a").kept
    assert rooms.close_question(code, token)
    assert rooms.answer(code, q.id, "s2", "b").why == "closed"
    assert rooms.view(code).question.closed  # still on the pages, not revealed
    assert rooms.reveal(code, token)  # a closed question can still be revealed
    rooms.ask(code, token, "scaling", "sd", seconds=30)  # a number, with a countdown
    q2 = rooms.view(code).question
    assert q2.deadline == clock.t + 30
    assert rooms.answer(code, q2.id, "s1", 2.0).kept
    clock.t += 30
    assert rooms.answer(code, q2.id, "s2", 3.0).why == "closed"  # time is up
    assert rooms.clear_question(code, token)
    assert rooms.view(code).question is None
    past = rooms.history(code, token)
    assert [(x.key, x.revealed, dict(x.answers)) for x in past] == [
        ("spread", True, {"s1": "a"}),
        ("sd", False, {"s1": 2.0}),
    ]
    assert rooms.history(code, "not-the-token") == []


def test_the_history_is_bounded(store):
    rooms, _ = store
    code, token = opened(rooms)
    for i in range(R.MAX_HISTORY + 5):
        rooms.ask(code, token, "scaling", f"q{i}")
    past = rooms.history(code, token)
    assert len(past) == R.MAX_HISTORY + 1  # the kept ones and the open one
    assert past[-1].key == f"q{R.MAX_HISTORY + 4}"


def test_a_console_on_another_device_reveals_and_pauses_but_does_not_drive(store):
    rooms, _ = store
    code, token = opened(rooms, "address t", Session())
    key = rooms._rooms[code].key  # (shown to the teacher only)
    assert isinstance(rooms.console(code, "A" * R.KEY_LEN, "address p"), R.Join)
    phone = rooms.console(code, key, "address p")
    assert isinstance(phone, str)
    rooms.ask(code, token, "scaling", "spread", ["a", "b"])
    assert rooms.answers(code, phone).key == "spread"
    assert rooms.pause(code, phone, True) and rooms.view(code).paused
    assert rooms.reveal(code, phone)
    assert not rooms.show(code, phone, "masks")  # the pages are the projector's
    assert not rooms.set(code, phone, "d_k", 1) and rooms.commit(code, phone) is None
    assert not rooms.ask(code, phone, "scaling", "x")
    # A new key: the old one opens nothing any more, and the consoles must open again.
    new = rooms.new_key(code, token)
    assert new != key and rooms.new_key(code, phone) is None
    assert rooms.answers(code, phone) is None
    assert isinstance(rooms.console(code, key, "address p"), R.Join)
    assert isinstance(rooms.reclaim(code, key, "address s"), R.Join)  # a student with the old
    assert isinstance(rooms.console(code, new, "address p"), str)


def test_a_phone_becomes_the_console_only_when_the_teacher_allows_its_number(store):
    rooms, clock = store
    code, token = opened(rooms, "address t", Session())
    rid, number = rooms.ask_console(code, "address p")
    assert len(number) == 4 and number.isdigit()
    assert rooms.console_requests(code, token) == [number]
    assert rooms.console_requests(code, "not the token") == []  # nobody else sees them
    assert rooms.paired(code, rid) is None  # it waits
    assert not rooms.allow_console(code, "not the token", number)
    assert rooms.allow_console(code, token, number)
    phone = rooms.paired(code, rid)
    assert isinstance(phone, str) and rooms.paired(code, rid) is False  # taken once
    assert rooms.console_requests(code, token) == []
    assert rooms.key_for(code, phone) == rooms._rooms[code].key  # the phone shows the key
    assert rooms.key_for(code, "a student's guess") is None
    rooms.ask(code, token, "scaling", "spread", ["a", "b"])
    assert rooms.reveal(code, phone)
    # a student who asks too gets nothing unless their number is allowed; refused is told
    rid2, n2 = rooms.ask_console(code, "address s")
    assert rooms.allow_console(code, token, n2, allow=False)
    assert rooms.paired(code, rid2) is False and not rooms.allow_console(code, token, n2)
    # requests expire, a room holds a few, and a flood of them slows its sender
    rid3, _ = rooms.ask_console(code, "address s")
    clock.t += R.PAIR_S + 1
    assert rooms.console_requests(code, token) == [] and rooms.paired(code, rid3) is False
    mine, my_number = rooms.ask_console(code, "address t")  # the teacher's phone, first
    numbers = [rooms.ask_console(code, "address f") for _ in range(R.MAX_PAIRS + 2)]
    assert len(rooms.console_requests(code, token)) == R.MAX_PAIRS
    assert my_number in rooms.console_requests(code, token)  # never pushed out by decoys
    assert numbers[-1] == R.Join(False, False, 0.0)  # full: the newest waits its turn
    assert rooms.allow_console(code, token, my_number)
    assert isinstance(rooms.paired(code, mine), str)
    got = [rooms.ask_console(code, "address f") for _ in range(30)]
    assert any(isinstance(g, R.Join) and g.slow for g in got)
    assert numbers and isinstance(rooms.ask_console("NOROOM", "address q"), R.Join)
    # a new key closes the phone's console and forgets the requests
    rooms.new_key(code, token)
    assert rooms.key_for(code, phone) is None and rooms.console_requests(code, token) == []


def test_the_console_says_who_a_question_can_reach(store):
    rooms, _ = store
    code, token = opened(rooms)
    rooms.ask(code, token, "scaling", "spread", ["a", "b"])
    rooms.view(code, "s1", page="scaling")
    rooms.view(code, "s2", page="scaling", following=False)  # exploring on the page
    rooms.view(code, "s3", page="masks", following=False)  # on another page
    assert rooms.reach(code, token) == R.Reach(here=2, exploring=1, elsewhere=1)
