"""Every control at the largest value it accepts: what one rerun then costs the server.

The rule (issue 39): one rerun stays under ~2 s of server CPU and ~100 MB at any value a
control, a table or a link accepts. `largest_views(file)` lists, for each step (and view)
of a page, a link that sets every control drawn there at once to its largest accepted
value: sliders and number boxes at their maximum, select sliders at their last option,
every option of a multiselect, switches on, text boxes full to their `max_chars`; and one
more link per option of each choice (radio, selectbox) that is not ordered by size, with
the rest still at their largest. `measure(file, params)` runs the page once in AppTest
(this process is the server) and returns its CPU seconds and peak memory growth.

tests/site/test_bounded_inputs.py asserts the rule over every link; `python
bench/bounded.py` prints the table.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.apptest import page_steps, run_page

WIDGETS = ("slider", "select_slider", "toggle", "radio", "selectbox", "number_input", "multiselect")
# Views that draw controls the default view leaves out (as tests/site/test_fuzz_urls.py).
VIEWS = {
    "pages/masks.py": [{"mask": k} for k in ("custom", "padding", "sliding-window", "prefix-LM")],
    "pages/multi-head.py": [{"input": "sentence"}],
}
# A full text box in the form the page reads (anything else is cut or ignored sooner).
TEXT_UNIT = {"lengths": "48,", "custom": "0-47,", "tokens": "63 "}
TEXT_UNIT_DEFAULT = "word "


@dataclass
class Control:
    key: str
    kind: str
    largest: str | list[str]
    options: list[str] = field(default_factory=list)  # a choice's options, unordered


def _number(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def _numeric(options: list[str]) -> bool:
    try:
        [float(o) for o in options]
    except ValueError:
        return False
    return True


def _control(kind: str, w) -> Control | None:
    if not w.key or w.key.startswith(("_", "$$", "pick-", "guess-")):
        return None
    if kind in ("slider", "number_input"):
        return Control(w.key, kind, _number(w.max)) if w.max is not None else None
    if kind == "select_slider":
        return Control(w.key, kind, str(list(w.options)[-1]))
    if kind == "toggle":
        return Control(w.key, kind, "true")
    if kind == "multiselect":
        return Control(w.key, kind, ",".join(map(str, w.options)))
    if kind == "text_input":
        unit = TEXT_UNIT.get(w.key, TEXT_UNIT_DEFAULT)
        n = w.proto.max_chars or 500
        return Control(w.key, kind, (unit * (n // len(unit) + 1))[:n])
    options = [str(o) for o in w.options]
    if _numeric(options):  # an ordered choice: its largest
        return Control(w.key, kind, max(options, key=float))
    return Control(w.key, kind, str(w.value), options)


def controls(at) -> list[Control]:
    out = []
    for kind in (*WIDGETS, "text_input"):
        for w in getattr(at, kind):
            c = _control(kind, w)
            if c is not None:
                out.append(c)
    return out


def largest_views(file: str) -> list[dict[str, str]]:
    """Links (parameter dicts) that put every control of each step and view at its largest,
    plus one per unordered choice's other options."""
    links: list[dict[str, str]] = []
    tried: set[tuple[str, str]] = set()
    for view in [{}, *VIEWS.get(file, [])]:
        for step in page_steps(file):
            where = {**view, **({"step": step} if step else {})}
            cs = [c for c in controls(run_page(file, **where)) if c.key not in where]
            base = {**where, **{c.key: c.largest for c in cs}}
            links.append(base)
            for c in cs:
                for option in c.options:
                    if option != c.largest and (c.key, option) not in tried:
                        tried.add((c.key, option))
                        links.append({**base, c.key: option})
    return links


def _status_kb(name: str) -> int:
    text = Path("/proc/self/status").read_text()
    return int(re.search(rf"^{name}:\s+(\d+) kB", text, re.M).group(1))


def _reset_peak() -> bool:
    """Start a new peak-RSS count (Linux: 5 > /proc/self/clear_refs)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
        return True
    return False


def measure(file: str, params: dict[str, str], timeout: float = 120):
    """(AppTest, server CPU seconds, peak MB above the RSS before the run) of one run.

    The CPU is the process's less this (the calling) thread's: AppTest's harness polls
    from here while the script runs in its own thread, at a cost that grows with the
    run's wall time (on a loaded machine, more than the script's own)."""
    rss = _status_kb("VmRSS")
    peak_ok = _reset_peak()
    cpu, harness = time.process_time(), time.thread_time()
    at = run_page(file, timeout, **params)
    cpu = (time.process_time() - cpu) - (time.thread_time() - harness)
    grew = (_status_kb("VmHWM") - rss) / 1024 if peak_ok else float("nan")
    return at, cpu, max(grew, 0.0)
