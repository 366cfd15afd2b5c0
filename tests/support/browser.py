"""Drive `streamlit run` in Debian's Chromium via Playwright (no browser downloads).

Shared by the browser tests and bench/run.py.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'

# Installed before any page script: timestamps every websocket message the app
# receives, and every run's end (ForwardMsg.script_finished, field 6, read from the
# message's top-level protobuf fields: tests/kit/test_browser_support.py checks the field
# number against the pinned Streamlit). A rerun is over when its script_finished has
# arrived: the script-state attribute alone misses a run whose start and end React
# batches into one render, which a busy renderer does (a throttled Chromium missed most
# tab switches on /model and /multi-head that way).
_WS_SPY = """
(() => {
  const Orig = window.WebSocket;
  window.__wsTimes = [];
  window.__finished = [];  // [time, status]: 0 a whole run, 2 cut short, 3 a fragment's run
  function varint(b, i) {
    let v = 0, s = 1;
    for (;;) { const x = b[i++]; v += (x & 127) * s; s *= 128; if (x < 128) return [v, i]; }
  }
  function finished(buf) {
    const b = new Uint8Array(buf);
    let i = 0;
    while (i < b.length) {
      let tag, n;
      [tag, i] = varint(b, i);
      const wire = tag & 7;
      if (wire === 0) { [n, i] = varint(b, i); if (tag >>> 3 === 6) return n; }
      else if (wire === 2) { [n, i] = varint(b, i); i += n; }
      else if (wire === 1) i += 8;
      else if (wire === 5) i += 4;
      else return null;
    }
    return null;
  }
  function Spy(...args) {
    const ws = new Orig(...args);
    ws.addEventListener('message', (e) => {
      const t = performance.now();
      window.__wsTimes.push(t);
      if (e.data instanceof ArrayBuffer) {
        const status = finished(e.data);
        if (status !== null) window.__finished.push([t, status]);
      }
    });
    return ws;
  }
  Spy.prototype = Orig.prototype;
  for (const k of ['CONNECTING', 'OPEN', 'CLOSING', 'CLOSED']) Spy[k] = Orig[k];
  window.WebSocket = Spy;
})();
"""

# Stamps the key press itself, in the same page clock as the messages.
_ARM_JS = """
() => {
  window.__t0 = null;
  document.addEventListener('keydown', () => {
    if (window.__t0 === null) window.__t0 = performance.now();
  }, {capture: true, once: true});
}
"""

# Done when the app is idle, a message arrived after the key press, and nothing
# more has arrived for `quiet` ms.
_DONE_JS = """
(quiet) => {
  if (window.__t0 === null) return false;
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  const after = window.__wsTimes.filter(t => t >= window.__t0);
  if (after.length === 0) return false;
  return performance.now() - after[after.length - 1] > quiet;
}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(
    app: str = "app.py",
    port: int | None = None,
    flags: tuple[str, ...] = (),
    root: Path = ROOT,
    pid: list | None = None,
) -> Iterator[str]:
    """Start `streamlit run app` on 127.0.0.1, yield its base URL, stop it by pid.

    `flags` are extra command-line settings (`--runner.postScriptGC=true`); they override
    .streamlit/config.toml. `root`: the checkout to serve (a bench's other version);
    `pid`: a list that gets the server's process id (a bench reads its CPU)."""
    port = port or free_port()
    env = dict(os.environ, PYTHONPATH=str(root))
    # The server's log goes to a file: a pipe nobody reads fills after 64 KB of warnings
    # over a long test run, and then every thread of the server that logs blocks.
    # ATTN_SERVER_LOG=path keeps it (a bench's server, to read afterwards).
    kept = os.environ.get("ATTN_SERVER_LOG")
    log = open(kept, "w+b") if kept else tempfile.TemporaryFile()  # noqa: SIM115  (closed below)
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "streamlit", "run", app,
            "--server.address=127.0.0.1", f"--server.port={port}",
            "--server.headless=true", "--browser.gatherUsageStats=false",
            "--server.fileWatcherType=none", *flags,
        ],
        cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=log,
    )  # fmt: skip
    if pid is not None:
        pid.append(proc.pid)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"streamlit exited: {log.read().decode()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("streamlit did not become healthy in 90 s")
            time.sleep(0.3)
        yield url
    finally:
        stop(proc)
        log.close()


