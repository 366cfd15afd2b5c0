"""Class mode under load (issue 23): one teacher drives, a class of browsers follows.

`python bench/load.py --scenario class [--sessions 30] [--clients browser|ws]
[--seconds 60] [--arrive 30] [--idle 20] [--every 5]` starts `streamlit run app.py`,
opens a room from a teacher's page (/scaling?room=new, in its own Chromium at normal
priority) and `--sessions` followers joining `/?room=CODE` over `--arrive` seconds:

- `--clients browser` (the default): each follower is a page in a second Chromium at
  nice 19, like bench/load.py's loaders. This machine then draws every follower's screen,
  which a class's own laptops do for themselves; the table gives that drawing's CPU per
  follower per change, the part of the delay that is this machine's and not the server's.
- `--clients ws`: each follower speaks Streamlit's websocket protocol itself, as a
  browser does (BackMsg rerun requests, ForwardMsg deltas, the fragments' timers), and
  draws nothing: the delay is the server's alone, up to the moment the follower's new
  page has arrived in full.

Then:

1. Idle, `--idle` seconds: nobody moves. A following page is woken by the room
   (ui/wake.py) rather than polling, so the server's CPU share here is what following
   costs by itself.
2. Driving, `--seconds` long: the teacher presses an arrow key on the d_k slider every
   `--every` seconds. A browser follower records (in the page, with the machine's one
   clock) when its own URL took the teacher's new value, which its bound control writes
   once the new value is drawn; a websocket follower records when the run that carries
   the new value finished arriving. Delay = that moment - the teacher's key press.

It prints the errors (a follower that never took a value within 15 s counts as one), the
delay p50/p95/max, the server's CPU share in both phases, the server CPU one follower's
rerun costs per change (driving minus idle, over changes × followers) and its peak RSS.
Targets: 0 errors, delay p95 <= 2 s, idle CPU < 33 % of one core with 60 followers,
peak RSS <= 1.5 GB.
"""

from __future__ import annotations

import asyncio
import os
import time
from urllib.parse import parse_qs, urlparse

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench import load as L
from tests.support import browser as B

# Every URL a page takes, with the moment (the machine's clock): Streamlit writes a bound
# control's value into the address with history.replaceState once it has drawn it.
_URL_SPY = """
(() => {
  window.__urls = [];
  for (const name of ['replaceState', 'pushState']) {
    const orig = history[name].bind(history);
    history[name] = (s, t, url) => { orig(s, t, url);
      window.__urls.push([Date.now(), String(location.search)]); };
  }
})();
"""
FOLLOWING = "Following the teacher"


async def _follower(browser, url: str, delay: float, out: dict) -> object | None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = await context.new_page()
    await page.add_init_script(_URL_SPY)
    page.on("pageerror", lambda e: out["errors"].append(f"pageerror: {e}"))
    await asyncio.sleep(delay)
    t = time.monotonic()
    try:
        await page.goto(url, wait_until="domcontentloaded", timeout=300_000)
        await page.get_by_text(FOLLOWING).wait_for(timeout=300_000)
        out["load"].append(time.monotonic() - t)
        return page
    except Exception as e:
        out["errors"].append(f"join: {type(e).__name__}: {str(e)[:160]}")
        await context.close()
        return None


