"""Does orjson make the app's charts cheaper to send? `python bench/orjson_rerun.py`.

Tables, no asserts; needs orjson importable (`pip install orjson`), and compares plotly's two
JSON engines side by side in one process, alternating their order every round.

The app serialises a chart once (ui/plotly_spec.py: `sent` makes `fig.to_dict()` and
`plotly.io.to_json(spec, validate=False)`, whose engine is plotly's default, "auto": orjson
when it imports, else the json module) and sends the kept JSON on every later run, so the
engine only matters on a run that makes a chart: a new setting, or a new server.

(a) serialisation: the figure dicts the app really serialises, captured from one AppTest run
    of every step of each page at its defaults; per page the charts, their JSON size, how
    many orjson refuses (plotly then cleans the whole figure and tries again), and the
    median time to serialise all of them with "json" and with "orjson". Both JSONs must
    decode to the same object (orjson writes non-ASCII text as UTF-8, json as \\uXXXX).
(b) a page's rerun in AppTest: each rerun first drops the charts' kept JSON, so it
    serialises every chart as a rerun at a new setting does (the page's computations stay
    cached: the rest of the rerun is the same both ways). The median rerun each way; the
    median of each round's json − orjson difference ("paired Δ"); the median ms of the
    rerun spent inside to_json each way, the only part the engine changes; and "kept", the
    same rerun with the JSON kept (a repeat rerun: neither to_dict nor to_json). Each rerun
    starts after gc.collect(); on a shared machine the totals drift by more than to_json's
    part, so the to_json columns are the engine's share of a rerun.

Measured 2026-12-07 at e910beb (plotly 7.1.0, orjson 3.13.0, 31 repeats, this project's
2-core machine while other jobs ran): (a) orjson serialised a page's charts 2.3-5.2x faster
where it takes the dicts as they are (/scaling 0.80 -> 0.35 ms, /multi-head 1.07 -> 0.33,
/positions 1.43 -> 0.47, /softmax 1.08 -> 0.21) and 2.2x slower on /masks (0.58 -> 1.27 ms),
whose hover text is a numpy array of objects: orjson refuses it, and plotly cleans the
figure and serialises it again. (b) A rerun that serialises its charts spent 0.29 -> 0.16 ms
(/scaling) and 0.56 -> 0.19 ms (/multi-head) in to_json, of a 40-65 ms rerun whose medians
moved by more than that (paired differences -0.1 and -0.8 ms, against orjson's saving of
0.1 and 0.4), and a repeat rerun, like a class's follower, sends the kept JSON. So orjson
is not in requirements.txt: under 1 % of a rerun at a new setting, nothing on a repeat, for
one more compiled package. plotly's "auto" engine uses it where it is installed anyway, and
the tests read charts decoded, so the app and the suite behave the same with or without it.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import plotly.io  # noqa: E402
import torch  # noqa: E402

ENGINES = ("json", "orjson")
PAGES = ("scaling", "multi-head", "masks", "positions", "softmax")
HEAD = f"{'json ms':>9} {'orjson ms':>9} {'ratio':>7} {'reps':>4}"
RERUN = {"scaling": "Scores to weights", "multi-head": "Heads"}  # page -> step rerun in (b)


class Taps:
    """Wraps ui.plotly_spec: records each chart `sent` sees, each dict it serialises and
    the seconds spent in to_json."""

    def __init__(self) -> None:
        from ui import plotly_spec

        self.mod, self.charts, self.specs, self.seconds = plotly_spec, [], [], 0.0
        sent, to_json = plotly_spec.sent, plotly_spec._to_json

        def tap_sent(chart, look=None):
            self.charts.append(chart)
            return sent(chart, look)

        def tap_json(fig, *args, **kw):
            t = time.perf_counter()
            out = to_json(fig, *args, **kw)
            self.seconds += time.perf_counter() - t
            self.specs.append(fig)
            return out

        self._plain, self._sent = to_json, sent
        plotly_spec.sent, plotly_spec._to_json = tap_sent, tap_json

    def undo(self) -> None:
        """ui.plotly_spec as it was (bench/run.py runs other benches in this process)."""
        self.mod.sent, self.mod._to_json = self._sent, self._plain
        plotly.io.json.config.default_engine = "auto"

    def forget(self) -> None:
        """Drop every seen chart's kept JSON: its next run serialises it again."""
        for chart in self.charts:
            for name in [k for k in chart.__dict__ if k.startswith(self.mod._KEPT)]:
                del chart.__dict__[name]

    def serialise(self, spec, engine: str) -> str:
        return self._plain(spec, validate=False, engine=engine)


def _ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


