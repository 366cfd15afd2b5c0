"""What a hostile student or visitor can do to a class, measured on a live server (issue 49).

Every client here speaks Streamlit's websocket protocol (tests/support/wsclient.py), so
the timings are the server's, not a browser's. `--root DIR` serves another checkout (a
worktree of an earlier commit) for a before/after table from the same machine and hour.

    python bench/attacks.py race  [--tries 220]   # a student's edit in the wake's window
    python bench/attacks.py flood [--seconds 20]  # one session's reruns vs another's
    python bench/attacks.py spoof [--addresses 10]  # made-up X-Forwarded-For addresses

- **race**: a teacher on /softmax's Example step, a student who joined first (first in
  the wake's line) and a victim who joined after, both following. The teacher flips the
  "sum of raw scores" toggle; the moment the student's woken run starts (its
  `new_session` message), the student waits 0-10 ms (spread over the tries) and sends an
  edit of the tokens table naming a token MARK. A hit: the victim's page carries MARK.
  Fresh student and victim each try, so each try starts with the student first in line.
- **flood**: a victim session on /scaling reruns d_k back and forth, one run at a time
  and half a second apart (a student moving a slider, within its own rerun budget), and
  times each (request -> script_finished): first alone (quiet), then while another
  session sends reruns without waiting for them, `--rate` a second (flood; the issue's
  attacker sent ~160), then while it also
  switches page each time (flood + pages). Prints the victim's p50/p95, the flooder's
  requests a second, the server's CPU share and its thread count.
- **spoof**: `--addresses` made-up addresses, one `X-Forwarded-For` each, connect
  through 127.0.0.1 and open rooms until refused, keeping their sockets open; prints the
  rooms they got (MAX_ROOMS is 50, ROOMS_PER_CLIENT 5). Then a teacher with no header
  tries to open one.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from tests.support.attacks import (  # noqa: E402
    CLASS_CODE,
    Busy,
    Flooder,
    class_code,
    dial,
    race_try,
)
from tests.support.browser import streamlit_server  # noqa: E402
from tests.support.wsclient import WsClient  # noqa: E402


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def race(a) -> None:
    """Calibrate when the student's woken run begins (its new_session arrives), then send
    the edit from 12 ms before that moment to 2 ms after it, spread over the tries: the
    window between the wake and the woken run's first line lies in there."""
    hits, done, rows = 0, 0, []
    with (
        streamlit_server(root=a.root) as base,
        WsClient(base) as teacher,
        Busy(base, a.load),
    ):
        first = teacher.run(page="softmax", query="room=new&step=Example")
        code = class_code(first)
        toggle = first.widget_id("sumnorm")
        flip = False
        began = []
        for _ in range(5):
            flip = not flip
            began.append(race_try(base, teacher, code, toggle, flip, None)[2])
        at = statistics.median(began)
        for i in range(a.tries):
            flip = not flip
            lo, hi = a.window
            offset = lo + (hi - lo) * i / max(1, a.tries - 1)
            hit, finished, _ = race_try(base, teacher, code, toggle, flip, at + offset)
            hits += hit
            done += finished
            rows.append((offset, hit))
    print(f"\nrace: {a.tries} tries, {a.load} other sessions rerunning /scaling meanwhile")
    print(f"the student's woken run began {at:.1f} ms after the "
          f"teacher's request (median of 5); the edit was sent {-a.window[0]:g} ms before "
          f"to {a.window[1]:g} ms after")  # fmt: skip
    print(f"  victim's page carried the student's edit: {hits} of {a.tries} "
          f"({done} victim runs finished)")  # fmt: skip
    lo, hi = a.window
    edges = [lo + (hi - lo) * k / 7 for k in range(8)]
    for x, y in itertools.pairwise(edges):
        band = [h for d, h in rows if x <= d < y or (y == hi and d == hi)]
        print(f"  {x:>+6.1f} to {y:>+6.1f} ms  {sum(band):>3} of {len(band)}")