class WsFollower:
    """A follower that speaks the websocket protocol: what a browser sends, nothing drawn.

    It asks for the join link's run, then keeps the connection: every run the server
    sends (a wake, the teacher's page switch) is read through; the fragments' timers the
    server asks for (`auto_rerun`) are run like a browser runs them. `history` gets
    (ms, "d_k=<value>") when a run that drew the d_k control has arrived in full."""

    def __init__(self, base: str, code: str, out: dict) -> None:
        self.uri, self.origin = "ws" + base.removeprefix("http") + "/_stcore/stream", base
        self.code, self.out = code, out
        self.history: list[tuple[float, str]] = []
        self.page, self.query = "", f"room={code}"
        self.following = self.exploring = False
        self.joined = asyncio.Event()
        self._value: str | None = None
        self._full = False  # a full run has started and not finished
        self.folded = 0  # full runs whose finish Streamlit dropped for a fragment's
        self._timers: dict[str, asyncio.Task] = {}

    async def _rerun(self, ws, fragment: str = "") -> None:
        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string, cs.page_script_hash = self.query, self.page
        if fragment:
            cs.fragment_id, cs.is_auto_rerun = fragment, True
        await ws.send(msg.SerializeToString())

    async def _timer(self, ws, fragment: str, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            await self._rerun(ws, fragment)

    def _element(self, el) -> None:
        kind = el.WhichOneof("type")
        if kind == "slider" and el.slider.id.endswith("-d_k"):
            s = el.slider  # raw_value: the value as the URL writes it ("128")
            self._value = s.raw_value[0] if s.raw_value else None
        elif kind == "alert":
            self.following |= FOLLOWING in el.alert.body
            self.exploring |= "exploring on your own" in el.alert.body
        elif kind == "exception":
            self.out["errors"].append(f"exception on a follower: {el.exception.message[:120]}")

    def _take(self, fm) -> None:
        kind = fm.WhichOneof("type")
        if kind == "new_session":
            # Streamlit 1.67 drops a full run's last events (its finish) when a request
            # for another run comes just as that run ends, e.g. from a fragment's timer:
            # the new runner's events win (AppSession.request_rerun notes this). The
            # full run's controls did arrive, so it counts; the report says how often.
            if self._full:
                self.folded += 1
                self._arrived()
            self._full = not fm.metadata.run.fragment_ids
            self.page = fm.new_session.page_script_hash
            if self._full:
                self._value = None
        elif kind == "page_info_changed":
            self.query = fm.page_info_changed.query_string
        elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
            self._element(fm.delta.new_element)
        elif kind == "script_finished":
            if fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY:
                self._arrived()
            self._full = False

    def _arrived(self) -> None:
        """A whole run has arrived."""
        if self._value is not None:
            self.history.append((time.time() * 1000, f"d_k={self._value}"))
        if self.following:
            self.joined.set()

    async def run(self, delay: float, stop: asyncio.Event) -> None:
        await asyncio.sleep(delay)
        t = time.monotonic()
        try:
            async with websockets.connect(
                self.uri, subprotocols=["streamlit"], origin=self.origin, max_size=None,
                open_timeout=300, ping_interval=None,
            ) as ws:  # fmt: skip
                await self._rerun(ws)
                while not stop.is_set():
                    try:
                        raw = await asyncio.wait_for(ws.recv(), 0.5)
                    except TimeoutError:
                        continue
                    fm = ForwardMsg.FromString(raw)
                    if fm.WhichOneof("type") == "auto_rerun":
                        a = fm.auto_rerun
                        if a.fragment_id not in self._timers:
                            self._timers[a.fragment_id] = asyncio.create_task(
                                self._timer(ws, a.fragment_id, a.interval)
                            )
                        continue
                    was = self.joined.is_set()
                    self._take(fm)
                    if self.joined.is_set() and not was:
                        self.out["load"].append(time.monotonic() - t)
        except Exception as e:
            self.out["errors"].append(f"ws follower: {type(e).__name__}: {str(e)[:160]}")
        finally:
            for task in self._timers.values():
                task.cancel()
            self.joined.set()  # nobody waits on a follower that failed


def _delays(history: list, presses: list) -> tuple[list[float], int]:
    """For each press (t, key, value): seconds until this page's URL first held key=value.

    Only a take before the teacher's next press counts: the slider goes back and forth,
    so the same value comes round again, and a page that skipped a change would look
    as if it took it one or two presses late. A change not taken by then is missed."""
    out, missed = [], 0
    ends = [p[0] for p in presses[1:]] + [float("inf")]
    for (t, key, value), end in zip(presses, ends, strict=True):
        took = [
            ts for ts, search in history
            if t <= ts < min(end, t + 15_000)
            and parse_qs(search.lstrip("?")).get(key, [None])[-1] == value
        ]  # fmt: skip
        if took:
            out.append((took[0] - t) / 1000)
        else:
            missed += 1
    return out, missed


def _params(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(url).query).items()}


