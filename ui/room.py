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
can change it. A room belongs to a live teacher session: the teacher's `Presence` (its
session's connection) is checked by `sweep` every few seconds; when it is gone the
followers are woken and told, and the room waits `RECLAIM_S` for the teacher's key (shown
to the teacher only) before it ends. Rooms are bounded in total and per client (a network
address, else a browser session); when the server is full, only a room with neither its
teacher nor any follower connected gives way. Joins and key tries are rate-limited per
client, and a code that names no room costs more than one that does. Students counted,
answers (in total and per client) and values are bounded; a room nobody touched for
`IDLE_S` seconds is gone.
"""

from __future__ import annotations

import copy
import hmac
import math
import os
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol

# No 0/O, 1/I/L, 2/Z, 5/S, 8/B: a code read off a projector is typed right.
CODE_CHARS = "ACDEFGHJKMNPQRTUVWXY34679"
CODE_LEN = 6  # 25**6 codes: guessing one of MAX_ROOMS live rooms takes months (issue 40)
KEY_LEN = 8  # the teacher's key, which takes a room back after a reload
CODE_RE = re.compile(f"[{CODE_CHARS}]{{{CODE_LEN}}}")
KEY_RE = re.compile(f"[{CODE_CHARS}]{{{KEY_LEN}}}")
MAX_ROOMS = 50  # rooms on one server at once
ROOMS_PER_CLIENT = int(os.environ.get("ATTN_ROOMS_PER_CLIENT", "5"))  # one address's rooms
MAX_STUDENTS = 300  # students one room counts (more can follow, uncounted)
# Answers one address may send to one question: a lecture hall behind one university NAT
# is one address, so by default a whole room's worth (issue 50). Each answer needs a
# browser session of its own, and a question holds MAX_STUDENTS at most anyway.
ANSWERS_PER_CLIENT = int(os.environ.get("ATTN_ANSWERS_PER_CLIENT", str(MAX_STUDENTS)))
MAX_HISTORY = 60  # the questions of one class the teacher can look back on
MAX_TEXT = 120  # characters of a question's text the history keeps
PAIR_S = 120.0  # a device's request to be the teacher's console waits this long
MAX_PAIRS = 8  # such requests one room holds at once (then new ones wait their turn)
MAX_VALUES = 200  # control values one room holds
TICKET_LEN = 12  # hex characters of a join link's ticket: 48 bits, not to be guessed
MAX_LINK = 2_000  # characters of one URL parameter a room passes on (a link, not a text)
IDLE_S = 3 * 3600  # a room untouched for this long has ended
RECLAIM_S = 10 * 60  # a room whose teacher's page has gone waits this long for the key
HEARD_S = 120.0  # a teacher with no Presence (no runtime) counts as here when heard within
SEEN_S = 10.0  # a polling student counts as following when their page asked within this
JOIN_BURST = 100.0  # wrong guesses' allowance of one client, at once (in joins)
JOIN_PER_S = 1.0  # ... refilled this many joins a second
MISS_COST = 5.0  # a code that names no room (or a wrong key) costs this many joins
# A code that names a live room costs nothing: 300 students behind one address all join
# at once (issue 50). Only misses spend the allowance, so guessing stays slow.
HIT_COST = 0.0
MAX_CLIENTS = 10_000  # clients the join limiter remembers


class Presence(Protocol):
    """Whether a session still has its browser connected (ui.wake.Waker is one)."""

    def alive(self) -> bool: ...


class Waker(Presence, Protocol):
    """Reruns one follower's page (ui.wake.Waker); False once that page is gone."""

    def __call__(self) -> bool: ...


def _normal(text: str, pattern: re.Pattern) -> str | None:
    text = re.sub(r"[\s-]", "", text[:64]).upper()  # "abc def", "ABC-DEF" as typed
    return text if pattern.fullmatch(text) else None


def normal_code(text: str) -> str | None:
    """A room code as typed (any case, spaces or dashes) or None when it cannot be one."""
    return _normal(text, CODE_RE)


def normal_key(text: str) -> str | None:
    """A teacher's key as typed, or None when it cannot be one."""
    return _normal(text, KEY_RE)


