"""Class mode under load (issue 23): one teacher drives, a class of browsers follows.

`python bench/load.py --scenario class [--sessions 30] [--seconds 60] [--arrive 30]
[--idle 20] [--every 5]` starts `streamlit run app.py`, opens a room from a teacher's page
(/scaling?room=new, in its own Chromium at normal priority) and `--sessions` followers
(`/?room=CODE`, over `--arrive` seconds, in a second Chromium at nice 19 like
bench/load.py's loaders: this machine draws all 30 screens). Then:

1. Idle, `--idle` seconds: nobody moves; every follower's page polls the room once a
   second. The server's CPU share here is what following costs by itself.
2. Driving, `--seconds` long: the teacher presses an arrow key on the d_k slider every
   `--every` seconds. Each follower page records (in the page, with the machine's one
   clock) when its own URL took the teacher's new value, which its bound control writes
   once the new value is drawn. Delay = that moment - the teacher's key press.

It prints the errors (a follower that never took a value within 15 s counts as one), the
delay p50/p95/max, the server's CPU share in both phases and its peak RSS.
Targets: 0 errors, delay p95 <= 2 s, idle CPU < 33 % of one core with 60 followers,
peak RSS <= 1.5 GB.
"""

from __future__ import annotations

import asyncio
import os
import time
from urllib.parse import parse_qs, urlparse

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


def _delays(history: list, presses: list) -> tuple[list[float], int]:
    """For each press (t, key, value): seconds until this page's URL first held key=value."""
    out, missed = [], 0
    for t, key, value in presses:
        took = [
            ts for ts, search in history
            if ts >= t and parse_qs(search.lstrip("?")).get(key, [None])[-1] == value
        ]  # fmt: skip
        if took and took[0] - t < 15_000:
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


async def run_class(a) -> None:
    from playwright.async_api import async_playwright

    out: dict = {"errors": [], "load": []}
    with B.streamlit_server() as base:
        pid = next(iter(L._pids(b"streamlit run app.py") & L._tree(os.getpid())))
        async with async_playwright() as p:
            mine, _, theirs, root = await L._two_browsers(p, 19)
            stop = asyncio.Event()
            nicer = asyncio.create_task(L._keep_nice(root, stop))
            teacher = await (
                await mine.new_context(viewport={"width": 1400, "height": 900})
            ).new_page()
            await teacher.goto(f"{base}/scaling?room=new", wait_until="domcontentloaded")
            await teacher.wait_for_selector(B.IDLE, state="attached", timeout=120_000)
            await teacher.wait_for_function("() => /room=[A-Z0-9]{4}/.test(location.search)")
            code = parse_qs(urlparse(teacher.url).query)["room"][-1]
            joins = [
                _follower(theirs, f"{base}/?room={code}", a.arrive * i / max(a.sessions, 1), out)
                for i in range(a.sessions)
            ]
            pages = [pg for pg in await asyncio.gather(*joins) if pg is not None]
            await asyncio.sleep(3)
            cpu0, t0 = L._cpu_s(pid), time.monotonic()
            await asyncio.sleep(a.idle)
            idle = (L._cpu_s(pid) - cpu0) / (time.monotonic() - t0)
            cpu0, t0 = L._cpu_s(pid), time.monotonic()
            presses = await _drive(teacher, a)
            await asyncio.sleep(3)
            busy = (L._cpu_s(pid) - cpu0) / (time.monotonic() - t0)
            peak = L._rss_mb(pid, "VmHWM")
            delays, missed = [], 0
            for pg in pages:
                got, miss = _delays(await pg.evaluate("window.__urls"), presses)
                delays += got
                missed += miss
                if await pg.get_by_text("You are exploring on your own").count():
                    out["errors"].append("a follower stopped following by itself")
                if await pg.locator('[data-testid="stException"]').count():
                    out["errors"].append("exception box on a follower")
            stop.set()
            await nicer
            await mine.close()
            await theirs.close()
    _report(a, out, presses, delays, missed, len(pages), idle, busy, peak)


def _report(a, out, presses, delays, missed, joined, idle, busy, peak) -> None:
    errors = len(out["errors"]) + missed
    print(f"\nclass mode: 1 teacher, {a.sessions} followers ({joined} joined), "
          f"a change every {a.every:g} s for {a.seconds:g} s ({len(presses)} changes)")  # fmt: skip
    rows = [
        ("join p50 / p95 (s)", f"{L._pct(out['load'], 0.5):.1f} / {L._pct(out['load'], 0.95):.1f}"),
        ("errors", f"{errors}   (target 0; {missed} changes a follower never took)"),
        ("change -> follower p50", f"{L._pct(delays, 0.5):.2f} s"),
        ("change -> follower p95", f"{L._pct(delays, 0.95):.2f} s   (target <= 2 s)"),
        ("change -> follower max", f"{max(delays, default=float('nan')):.2f} s"),
        ("server CPU, idle class", f"{idle:.0%} of one core   (target < 33 % with 60)"),
        ("server CPU, driving", f"{busy:.0%} of one core"),
        ("server peak RSS", f"{peak:.0f} MB   (target <= 1536 MB)"),
    ]
    for k, v in rows:
        print(f"{k:<26}{v}")
    for e in out["errors"][:10]:
        print("  error:", e)


def main(a) -> None:
    asyncio.run(run_class(a))
