"""Predict, then reveal: the student commits to an answer before seeing the computed truth.

The page computes the truth with attn_core (for the instance its seed picked) and
passes it in; nothing here knows the answers. Questions, choices and explanations are
the page's own markdown: any user text in them must already be escaped (ui.escape, or
ui.safe_text inside a code span). Answers are not bound to the URL:
a shared link should not give the game away.

Secrecy rule: while an exercise is unanswered, nothing on its step may give the answer away.
Each exercise names its *secrets* (the figures that give the answer: by default a numeric
exercise's formatted truth; a choice's `secret=` strings) and returns whether it has been
revealed, so the page shows what would give the answer away only after the reveal, and
`until_reveal(...)` says what is waiting. Every exercise of a run is logged in
`session_state[EXERCISE_LOG]` (key, secrets, revealed), which
tests/site/test_exercise_secrecy.py reads to check the rule on every step of every page.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import streamlit as st

EXERCISE_LOG = "_ui_exercises"  # this run's exercises; cleared by ui.page_header


def _log(key: str, secrets: Sequence[str], revealed: bool) -> bool:
    st.session_state.setdefault(EXERCISE_LOG, []).append(
        {"key": key, "secrets": [s for s in secrets if s], "revealed": revealed}
    )
    return revealed


_FIGURE = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+(?:e[-+]?\d+)?")


def figures(text: str) -> list[str]:
    """The distinguishing figures of a sentence: numbers with a decimal point or a
    thousands separator (small whole numbers like "8 keys" are everywhere on a page)."""
    return _FIGURE.findall(text)


def revealed(key: str) -> bool:
    """Whether exercise `key` has been revealed in this session."""
    return bool(st.session_state.get(f"_predict_{key}"))


def until_reveal(what: str) -> None:
    """A quiet line where content waits for the reveal: `what` names it ("The table")."""
    st.caption(f":material/visibility_off: {what} — shown once you reveal your prediction.")


def _box(key: str, question: str):
    box = st.container(border=True, key=f"predict-{key}")
    box.markdown(f"##### :material/quiz: Predict, then reveal\n{question}")
    return box


def _revealed(key: str, answered: bool) -> bool:
    state = f"_predict_{key}"
    if answered:
        st.session_state[state] = True
    return bool(st.session_state.get(state))


def _opened(box, key: str, secret: Sequence[str], sent: bool, empty: bool, ask: str) -> bool:
    """Whether the answer shows now (logged either way); an empty guess is sent back."""
    if sent and empty:
        box.info(f"{ask} first — committing to a guess is the point.")
        return _log(key, secret, False)
    return _log(key, secret, _revealed(key, sent))


def predict_choice(
    key: str,
    question: str,
    choices: Sequence[str],
    correct: str,
    why: str,
    *,
    truth: str = "",
    secret: Sequence[str] | None = None,
) -> bool:
    """A multiple-choice prediction; True once revealed. `correct` must be one of `choices`.

    `secret`: what would give the answer away if shown before the reveal; by default the
    figures of `truth` (or `truth` itself when it has none)."""
    if correct not in choices:
        raise ValueError(f"correct answer {correct!r} is not among the choices {list(choices)}")
    if secret is None:
        secret = figures(truth) or [truth]
    box = _box(key, question)
    with box.form(f"form-{key}", border=False):
        pick = st.radio("Your prediction", list(choices), index=None, key=f"pick-{key}")
        sent = st.form_submit_button("Reveal", icon=":material/visibility:")
    if not _opened(box, key, secret, sent, pick is None, "Pick an answer"):
        return False
    pick = st.session_state.get(f"pick-{key}")
    if pick not in choices:
        return True  # feedback echoes the pick: only ever one of the page's own choices
    if pick == correct:
        box.success(f"Right: **{correct}**. {truth}")
    else:
        box.error(f"Not quite — you said *{pick}*; the computed answer is **{correct}**. {truth}")
    box.markdown(why)
    return True


def predict_number(
    key: str,
    question: str,
    truth: float,
    why: str,
    *,
    rel_tol: float = 0.15,
    abs_tol: float = 0.0,
    fmt: str = "{:.3g}",
    lo: float | None = None,
    hi: float | None = None,
    secret: Sequence[str] | None = None,
) -> bool:
    """A numeric prediction, judged close enough within rel_tol (or abs_tol); True once
    revealed. `secret` defaults to the formatted truth."""
    box = _box(key, question)
    with box.form(f"form-{key}", border=False):
        guess = st.number_input(
            "Your prediction", min_value=lo, max_value=hi, value=None, key=f"guess-{key}",
            format="%g",
        )  # fmt: skip
        sent = st.form_submit_button("Reveal", icon=":material/visibility:")
    shown = fmt.format(truth)
    secret = [shown] if secret is None else secret
    if not _opened(box, key, secret, sent, guess is None, "Type a number"):
        return False
    guess = st.session_state.get(f"guess-{key}")
    close = guess is not None and math.isclose(guess, truth, rel_tol=rel_tol, abs_tol=abs_tol)
    if close:
        box.success(f"Close enough: computed **{shown}**, you said {fmt.format(guess)}.")
    else:
        box.error(f"Computed **{shown}**; you said {fmt.format(guess)}.")
    box.markdown(why)
    return True