def _draw(n: int) -> str:
    return "".join(secrets.choice(CODE_CHARS) for _ in range(n))


class Refused(Enum):
    """Why `open` gave no room."""

    FULL = "full"  # the server holds MAX_ROOMS rooms, each with someone connected
    CLIENT = "client"  # this client holds ROOMS_PER_CLIENT rooms with someone connected


@dataclass(frozen=True)
class Opened:
    """A room of one's own: its code, the session's token and the teacher's key."""

    code: str
    token: str
    key: str


@dataclass(frozen=True)
class Join:
    """The answer to a knock on a room: `ok` (the room exists), or why not."""

    ok: bool
    slow: bool = False  # the client knocked too often: try again in `wait_s`
    wait_s: float = 0.0


@dataclass(frozen=True)
class Answer:
    """What became of a student's answer: `kept` or not (`why`), and how many are in."""

    kept: bool
    count: int = 0
    why: str = ""  # "closed", "invalid", "full", "client" when not kept


@dataclass
class Question:
    """A prediction put to the class: which exercise, its choices (None: a number)."""

    id: int
    page: str
    key: str
    choices: tuple[str, ...] | None
    answers: dict[str, Any] = field(default_factory=dict)  # student id -> answer
    revealed: bool = False
    clients: dict[str, str] = field(default_factory=dict)  # student id -> client
    asked_at: float = 0.0  # the room's clock when it was asked
    deadline: float | None = None  # answers close then (None: when the teacher says)
    closed: bool = False  # no more answers: the teacher closed it, or its time ran out
    text: str = ""  # the question as the page asked it (plain text, for the history)

    def open_at(self, now: float) -> bool:
        """Whether an answer may still come in."""
        late = self.deadline is not None and now >= self.deadline
        return not (self.revealed or self.closed or late)


@dataclass(frozen=True)
class Reach:
    """Who a question can reach now, for the teacher's console: students on its page
    (following, or exploring there), and students elsewhere (another page: they get it
    when they come back). Counts of students seen within SEEN_S, or woken."""

    here: int = 0
    exploring: int = 0  # of `here`, exploring on their own
    elsewhere: int = 0


@dataclass(frozen=True)
class View:
    """A consistent copy of what a follower needs, taken under the room's lock."""

    version: int
    page: str | None  # None until the teacher's first page is published
    values: dict[str, Any]
    question: Question | None
    following: int
    gone: bool = False  # the teacher's page has gone; the room waits for their key
    # (page, exercise key): answers the teacher revealed without asking the class
    opened: frozenset[tuple[str, str]] = frozenset()
    paused: bool = False  # the teacher paused the class: pages hold what they show
    # The teacher's address bar as it left that page (its controls' parameters, as the
    # URL writes them): a follower's own URL and links must say the same (issue 49).
    link: dict[str, str | None] = field(default_factory=dict)  # None: too long to pass on


@dataclass
class Pair:
    """A device that asks to become the teacher's console without the key: both screens
    show `number`; the teacher allows it on their own screen."""

    number: str
    asked: float
    token: str | None = None  # the console's token, once allowed


