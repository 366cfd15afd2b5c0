"""Predict, then reveal: no step shows an exercise's answer before its reveal (issue 18).

Every step of every page is opened at its defaults. Each exercise logs the figures that
would give its answer away (ui.exercises: a numeric exercise's formatted truth, a choice's
`secret=`). While it is unrevealed, none of them may appear anywhere the page shows text:
markdown outside the question boxes (the "Try this" boxes and expanders included), captions,
callouts, the metric strips (label, value, help), tables, and the text of every chart
(titles, axis titles, annotations, trace names and labels). The exercises are then revealed
one by one; those still unanswered keep their secrets meanwhile, and once all are revealed
every secret appears. A choice exercise's computed choice, read from its verdict, must not
have been on the page before either, whatever the page registered (when it is a phrase of
its own: a choice that names a thing on the page, "bilinear", is on it anyway). Links at
which a leak was once found (issue 41: a sidebar setting equal to the question's) are
checked as well.
(A chart whose picture alone gives the answer is held back by the page as well; text is
what this test can read. tests/site/test_secrecy_browser.py reads what a browser shows.)
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from attn_core.lessons.scaling import exercise_d_k
from tests.support.apptest import (
    answer_and_reveal,
    no_exception,
    page_steps,
    plotly_specs,
    run_page,
)
from ui.exercises import EXERCISE_LOG, figures
from ui.lesson import available

ROOT = Path(__file__).resolve().parents[2]


CASES = [
    (lesson.file, step) for lesson in available() for step in page_steps(lesson.file)
]  # fmt: skip

# The steps that ask something (the browser test opens each one): kept honest below, since
# every step's run must find exercises exactly where this lists them.
EXERCISE_STEPS: dict[str, tuple[str, ...]] = {
    "pages/scaling.py": ("Check yourself",),
    "pages/softmax.py": ("Check yourself",),
    "pages/multi-head.py": ("Cost", "Diversity"),
    "pages/masks.py": ("Fill", "Broadcasting bug"),
    "pages/positions.py": ("Order", "RoPE"),
    "pages/training.py": ("Predict",),
    "pages/cost.py": ("Compute", "Memory", "Walkthrough"),
    "pages/alternatives.py": ("Scoring", "Cosine", "Smoother", "Contribution"),
    "pages/heads.py": ("Maps", "Switch off"),
    "pages/model.py": ("Roles", "Knobs", "Pruning"),
}

# Links whose settings match a question's own (issue 41), where the page once showed an
# answer before its reveal: the question's d_k unscaled under /scaling's metric strip, an
# MQA layer or a single head on /multi-head's Diversity step, B ≠ T_q on /masks.
LINKS = [
    ("pages/scaling.py", "Check yourself", {"d_k": str(exercise_d_k(0)), "scaled": "false"}),
    ("pages/multi-head.py", "Diversity", {"kv_heads": "1"}),
    ("pages/multi-head.py", "Diversity", {"heads": "1"}),
    ("pages/masks.py", "Broadcasting bug", {"batch": "5"}),
]

# A choice exercise's verdict names the computed choice (ui.exercises.predict_choice).
_VERDICT = re.compile(r"(?:Right: |computed answer is )\*\*(.+?)\*\*")


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
    parts: list[str] = [t.value for t in at.title]  # the lesson's title; its subtitle is
    for m in at.markdown:  # markdown, like expanders' bodies and the intro
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


def _words(text: str) -> list[str]:
    return re.findall(r"[\w−∞′'.]+", text.lower().replace("**", "").replace("*", ""))


SHINGLE = 6  # words in a row that, shared with an explanation, give it away


def shingles(text: str) -> set[tuple[str, ...]]:
    w = _words(text)
    return {tuple(w[i : i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def hints(ex: dict, text: str) -> list[str]:
    """What of the exercise's explanation (shown at its reveal), or of its question's own
    figures in its choices, the page gives away before the reveal: six words of the
    explanation in a row anywhere on the page (an expander, a subtitle, a caption), or a
    choice that carries a figure of the question ("The same: 1,050,624")."""
    shared = shingles(ex.get("why", "")) & shingles(text)
    out = [" ".join(x) for x in sorted(shared)[:3]]
    asked = set(figures(ex.get("question", "")))
    out += [c for c in ex.get("choices", []) if set(figures(c)) & asked]
    return out


def exercises(at) -> list[dict]:
    return list(at.session_state[EXERCISE_LOG]) if EXERCISE_LOG in at.session_state else []


def chosen(at) -> list[str]:
    """The computed choices that revealed choice exercises name in their verdicts."""
    boxes = (*at.success, *at.error, *at.info)
    return [m for b in boxes for m in _VERDICT.findall(str(b.value))]


def check_secrets(at, where: str, *, all_shown: bool = True) -> None:
    """No exercise of the run shows its secrets (nor a choice its computed choice) before
    its reveal; revealed one by one, the others keep theirs; at the end all are shown."""
    found = exercises(at)
    text = shown_text(at)
    for ex in found:
        assert not ex["revealed"]
        assert ex["secrets"], f"{ex['key']} names no secret"
        leaks = [s for s in ex["secrets"] if present(s, text)]
        assert not leaks, f"{where}: {ex['key']} shows {leaks} before its reveal"
        given = hints(ex, text)
        assert not given, f"{where}: {ex['key']}'s explanation or choices show {given} early"
    before = text
    # reveal them one by one: the ones still unanswered keep their secret meanwhile
    for i, ex in enumerate(found):
        answer_and_reveal(at, ex["key"])
        no_exception(at)
        log = {e["key"]: e for e in exercises(at)}
        assert log[ex["key"]]["revealed"]
        text = shown_text(at)
        for later in found[i + 1 :]:
            leaks = [s for s in log[later["key"]]["secrets"] if present(s, text)]
            assert not leaks, f"{where}: revealing {ex['key']} shows {leaks}"
    # a choice worded as a phrase of its own (not a name the page uses, like "bilinear")
    shown_early = [c for c in chosen(at) if len(c.split()) >= 4 and present(c, before)]
    assert not shown_early, f"{where}: the computed choice {shown_early} was shown before"
    if all_shown:
        text = shown_text(at)
        for ex in exercises(at):
            missing = [s for s in ex["secrets"] if not present(s, text)]
            assert not missing, f"{where}: {ex['key']} revealed, but {missing} not shown"


@pytest.mark.parametrize(("file", "step"), CASES, ids=[f"{f}:{s}" for f, s in CASES])
def test_no_step_shows_an_answer_before_its_reveal(file, step):
    params = {"step": step} if step else {}
    at = run_page(file, timeout=120, **params)
    no_exception(at)
    asks = bool(exercises(at))
    assert asks == (step in EXERCISE_STEPS.get(file, ())), f"{file} › {step}: EXERCISE_STEPS"
    check_secrets(at, f"{file} › {step}")


@pytest.mark.parametrize(
    ("file", "step", "params"), LINKS, ids=[f"{f}:{s}:{p}" for f, s, p in LINKS]
)
def test_a_link_that_sets_a_questions_own_values_keeps_its_answer(file, step, params):
    at = run_page(file, timeout=120, step=step, **params)
    no_exception(at)
    assert exercises(at), (file, step, params)
    # what each secret looks like after the reveal at such a link is the page's own choice
    check_secrets(at, f"{file} › {step} › {params}", all_shown=False)


def test_the_text_read_covers_try_this_boxes_expanders_and_metric_strips():
    """What shown_text reads: a step with a Try-this box, an explanation and the metrics."""
    at = run_page("pages/scaling.py", step="Scores to weights")
    no_exception(at)
    text = shown_text(at)
    assert at.metric and at.expander
    for m in at.metric:
        assert m.label in text and str(m.value) in text
    tried = [m.value for m in at.markdown if m.value.startswith("- **")]  # the Try-this items
    assert tried and all(t in text for t in tried)
    assert all(e.label in text for e in at.expander)
    inside = [m.value for e in at.expander for m in e.markdown]
    assert inside and all(t in text for t in inside)


CLASS_CASES = [(f, steps[0]) for f, steps in EXERCISE_STEPS.items()]


@pytest.mark.parametrize(("file", "step"), CLASS_CASES, ids=[f"{f}:{s}" for f, s in CLASS_CASES])
def test_a_following_student_s_page_keeps_the_asked_question_s_answer(file, step):
    """Class mode (issue 50): the teacher asks the step's first question; the student who
    follows sees the question, and nothing on their page (expanders, captions, charts,
    subtitle, choices) gives its answer or its explanation away before the reveal."""
    teacher = run_page(file, timeout=120, step=step, present="1", room="new")
    no_exception(teacher)
    key = exercises(teacher)[0]["key"]
    teacher.button(key=f"_ui_ask_{key}").click().run(timeout=120)
    no_exception(teacher)
    code = teacher.session_state["_ui_room"]["code"]
    student = run_page(file, timeout=120, step=step, room=code)
    no_exception(student)
    text = shown_text(student)
    found = {e["key"]: e for e in exercises(student)}
    assert key in found and not found[key]["revealed"]
    for ex in found.values():
        leaks = [s for s in ex["secrets"] if present(s, text)] + hints(ex, text)
        assert not leaks, f"{file} › {step}: {ex['key']} shows {leaks} to a following student"
