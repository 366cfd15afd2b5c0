"""Class rooms: what a teacher's session publishes and the students' sessions follow.

Plain Python, no Streamlit: the server keeps one `Rooms` (ui.classroom holds it in
`st.cache_resource`), and every session of the one server process reads and writes it
under a lock. A room holds the page the teacher shows, the values of that page's
controls (the widgets' own Python values, so a follower's widget can take them as they
are), a version number that goes up when any of that changes, and at most one question
put to the class with its anonymous answers.

A following session leaves a waker (`listen`; ui.wake makes one from a Streamlit
session): every new version calls them all, outside the lock, so the followers' pages
rerun at once instead of polling. A waker that says its session is gone is dropped.

Only the holder of a room's token (kept in the teacher's session state, never in a URL)
can change it. Everything is bounded: rooms, students counted, answers; a room nobody
touched for `IDLE_S` seconds is gone.
"""

from __future__ import annotations

import copy
import hmac
import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

# No 0/O, 1/I/L, 2/Z, 5/S, 8/B: a code read off a projector is typed right.
CODE_CHARS = "ACDEFGHJKMNPQRTUVWXY34679"
CODE_LEN = 4
CODE_RE = re.compile(f"[{CODE_CHARS}]{{{CODE_LEN}}}")
MAX_ROOMS = 50  # rooms on one server at once
MAX_STUDENTS = 300  # students one room counts (more can follow, uncounted)
MAX_VALUES = 200  # control values one room holds
IDLE_S = 3 * 3600  # a room untouched for this long has ended
EVICT_S = 15 * 60  # when the server is full, a room idle this long with nobody in it gives way
SEEN_S = 10.0  # a polling student counts as following when their page asked within this


class Waker(Protocol):
    """Reruns one follower's page (ui.wake.Waker); False once that page is gone."""

    def __call__(self) -> bool: ...

    def alive(self) -> bool: ...


def normal_code(text: str) -> str | None:
    """A room code as typed (any case, spaces around) or None when it cannot be one."""
    code = text.strip().upper()
    return code if CODE_RE.fullmatch(code) else None


@dataclass
class Question:
    """A prediction put to the class: which exercise, its choices (None: a number)."""

    id: int
    page: str
    key: str
    choices: tuple[str, ...] | None
    answers: dict[str, Any] = field(default_factory=dict)  # student id -> answer
    revealed: bool = False


@dataclass(frozen=True)
class View:
    """A consistent copy of what a follower needs, taken under the room's lock."""

    version: int
    page: str | None  # None until the teacher's first page is published
    values: dict[str, Any]
    question: Question | None
    following: int


@dataclass
class Room:
    code: str
    token: str
    touched: float
    page: str | None = None  # the teacher's draft: the page and its values this run
    values: dict[str, Any] = field(default_factory=dict)
    shown_page: str | None = None  # what the followers see: the last commit
    shown_values: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    dirty: bool = False
    students: dict[str, float] = field(default_factory=dict)  # student id -> last seen
    question: Question | None = None
    questions: int = 0
    listeners: dict[str, Waker] = field(default_factory=dict)  # student id -> waker

    def bump(self) -> list[Waker]:
        """A new version: the wakers to call once the lock is released."""
        self.version += 1
        return list(self.listeners.values())