async def _drive(teacher, a) -> list[tuple[float, str, str]]:
    """The teacher's presses: (page clock ms, the parameter that moved, its new value)."""
    thumb = teacher.locator(f"[data-testid='stSidebar'] {L.SLIDER}").first
    presses, end, i = [], time.monotonic() + a.seconds, 0
    while time.monotonic() < end:
        value, lo, hi = [float(await thumb.get_attribute(k)) for k in ("value", "min", "max")]
        key = "ArrowRight" if i % 4 < 2 else "ArrowLeft"
        key = "ArrowLeft" if value >= hi else "ArrowRight" if value <= lo else key
        await thumb.focus()
        before = _params(teacher.url)
        t = await teacher.evaluate("Date.now()")
        await teacher.keyboard.press(key)
        await teacher.wait_for_selector(B.IDLE, state="attached")
        await asyncio.sleep(0.3)
        now = _params(teacher.url)
        presses += [(t, k, v) for k, v in now.items() if before.get(k) != v][:1]
        i += 1
        await asyncio.sleep(max(0.0, a.every - 0.3))
    return presses


def _tree_cpu_s(root: int) -> float:
    total = 0.0
    for q in L._tree(root):
        try:
            total += L._cpu_s(q)
        except (OSError, IndexError):
            continue
    return total


class _Meter:
    """CPU seconds of the server and of the followers' browser, over a phase."""

    def __init__(self, pid: int, root: int | None) -> None:
        self.pid, self.root = pid, root
        self.t, self.server, self.browser = time.monotonic(), L._cpu_s(pid), self._browser()
        self.me = time.process_time()  # this process: the websocket followers' client

    def client(self) -> float:
        """This process's CPU share since the start: the websocket followers read every
        message here, on one core. Near 100 %, their arrival times are this reader's."""
        return (time.process_time() - self.me) / (time.monotonic() - self.t)

    def _browser(self) -> float:
        return _tree_cpu_s(self.root) if self.root else 0.0

    def rates(self) -> tuple[float, float, float]:
        """(seconds elapsed, server CPU share, browsers' CPU share)."""
        dt = time.monotonic() - self.t
        return dt, (L._cpu_s(self.pid) - self.server) / dt, (self._browser() - self.browser) / dt


async def _histories(a, pages, out) -> list[list]:
    """Each follower's (ms, search) record, after the errors it shows are noted."""
    if a.clients == "ws":
        followers = pages
        for f in followers:
            if f.exploring:
                out["errors"].append("a follower stopped following by itself")
        return [f.history for f in followers]
    got = []
    for pg in pages:
        got.append(await pg.evaluate("window.__urls"))
        if await pg.get_by_text("You are exploring on your own").count():
            out["errors"].append("a follower stopped following by itself")
        if await pg.locator('[data-testid="stException"]').count():
            out["errors"].append("exception box on a follower")
    return got


async def _open_teacher(browser, base: str):
    page = await (await browser.new_context(viewport={"width": 1400, "height": 900})).new_page()
    await page.goto(f"{base}/scaling?room=new", wait_until="domcontentloaded")
    await page.wait_for_selector(B.IDLE, state="attached", timeout=120_000)
    await page.wait_for_function("() => /room=[A-Z0-9]{4}/.test(location.search)")
    return page, parse_qs(urlparse(page.url).query)["room"][-1]


async def _browser_class(p, base: str, a, out) -> tuple:
    """The teacher in one Chromium, the followers in a second one at nice 19."""
    mine, _, theirs, root = await L._two_browsers(p, 19)
    teacher, code = await _open_teacher(mine, base)
    joins = [
        _follower(theirs, f"{base}/?room={code}", a.arrive * i / max(a.sessions, 1), out)
        for i in range(a.sessions)
    ]
    pages = [pg for pg in await asyncio.gather(*joins) if pg is not None]
    return teacher, pages, [], [mine, theirs], root


