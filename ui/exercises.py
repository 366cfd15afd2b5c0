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

from . import content, events

EXERCISE_LOG = "_ui_exercises"  # this run's exercises; cleared by ui.page_header


def _log(key: str, secrets: Sequence[str], revealed: bool) -> bool:
    about = st.session_state.get(_ABOUT, {}).get(key, {})
    st.session_state.setdefault(EXERCISE_LOG, []).append(
        {"key": key, "secrets": [s for s in secrets if s], "revealed": revealed, **about}
    )
    return revealed


_ABOUT = "_ui_exercise_about"  # session_state: each exercise's question, choices and why


def _about(key: str, question: str, why: str, choices: Sequence[str] = ()) -> None:
    """What the secrecy test reads besides the secrets: the explanation shown at the
    reveal (no sentence of it may be on the page before), the question and choices."""
    about = st.session_state.setdefault(_ABOUT, {})
    if len(about) > 64:
        about.clear()
    about[key] = {"question": question, "why": why, "choices": list(choices)}


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
    st.caption(_w("until_reveal", what=what))


def _box(key: str, question: str):
    box = st.container(border=True, key=f"predict-{key}")
    box.markdown(f"{_w('heading')}\n{question}")
    return box


def _revealed(key: str, answered: bool, instance: str = "") -> bool:
    state = f"_predict_{key}"
    if answered:
        st.session_state[state] = instance or True
    return bool(st.session_state.get(state))


def _new_instance(key: str, instance: str) -> None:
    """A reveal made on another instance of the question (the student's own edit changed
    its numbers) is forgotten with its pick: the new question is asked afresh. A class's
    reveal (True) stays: it is the class's."""
    got = st.session_state.get(f"_predict_{key}")
    if instance and isinstance(got, str) and got != instance:
        for k in (f"_predict_{key}", f"pick-{key}"):
            st.session_state.pop(k, None)


def _w(name: str, /, **fields) -> str:
    """The exercises' sentence `name` (content/kit.md, `exercises.<name>`), fields filled."""
    return content.words("kit", f"exercises.{name}", **fields)


def following() -> bool:
    """Whether this session follows a class's teacher (ui.classroom answers, ui.events)."""
    return events.following()


AHEAD = content.words("kit", "exercises.ahead")


def _ahead(key: str, room) -> bool:
    """A following student's exercise the teacher has not put to the class (nor revealed
    through it, nor on their own page): it waits, so nobody reveals it before the class."""
    return (
        room is None
        and following()
        and not revealed(key)
        and not events.announce(events.TEACHER_OPENED, key, default=False)
    )


def _submit(room, ahead: bool) -> bool:
    """The form's button: "Send my answer" while the class answers, else "Reveal"."""
    if room is not None and not room.teacher and room.waiting:
        return st.form_submit_button("Send my answer", icon=":material/send:", type="primary")
    return st.form_submit_button("Reveal", icon=":material/visibility:", disabled=ahead)


def _opened(
    box, key: str, secret: Sequence[str], sent: bool, empty: bool, ask: str, instance: str = ""
) -> bool:
    """Whether the answer shows now (logged either way); an empty guess is sent back."""
    if sent and empty:
        box.info(_w("empty", ask=ask))
        return _log(key, secret, False)
    shown = _revealed(key, sent, instance)
    if shown:
        events.announce(events.OPENED, key)  # a teacher's reveal frees the class's copies
    return _log(key, secret, shown)


def _class_waits(box, room, key: str, secret: Sequence[str], sent: bool, answer, ask: str) -> bool:
    """A student's exercise the class is answering: their answer goes to the teacher and
    the secret stays until the teacher reveals; once revealed, it is revealed here too.
    Sending no answer sends nothing, and says so."""
    if room is None or room.teacher:
        return False
    if room.waiting:
        if sent and answer is None:
            box.info(_w("empty.class", ask=ask), icon=":material/info:")
        events.announce(events.ANSWERED, box, room, sent, answer)
        _log(key, secret, False)
        return True
    st.session_state[f"_predict_{key}"] = True  # the class's reveal is everyone's
    return False


