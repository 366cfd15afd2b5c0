"""axe-core in Chromium: the WCAG checks behind Lighthouse's accessibility score.

The script is the one bundled by the pinned `axe-playwright-python` package (nothing is
fetched at run time). `audit(page)` runs it on what the page shows now and returns the
violations of the WCAG 2.0/2.1/2.2 A and AA rules (and axe's best practices), each as
(rule id, impact, how many nodes, the first node's target and axe's summary).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# WCAG 2.2 AA and below, plus axe's best practices (heading order, landmarks).
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa", "best-practice"]


@dataclass(frozen=True)
class Violation:
    rule: str
    impact: str
    nodes: int
    target: str
    summary: str

    def __str__(self) -> str:
        return f"{self.rule} ({self.impact}, {self.nodes} nodes) e.g. {self.target}: {self.summary}"


@cache
def _script() -> str:
    import axe_playwright_python

    return (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text("utf-8")


def audit(page) -> list[Violation]:
    """axe's violations on the page as it is drawn now."""
    # ui.chrome marks sideways-scrolling boxes focusable 200 ms after the page changes;
    # mark them now, so the audit does not race that timer
    page.evaluate("() => window.__attnMarkScrollables && window.__attnMarkScrollables()")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.evaluate(_script())
    options = {"runOnly": {"type": "tag", "values": TAGS}, "resultTypes": ["violations"]}
    result = page.evaluate(f"async () => await axe.run(document, {json.dumps(options)})")
    out = []
    for v in result["violations"]:
        first = v["nodes"][0] if v["nodes"] else {}
        out.append(
            Violation(
                rule=v["id"],
                impact=v.get("impact") or "",
                nodes=len(v["nodes"]),
                target=" ".join(map(str, first.get("target", []))),
                summary=(first.get("failureSummary") or v.get("help", "")).replace("\n", " ")[:300],
            )
        )
    return out