@dataclass
class Room:
    code: str
    token: str
    touched: float
    key: str = ""
    client: str = ""
    teacher: Presence | None = None  # None: no runtime, `heard` tells instead
    heard: float = 0.0  # the teacher's session was last heard from
    gone: float | None = None  # since when the teacher's page is gone
    page: str | None = None  # the teacher's draft: the page and its values this run
    values: dict[str, Any] = field(default_factory=dict)
    shown_page: str | None = None  # what the followers see: the last commit
    shown_values: dict[str, Any] = field(default_factory=dict)
    link: dict[str, str | None] = field(default_factory=dict)  # the teacher's URL, this run
    shown_link: dict[str, str | None] = field(default_factory=dict)  # ... at the last commit
    version: int = 0
    dirty: bool = False
    students: dict[str, float] = field(default_factory=dict)  # student id -> last seen
    where: dict[str, tuple[str, bool]] = field(default_factory=dict)  # id -> (page, following)
    question: Question | None = None
    questions: int = 0
    history: list[Question] = field(default_factory=list)  # the class's earlier questions
    listeners: dict[str, Waker] = field(default_factory=dict)  # student id -> waker
    opened: set[tuple[str, str]] = field(default_factory=set)  # View.opened
    paused: bool = False
    consoles: list[str] = field(default_factory=list)  # the teacher's other devices, oldest first
    pairs: dict[str, Pair] = field(default_factory=dict)  # request id -> a device's request

    def bump(self) -> list[Waker]:
        """A new version: the wakers to call once the lock is released."""
        self.version += 1
        return list(self.listeners.values())

    def teacher_here(self, now: float) -> bool:
        if self.teacher is not None:
            return self.teacher.alive()
        return now - self.heard < HEARD_S

    def followers_here(self, now: float) -> bool:
        return any(w.alive() for w in self.listeners.values()) or any(
            now - t < SEEN_S for t in self.students.values()
        )

    def live(self, now: float) -> bool:
        """Someone is connected: such a room is never evicted."""
        return self.teacher_here(now) or self.followers_here(now)