async def _ws_class(p, base: str, a, out, done: asyncio.Event) -> tuple:
    """The teacher in Chromium, the followers speaking the websocket protocol."""
    mine = await p.chromium.launch(
        executable_path=L._launcher(0), headless=True, args=B.CHROMIUM_ARGS
    )
    teacher, code = await _open_teacher(mine, base)
    followers = [WsFollower(base, code, out) for _ in range(a.sessions)]
    tasks = [
        asyncio.create_task(f.run(a.arrive * i / max(a.sessions, 1), done))
        for i, f in enumerate(followers)
    ]
    await asyncio.wait_for(asyncio.gather(*(f.joined.wait() for f in followers)), 600)
    return teacher, followers, tasks, [mine], None


async def run_class(a) -> None:
    from playwright.async_api import async_playwright

    out: dict = {"errors": [], "load": []}
    with B.streamlit_server() as base:
        pid = next(iter(L._pids(b"streamlit run app.py") & L._tree(os.getpid())))
        async with async_playwright() as p:
            done = asyncio.Event()
            if a.clients == "ws":
                teacher, pages, tasks, browsers, root = await _ws_class(p, base, a, out, done)
                joined = sum(bool(f.history) for f in pages)
                nicer = None
            else:
                teacher, pages, tasks, browsers, root = await _browser_class(p, base, a, out)
                joined = len(pages)
                nicer = asyncio.create_task(L._keep_nice(root, done))
            await asyncio.sleep(3)
            meter = _Meter(pid, root)
            await asyncio.sleep(a.idle)
            _, idle, idle_b = meter.rates()
            meter = _Meter(pid, root)
            presses = await _drive(teacher, a)
            await asyncio.sleep(3)
            dt, busy, busy_b = meter.rates()
            out["client"] = meter.client()
            peak = L._rss_mb(pid, "VmHWM")
            delays, missed = [], 0
            for history in await _histories(a, pages, out):
                got, miss = _delays(history, presses)
                delays += got
                missed += miss
            out["folded"] = sum(getattr(f, "folded", 0) for f in pages)
            done.set()
            await asyncio.gather(*tasks, *([nicer] if nicer else []))
            for b in browsers:
                await b.close()
    # the followers' drawing: their browsers' CPU while driving, above idle, per change
    draw = (busy_b - idle_b) * dt / max(len(presses) * joined, 1)
    # the server's part, the same way: what one follower's rerun for one change costs it
    per = (busy - idle) * dt / max(len(presses) * joined, 1)
    _report(a, out, presses, delays, missed, joined, idle, busy, peak, draw, per)


def _report(a, out, presses, delays, missed, joined, idle, busy, peak, draw, per) -> None:
    errors = len(out["errors"]) + missed
    kind = "in Chromium at nice 19" if a.clients == "browser" else "over the websocket"
    print(f"\nclass mode: 1 teacher, {a.sessions} followers {kind} ({joined} joined), "
          f"a change every {a.every:g} s for {a.seconds:g} s ({len(presses)} changes)")  # fmt: skip
    rows = [
        ("join p50 / p95 (s)", f"{L._pct(out['load'], 0.5):.1f} / {L._pct(out['load'], 0.95):.1f}"),
        ("errors", f"{errors}   (target 0; {missed} missed: not taken by the next change)"),
        ("change -> follower p50", f"{L._pct(delays, 0.5):.2f} s"),
        ("change -> follower p95", f"{L._pct(delays, 0.95):.2f} s   (target <= 2 s)"),
        ("change -> follower max", f"{max(delays, default=float('nan')):.2f} s"),
        ("server CPU, idle class", f"{idle:.0%} of one core   (target < 33 % with 60)"),
        ("server CPU, driving", f"{busy:.0%} of one core"),
        ("per follower per change", f"{1000 * per:.0f} ms of server CPU (driving - idle)"),
        ("server peak RSS", f"{peak:.0f} MB   (target <= 1536 MB)"),
    ]
    if a.clients == "ws":
        rows.append(("full runs, finish lost", f"{out['folded']}   (a Streamlit race)"))
        rows.append(("followers' client CPU", f"{out['client']:.0%} of one core, driving"))
    if a.clients == "browser":
        rows.append(("a follower's drawing", f"{draw:.2f} CPU-s per change (this machine's)"))
    for k, v in rows:
        print(f"{k:<26}{v}")
    for e in out["errors"][:10]:
        print("  error:", e)


def main(a) -> None:
    asyncio.run(run_class(a))
