"""Where a slider's rerun spends its time (issue 52): server, wire and browser, for every
page and step, beside the one-heatmap yardstick (bench/heat_app.py) measured in the same run.

    python bench/split.py [--pages scaling model] [--rounds 9] [--no-browser] [--root DIR]

For each view (a page at its first step, then each other step, `?step=…`) it takes one
slider: the step's own first slider, or else the sidebar's first. Then:

- **server**: a websocket client (tests/support/wsclient.py, nothing drawn) asks for
  reruns with the slider's two values in turn, one at a time and 0.3 s apart (a
  student's pace, within the session's rerun budget), on an otherwise idle server.
  `server ms`: the median request -> script_finished; `cpu ms`: the server process's CPU
  (all its threads, /proc) during those reruns, per rerun.
- **wire**: the rerun's ForwardMsgs in KB as they came over the socket (median), how
  many elements it sent and how many of them were charts, and the charts' share of the
  bytes.
- **browser** (skipped with --no-browser): in headless Chromium the same slider, key
  press -> the rerun's last message with the app idle (tests.support.browser.
  rerun_latency_ms, the measure bench/run.py uses), alternating press by press with the
  yardstick. `total ms` is that median; `browser ms` = total - server ms: what the page
  spent receiving, decoding and drawing (the wire itself is loopback here); `ratio` =
  total / the yardstick's total from the same presses.

`--root DIR` serves another checkout (a worktree of an earlier commit) for a before/after
table; the yardstick is always this checkout's. Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote_plus

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.proto.WidgetStates_pb2 import WidgetState  # noqa: E402

from tests.support.browser import (  # noqa: E402
    SLIDERS,
    chromium,
    open_page,
    rerun_latency_ms,
    streamlit_server,
)
from tests.support.wsclient import WsClient  # noqa: E402
from ui.lesson import available  # noqa: E402

MAIN, SIDEBAR = 0, 1  # a delta path's first index: the root container
# Between two reruns: a student's pace, inside the rerun budget (ui/runtime/gate.py: 12 at
# once, then 4 a second), so no rerun here is held back by the gate.
PAUSE_S = 0.3


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sliders(run) -> list[tuple[int, object, str]]:
    """(root container, slider proto, its fragment's id or "") for every slider the run
    drew, in order."""
    where = {i: path[0] for path, i in run.places.items()}
    return [
        (where.get(i, MAIN), e.slider, run.fragments.get(i, ""))
        for i, e in enumerate(run.elements)
        if e.WhichOneof("type") == "slider"
    ]


def pick(run, first_step: bool):
    """The slider to press: the sidebar's first at a page's first step (where a link lands,
    the one bench/run.py presses first), elsewhere the step's own first, else the sidebar's."""
    sliders = _sliders(run)
    order = (SIDEBAR, MAIN) if first_step else (MAIN, SIDEBAR)
    for root in order:
        for where, s, fragment in sliders:
            if where == root:
                return where, s, fragment
    return None


def _two_states(s) -> list[WidgetState]:
    """The slider's value and a neighbour, as a browser sends them."""
    out = []
    if s.options:  # st.select_slider: the option's text
        i = int(s.value[0]) if s.set_value and s.value else int(s.default[0])
        j = i + 1 if i + 1 < len(s.options) else i - 1
        for k in (j, i):
            w = WidgetState(id=s.id)
            w.string_array_value.data.append(s.options[k])
            out.append(w)
        return out
    now = list(s.value if s.set_value and s.value else s.default)
    step = s.step or 1
    moved = [*now[:-1], now[-1] + step if now[-1] + step <= s.max else now[-1] - step]
    for v in (moved, now):
        w = WidgetState(id=s.id)
        w.double_array_value.data.extend(v)
        out.append(w)
    return out


def _charts(run) -> tuple[int, int]:
    """How many charts the run sent and their bytes (the plotly spec as serialised)."""
    n = size = 0
    for e in run.elements:
        if e.WhichOneof("type") == "plotly_chart":
            n += 1
            size += e.ByteSize()
    return n, size


def server_side(base: str, pid: int, path: str, qs: str, first_step: bool, n: int):
    with WsClient(base) as c:
        run = c.run(page=path, query=qs)
        chosen = pick(run, first_step)
        if chosen is None:
            return None
        where, s, fragment = chosen  # a control in a fragment reruns that fragment alone
        states = _two_states(s)
        for i in range(4):  # caches warm on both values
            c.run(query=qs, widgets=[states[i % 2]], fragment=fragment)
            time.sleep(PAUSE_S)
        walls, sizes, elements, charts = [], [], [], []
        cpu = 0.0
        for i in range(n):
            time.sleep(PAUSE_S)
            cpu0, t = _cpu_s(pid), time.perf_counter()
            r = c.run(query=qs, widgets=[states[i % 2]], fragment=fragment)
            walls.append((time.perf_counter() - t) * 1e3)
            cpu += _cpu_s(pid) - cpu0
            sizes.append(r.bytes)
            elements.append(len(r.elements))
            charts.append(_charts(r))
        cpu = cpu * 1e3 / n
    k = max(range(n), key=lambda i: sizes[i])
    return dict(
        label=s.label,
        sidebar=where == SIDEBAR,
        server=statistics.median(walls),
        cpu=cpu,
        kb=statistics.median(sizes) / 1024,
        elements=int(statistics.median(elements)),
        charts=charts[k][0],
        chart_share=charts[k][1] / max(sizes[k], 1),
    )


def browser_side(b, heat, base: str, path: str, qs: str, label: str, sidebar: bool, rounds: int):
    within = f'[data-testid="{"stSidebar" if sidebar else "stMain"}"] {SLIDERS}'
    page, _ = open_page(b, f"{base}/{path}" + (f"?{qs}" if qs else ""))
    try:
        names = page.locator(within.replace(' input[type="range"]', "")).all_inner_texts()
        index = next((i for i, t in enumerate(names) if t.split("\n")[0].strip() == label), 0)
        mine, theirs = [], []
        for i in range(rounds):
            key = "ArrowRight" if i % 2 == 0 else "ArrowLeft"
            theirs.append(rerun_latency_ms(heat, key=key))
            mine.append(rerun_latency_ms(page, index, key=key, within=within))
        return statistics.median(mine), statistics.median(theirs)
    finally:
        page.context.close()


def views(pages: list[str] | None):
    for lesson in available():
        if pages and lesson.url_path not in pages and (lesson.url_path or "home") not in pages:
            continue
        steps = list(lesson.steps) or [""]
        for i, step in enumerate(steps):
            qs = f"step={quote_plus(step)}" if i else ""
            yield lesson.url_path, step, qs, i == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", nargs="*", help="url paths (home for /); default: all")
    ap.add_argument("--rounds", type=int, default=9, help="browser presses per view")
    ap.add_argument("--reruns", type=int, default=12, help="server reruns per view")
    ap.add_argument("--no-browser", action="store_true")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve")
    a = ap.parse_args()
    pid: list[int] = []
    rows = []
    print(f"(served from {a.root})")
    print(
        f"{'view':<34} {'slider':<22} {'server':>7} {'cpu':>6} {'KB':>6} {'elts':>5}"
        f" {'charts':>6} {'chart%':>6} {'total':>6} {'browser':>7} {'heat':>5} {'ratio':>6}"
    )
    with (
        streamlit_server(root=a.root, pid=pid) as base,
        streamlit_server("bench/heat_app.py") as heat_url,
        chromium() as b,
    ):
        heat = None if a.no_browser else open_page(b, heat_url, ready=None)[0]
        for path, step, qs, first in views(a.pages):
            name = f"/{path} {step}".strip()
            s = server_side(base, pid[0], path, qs, first, a.reruns)
            if s is None:
                print(f"{name[:34]:<34} (no slider)")
                continue
            total = browser = ratio = hm = float("nan")
            if heat is not None:
                total, hm = browser_side(
                    b, heat, base, path, qs, s["label"], s["sidebar"], a.rounds
                )
                browser, ratio = total - s["server"], total / hm
            rows.append((name, ratio))
            print(
                f"{name[:34]:<34} {s['label'][:22]:<22} {s['server']:>5.0f}ms {s['cpu']:>4.0f}ms"
                f" {s['kb']:>6.1f} {s['elements']:>5} {s['charts']:>6} {s['chart_share']:>6.0%}"
                f" {total:>4.0f}ms {browser:>5.0f}ms {hm:>5.0f} {ratio:>6.2f}",
                flush=True,
            )
    done = [r for _, r in rows if r == r]
    if done:
        print(
            f"\n{len(done)} views: ratio median {statistics.median(done):.2f}, worst"
            f" {max(done):.2f}; over 1.25x: {sum(r > 1.25 for r in done)}, over 1.5x:"
            f" {sum(r > 1.5 for r in done)}"
        )
    print(
        "server: request -> script_finished (median); cpu: the server's CPU per rerun; KB: the "
        "rerun's messages; elts: elements sent; chart%: the charts' share of the bytes; total: "
        "key press -> last message, app idle (Chromium); browser = total - server; heat: the "
        "one-heatmap page's total from the same presses; ratio = total / heat"
    )


if __name__ == "__main__":
    main()