def stop(proc: subprocess.Popen, timeout_s: float = 15) -> None:
    """Ask the server to end; kill it if it has not within `timeout_s`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def chromium():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def wait_idle(page, timeout_ms: int = 60_000) -> None:
    """Wait until the script has finished its run (the status widget is not reliable)."""
    page.wait_for_selector(IDLE, timeout=timeout_ms, state="attached")


def click_and_wait_run(page, locator, timeout_ms: int = 60_000) -> None:
    """Click `locator` and wait until the run it starts has finished: a whole run's
    script_finished has arrived after the click (not an idle moment before that run
    began, when the old step's elements are still on the page), then the page is idle
    and has settled."""
    ends = page.evaluate("() => window.__finished.length")
    locator.click()
    page.wait_for_function(
        f"() => window.__finished.slice({ends}).some(([, status]) => status === 0)"
        f" && document.querySelector('{IDLE}') !== null",
        timeout=timeout_ms,
        polling=50,
    )
    settle(page)


PHONE_UA = (  # a phone's browser, as the server reads it (ui.share.phone)
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0 Mobile Safari/537.36"
)


def open_page(
    browser,
    url: str,
    *,
    width: int = 1400,
    height: int = 900,
    ready: str | None = "h1",
    phone: bool = False,
):
    # A fresh context per page: no shared tabs, timers or caches between measurements.
    # `phone`: a phone's User-Agent and touch, as a student's phone sends them.
    extra = dict(user_agent=PHONE_UA, is_mobile=True, has_touch=True) if phone else {}
    context = browser.new_context(viewport={"width": width, "height": height}, **extra)
    page = context.new_page()
    page.add_init_script(_WS_SPY)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="domcontentloaded")
    page.wait_for_selector('[data-testid="stApp"]', timeout=60_000)
    if ready:  # every lesson page has a title; the bare yardstick page passes ready=None
        page.wait_for_selector(f'[data-testid="stMain"] {ready}', timeout=60_000, state="attached")
    settle(page)
    return page, errors


def settle(page, timeout_s: float = 60) -> None:
    """Until the app is idle *and* its elements stop changing: it can look idle between a
    run and a rerun that run asks for, with only part of the page drawn."""
    elements = '[data-testid="stElementContainer"]'
    count, deadline = -1, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        wait_idle(page)
        page.wait_for_timeout(300)  # let the last deltas paint
        now = page.locator(elements).count()
        if now == count and page.locator(IDLE).count():
            break
        count = now


# Pages whose first step has no slider, and the view of theirs that has one (the slider
# tests, bench/load.py's probes): /softmax opens on its editable tables.
SLIDER_VIEW = {"softmax": "?step=Shift"}
SLIDERS = '[data-testid="stSlider"] input[type="range"]'
SIDEBAR_SLIDERS = f'[data-testid="stSidebar"] {SLIDERS}'
MAIN_SLIDERS = f'[data-testid="stMain"] {SLIDERS}'


def rerun_latency_ms(
    page, slider_index: int = 0, key: str = "ArrowRight", *, within: str = SLIDERS
) -> float:
    """Press a key on a slider; return key press -> last message of the rerun, in ms.

    `slider_index` counts the sliders matched by `within` (all of them by default)."""
    thumb = page.locator(within).nth(slider_index)
    value, lo, hi = (float(thumb.get_attribute(a)) for a in ("value", "min", "max"))
    if value >= hi:
        key = "ArrowLeft"  # at the end of its range the key would change nothing (no rerun)
    elif value <= lo:
        key = "ArrowRight"
    thumb.focus()
    page.evaluate(_ARM_JS)
    page.keyboard.press(key)
    page.wait_for_function(_DONE_JS, arg=400, timeout=60_000, polling=50)
    return float(
        page.evaluate(
            "() => { const a = window.__wsTimes.filter(t => t >= window.__t0);"
            " return a[a.length - 1] - window.__t0; }"
        )
    )


# For open_step: a drawn chart's title starts with the text / an alert contains it.
TITLED = """(t) => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .gtitle')]
  .some(g => g.textContent.startsWith(t))"""
ALERT = """(t) => [...document.querySelectorAll('[data-testid="stAlert"]')]
  .some(a => a.innerText.includes(t))"""
_DRAWN = (
    # One chart holds two .main-svg (the plot and its hover layer): count charts, not SVGs,
    # or three drawn charts of four already pass as "at least 4".
    """(n) => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .filter((c) => c.querySelector('.main-svg')).length >= n"""
)


def wait_charts(page, n: int) -> None:
    """Wait until plotly has drawn at least n charts."""
    page.wait_for_function(_DRAWN, arg=n, timeout=60_000)


def open_step(page, label: str, text: str, until: str = TITLED) -> None:
    """Click a step's tab (ui.steps); wait until `until` (TITLED, ALERT) holds for `text`,
    then until the run has finished (the closed step's charts are gone)."""
    page.get_by_role("tab", name=label).click()
    page.wait_for_function(until, arg=text, timeout=60_000)
    wait_idle(page)


def step_labels(page) -> list[str]:
    """The labels of a page's step tabs (ui.steps), in order; [] on a page without tabs."""
    return [t.strip() for t in page.get_by_role("tab").all_inner_texts()]


def plotly_count(page) -> int:
    """Charts actually drawn (plotly has built its SVG)."""
    return page.locator('[data-testid="stPlotlyChart"]:has(.main-svg)').count()


HELD_BACK = "shown once you reveal your prediction"  # ui.exercises.until_reveal's words


def reveal_held_back(page) -> int:
    """Where a step holds its chart back until an exercise is answered, answer every
    exercise on the page (the first choice, or 0) and press Reveal; how many were revealed."""
    if not page.get_by_text(HELD_BACK).count():
        return 0
    n = 0
    boxes = page.locator('[data-testid="stForm"]')
    for i in range(boxes.count()):
        box = boxes.nth(i)
        if not box.get_by_role("button", name="Reveal").count():
            continue
        # A choice (radio) or a number; wait until the form has drawn its input, then pick
        # by the input's own type (a radio's label may still be drawing when we look).
        box.locator("input").first.wait_for(state="attached", timeout=30_000)
        radios = box.locator('input[type="radio"]')
        if radios.count():
            radios.first.check(force=True)
        else:
            box.locator('input:not([type="radio"]):not([type="checkbox"])').first.fill("0")
        box.get_by_role("button", name="Reveal").click()
        wait_idle(page)
        n += 1
    page.wait_for_timeout(300)
    wait_idle(page)
    return n


@contextlib.contextmanager
def traced_server(log: Path):
    """`streamlit_server()` with ui.replay's trace on, the server's log written to `log`:
    (base URL, log), for tests that read what the replays did."""
    import pytest

    mp = pytest.MonkeyPatch()
    mp.setenv("ATTN_REPLAY_TRACE", "1")
    mp.setenv("ATTN_SERVER_LOG", str(log))
    try:
        with streamlit_server() as url:
            yield url, log
    finally:
        mp.undo()
