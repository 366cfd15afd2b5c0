"""Hostile links: for every page, 200 random query strings through AppTest.

Each query string sets 1–3 of the page's own URL parameters (and sometimes an
unknown one) to hostile values: wrong types, huge and negative numbers, NaN and
infinities, unicode, emoji, HTML and script tags, markdown links, very long text.
The page must not raise, must never render the payload as HTML, and every value
it did not take must be announced by a note naming the parameter.
"""

from __future__ import annotations

import os
import random

import pytest

from tests.support.apptest import run_page
from ui.lesson import available

N_CASES = int(os.environ.get("FUZZ_CASES", "200"))
HOSTILE = [
    "",
    "abc",
    "-1",
    "-99999999",
    "99999999999999999999",
    "1e999",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "0x10",
    "１２",  # full-width digits
    "😀",
    "é∑≈ç",
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "</div><b>bold</b>",
    "[click](javascript:alert(1))",
    "![img](http://example.com/i.png)",
    "`",
    "$$\\frac{1}{0}$$",
    "'; DROP TABLE users; --",
    "../../etc/passwd",
    "%00",
    "a" * 3000,
    "1,2,3",
    "0.5.5",
    "None",
    "[]",
]
PAYLOADS = ("<script", "<img", "<b>", "javascript:")
WIDGETS = ("slider", "select_slider", "toggle", "radio", "selectbox", "number_input", "multiselect")


def _step_labels(at) -> list[str]:
    """The page's ui.steps tab labels ([] without steps)."""
    return [t.label for t in at.tabs]


def _page_keys(file: str) -> tuple[dict[str, str | None], list[str], set[str]]:
    """The page's URL-bound controls: ({checked key: step that shows it}, free-text keys,
    multiselect keys). A control in a ui.steps tab only exists while its step is open, so
    each step is visited; `step` itself is a checked key on a page with steps."""
    first = run_page(file)
    labels = _step_labels(first)
    runs = [(None, first)] + [(label, run_page(file, step=label)) for label in labels[1:]]
    keys: dict[str, str | None] = {"step": None} if labels else {}
    text, multi = [], set()
    for label, at in runs:
        multi |= {w.key for w in at.multiselect if w.key}
        for kind in WIDGETS:
            for w in getattr(at, kind):
                if w.key and not w.key.startswith(("_", "$$", "pick-", "guess-")):
                    keys.setdefault(w.key, label)
        for w in at.text_input:
            if w.key and not w.key.startswith(("_", "$$")) and w.key not in text:
                text.append(w.key)
    return dict(sorted(keys.items())), sorted(text), multi


def _took(raw: str, value) -> bool:
    """Did the widget end up holding what the link asked for? (Then no note is due.)"""
    if isinstance(value, (list, tuple)):
        return [str(x) for x in value] == [p for p in raw.split(",") if p]
    if isinstance(value, bool):
        return raw.lower() == str(value).lower()
    if raw == str(value):
        return True
    try:
        x = float(raw)  # also reads full-width digits, as Python and Streamlit do
    except ValueError:
        return False
    return isinstance(value, (int, float)) and x == float(value)


def _html_elements(at):
    """Every element allowed to render raw HTML, with its body."""
    for el in [*at.markdown, *at.caption]:
        if getattr(el.proto, "allow_html", False):
            yield el.value
    for el in at.get("html"):
        yield getattr(el.proto, "body", "")


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_hostile_links_never_crash_never_inject_and_are_announced(lesson):
    keys, text_keys, multi = _page_keys(lesson.file)
    assert keys or text_keys, "a page with no URL-bound controls?"
    rng = random.Random(f"fuzz-{lesson.url_path}")
    all_keys = list(keys) + text_keys
    for case in range(N_CASES):
        params = {
            k: rng.choice(HOSTILE)
            for k in rng.sample(all_keys, min(len(all_keys), rng.randint(1, 3)))
        }
        # A control inside a step is only drawn (and checked) when the link opens that step.
        steps = [keys[k] for k in params if keys.get(k)]
        if steps and "step" not in params:
            params["step"] = steps[0]
        checked = {k for k in params if k in keys and keys[k] in (None, params.get("step"))}
        if rng.random() < 0.2:
            params["unknown_" + str(case)] = rng.choice(HOSTILE)
        at = run_page(lesson.file, **params)
        where = f"{lesson.url_path or 'home'}?{params!r}"
        assert not at.exception, (where, [e.value for e in at.exception])
        for body in _html_elements(at):
            assert not any(p in body for p in PAYLOADS), (where, body[:200])
        notes = " ".join(w.value for w in at.warning)
        for k, v in params.items():
            if k not in checked or (k in multi and v == ""):
                continue  # free text is valid by definition, and so is an empty selection
            try:
                took = _took(v, at.session_state[k])
            except KeyError:
                took = False
            assert took or f"`{k}=" in notes, (where, k, notes[:300])
