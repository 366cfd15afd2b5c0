"""axe-core (WCAG 2.2 A/AA and best practices) on every page, step and view, as a table.

usage: python bench/a11y.py [--views desk present phone] [--only softmax masks] [--nodes]

Starts `streamlit run app.py` on 127.0.0.1, opens every lesson at its defaults, then each
of its steps (`?step=`), at a desk (1400x900), a projector (1280x720, `?present=1`) and a
phone (390x844), runs axe-core on each view and prints the violations counted by rule and
impact, then the views that have any. The browser suite's check is
tests/site/test_a11y_browser.py; this script is the instrument for the before/after table.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.axe import audit
from tests.support.browser import chromium, open_page, step_labels, streamlit_server
from ui.lesson import available

VIEWS = {"desk": (1400, 900, ""), "present": (1280, 720, "present=1"), "phone": (390, 844, "")}


def views(base: str, browser, only: list[str], names: list[str]):
    """(page path, step, view) and the URL of each view to audit."""
    for lesson in available():
        path = lesson.url_path
        if only and (path or "home") not in only:
            continue
        page, _ = open_page(browser, f"{base}/{path}")
        steps = step_labels(page) or [""]
        page.context.close()
        for step in steps:
            for view in names:
                w, h, extra = VIEWS[view]
                query = "&".join(q for q in (f"step={quote(step)}" if step else "", extra) if q)
                yield (path or "home", step, view), (f"{base}/{path}?{query}", w, h)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--views", nargs="+", default=list(VIEWS), choices=list(VIEWS))
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--nodes", action="store_true", help="print an example node per violation")
    args = ap.parse_args()
    by_rule: Counter = Counter()
    nodes: Counter = Counter()
    impact: dict[str, str] = {}
    bad: list[tuple] = []
    n = 0
    with chromium() as browser, streamlit_server() as base:
        for where, (url, w, h) in views(base, browser, args.only, args.views):
            page, _ = open_page(browser, url, width=w, height=h)
            found = audit(page)
            page.context.close()
            n += 1
            for v in found:
                by_rule[v.rule] += 1
                nodes[v.rule] += v.nodes
                impact[v.rule] = v.impact
            if found:
                bad.append((where, found))
            print(f"{'/'.join(x for x in where if x):40s} {len(found)} rules", flush=True)
    print(f"\n{n} views audited, {len(bad)} with a violation\n")
    print(f"{'rule':28s} {'impact':10s} {'views':>6s} {'nodes':>6s}")
    for rule, k in by_rule.most_common():
        print(f"{rule:28s} {impact[rule]:10s} {k:6d} {nodes[rule]:6d}")
    if args.nodes:
        for where, found in bad:
            print("\n" + "/".join(x for x in where if x))
            for v in found:
                print("  ", v)


if __name__ == "__main__":
    main()
