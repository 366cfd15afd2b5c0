"""Predict, then reveal: no step shows an exercise's answer before its reveal (issue 18).

Every step of every page is opened at its defaults. Each exercise logs the figures that
would give its answer away (ui.exercises: a numeric exercise's formatted truth, a choice's
`secret=`). While it is unrevealed, none of them may appear anywhere the page shows text:
markdown outside the question boxes, captions, callouts, metrics, tables, and the text of
every chart (titles, axis titles, annotations, trace names and labels). The exercises are
then revealed one by one; those still unanswered keep their secrets meanwhile, and once all
are revealed every secret appears. (A chart whose picture alone gives the answer is held
back by the page as well; text is what this test can read.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.apptest import (
    answer_and_reveal,
    no_exception,
    page_steps,
    plotly_specs,
    run_page,
)
from ui.exercises import EXERCISE_LOG
from ui.lesson import available

ROOT = Path(__file__).resolve().parents[2]


CASES = [
    (lesson.file, step) for lesson in available() for step in page_steps(lesson.file)
]  # fmt: skip


def _chart_text(spec: dict) -> list[str]:
    """The words and labels of a plotly figure (not its data arrays)."""
    out: list[str] = []

    def walk(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, k)
        elif isinstance(node, list):
            if key in ("text", "ticktext") or all(isinstance(x, str) for x in node):
                out.extend(str(x) for x in node if isinstance(x, str | int | float))
            for x in node:
                if isinstance(x, dict | list):
                    walk(x, key)
        elif isinstance(node, str) and key in (
            "text", "name", "title", "hovertemplate", "texttemplate", "legendgrouptitle",
        ):  # fmt: skip
            out.append(node)

    walk(spec)
    return out


def shown_text(at) -> str:
    """Everything the page shows as text, except the exercises' own question boxes."""
    parts: list[str] = []
    for m in at.markdown:
        if "Predict, then reveal" not in m.value:
            parts.append(m.value)
    for group in (at.caption, at.info, at.warning, at.success, at.error, at.latex, at.code):
        parts += [str(e.value) for e in group]
    for m in at.metric:
        parts += [m.label, str(m.value), str(m.proto.help)]
    for t in list(at.table) + list(at.dataframe):
        parts.append(t.value.to_string())
    for e in at.expander:
        parts.append(e.label)
    for spec in plotly_specs(at):
        parts += _chart_text(spec)
    return "\n".join(parts)


def present(secret: str, text: str) -> bool:
    """`secret` in `text` as a whole figure: 0.43 is not found inside 10.437 or 0.435."""
    pattern = r"(?<![\w.,])" + re.escape(secret) + r"(?![\w]|[.,]\d)"
    return re.search(pattern, text) is not None


def exercises(at) -> list[dict]:
    return list(at.session_state[EXERCISE_LOG]) if EXERCISE_LOG in at.session_state else []


@pytest.mark.parametrize(("file", "step"), CASES, ids=[f"{f}:{s}" for f, s in CASES])
def test_no_step_shows_an_answer_before_its_reveal(file, step):
    params = {"step": step} if step else {}
    at = run_page(file, timeout=120, **params)
    no_exception(at)
    found = exercises(at)
    text = shown_text(at)
    for ex in found:
        assert not ex["revealed"]
        assert ex["secrets"], f"{ex['key']} names no secret"
        leaks = [s for s in ex["secrets"] if present(s, text)]
        assert not leaks, f"{file} › {step}: {ex['key']} shows {leaks} before its reveal"
    # reveal them one by one: the ones still unanswered keep their secret meanwhile
    for i, ex in enumerate(found):
        answer_and_reveal(at, ex["key"])
        no_exception(at)
        log = {e["key"]: e for e in exercises(at)}
        assert log[ex["key"]]["revealed"]
        text = shown_text(at)
        for later in found[i + 1 :]:
            leaks = [s for s in log[later["key"]]["secrets"] if present(s, text)]
            assert not leaks, f"{file} › {step}: revealing {ex['key']} shows {leaks}"
    text = shown_text(at)
    for ex in exercises(at):
        missing = [s for s in ex["secrets"] if not present(s, text)]
        assert not missing, f"{file} › {step}: {ex['key']} revealed, but {missing} not shown"