# ----------------------------------------------------------------------------- flood
def _server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    import os

    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _threads(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


THINK_S = 0.5  # the victim's pause between its reruns: a student, not a flood


def _victim_runs(c: WsClient, widget: str, n: int, think: float = THINK_S) -> list[float]:
    """The victim's reruns, one at a time, `think` seconds apart (within its own rerun
    budget, so only the flooder's cost shows)."""
    out = []
    for i in range(n):
        time.sleep(think)
        t0 = time.perf_counter()
        run = c.run(widgets=[dial(widget, ("32", "128")[i % 2])], timeout=60)
        if run.finished:
            out.append(time.perf_counter() - t0)
    return out


def flood(a) -> None:
    pid: list[int] = []
    rows = []
    with streamlit_server(root=a.root, pid=pid) as base, WsClient(base) as victim:
        first = victim.run(page="scaling")
        widget = first.widget_id("d_k")
        _victim_runs(victim, widget, 4)  # caches warm
        for label, pages in (("quiet", None), ("flood", False), ("flood + pages", True)):
            cpu0, t0, threads = _server_cpu(pid[0]), time.monotonic(), []
            if pages is None:
                xs = _victim_runs(victim, widget, a.runs)
                sent, took = 0, time.monotonic() - t0
                threads.append(_threads(pid[0]))
            else:
                with Flooder(base, pages, a.rate) as f:
                    time.sleep(1.0)
                    xs = []
                    end = time.monotonic() + a.seconds
                    while time.monotonic() < end and len(xs) < 10 * a.runs:
                        xs += _victim_runs(victim, widget, 1)
                        threads.append(_threads(pid[0]))
                sent, took = f.sent, f.took
            cpu = (_server_cpu(pid[0]) - cpu0) / (time.monotonic() - t0)
            rows.append((label, len(xs), _pct(xs, 0.5), _pct(xs, 0.95), sent / took if sent else 0,
                         cpu, max(threads) if threads else 0))  # fmt: skip
            time.sleep(2.0)
    print("\nflood: a victim's /scaling rerun (request -> finished), one at a time")
    print(f"{'phase':<15}{'runs':>6}{'p50 ms':>9}{'p95 ms':>9}{'flood req/s':>13}"
          f"{'server CPU':>12}{'threads':>9}")  # fmt: skip
    quiet = rows[0]
    for label, n, p50, p95, rate, cpu, th in rows:
        print(f"{label:<15}{n:>6}{p50 * 1e3:>9.0f}{p95 * 1e3:>9.0f}{rate:>13.0f}"
              f"{cpu:>11.0%}{th:>9}")  # fmt: skip
    for label, _n, p50, p95, *_ in rows[1:]:
        print(f"  {label}: p50 x{p50 / quiet[2]:.2f}, p95 x{p95 / quiet[3]:.2f} of quiet")


# ----------------------------------------------------------------------------- spoof
def spoof(a) -> None:
    rng = random.Random(1)
    opened, refused, socks = 0, 0, []
    with streamlit_server(root=a.root) as base:
        t0 = time.monotonic()
        for i in range(a.addresses):
            addr = f"198.51.{rng.randrange(256)}.{rng.randrange(1, 255)}"
            for _ in range(12):  # more than one address may hold
                c = WsClient(base, headers={"X-Forwarded-For": addr}).__enter__()
                socks.append(c)
                run = c.run(page="scaling", query="room=new")
                if CLASS_CODE.search(" ".join(run.texts)):
                    opened += 1
                else:
                    refused += 1
                    break
            if i == 0:
                print(f"  address 1 of {a.addresses}: {opened} rooms")
        took = time.monotonic() - t0
        with WsClient(base) as teacher:
            got = teacher.run(page="scaling", query="room=new")
            ok = bool(CLASS_CODE.search(" ".join(got.texts)))
        for c in socks:
            c.__exit__(None, None, None)
    print(f"\nspoof: {a.addresses} made-up X-Forwarded-For addresses through 127.0.0.1")
    print(f"  rooms opened {opened} (refused {refused}) in {took:.1f} s; "
          f"a teacher without the header then {'got' if ok else 'was refused'} a room")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("attack", choices=("race", "flood", "spoof"))
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to serve")
    ap.add_argument("--tries", type=int, default=220)
    ap.add_argument("--load", type=int, default=3, help="race: other sessions rerunning")
    ap.add_argument("--window", type=float, nargs=2, default=(-30.0, 5.0), metavar=("LO", "HI"),
                    help="race: the edit's offset from the woken run's start, ms")  # fmt: skip
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--runs", type=int, default=30, help="flood: the victim's quiet runs")
    ap.add_argument("--addresses", type=int, default=10)
    ap.add_argument(
        "--rate", type=float, default=200.0,
        help="flood: requests a second (0: as fast as the socket takes them)",
    )  # fmt: skip
    a = ap.parse_args()
    {"race": race, "flood": flood, "spoof": spoof}[a.attack](a)
    print(f"(served from {a.root})")


if __name__ == "__main__":
    main()