class Rooms:
    """Every room of the server. Methods that change a room take its token."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._knocks: dict[str, tuple[float, float]] = {}  # client -> (tokens, when)
        self._secret = secrets.token_bytes(32)  # join links' tickets (ticket()), per process

    def __len__(self) -> int:
        with self._lock:
            self._purge()
            return len(self._rooms)

    def _purge(self) -> list[tuple[str, list[Waker]]]:
        """Forget rooms idle past IDLE_S; their wakers, to call outside the lock."""
        now = self._clock()
        ended = [c for c, r in self._rooms.items() if now - r.touched > IDLE_S]
        return [(c, list(self._rooms.pop(c).listeners.values())) for c in ended]

    def _evict(self, rooms: list[Room], now: float) -> bool:
        """Drop the room among `rooms` that nobody is connected to, longest gone first."""
        idle = [r for r in rooms if not r.live(now)]
        if not idle:
            return False
        out = min(idle, key=lambda r: (r.gone is None, r.gone or 0.0, r.touched))
        del self._rooms[out.code]
        return True

    def open(self, client: str = "", teacher: Presence | None = None) -> Opened | Refused:
        """A new room for `client` whose session is `teacher`; or why there is none."""
        with self._lock:
            self._purge()
            now = self._clock()
            mine = [r for r in self._rooms.values() if client and r.client == client]
            if len(mine) >= ROOMS_PER_CLIENT and not self._evict(mine, now):
                return Refused.CLIENT
            if len(self._rooms) >= MAX_ROOMS and not self._evict(list(self._rooms.values()), now):
                return Refused.FULL
            code = _draw(CODE_LEN)
            while code in self._rooms:
                code = _draw(CODE_LEN)
            token, key = secrets.token_urlsafe(24), _draw(KEY_LEN)
            self._rooms[code] = Room(code, token, now, key, client, teacher, now)
            return Opened(code, token, key)

    def _spend(self, client: str, cost: float, now: float) -> float:
        """Take `cost` joins from `client`'s allowance; 0 when it had one, else the
        seconds until it has one again (a refused knock takes nothing)."""
        tokens, then = self._knocks.get(client, (JOIN_BURST, now))
        tokens = min(JOIN_BURST, tokens + (now - then) * JOIN_PER_S)
        if tokens < 1:
            self._knocks[client] = (tokens, now)
            return (1 - tokens) / JOIN_PER_S
        self._knocks[client] = (tokens - cost, now)
        if len(self._knocks) > MAX_CLIENTS:  # forget those whose allowance is whole again
            self._knocks = {
                c: (t, w)
                for c, (t, w) in self._knocks.items()
                if t + (now - w) * JOIN_PER_S < JOIN_BURST
            }
        return 0.0

    def ticket(self, code: str) -> str:
        """The join link's ticket for room `code`: TICKET_LEN characters of an HMAC of the
        code under this server's secret, which nobody can make without the link."""
        mac = hmac.new(self._secret, code.encode(), "sha256").hexdigest()
        return mac[:TICKET_LEN].upper()

    def join(self, code: str, client: str, ticket: str | None = None) -> Join:
        """Whether room `code` exists, for a session of `client` about to follow it;
        rate-limited per client (a code that names no room costs MISS_COST). A join link's
        right `ticket` is never refused: a class behind one address (a school's router,
        Streamlit Cloud's proxy, this machine) shares one allowance, and a stranger who
        spends it guessing must not keep the class out (the second outside review of
        issue 49). A typed code has no ticket and pays as before."""
        with self._lock:
            self._purge()
            now = self._clock()
            exists = code in self._rooms
            if exists and ticket and hmac.compare_digest(self.ticket(code), ticket.upper()):
                return Join(True)
            wait = self._spend(client, HIT_COST if exists else MISS_COST, now)
            return Join(exists and not wait, bool(wait), wait)

    def exists(self, code: str) -> bool:
        with self._lock:
            self._purge()
            return code in self._rooms

    def _own(self, code: str, token: str, touch: bool = True, console: bool = False) -> Room | None:
        """The room, when `token` is its teacher's (or, with `console`, one of the
        teacher's other devices'); hears the teacher (and touches it)."""
        room = self._rooms.get(code)
        if room is None:
            return None
        if not hmac.compare_digest(room.token, token):
            if not (console and any(hmac.compare_digest(c, token) for c in room.consoles)):
                return None
            room.touched = self._clock() if touch else room.touched
            return room
        room.heard = self._clock()
        if touch:
            room.touched = room.heard
        return room

    def close(self, code: str, token: str) -> bool:
        with self._lock:
            room = self._own(code, token, console=True)
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

    def sweep(self) -> None:
        """Every few seconds (ui.classroom's thread): a room whose teacher's page went
        tells its followers at once; one that came back, too; one gone past RECLAIM_S
        (or idle past IDLE_S) ends, and its followers are told."""
        with self._lock:
            wake = self._purge()
            now = self._clock()
            for room in list(self._rooms.values()):
                here = room.teacher_here(now)
                if here and room.gone is not None:
                    room.gone = None
                    wake.append((room.code, room.bump()))
                elif not here and room.gone is None:
                    room.gone = now
                    wake.append((room.code, room.bump()))
                elif not here and now - room.gone > RECLAIM_S:
                    del self._rooms[room.code]
                    wake.append((room.code, list(room.listeners.values())))
        for code, wakers in wake:
            self._wake(code, wakers)

    # -- the teacher's side ------------------------------------------------------------
    def reclaim(
        self, code: str, key: str, client: str, teacher: Presence | None = None
    ) -> Opened | Join:
        """The teacher's key takes room `code` back for this session (a new token: the
        old tab drives no more); else a Join saying why not (`slow`: too many tries)."""
        with self._lock:
            now = self._clock()
            room = self._keyed(code, key, client, now)
            if isinstance(room, Join):
                return room
            room.token, room.teacher, room.client = secrets.token_urlsafe(24), teacher, client
            room.heard = room.touched = now
            room.gone = None
            opened = Opened(code, room.token, room.key)
            wake = room.bump()
        self._wake(code, wake)
        return opened

    def hear(self, code: str, token: str, teacher: Presence | None = None) -> View | None:
        """The teacher's page is still there (its count's timer): what followers see."""
        with self._lock:
            room = self._own(code, token, touch=False)
            if room is None:
                return None
            if teacher is not None:
                room.teacher = teacher
        return self.view(code)

    def show(self, code: str, token: str, page: str) -> bool:
        """The teacher is on `page`: a new page starts with no values."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            if room.page != page:
                room.page, room.values, room.link, room.dirty = page, {}, {}, True
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

    def set_link(self, code: str, token: str, link: dict[str, str]) -> bool:
        """The teacher's URL parameters as this run leaves them (published at the next
        commit, with the values): at most MAX_VALUES of them, each at most MAX_LINK
        characters (a longer one is None: followers then neither copy nor compare it)."""
        link = {
            str(k): (str(v) if len(str(v)) <= MAX_LINK else None)
            for k, v in list(link.items())[:MAX_VALUES]
        }
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            if room.link != link:
                room.link, room.dirty = link, True
            return True

    def commit(self, code: str, token: str) -> int | None:
        """Publish what changed since the last commit: the version goes up once."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return None
            wake = []
            if room.dirty and not room.paused:  # paused: the class holds what it shows
                room.shown_page, room.shown_values = room.page, copy.deepcopy(room.values)
                room.shown_link = dict(room.link)
                wake = room.bump()
                room.dirty = False
            version = room.version
        self._wake(code, wake)
        return version

    def ask(
        self, code: str, token: str, page: str, key: str, choices=None,
        seconds: float | None = None, text: str = "",
    ) -> bool:  # fmt: skip
        """Put exercise `key` of `page` to the class (replacing any open question, which
        goes to the history); its answers close after `seconds` (None: when the teacher
        closes or reveals it)."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            self._file(room)
            room.questions += 1
            room.opened.discard((page, key))  # asked: it waits for the class's reveal again
            choices = tuple(choices) if choices is not None else None
            now = self._clock()
            deadline = now + seconds if seconds and seconds > 0 else None
            room.question = Question(room.questions, page, key, choices, asked_at=now,
                                     deadline=deadline, text=text[:MAX_TEXT])  # fmt: skip
            wake = room.bump()
        self._wake(code, wake)
        return True

    @staticmethod
    def _file(room: Room) -> None:
        """The open question goes to the class's history (the newest MAX_HISTORY kept)."""
        if room.question is not None:
            room.history.append(room.question)
            del room.history[:-MAX_HISTORY]
            room.question = None

    def close_question(self, code: str, token: str) -> bool:
        """No more answers to the open question; it stays on the students' pages until
        revealed or cleared (the teacher's console, or the projector's page)."""
        with self._lock:
            room = self._own(code, token, console=True)
            if room is None or room.question is None or room.question.closed:
                return False
            room.question.closed = True
            wake = room.bump()
        self._wake(code, wake)
        return True

    def clear_question(self, code: str, token: str) -> bool:
        """Take the open question off the students' pages without revealing it (it goes to
        the history, with the answers it had)."""
        with self._lock:
            room = self._own(code, token, console=True)
            if room is None or room.question is None:
                return False
            room.question.closed = True
            self._file(room)
            wake = room.bump()
        self._wake(code, wake)
        return True

    def allowed(self, code: str, token: str) -> bool:
        """Whether `token` is the room's teacher's or one of their consoles'."""
        with self._lock:
            return self._own(code, token, touch=False, console=True) is not None

    def history(self, code: str, token: str) -> list[Question]:
        """The class's questions, oldest first, the open one last (copies)."""
        with self._lock:
            room = self._own(code, token, touch=False, console=True)
            if room is None:
                return []
            now = [room.question] if room.question is not None else []
            return copy.deepcopy(room.history + now)

    def pause(self, code: str, token: str, paused: bool) -> bool:
        """Pause the class (the students' pages hold what they show and say so) or go on
        (they take what the teacher's page shows now)."""
        with self._lock:
            room = self._own(code, token, console=True)
            if room is None or room.paused == paused:
                return room is not None
            room.paused = paused
            if not paused and room.dirty:
                room.shown_page, room.shown_values = room.page, copy.deepcopy(room.values)
                room.shown_link = dict(room.link)
                room.dirty = False
            wake = room.bump()
        self._wake(code, wake)
        return True

    def new_key(self, code: str, token: str) -> str | None:
        """A new teacher key; the old one takes nothing back any more, and the teacher's
        other devices must open their console again."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return None
            room.key = _draw(KEY_LEN)
            room.consoles.clear()
            room.pairs.clear()
            return room.key

    def console(self, code: str, key: str, client: str) -> str | Join:
        """The teacher's key opens a console on another device (a phone): a token that
        reveals, closes, pauses, ends and reads the history, but does not drive the
        pages (the projector's tab keeps the class); else a Join saying why not."""
        with self._lock:
            room = self._keyed(code, key, client, self._clock())
            return room if isinstance(room, Join) else self._new_console(room)

    def _keyed(self, code: str, key: str, client: str, now: float) -> Room | Join:
        """Room `code` when `key` is its teacher key (rate-limited per client: a wrong
        key costs MISS_COST), else a Join saying why not. Under the lock."""
        room = self._rooms.get(code)
        right = room is not None and hmac.compare_digest(room.key, key)
        wait = self._spend(client, HIT_COST if right else MISS_COST, now)
        if wait or not right:
            return Join(False, bool(wait), wait)
        return room

    @staticmethod
    def _new_console(room: Room) -> str:
        """A console token for one of the teacher's devices; a few at most, the oldest
        gives way. Under the lock."""
        if len(room.consoles) >= 4:
            room.consoles.pop(0)
        token = secrets.token_urlsafe(24)
        room.consoles.append(token)
        return token

    def ask_console(self, code: str, client: str) -> tuple[str, str] | Join:
        """A device (the teacher's phone) asks to become the console of room `code`
        without typing the key: (a request id, kept by that device, and a four-digit
        number both screens show), else a Join saying why not. The teacher allows it on
        their own screen (`allow_console`), so a student who asks gets nothing unless the
        teacher allows their number. Each request costs a wrong guess's allowance: a
        flood of requests slows its sender. A room holds MAX_PAIRS at once and then
        refuses new ones (Join(False, False, 0)) until the teacher refuses some or two
        minutes pass: an earlier request, the teacher's phone's, is never pushed out."""
        with self._lock:
            now = self._clock()
            room = self._rooms.get(code)
            wait = self._spend(client, MISS_COST, now)
            if wait or room is None:
                return Join(False, bool(wait), wait)
            self._expire_pairs(room, now)
            if len(room.pairs) >= MAX_PAIRS:  # full: nobody's request is pushed out (a
                return Join(False, False, 0.0)  # student's asks cannot drop the teacher's)
            taken = {p.number for p in room.pairs.values()}
            number = next(n for n in iter(lambda: f"{secrets.randbelow(10_000):04d}", None)
                          if n not in taken)  # fmt: skip
            rid = secrets.token_urlsafe(16)
            room.pairs[rid] = Pair(number, now)
            return rid, number

    def _expire_pairs(self, room: Room, now: float) -> None:
        for rid in [r for r, p in room.pairs.items() if now - p.asked > PAIR_S]:
            del room.pairs[rid]

    def console_requests(self, code: str, token: str) -> list[str]:
        """The numbers of the devices waiting to become this teacher's console, oldest
        first (the teacher's own tab only)."""
        with self._lock:
            room = self._own(code, token, touch=False)
            if room is None:
                return []
            self._expire_pairs(room, self._clock())
            waiting = [p for p in room.pairs.values() if p.token is None]
            return [p.number for p in sorted(waiting, key=lambda p: p.asked)]

    def allow_console(self, code: str, token: str, number: str, allow: bool = True) -> bool:
        """The teacher allows (or refuses) the device showing `number`."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            rid = next((r for r, p in room.pairs.items() if p.number == number), None)
            if rid is None or room.pairs[rid].token is not None:
                return False
            if not allow:
                del room.pairs[rid]
                return True
            room.pairs[rid].token = self._new_console(room)
            return True

    def paired(self, code: str, rid: str) -> str | bool | None:
        """For the asking device: its console token once allowed (taken once), None while
        it waits, False when refused, expired, or the class has ended."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None:
                return False
            self._expire_pairs(room, self._clock())
            pair = room.pairs.get(rid)
            if pair is None:
                return False
            if pair.token is None:
                return None
            del room.pairs[rid]
            return pair.token

    def key_for(self, code: str, token: str) -> str | None:
        """The teacher key, for the teacher's tab or one of their consoles (a phone shows
        it on request: the projector never does)."""
        with self._lock:
            room = self._own(code, token, touch=False, console=True)
            return room.key if room else None

    def reach(self, code: str, token: str) -> Reach | None:
        """Who the open question can reach now (the teacher's count says why not all)."""
        with self._lock:
            room = self._own(code, token, touch=False, console=True)
            if room is None or room.question is None:
                return None
            now, page = self._clock(), room.question.page
            live = {s for s, w in room.listeners.items() if w.alive()}
            live |= {s for s, t in room.students.items() if now - t < SEEN_S}
            here = exploring = elsewhere = 0
            for s in live:
                at, following = room.where.get(s, (None, True))
                if at == page:
                    here += 1
                    exploring += not following
                else:
                    elsewhere += 1
            return Reach(here, exploring, elsewhere)

    def opened_answer(self, code: str, token: str, page: str, key: str) -> bool:
        """The teacher revealed exercise `key` of `page` on their own page, without asking
        the class: the students' copies of it need not wait any more (a new version)."""
        with self._lock:
            room = self._own(code, token)
            if room is None:
                return False
            wake = []
            if (page, key) not in room.opened and len(room.opened) < MAX_VALUES:
                room.opened.add((page, key))
                wake = room.bump()
        self._wake(code, wake)
        return True

    def reveal(self, code: str, token: str) -> bool:
        with self._lock:
            room = self._own(code, token, console=True)
            if room is None or room.question is None:
                return False
            room.question.revealed = True
            wake = room.bump()
        self._wake(code, wake)
        return True

    # -- the students' side ------------------------------------------------------------
    def view(
        self, code: str, student: str | None = None, *, count: bool = True,
        page: str | None = None, following: bool = True,
    ) -> View | None:  # fmt: skip
        """What the room shows now; counts `student` as following (or, `following=False`,
        as exploring) on `page`. `count=False` leaves View.following at 0: counting asks
        every follower's connection, and a class of 150 students each asking it on every
        change made that 150 × 150 asks."""
        with self._lock:
            room = self._rooms.get(code)
            if room is None or self._clock() - room.touched > IDLE_S:
                return None
            now = self._clock()
            if student is not None:
                self._seen(room, student, now)
                if page is not None and (student in room.where or len(room.where) < MAX_STUDENTS):
                    room.where[student] = (page, following)
            following = self._following(room, now) if count else 0
            q = room.question  # the answers travel only once revealed
            question = q and replace(q, answers=dict(q.answers) if q.revealed else {}, clients={})
            values = copy.deepcopy(room.shown_values)
            gone = room.gone is not None
            opened = frozenset(room.opened)
            return View(room.version, room.shown_page, values, question, following, gone, opened,
                        room.paused, dict(room.shown_link))  # fmt: skip

    def opened_answers(self, code: str) -> frozenset[tuple[str, str]]:
        """View.opened alone (no copy of the values): what a page's exercises ask."""
        with self._lock:
            room = self._rooms.get(code)
            return frozenset(room.opened) if room is not None else frozenset()

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

    def answer(
        self, code: str, question_id: int, student: str, value: Any, client: str = ""
    ) -> Answer:
        """A student's answer to the open question (their last one counts). Kept only
        when the question is open, the value fits it (one of its choices, or a finite
        number), and neither the question (MAX_STUDENTS) nor `client`
        (ANSWERS_PER_CLIENT) is full; a student's change of answer always fits."""
        with self._lock:
            room = self._rooms.get(code)
            q = room.question if room else None
            if q is None or q.id != question_id or not q.open_at(self._clock()):
                return Answer(False, why="closed")
            if not _fits(q, value):
                return Answer(False, len(q.answers), "invalid")
            if student not in q.answers:
                if len(q.answers) >= MAX_STUDENTS:
                    return Answer(False, len(q.answers), "full")
                if client and Counter(q.clients.values())[client] >= ANSWERS_PER_CLIENT:
                    return Answer(False, len(q.answers), "client")
            q.answers[student] = value if q.choices is not None else float(value)
            q.clients[student] = client
            return Answer(True, len(q.answers))

    def answers(self, code: str, token: str) -> Question | None:
        """The open question with its answers, for the teacher (and the console)."""
        with self._lock:
            room = self._own(code, token, touch=False, console=True)
            return copy.deepcopy(room.question) if room else None


def _fits(q: Question, value: Any) -> bool:
    if q.choices is not None:
        return isinstance(value, str) and value in q.choices
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_MISSING = object()