def _row(label: str, a: list[float], b: list[float], extra: str = "") -> str:
    ja, jb = _ms(a), _ms(b)
    return f"{label:<28} {ja:>9.2f} {jb:>9.2f} {ja / jb:>6.2f}x {len(a):>4}{extra}"


def cleaned(spec) -> bool:
    """Whether plotly's orjson engine must clean `spec` first (orjson refused it: e.g. a
    numpy array of Python objects, such as hover text), a second, slower pass."""
    import orjson

    try:
        orjson.dumps(spec, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY)
    except TypeError:
        return True
    return False


def capture(taps: Taps, page: str) -> list:
    """The dicts the app serialises on every step of `page` at its defaults."""
    from tests.support.apptest import page_steps, run_page

    file = f"pages/{page}.py"
    taps.specs.clear()
    for step in page_steps(file):
        at = run_page(file, timeout=300, **({"step": step} if step else {}))
        if at.exception:
            print(f"  {page} {step}: {at.exception[0].value}", file=sys.stderr)
    return list(taps.specs)


def serialisation(taps: Taps, pages: list[str], rounds: int) -> None:
    print("(a) to_json of the app's figures at the defaults (every step), per page")
    print(f"{'page (charts, kB, cleaned)':<28} {HEAD}")
    for page in pages:
        specs = capture(taps, page)
        out = {e: [taps.serialise(s, e) for s in specs] for e in ENGINES}
        same = all(json.loads(a) == json.loads(b) for a, b in zip(*out.values(), strict=True))
        times: dict[str, list[float]] = {e: [] for e in ENGINES}
        for r in range(rounds):
            for engine in ENGINES if r % 2 == 0 else ENGINES[::-1]:
                t = time.perf_counter()
                for spec in specs:
                    taps.serialise(spec, engine)
                times[engine].append(time.perf_counter() - t)
        kb = sum(len(s.encode()) for s in out["json"]) / 1024
        note = "" if same else "  (the two JSONs differ!)"
        label = f"/{page} ({len(specs)}, {kb:.0f}, {sum(map(cleaned, specs))})"
        print(_row(label, *times.values(), note), flush=True)


def reruns(taps: Taps, page: str, rounds: int) -> None:
    from tests.support.apptest import run_page

    at = run_page(f"pages/{page}.py", timeout=300, step=RERUN[page])
    runs: dict[str, list[float]] = {e: [] for e in (*ENGINES, "kept")}
    inside: dict[str, list[float]] = {e: [] for e in runs}
    for r in range(rounds + 1):  # round 0 warms both engines up and is not counted
        # each engine runs first in half the rounds; "kept" always last: a rerun after one
        # that serialised is slower (it frees the last run's figures), whichever the engine
        for engine in (*ENGINES, "kept") if r % 2 == 0 else (*ENGINES[::-1], "kept"):
            if engine != "kept":
                plotly.io.json.config.default_engine = engine
                taps.forget()
            taps.seconds = 0.0
            taps.specs.clear()
            gc.collect()
            t = time.perf_counter()
            at.run()
            if r:
                runs[engine].append(time.perf_counter() - t)
                inside[engine].append(taps.seconds)
    paired = [a - b for a, b in zip(runs["json"], runs["orjson"], strict=True)]  # same round
    extra = (
        f" {_ms(paired):>+9.2f} {_ms(inside['json']):>7.2f} {_ms(inside['orjson']):>8.2f}"
        f" {_ms(runs['kept']):>7.1f}"
    )
    print(_row(f"/{page} {RERUN[page]}", runs["json"], runs["orjson"], extra), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=21, help="repeats each way")
    ap.add_argument("--pages", nargs="*", default=list(PAGES), help="pages for table (a)")
    args, _ = ap.parse_known_args()  # (bench/run.py's own options pass through)
    try:
        import orjson
    except ImportError:  # a table of one engine says nothing: skip, without ending bench/run.py
        print("orjson is not installed here: `pip install orjson` to compare the engines")
        return
    torch.set_num_threads(1)  # as the server runs (ui/_warm.py)
    logging.disable(logging.WARNING)  # AppTest's bare-mode warnings, one a chart
    print(f"plotly {plotly.__version__}, orjson {orjson.__version__}; median of the repeats\n")
    taps = Taps()
    try:
        serialisation(taps, args.pages, args.rounds)
        print("\n(b) a page's rerun in AppTest that serialises its charts (median ms)")
        print(
            f"{'page, step':<28} {HEAD} {'paired Δ':>9} {'to_json':>7} {'(orjson)':>8} {'kept':>7}"
        )
        for page in RERUN:
            reruns(taps, page, args.rounds)
    finally:
        taps.undo()
        logging.disable(logging.NOTSET)


if __name__ == "__main__":
    main()
