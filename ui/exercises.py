"""Predict, then reveal: the student commits to an answer before seeing the computed truth.

The page computes the truth with attn_core (for the instance its seed picked) and
passes it in; nothing here knows the answers. Questions, choices and explanations are
the page's own markdown: any user text in them must already be escaped (ui.escape, or
ui.safe_text inside a code span). Answers are not bound to the URL:
a shared link should not give the game away.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import streamlit as st


def _box(key: str, question: str):
    box = st.container(border=True, key=f"predict-{key}")
    box.markdown(f"##### :material/quiz: Predict, then reveal\n{question}")
    return box


def _revealed(key: str, answered: bool) -> bool:
    state = f"_predict_{key}"
    if answered:
        st.session_state[state] = True
    return bool(st.session_state.get(state))


def predict_choice(
    key: str, question: str, choices: Sequence[str], correct: str, why: str, *, truth: str = ""
) -> None:
    """A multiple-choice prediction. `correct` must be one of `choices`."""
    if correct not in choices:
        raise ValueError(f"correct answer {correct!r} is not among the choices {list(choices)}")
    box = _box(key, question)
    with box.form(f"form-{key}", border=False):
        pick = st.radio("Your prediction", list(choices), index=None, key=f"pick-{key}")
        sent = st.form_submit_button("Reveal", icon=":material/visibility:")
    if sent and pick is None:
        box.info("Pick an answer first — committing to a guess is the point.")
        return
    if not _revealed(key, sent):
        return
    pick = st.session_state.get(f"pick-{key}")
    if pick not in choices:
        return  # feedback echoes the pick: only ever one of the page's own choices
    if pick == correct:
        box.success(f"Right: **{correct}**. {truth}")
    else:
        box.error(f"Not quite — you said *{pick}*; the computed answer is **{correct}**. {truth}")
    box.markdown(why)


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
) -> None:
    """A numeric prediction, judged close enough within rel_tol (or abs_tol)."""
    box = _box(key, question)
    with box.form(f"form-{key}", border=False):
        guess = st.number_input(
            "Your prediction", min_value=lo, max_value=hi, value=None, key=f"guess-{key}",
            format="%g",
        )  # fmt: skip
        sent = st.form_submit_button("Reveal", icon=":material/visibility:")
    if sent and guess is None:
        box.info("Type a number first — committing to a guess is the point.")
        return
    if not _revealed(key, sent):
        return
    guess = st.session_state.get(f"guess-{key}")
    shown = fmt.format(truth)
    close = guess is not None and math.isclose(guess, truth, rel_tol=rel_tol, abs_tol=abs_tol)
    if close:
        box.success(f"Close enough: computed **{shown}**, you said {fmt.format(guess)}.")
    else:
        box.error(f"Computed **{shown}**; you said {fmt.format(guess)}.")
    box.markdown(why)
