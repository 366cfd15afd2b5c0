"""A class at once: 30 browser sessions for 60 s, spread over the pages, moving sliders.

`python bench/load.py [--sessions 30] [--probes 9] [--seconds 60] [--think 2 6]
[--arrive 30]` starts `streamlit run app.py` on 127.0.0.1 and opens the sessions as
separate browser contexts, the lesson's pages shared out among them. It runs in two
phases:

1. Arrival. The students open the link over `--arrive` seconds. Each page load
   (navigation -> first run finished) is timed.
2. Interaction, `--seconds` long. Every session presses arrow keys on a random slider of
   its page, waits for the rerun to finish, looks at the result for a random think time
   drawn from `--think` seconds (2–6 s by default: read the chart, then try again), and
   presses again. `--think 0.5 2` is a stress run, far busier than a class.

Every session is measured. Nine of the 30 (one per page, `--probes`) are the students we
watch: they run in their own Chromium at normal CPU priority. The other 21 load the server
just the same, from a second Chromium whose processes run at the lowest priority (nice 19).
Why: in a classroom every laptop draws its own charts, but here all 30 browsers share this
machine's 2 cores with the server, and drawing costs a renderer 0.2–0.3 CPU-seconds per key
press and about 2.5 per page load (measured per page from /proc), several times what the
server spends on a rerun. At equal priority the 30 renderers starve one another and the
server, and the bench would time this machine's drawing rather than the app. The probes
therefore see what one student sees while 29 others use the same server; the loaders'
own figures are printed too. `--probes 0` puts every session at normal priority.

It prints the errors seen, the rerun latency p50/p95 (key press -> last websocket message
of the rerun, timed in the page, as in bench/run.py) for probes and loaders, the server's
CPU per rerun and its share of a core, and the server's resident memory (peak: VmHWM).

Targets (issue 11): zero errors, p95 <= 1 s, peak memory <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import browser as B  # noqa: E402
from ui.lesson import available  # noqa: E402

SLIDER = '[data-testid="stSlider"] input[type="range"]'
HZ = os.sysconf("SC_CLK_TCK")

# Resolves once the rerun that the key press started has finished: the app is idle, a
# message came after the key press, and none for `quiet` ms. It polls inside the page, so
# 30 waiting sessions cost no DevTools round trips. Resolves to key press -> last message.
_WAIT_JS = """
(quiet) => new Promise(resolve => {
  const check = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    const after = window.__t0 === null ? [] : window.__wsTimes.filter(t => t >= window.__t0);
    if (app && app.getAttribute('data-test-script-state') === 'notRunning' && after.length
        && performance.now() - after[after.length - 1] > quiet) {
      resolve(after[after.length - 1] - window.__t0);
    } else {
      setTimeout(check, 50);
    }
  };
  check();
})
"""


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu_s(pid: int) -> float:
    st = _stat(pid)
    return (int(st[11]) + int(st[12])) / HZ


def _rss_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _pids(needle: bytes) -> set[int]:
    found = set()
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if needle in (p / "cmdline").read_bytes().replace(b"\0", b" "):
                    found.add(int(p.name))
            except OSError:
                continue
    return found


def _tree(root: int) -> set[int]:
    """A process and all its descendants."""
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                children.setdefault(int(_stat(int(p.name))[1]), []).append(int(p.name))
            except (OSError, IndexError):
                continue
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


def _nice(pids: set[int], value: int = 19) -> None:
    """Set every thread of these processes to this nice value (Chromium sets its renderers'
    priorities itself, so the loaders' tree is reniced every second)."""
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                if os.getpriority(os.PRIO_PROCESS, int(task.name)) != value:
                    os.setpriority(os.PRIO_PROCESS, int(task.name), value)
            except OSError:
                continue


async def _keep_nice(root: int, stop: asyncio.Event) -> None:
    while not stop.is_set():
        _nice(_tree(root))
        await asyncio.sleep(1)


def _renderer_nice(root: int) -> dict[int, int]:
    """How many of this browser's renderers run at each nice value."""
    count: dict[int, int] = {}
    for pid in _tree(root) & _pids(b"--type=renderer"):
        try:
            nice = int(_stat(pid)[16])
        except (OSError, IndexError):
            continue
        count[nice] = count.get(nice, 0) + 1
    return count


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[int(q * (len(xs) - 1))] if xs else float("nan")


async def _session(browser, url, rng, a, out, role, loaded, start) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    page = None
    try:
        page = await context.new_page()
        await page.add_init_script(B._WS_SPY)
        page.on("pageerror", lambda e: out["errors"].append(f"pageerror {url}: {e}"))
        await asyncio.sleep(rng.uniform(0, a.arrive))  # students open the link over a while
        t = time.monotonic()
        # Thirty pages parsing Streamlit's JavaScript at once keep both cores busy for a
        # minute or more; that is this machine drawing 30 laptops' screens, so wait it out.
        await page.goto(url, wait_until="domcontentloaded", timeout=300_000)
        await page.wait_for_selector(B.IDLE, timeout=300_000, state="attached")
        await page.wait_for_selector(SLIDER, timeout=300_000)
        out["load"][role].append(time.monotonic() - t)
    except Exception as e:  # a timeout or a crash is an error of the run, not of the bench
        out["errors"].append(f"load {url}: {type(e).__name__}: {str(e)[:200]}")
        page = None
    loaded()
    await start.wait()
    try:
        if page is None:
            return
        sliders = page.locator(SLIDER)
        n = await sliders.count()
        await asyncio.sleep(rng.uniform(0, a.think[1]))  # do not all press at once
        i = 0
        while time.monotonic() < out["deadline"]:
            thumb = sliders.nth(rng.randrange(n))
            value, lo, hi = [float(await thumb.get_attribute(k)) for k in ("value", "min", "max")]
            key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"
            key = "ArrowLeft" if value >= hi else "ArrowRight" if value <= lo else key
            await thumb.focus()
            await page.evaluate(B._ARM_JS)
            await page.keyboard.press(key)
            ms = float(await asyncio.wait_for(page.evaluate(_WAIT_JS, 300), timeout=60))
            out["latency"][role].append(ms)
            name = url.rsplit("/", 1)[1] or "home"
            out["by_page"].setdefault((role, name), []).append(ms)
            if await page.locator('[data-testid="stException"]').count():
                out["errors"].append(f"exception box on {url}")
            i += 1
            await asyncio.sleep(rng.uniform(*a.think))
    except Exception as e:
        out["errors"].append(f"{url}: {type(e).__name__}: {str(e)[:200]}")
    finally:
        await context.close()


async def _main(a) -> None:
    from playwright.async_api import async_playwright

    paths = [lesson.url_path for lesson in available()]
    roles = ["probe"] * a.probes + ["loader"] * (a.sessions - a.probes)
    out: dict = {
        "latency": {"probe": [], "loader": []},
        "load": {"probe": [], "loader": []},
        "errors": [],
        "by_page": {},
    }
    with B.streamlit_server() as base:
        pid = next(iter(_pids(b"streamlit run app.py")))
        async with async_playwright() as p:
            launch = dict(executable_path=B.CHROMIUM, headless=True, args=B.CHROMIUM_ARGS)
            # Each browser's root is the process Playwright talks to through a pipe.
            probes = await p.chromium.launch(**launch)
            (probe_root,) = _pids(b"--remote-debugging-pipe") - _pids(b"--type=")
            loaders = await p.chromium.launch(**launch)
            (root,) = _pids(b"--remote-debugging-pipe") - _pids(b"--type=") - {probe_root}
            roots = {"probe": probe_root, "loader": root}
            stop = asyncio.Event()
            nicer = asyncio.create_task(_keep_nice(root, stop)) if a.probes else None
            start, pending = asyncio.Event(), [a.sessions]

            def loaded() -> None:
                pending[0] -= 1
                if pending[0] == 0:
                    start.set()

            tasks = []
            for i, role in enumerate(roles):
                browser = probes if role == "probe" else loaders
                url = f"{base}/{paths[i % len(paths)]}"
                task = _session(browser, url, random.Random(i), a, out, role, loaded, start)
                tasks.append(asyncio.create_task(task))
            t_arrive, cpu_arrive = time.monotonic(), _cpu_s(pid)
            await start.wait()
            arrive_s = time.monotonic() - t_arrive
            arrive_cpu = _cpu_s(pid) - cpu_arrive
            niceness = {role: _renderer_nice(r) for role, r in roots.items()}
            rss0, cpu0, t0 = _rss_mb(pid, "VmRSS"), _cpu_s(pid), time.monotonic()
            out["deadline"] = t0 + a.seconds
            await asyncio.gather(*tasks)
            busy_s = time.monotonic() - t0
            cpu = _cpu_s(pid) - cpu0
            rss1, peak = _rss_mb(pid, "VmRSS"), _rss_mb(pid, "VmHWM")
            stop.set()
            if nicer:
                await nicer
            await probes.close()
            await loaders.close()

    lat, load = out["latency"], out["load"]
    n = len(lat["probe"]) + len(lat["loader"])
    who = (
        f"{a.probes} probes at normal priority, {a.sessions - a.probes} loaders at nice 19"
        if a.probes
        else "all at normal priority"
    )
    print(
        f"\nload: {a.sessions} sessions over {len(paths)} pages ({who}); "
        f"think {a.think[0]:g}–{a.think[1]:g} s\nrenderers by nice value: {niceness}"
    )
    print(f"arrival: {arrive_s:.0f} s, server CPU {arrive_cpu:.1f} s")
    print(f"sliders: {busy_s:.0f} s, {n} key presses ({n / busy_s:.1f} per s)\n")
    print(f"{'':<26}{'probes':>12}{'loaders':>12}")
    for label, q in (("page load p50 (s)", 0.5), ("page load p95 (s)", 0.95)):
        print(f"{label:<26}{_pct(load['probe'], q):>12.1f}{_pct(load['loader'], q):>12.1f}")
    print(f"{'key presses':<26}{len(lat['probe']):>12}{len(lat['loader']):>12}")
    for label, q in (("rerun p50 (ms)", 0.5), ("rerun p95 (ms)", 0.95), ("rerun max (ms)", 1)):
        print(f"{label:<26}{_pct(lat['probe'], q):>12.0f}{_pct(lat['loader'], q):>12.0f}")
    print()
    rows = [
        ("errors", f"{len(out['errors'])}   (target 0)"),
        (
            "rerun p95 (" + ("probes" if a.probes else "all") + ")",
            f"{_pct(lat['probe' if a.probes else 'loader'], 0.95):.0f} ms   (target <= 1000 ms)",
        ),
        ("server CPU per rerun", f"{1000 * cpu / max(n, 1):.0f} ms"),
        ("server CPU use", f"{cpu / busy_s:.0%} of one core"),
        ("server RSS start / end", f"{rss0:.0f} / {rss1:.0f} MB"),
        ("server peak RSS", f"{peak:.0f} MB   (target <= 1536 MB)"),
    ]
    for k, v in rows:
        print(f"{k:<26}{v}")
    print("\nper page: presses, p50, p95 (ms)")
    for (role, page), xs in sorted(out["by_page"].items()):
        print(f"  {role:<7} {page:<14}{len(xs):>5}{_pct(xs, 0.5):>8.0f}{_pct(xs, 0.95):>8.0f}")
    for e in out["errors"][:10]:
        print("  error:", e)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--probes", type=int, default=9, help="sessions at normal CPU priority")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--think", type=float, nargs=2, default=(2.0, 6.0), metavar=("MIN", "MAX"))
    ap.add_argument("--arrive", type=float, default=30.0, help="seconds over which pages open")
    a = ap.parse_args()
    a.probes = min(a.probes, a.sessions)
    asyncio.run(_main(a))


if __name__ == "__main__":
    main()