def predict_choice(
    key: str,
    question: str,
    choices: Sequence[str],
    correct: str,
    why: str,
    *,
    truth: str = "",
    secret: Sequence[str] | None = None,
    instance: str = "",
) -> bool:
    """A multiple-choice prediction; True once revealed. `correct` must be one of `choices`.

    `secret`: what would give the answer away if shown before the reveal; by default the
    figures of `truth` (or `truth` itself when it has none). `instance`: the numbers this
    run asks about, where they can change under one key (the key is the class's question;
    a student's own reveal is of one instance, and a new one asks again)."""
    if correct not in choices:
        raise ValueError(f"correct answer {correct!r} is not among the choices {list(choices)}")
    if secret is None:
        secret = figures(truth) or [truth]
    _about(key, question, why, choices)
    _new_instance(key, instance)
    box = _box(key, question)
    room = events.announce(events.ASKED, key)  # class mode: this exercise put to the whole class
    if room and room.teacher and room.waiting:
        events.announce(events.HOLD, box, key)  # the projector keeps the answer till the reveal
        return _log(key, secret, False)
    ahead = _ahead(key, room)
    with box.form(f"form-{key}", border=False):
        pick = st.radio(
            "Your prediction", list(choices), index=None, key=f"pick-{key}", disabled=ahead
        )
        sent = _submit(room, ahead)
    if ahead:
        box.caption(AHEAD)
        return _log(key, secret, False)
    if _class_waits(box, room, key, secret, sent, pick, _w("ask.choice")):
        return False
    if not _opened(box, key, secret, sent, pick is None, _w("ask.choice"), instance):
        events.announce(events.ASK_BUTTON, box, key, list(choices))
        return False
    pick = st.session_state.get(f"pick-{key}")
    if pick not in choices:  # feedback echoes the pick: only ever one of the page's choices
        box.info(_w("choice.shown", correct=correct, truth=truth))
    elif pick == correct:
        box.success(_w("choice.right", correct=correct, truth=truth))
    else:
        box.error(_w("choice.wrong", pick=pick, correct=correct, truth=truth))
    box.markdown(why)
    if room:
        events.announce(events.REVEALED, box, room, correct=correct)
    events.announce(events.ASK_BUTTON, box, key, list(choices))
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
    _about(key, question, why)
    box = _box(key, question)
    shown = fmt.format(truth)
    secret = [shown] if secret is None else secret
    room = events.announce(events.ASKED, key)  # class mode: this exercise put to the whole class
    if room and room.teacher and room.waiting:
        events.announce(events.HOLD, box, key)  # the projector keeps the answer till the reveal
        return _log(key, secret, False)
    ahead = _ahead(key, room)
    with box.form(f"form-{key}", border=False):
        guess = st.number_input(
            "Your prediction", min_value=lo, max_value=hi, value=None, key=f"guess-{key}",
            format="%g", disabled=ahead,
        )  # fmt: skip
        sent = _submit(room, ahead)
    if ahead:
        box.caption(AHEAD)
        return _log(key, secret, False)
    if _class_waits(box, room, key, secret, sent, guess, _w("ask.number")):
        return False
    if not _opened(box, key, secret, sent, guess is None, _w("ask.number")):
        events.announce(events.ASK_BUTTON, box, key, None)
        return False
    guess = st.session_state.get(f"guess-{key}")
    close = guess is not None and math.isclose(guess, truth, rel_tol=rel_tol, abs_tol=abs_tol)
    if guess is None:
        box.info(_w("number.shown", shown=shown))
    elif close:
        box.success(_w("number.close", shown=shown, guess=fmt.format(guess)))
    else:
        box.error(_w("number.far", shown=shown, guess=fmt.format(guess)))
    box.markdown(why)
    if room:
        events.announce(events.REVEALED, box, room, truth=truth, shown=shown)
    events.announce(events.ASK_BUTTON, box, key, None)
    return True