class Rooms:
    """Every room of the server. Methods that change a room take its token."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._rooms)

    def _purge(self) -> None:
        now = self._clock()
        for code in [c for c, r in self._rooms.items() if now - r.touched > IDLE_S]:
            del self._rooms[code]

    def _make_space(self) -> bool:
        if len(self._rooms) < MAX_ROOMS:
            return True
        now = self._clock()
        empty = [
            r
            for r in self._rooms.values()
            if now - r.touched > EVICT_S and not any(now - t < SEEN_S for t in r.students.values())
        ]
        if not empty:
            return False
        del self._rooms[min(empty, key=lambda r: r.touched).code]
        return True

    def open(self) -> tuple[str, str] | None:
        """A new room: (code, token), or None when the server holds all it may."""
        with self._lock:
            self._purge()
            if not self._make_space():
                return None
            code = "".join(secrets.choice(CODE_CHARS) for _ in range(CODE_LEN))
            while code in self._rooms:
                code = "".join(secrets.choice(CODE_CHARS) for _ in range(CODE_LEN))
            token = secrets.token_urlsafe(24)
            self._rooms[code] = Room(code=code, token=token, touched=self._clock())
            return code, token

    def exists(self, code: str) -> bool:
        with self._lock:
            self._purge()
            return code in self._rooms

    def _own(self, code: str, token: str) -> Room | None:
        """The room, when `token` is its teacher's; touches it."""
        room = self._rooms.get(code)
        if room is None or not hmac.compare_digest(room.token, token):
            return None
        room.touched = self._clock()
        return room

    def close(self, code: str, token: str) -> bool:
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            del self._rooms[code]
            wake = list(room.listeners.values())  # each follower's page says it ended
        self._wake(code, wake)
        return True

    def _wake(self, code: str, wakers: list[Waker]) -> None:
        """Call the wakers (outside the lock); forget those whose page is gone."""
        gone = [w for w in wakers if not w()]
        if gone:
            with self._lock:
                room = self._rooms.get(code)
                for s, w in list(room.listeners.items()) if room else ():
                    if w in gone:
                        del room.listeners[s]

    # -- the teacher's side ------------------------------------------------------------
    def show(self, code: str, token: str, page: str) -> bool:
        """The teacher is on `page`: a new page starts with no values."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            if room.page != page:
                room.page, room.values, room.dirty = page, {}, True
            return True

    def set(self, code: str, token: str, key: str, value: Any) -> bool:
        """One control's value on the teacher's page (published at the next commit)."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            if room.values.get(key, _MISSING) != value and (
                key in room.values or len(room.values) < MAX_VALUES
            ):
                room.values[key] = copy.deepcopy(value)
                room.dirty = True
            return True

    def commit(self, code: str, token: str) -> int | None:
        """Publish what changed since the last commit: the version goes up once."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return None
            wake = []
            if room.dirty:
                room.shown_page, room.shown_values = room.page, copy.deepcopy(room.values)
                wake = room.bump()
                room.dirty = False
            version = room.version
        self._wake(code, wake)
        return version

    def ask(self, code: str, token: str, page: str, key: str, choices=None) -> bool:
        """Put exercise `key` of `page` to the class (replacing any open question)."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            room.questions += 1
            choices = tuple(choices) if choices is not None else None
            room.question = Question(room.questions, page, key, choices)
            wake = room.bump()
        self._wake(code, wake)
        return True

    def reveal(self, code: str, token: str) -> bool:
        with self._lock:
            room = self._own(code, token)
            if room is None or room.question is None:
                return False
            room.question.revealed = True
            wake = room.bump()
        self._wake(code, wake)
        return True

    # -- the students' side ------------------------------------------------------------
    def view(self, code: str, student: str | None = None) -> View | None:
        """What the room shows now; counts `student` as following."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None or self._clock() - room.touched > IDLE_S:
                return None
            now = self._clock()
            if student is not None:
                self._seen(room, student, now)
            following = self._following(room, now)
            q = room.question  # the answers travel only once revealed
            question = q and replace(q, answers=dict(q.answers) if q.revealed else {})
            values = copy.deepcopy(room.shown_values)
            return View(room.version, room.shown_page, values, question, following)

    def version(self, code: str, student: str | None = None) -> int | None:
        """The room's version (None: no such room); the cheap call a follower polls."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None or self._clock() - room.touched > IDLE_S:
                return None
            if student is not None:
                self._seen(room, student, self._clock())
            return room.version

    def listen(self, code: str, student: str, waker: Waker, seen: int | None = None) -> bool:
        """Wake `student`'s page at every new version (replacing their last waker); False
        when there is no such room or it holds as many wakers as it may (then poll).

        `seen` is the version the page just took: a commit that came between its view()
        and this call woke everyone but this page, so the page is woken at once."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return False
            if student not in room.listeners and len(room.listeners) >= MAX_STUDENTS:
                for s in [s for s, w in room.listeners.items() if not w.alive()]:
                    del room.listeners[s]
                if len(room.listeners) >= MAX_STUDENTS:
                    return False
            room.listeners[student] = waker
            behind = seen is not None and room.version != seen
        if behind:
            self._wake(code, [waker])
        return True

    def unlisten(self, code: str, student: str) -> None:
        """`student` explores on their own (or left): no more wakes."""
        with self._lock:
            room = self._rooms.get(code)
            if room is not None:
                room.listeners.pop(student, None)

    @staticmethod
    def _following(room: Room, now: float) -> int:
        """Students whose page is woken and still open, or who polled lately."""
        woken = {s for s, w in room.listeners.items() if w.alive()}
        polled = {s for s, t in room.students.items() if now - t < SEEN_S}
        return len(woken | polled)

    @staticmethod
    def _seen(room: Room, student: str, now: float) -> None:
        if student in room.students or len(room.students) < MAX_STUDENTS:
            room.students[student] = now
            return
        stale = [s for s, t in room.students.items() if now - t > SEEN_S]
        if stale:
            del room.students[min(stale, key=room.students.__getitem__)]
            room.students[student] = now

    def answer(self, code: str, question_id: int, student: str, value: Any) -> int | None:
        """A student's answer to the open question (their last one counts); returns how
        many have answered, or None when that question is not open any more."""
        with self._lock:
            room = self._rooms.get(code)
            q = room.question if room else None
            if q is None or q.id != question_id or q.revealed:
                return None
            if q.choices is not None and value not in q.choices:
                return None
            if student in q.answers or len(q.answers) < MAX_STUDENTS:
                q.answers[student] = value
            return len(q.answers)

    def answers(self, code: str, token: str) -> Question | None:
        """The open question with its answers, for the teacher."""
        with self._lock:
            room = self._own(code, token)
            return copy.deepcopy(room.question) if room else None


_MISSING = object()
