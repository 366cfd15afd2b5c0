"""Hostile links: for every page, random and targeted query strings through AppTest.

Each random query string sets 1–3 of the page's own URL parameters (and sometimes an
unknown one) to hostile values: wrong types, huge and negative numbers, 5,000-digit
numbers, NaN and infinities, unicode, emoji, HTML and script tags, markdown, LaTeX,
Streamlit directives, bare URLs, very long text. The targeted cases give every control
of a page each markdown payload, an oversize value, a repeated parameter and 5,000-digit
numbers at once.

The page must not raise; must never render a payload as HTML, markdown, maths, a
directive or a link (every element whose text Streamlit reads as markdown is checked,
with code spans, where nothing is read, set aside); must keep its notes short; and
every value it did not take as given must be announced by a note naming the parameter.
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
from urllib.parse import urlencode

import pytest
from streamlit.testing.v1 import AppTest

from tests.support.apptest import ROOT, _registry, run_page
from ui import chrome
from ui.lesson import available

N_CASES = int(os.environ.get("FUZZ_CASES", "50"))  # FUZZ_CASES=400: a deeper run

# Markdown a page would render if it wrote the text unescaped (Chromium showed each one
# live before the fix: bold, KaTeX, red text, a link opening a new tab, icons, emoji).
MARKDOWN = [
    "**INJ**",
    "$$\\frac{1}{0}$$",
    ":red[RED]",
    "[y](https://example.com)",
    "see https://example.org/x",
    "www.example.net",
    ":material/home: :smile:",
    "mail a@example.com",
    "_INJ_ ~~INJ~~ # INJ",
    '<b>INJ</b><a href="https://example.com">x</a>',
]
# What each payload looks like where it is live, in markdown source with code spans and
# backslash escapes taken out ("**INJ**" escaped is "\*\*INJ\*\*": no "**INJ" left).
ACTIVE = (
    "**INJ",
    "$\\frac{1}{0}",
    ":red[",
    "](https://example",
    "https://example",
    "www.example",
    ":material/home",
    ":smile:",
    "a@example",
    "_INJ_",
    "~~INJ",
)
# The same payloads as HTML, which plotly (titles, ticks, hover) and st.html would draw.
HTML_ACTIVE = ("<script", "<img", "<b>", "<a ", "javascript:")
# Arabic-Indic 3s; leading zeros (int() counts them, a check that strips them must not).
DIGITS = ["9" * 5000, "1 " + "9" * 5000, "-" + "9" * 5000, "٣" * 5000, "1 " + "0" * 5000]
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
    "'; DROP TABLE users; --",
    "../../etc/passwd",
    "%00",
    "a" * 3000,
    "1,2,3",
    "0.5.5",
    "None",
    "[]",
    *MARKDOWN,
    *DIGITS,
]
WIDGETS = ("slider", "select_slider", "toggle", "radio", "selectbox", "number_input", "multiselect")
# Views that draw controls the default view leaves out (a mask kind's own options).
VIEWS = {"pages/masks.py": [{"mask": k} for k in ("sliding-window", "prefix-LM", "block-diagonal",
                                                  "padding", "custom")]}  # fmt: skip
# Text boxes drawn everywhere but read only in one view: fuzzed there.
USED_IN = {("pages/multi-head.py", "sentence"): {"input": "sentence"}}
# Elements whose strings are not markdown: literal text (code, the text box itself),
# checked as HTML (plotly, html), the link box, or the URL of a page link.
NOT_MARKDOWN = {"code", "text_input", "plotly_chart", "html", "iframe", "page_link", "exception"}
NOTE_MAX = 2000  # characters: a note never echoes a long link back


@functools.cache
def _page_keys(file: str) -> tuple[dict[str, dict], dict[str, int], frozenset, dict[str, str]]:
    """The page's URL-bound controls, visited in every view and step.

    Returns ({key: the parameters that draw it (its step, its view)}, {free-text key:
    max_chars}, multiselect keys, {key: its default value as URL text}). `step` itself is
    a key on a page with steps.
    """
    keys: dict[str, dict] = {}
    text: dict[str, int] = {}
    multi, defaults = set(), {}
    for view in [{}, *VIEWS.get(file, [])]:
        first = run_page(file, **view)
        labels = [t.label for t in first.tabs]
        if labels and "step" not in keys:
            keys["step"], defaults["step"] = {}, labels[0]
        runs = [({}, first)] + [({"step": s}, run_page(file, **view, step=s)) for s in labels[1:]]
        seen: dict[str, list[dict]] = {}  # key: the steps of this view that draw it
        for step, at in runs:
            multi |= {w.key for w in at.multiselect if w.key}
            for kind in (*WIDGETS, "text_input"):
                for w in getattr(at, kind):
                    if not w.key or w.key.startswith(("_", "$$", "pick-", "guess-")):
                        continue
                    if w.key not in keys and w.key not in view and w.key != "step":
                        seen.setdefault(w.key, []).append(step)
                        defaults.setdefault(w.key, _url_text(at.session_state[w.key]))
                    if kind == "text_input":
                        text[w.key] = w.proto.max_chars
        for k, steps in seen.items():  # drawn on every step: the view is enough
            everywhere = len(steps) == len(runs)
            need = view if everywhere else {**view, "step": steps[0].get("step", labels[0])}
            keys[k] = USED_IN.get((file, k), need)
    return keys, text, frozenset(multi), defaults


def _url_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _open(file: str, params: dict[str, str | list[str]]) -> AppTest:
    """run_page, where a list value repeats the parameter (?k=a&k=b)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if file != "pages/home.py":
        at._registered_pages = _registry(60)
        at.switch_page(file)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return at


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
    """Every element allowed to render raw HTML, with its body (but the kit's own fixed
    script, which is the same text on every page and holds nothing from a link)."""
    for el in [*at.markdown, *at.caption]:
        if getattr(el.proto, "allow_html", False):
            yield el.value
    for el in at.get("html"):
        body = getattr(el.proto, "body", "")
        if body.strip() != chrome._SCROLLABLE_JS.strip():
            yield body


