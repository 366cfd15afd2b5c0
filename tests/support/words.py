"""Reading a chart's words back: the text of each "Chart in words" box on a page, and the
numbers in a sentence (as figures.describe.num writes them: 3 significant digits, tiny or
huge ones as "2.33 × 10⁻⁴"), so a test can check each against its own recomputation."""

from __future__ import annotations

import json
import re

from ui import content

_SUP = str.maketrans("⁻⁰¹²³⁴⁵⁶⁷⁸⁹", "-0123456789")
# a number as the words write it: -3.59, 1,024, 2.33 × 10⁻⁴, −inf (a true minus too)
NUMBER = re.compile(
    r"(?<![\w.])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?(?: × 10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+)?"
    r"(?![\w])"
)


def value(text: str) -> float:
    """One number as the words write it -> float."""
    text = text.replace("−", "-").replace(",", "")
    if " × 10" in text:
        mant, exp = text.split(" × 10")
        return float(mant) * 10.0 ** int(exp.translate(_SUP))
    return float(text)


def numbers(text: str) -> list[float]:
    """Every number in a sentence, in order."""
    return [value(m.group(0)) for m in NUMBER.finditer(text)]


def close(said: float, true: float, digits: int = 3) -> bool:
    """Whether `said` is `true` to the words' precision (3 significant digits, with room for
    float32 against float64 on the last digit)."""
    if true == 0:
        return abs(said) < 1e-12
    return abs(said - true) <= 1.5 * 10 ** (-digits + 1) * abs(true)


def plain(markdown: str) -> str:
    """A box's markdown (escaped by ui.escape) back to its text."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u200b", "")


def chart_words(at) -> list[tuple[dict, str]]:
    """(plotly spec, its words) for every chart on an AppTest page, in page order."""
    label = content.words("charts", "expander")
    charts = at.main.get("plotly_chart") + at.sidebar.get("plotly_chart")
    boxes = [ex for ex in at.expander if ex.label == label]
    assert len(boxes) == len(charts)
    return [
        (json.loads(el.proto.spec), plain(box.markdown[0].value))
        for el, box in zip(charts, boxes, strict=True)
    ]


def by_title(at, start: str) -> str:
    """The words of the chart whose title starts with `start` (exactly one such chart)."""
    found = [w for spec, w in chart_words(at) if w.startswith(start)]
    assert len(found) == 1, (start, [w[:60] for _, w in chart_words(at)])
    return found[0]


def link_params(p: dict) -> dict:
    """A setting as its link writes it (true, 20: as the controls read them)."""
    return {
        k: str(v).lower() if isinstance(v, bool) else f"{v:g}" if isinstance(v, float) else v
        for k, v in p.items()
    }