def _nodes(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _nodes(child)


def _strings(msg):
    """Every string in a protobuf message, nested messages and lists included."""
    for _, value in msg.ListFields():
        items = value if isinstance(value, (list, tuple)) or hasattr(value, "extend") else [value]
        for v in items:
            if isinstance(v, str):
                yield v
            elif hasattr(v, "ListFields"):
                yield from _strings(v)


def markdown_texts(at) -> list[str]:
    """The text of every element Streamlit reads as markdown: bodies of markdown, captions,
    notes and titles, and the labels, options and help of widgets, tabs and expanders."""
    out = []
    for node in _nodes(at._tree):
        proto = getattr(node, "proto", None)
        if node.type in NOT_MARKDOWN or proto is None or not hasattr(proto, "ListFields"):
            continue
        out.extend(_strings(proto))
    return out


_CODE_SPAN = re.compile(r"(?<!\\)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
_ESCAPED = re.compile(r"\\[!-/:-@\[-`{-~]")


def live_payloads(source: str) -> list[str]:
    """The payload forms still live in a markdown source: code spans (literal) and
    backslash-escaped characters (literal) are taken out first."""
    s = _ESCAPED.sub("□", _CODE_SPAN.sub("□", source))
    return [a for a in ACTIVE if a in s]


def check_rendered_safely(at, where) -> None:
    """No exception, no live payload in markdown, HTML or plotly, no long echo."""
    assert not at.exception, (where, [e.value for e in at.exception])
    for text in markdown_texts(at):
        assert not live_payloads(text), (where, live_payloads(text), text[:300])
    for body in _html_elements(at):
        assert not any(p in body for p in HTML_ACTIVE), (where, body[:200])
    for el in at.main.get("plotly_chart") + at.sidebar.get("plotly_chart"):
        spec = json.dumps(json.loads(el.proto.spec), ensure_ascii=False)
        assert not any(p in spec for p in ("<b>INJ", "<a href", "javascript:")), where
    for w in at.warning:
        assert len(w.value) <= NOTE_MAX, (where, len(w.value), w.value[:200])


def test_live_payloads_sees_live_markdown_and_not_quoted_or_escaped():
    """The checker itself: a raw payload is live; quoted or escaped by ui.escape it is not."""
    from ui import escape, safe_text

    for p in MARKDOWN[:-1]:
        assert live_payloads(f"note {p} end"), p
        assert not live_payloads(f"note `{safe_text(p, 200)}` end"), p
        assert not live_payloads(f"note {escape(p, 200)} end"), p
        assert not live_payloads(f"**{escape(p, 200)}**"), p


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_hostile_links_never_crash_never_inject_and_are_announced(lesson):
    keys, text, multi, _ = _page_keys(lesson.file)
    assert keys, "a page with no URL-bound controls?"
    rng = random.Random(f"fuzz-{lesson.url_path}")
    all_keys = sorted(keys)
    for case in range(N_CASES):
        chosen = rng.sample(all_keys, min(len(all_keys), rng.randint(1, 3)))
        params: dict[str, str] = {}
        for k in chosen:  # a control drawn only in some view or step: open that one
            if all(params.get(a, b) == b for a, b in keys[k].items()):
                params.update(keys[k])
        for k in chosen:
            params[k] = rng.choice(HOSTILE)  # may override a view another key needed
        checked = {k for k in chosen if all(params.get(a) == b for a, b in keys[k].items())}
        if rng.random() < 0.2:
            params["unknown_" + str(case)] = rng.choice(HOSTILE)
        at = run_page(lesson.file, **params)
        where = f"{lesson.url_path or 'home'}?{urlencode(params)[:300]}"
        check_rendered_safely(at, where)
        notes = " ".join(w.value for w in at.warning)
        for k in checked:
            v = params[k]
            if k in text:
                if len(v) > text[k]:  # taken cut short, and told so
                    assert f"`{k}` was {len(v):,} characters" in notes, (where, notes[:300])
                continue  # otherwise free text is valid by definition
            if k in multi and v == "":
                continue  # and so is an empty selection
            try:
                took = _took(v, at.session_state[k])
            except KeyError:
                took = False
            assert took or f"`{k}=" in notes, (where, k, notes[:300])


def _groups(file: str) -> list[tuple[dict, list[str]]]:
    """The page's controls grouped by the view and step that draw them."""
    keys = _page_keys(file)[0]
    groups: dict[str, tuple[dict, list[str]]] = {}
    for k, need in keys.items():
        groups.setdefault(json.dumps(need, sort_keys=True), (need, []))[1].append(k)
    return list(groups.values())


VARIANTS = ["markdown", "oversize", "repeated-last", "repeated-first", "digits"]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_every_control_shows_link_text_literally_and_says_what_it_did(lesson, variant):
    """Every control of the page at once gets the same kind of hostile value; then the
    checks of check_rendered_safely, and a truthful note for every control."""
    _, text, multi, defaults = _page_keys(lesson.file)
    payloads = {"markdown": MARKDOWN, "digits": DIGITS}.get(variant, MARKDOWN[:1] + MARKDOWN[3:4])
    for need, group in _groups(lesson.file):
        for payload in payloads:
            values: dict[str, str | list[str]] = {}
            for k in group:
                if variant == "oversize":
                    values[k] = (payload + " ") * (text.get(k, 3000) // len(payload) + 1)
                elif variant == "repeated-last":
                    values[k] = [defaults[k], payload]
                elif variant == "repeated-first":
                    values[k] = [payload, defaults[k]]
                else:
                    values[k] = payload
            params = {**need, **values}
            at = _open(lesson.file, params)
            where = f"{lesson.url_path or 'home'} {variant} {sorted(values)} {payload[:40]!r}"
            check_rendered_safely(at, where)
            notes = " ".join(w.value for w in at.warning)
            for k, v in values.items():
                last = v[-1] if isinstance(v, list) else v
                if k in text:
                    held = at.session_state[k]
                    assert held == last[: text[k]], (where, k)  # the last value, cut to the box
                    if isinstance(v, list):
                        assert f"The link gave `{k}` 2 times" in notes, (where, k, notes[:300])
                    if len(last) > text[k]:
                        said = f"was {len(last):,} characters long; the box holds {text[k]:,}"
                        assert said in notes, (where, k, notes[:300])
                    continue
                if k in multi and isinstance(v, list):
                    continue  # a list is a multiselect's own form
                took = not isinstance(v, list) and _took(v, at.session_state[k])
                assert took or f"`{k}=" in notes or f"`{k}` 2 times" in notes, (where, k)


def test_a_repeated_parameter_is_named_with_the_value_used():
    """?seed=3&seed=5 on the home page: Streamlit takes the last; the note says so."""
    at = _open("pages/home.py", {"seed": ["3", "5"]})
    assert at.session_state["seed"] == 5
    notes = " ".join(w.value for w in at.warning)
    assert "The link gave `seed` 2 times" in notes and "using the last one, **5**" in notes


def test_five_thousand_digit_token_ids_are_read_as_words_with_a_note():
    """The issue's link: /heads?tokens=1%20<4,301 digits> raised ValueError in int()."""
    for digits in ("9" * 4301, "-" + "9" * 5000, "٣" * 5000):
        at = run_page("pages/heads.py", tokens="1 " + digits)
        assert not at.exception, [e.value for e in at.exception]
        notes = " ".join(w.value for w in at.warning)
        n = len(digits.lstrip("-"))
        assert f"({n:,} digits) is not a token id" in notes, notes[:300]


def test_token_ids_with_thousands_of_leading_zeros_are_read_as_ids():
    """int() counts leading zeros against its 4,300-digit limit: 0…07 is the id 7."""
    at = run_page("pages/heads.py", tokens="1 " + "0" * 4400 + "7 " + "0" * 5000)
    assert not at.exception, [e.value for e in at.exception]
    assert not any("not a token id" in w.value for w in at.warning)
