"""Controls bound to URL query parameters, with visible fallbacks.

Each control's widget key *is* its URL parameter name (and, by convention, the
attn_core argument it feeds): `d_k` is `d_k` from the address bar to the tensor.

Streamlit itself drops a URL value the widget cannot take (wrong type, out of
range, not an option) and silently shows the default. Here every control reads
the raw URL value first, then compares it with what the widget ended up
holding; when they differ the page gets a note saying what was asked for and
what is shown instead. Notes stay until the user changes that control.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import streamlit as st

from figures.style import escape, safe_text

from . import content, events
from .lesson import by_file

_NOTES = "_ui_url_notes"  # session_state: {key: (message, value shown)}
_RUN_NOTES = "_ui_run_notes"  # session_state: notes raised by page logic this run
_STEP_KEYS = "_ui_step_keys"  # session_state: keys of steps() tabs, which show their own note
_OPEN_STEP = "_ui_open_step"  # session_state: (key, labels, open label) of this run's steps()
_NOTING = "_ui_noting"  # session_state: the key lists of the open noting() blocks
_NOTED = "_ui_noted"  # session_state: keys whose notes a noting() block showed this run
_PAGE_KEYS = "_ui_page_keys"  # session_state: the keys of the controls this page has drawn
SCROLL = "_ui_scroll"  # session_state: where the next run's page scrolls to ("step", "top")


def _raw(key: str) -> str | list[str] | None:
    """The URL's value for `key` when the widget is about to be seeded from it.

    Only on the widget's first run in this visit (its key not yet in session
    state): afterwards the widget's own state wins and the URL follows it.
    Returns None when absent.
    """
    st.session_state.setdefault(_PAGE_KEYS, set()).add(key)
    if key in st.session_state:
        return None
    qp = st.query_params
    if key not in qp:
        return None
    values = qp.get_all(key)
    if len(values) == 1:
        return values[0]
    return values


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_show(v) for v in value) or "none"
    return str(value)


def _w(name: str, /, **fields: Any) -> str:
    """The controls' sentence `name` (content/kit.md, `controls.<name>`), fields filled."""
    return content.words("kit", f"controls.{name}", **fields)


def _bold(value: Any) -> str:
    """A widget's value for a note, in bold and escaped (an option label, a number)."""
    s = escape(_show(value), 60).strip()
    return f"**{s}**" if s else "nothing"


def _note(key: str, raw: Any, value: Any, message: str) -> None:
    """Keep `message` about the link's `key` (none: forget an old one once the value moved)."""
    events.value_set(key, value)  # a teacher's session drives its class with every value
    notes = st.session_state.setdefault(_NOTES, {})
    if raw is not None and message:
        notes[key] = (message, value)
    elif key in notes and notes[key][1] != value:
        del notes[key]  # the user moved this control: the old complaint no longer applies
    for keys in st.session_state.get(_NOTING, ()):
        keys.append(key)  # every open noting() block shows this control's note


def _record(
    key: str, raw: Any, value: Any, took: Callable[[str], bool], expected: str, *, many=False
) -> None:
    """Compare the link's value with what the widget holds and note any difference.

    `took(raw)` says whether the widget holds what the link asked for. A parameter given
    several times (`?d_k=2&d_k=4`) is a list; unless the control holds a list (`many`),
    Streamlit uses the last one or, for some widgets, the default."""
    message = ""
    if raw is not None:
        asked = ",".join(raw) if isinstance(raw, list) else raw
        if isinstance(raw, list) and not many and took(raw[-1]):
            message = _w(
                "repeated", key=key, n=len(raw), asked=safe_text(asked), value=_bold(value)
            )
        elif (isinstance(raw, list) and not many) or not took(raw):
            message = _w(
                "unusable", key=key, asked=safe_text(asked), expected=expected, value=_bold(value)
            )
    _note(key, raw, value, message)


def _float_eq(raw: Any, value: float) -> bool:
    try:
        x = float(raw)
    except (TypeError, ValueError):
        return False
    return math.isfinite(x) and math.isclose(x, float(value), rel_tol=1e-9, abs_tol=1e-12)


def slider(
    key: str,
    label: str,
    lo: int | float,
    hi: int | float,
    default: int | float,
    *,
    step: int | float | None = None,
    fmt: str | None = None,
    help: str | None = None,
) -> Any:
    """A numeric slider bound to ?key=…; ints stay ints."""
    raw = _raw(key)
    value = st.slider(
        label,
        lo,
        hi,
        default,
        step=step,
        format=fmt,
        key=key,
        help=help,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
    )
    took = lambda r: _float_eq(r, value)  # noqa: E731
    _record(key, raw, value, took, f"a number from {_show(lo)} to {_show(hi)}")
    return value


def select_slider(
    key: str,
    label: str,
    options: Sequence[Any],
    default: Any,
    *,
    fmt: Callable[[Any], str] = str,
    help: str | None = None,
    expected: str | None = None,
) -> Any:
    """A slider over fixed options (powers of two, log-spaced values)."""
    raw = _raw(key)
    value = st.select_slider(
        label,
        options=list(options),
        value=default,
        format_func=fmt,
        key=key,
        help=help,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
    )
    if expected is None:
        expected = f"one of {fmt(options[0])} … {fmt(options[-1])}"
    _record(key, raw, value, lambda r: fmt(value) == r or _float_eq(r, value), expected)
    return value


def log_values(lo: float, hi: float, extra: Sequence[float] = ()) -> list[float]:
    """Round, log-spaced values between lo and hi: …, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1, …"""
    out = set(extra) | {lo, hi}
    for e in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in (1, 1.5, 2, 3, 5, 7):
            x = float(f"{m * 10.0**e:.6g}")
            if lo <= x <= hi:
                out.add(x)
    return sorted(out)


def log_slider(
    key: str, label: str, lo: float, hi: float, default: float, *, help: str | None = None
) -> float:
    """A slider that moves on a log scale, e.g. temperature 0.05 … 20."""
    options = log_values(lo, hi, (default,))
    return select_slider(
        key,
        label,
        options,
        default,
        fmt=lambda x: f"{x:g}",
        help=help,
        expected=f"a value from {lo:g} to {hi:g} on the slider's scale",
    )


def pow2_slider(key: str, label: str, lo: int, hi: int, default: int, *, help=None) -> int:
    """A slider over powers of two, e.g. d_k = 1, 2, 4 … 1024."""
    options = [2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1)]
    return select_slider(
        key,
        label,
        options,
        default,
        help=help,
        expected=f"a power of two from {lo} to {hi}",
    )


def _choice(widget: Callable, key: str, label: str, options, default, fmt, **kw) -> Any:
    """A radio or select box: one option of `options`, the link's value read by its label."""
    raw = _raw(key)
    options = list(options)
    value = widget(
        label,
        options,
        index=options.index(default),
        format_func=fmt,
        key=key,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
        **kw,
    )
    took = lambda r: r in (fmt(value), str(value))  # noqa: E731
    _record(key, raw, value, took, "one of " + ", ".join(fmt(o) for o in options))
    return value


def radio(
    key: str,
    label: str,
    options: Sequence[Any],
    default: Any,
    *,
    fmt: Callable[[Any], str] = str,
    horizontal: bool = True,
    help: str | None = None,
) -> Any:
    return _choice(st.radio, key, label, options, default, fmt, horizontal=horizontal, help=help)


def selectbox(
    key: str,
    label: str,
    options: Sequence[Any],
    default: Any,
    *,
    fmt: Callable[[Any], str] = str,
    help: str | None = None,
) -> Any:
    return _choice(st.selectbox, key, label, options, default, fmt, help=help)


def toggle(key: str, label: str, default: bool, *, help: str | None = None) -> bool:
    raw = _raw(key)
    value = st.toggle(
        label,
        value=default,
        key=key,
        help=help,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
    )
    _record(key, raw, value, lambda r: r.lower() == str(value).lower(), "true or false")
    return value


def _is_int_in(raw: Any, lo: int, hi: int) -> bool:
    return (
        isinstance(raw, str)
        and re.fullmatch(r"[+-]?\d{1,18}", raw.strip()) is not None
        and (lo <= int(raw) <= hi)
    )


_FIX = "_ui_fix"  # session_state: {key: value to force on the next run}


def _apply_fix(key: str) -> None:
    """Before a widget is created: force a value decided on the previous run."""
    fixes = st.session_state.get(_FIX)
    if fixes and key in fixes:
        st.session_state[key] = fixes.pop(key)


def _force_default(key: str, default: Any) -> None:
    """The widget took a value it must not hold (Streamlit seeds a number box with inf
    from ?seed=1e999): rerun once with the default forced in, which also fixes the URL."""
    st.session_state.setdefault(_FIX, {})[key] = default
    st.rerun()


def number(key: str, label: str, lo: int, hi: int, default: int, *, help: str | None = None) -> int:
    """An integer box (seeds, counts)."""
    _apply_fix(key)
    raw = _raw(key)
    # A float box shown as a whole number: Streamlit's int box crashes on ?key=1e999
    # (it tries int(inf)); the float box holds the bad value and we replace it below.
    value = st.number_input(
        label,
        min_value=float(lo),
        max_value=float(hi),
        value=float(default),
        step=1.0,
        format="%.0f",
        key=key,
        help=help,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
    )
    expected = f"a whole number from {lo} to {hi}"
    if value is None or not math.isfinite(value) or not lo <= value <= hi or value != int(value):
        _record(key, raw if raw is not None else str(value), default, lambda r: False, expected)
        _force_default(key, float(default))
    _record(key, raw, value, lambda r: _float_eq(r, value), expected)
    return int(value)


def text(
    key: str, label: str, default: str, *, max_chars: int = 500, help: str | None = None
) -> str:
    """Free text; always shown back as text, never as HTML or markdown.

    Streamlit takes a link's text even when it does not fit: it keeps the first
    `max_chars` characters, and of a repeated parameter the last value. The note says
    so, with lengths and counts but without echoing the text itself."""
    raw = _raw(key)
    value = st.text_input(
        label,
        value=default,
        max_chars=max_chars,
        key=key,
        help=help,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
    )
    value = value if value is not None else default
    said = []
    if raw is not None:
        asked = raw[-1] if isinstance(raw, list) else raw
        if isinstance(raw, list):
            said.append(_w("text.repeated", key=key, n=len(raw)))
        if len(asked) > max_chars and value == asked[:max_chars]:
            which = "That one" if isinstance(raw, list) else f"The link's `{key}`"
            said.append(_w("text.long", which=which, n=len(asked), max_chars=max_chars))
        elif value != asked:
            said.append(_w("text.changed", key=key))
    _note(key, raw, value, " ".join(said))
    return value


def multiselect(
    key: str,
    label: str,
    options: Sequence[Any],
    default: Sequence[Any] = (),
    *,
    fmt: Callable[[Any], str] = str,
    help: str | None = None,
    exact: bool = False,
) -> list[Any]:
    """`exact`: typing filters the options by prefix and Enter takes the top one only
    (Streamlit's default matches fuzzily and offers "Select all matches" first, so Enter
    after "L2H1" took L2H1, L2H10 and L2H11)."""
    raw = _raw(key)
    # Streamlit binds a list as ?k=a&k=b and ignores ?k=a,b; a link in that form (all eight
    # heads: ?ablate=L0H0,…,L1H3) seeds the widget instead, on the session's first run.
    by_name = {fmt(o): o for o in options}
    parts = [p for p in raw.split(",") if p] if isinstance(raw, str) and "," in raw else []
    seeded = key not in st.session_state and parts and all(p in by_name for p in parts)
    if seeded:
        st.session_state[key] = list(dict.fromkeys(by_name[p] for p in parts))
    value = st.multiselect(
        label,
        list(options),
        default=None if seeded else list(default),
        format_func=fmt,
        key=key,
        help=help,
        bind="query-params",
        on_change=events.moved,
        args=(key,),
        **(dict(filter_mode="prefix", select_all=False) if exact else {}),
    )

    def took(r: str | list[str]) -> bool:  # ?k=a,b and ?k=a&k=b both name a list
        asked = [a for part in ([r] if isinstance(r, str) else r) for a in part.split(",") if a]
        return sorted(asked) == sorted(fmt(v) for v in value)

    _record(key, raw, value, took, "a list of " + ", ".join(fmt(o) for o in options), many=True)
    return value


def tabs(key: str, labels: Sequence[str]) -> list:
    """Tabs that split a page into steps, bound to ?key=<label> (see `steps`).

    The first label is the default; a link naming no tab falls back to it with a
    note above the tabs.
    """
    labels = list(labels)
    raw = _raw(key)
    box = st.container()  # the link's note, if any, goes above the tabs
    out = st.tabs(labels, key=key, bind="query-params", on_change=events.moved, args=(key,))
    try:
        value = st.session_state[key]
    except KeyError:
        value = labels[0]
    value = value if value in labels else labels[0]
    _record(key, raw, value, lambda r: r == value, "one of: " + ", ".join(labels))
    st.session_state.setdefault(_STEP_KEYS, set()).add(key)
    st.session_state[_OPEN_STEP] = (key, tuple(labels), value)  # for prev_next()
    if key in st.session_state.get(_NOTES, {}):
        with box:
            st.warning(st.session_state[_NOTES][key][0], icon=":material/link_off:")
    return out


def steps(bodies: Mapping[str, Callable[..., Any]], *args: Any, key: str = "step") -> None:
    """A page's steps: one tab per label, and only the open step's function runs.

    `bodies` maps each step's label (its `?step=` value) to the function that draws
    it; each is called with `args` (the page's settings). A hidden step sends nothing
    to the browser, so a slider move redraws the charts of one step instead of every
    chart on the page — in a browser each redrawn plotly chart costs tens of ms.
    """
    page = st.session_state.get("_ui_page")
    want = by_file(page).steps if page else ()
    if want and tuple(bodies) != want:
        raise ValueError(f"{page}: steps {tuple(bodies)} differ from ui/lesson.py's {want}")
    for tab, body in zip(tabs(key, list(bodies)), bodies.values(), strict=True):
        with tab:
            if tab.open:
                body(*args)


def step_before(key: str, labels: Sequence[str]) -> str:
    """The step that steps(key, labels) will open in this run, read before it is drawn."""
    value = st.session_state.get(key, st.query_params.get(key))
    return value if value in labels else labels[0]


def _and(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def used_by(key: str, labels: Sequence[str], used: Sequence[str]) -> None:
    """A caption under sidebar controls: which steps they drive, and whether the open
    step is one of them (so nobody moves a slider that changes nothing on screen)."""
    names = [label for label in labels if label in used]
    text = _w("used_by", names=_and(names), s="s" if len(names) > 1 else "")
    if (now := step_before(key, labels)) not in used:
        text += " " + _w("used_by.not_open", step=now)
    st.caption(":material/info: " + text)


def open_step() -> tuple[str, tuple[str, ...], str] | None:
    """(key, labels, open label) of the steps() drawn in this run, or None."""
    return st.session_state.get(_OPEN_STEP)


def go_to_step(key: str, label: str) -> None:
    """A button callback: open step `label` of the steps() bound to `key`, and scroll the
    page to that step's first chart (the button sat at the bottom of the last step)."""
    st.session_state[key] = label
    scroll_to("step")
    events.moved(key)


def scroll_to(where: str) -> None:
    """Ask the end of this run (ui.prev_next) to scroll the page: "step" to the open step's
    first chart, "top" to the page's top. A page switch's "top" wins."""
    if st.session_state.get(SCROLL) != "top":
        st.session_state[SCROLL] = where


def note(message: str) -> None:
    """A page-logic fallback for this run (e.g. heads that do not divide d_model)."""
    st.session_state.setdefault(_RUN_NOTES, []).append(message)


def show_notes(keys: Sequence[str] | None = None) -> None:
    """Render pending notes as warnings, right after the controls they concern.

    `keys` limits the link notes to those controls, so a page split into fragments
    can show each section's notes under that section's controls (and have them
    update when the fragment reruns). Page-logic notes from `note()` always show.
    """
    own = st.session_state.get(_STEP_KEYS, set())  # steps() shows these above its tabs
    noted = st.session_state.get(_NOTED, set())  # shown already, by a noting() block
    url_notes = [
        m
        for k, (m, _) in st.session_state.get(_NOTES, {}).items()
        if (k in keys if keys is not None else k not in own) and k not in noted
    ]
    run_notes = st.session_state.pop(_RUN_NOTES, [])
    for message in url_notes + run_notes:
        st.warning(message, icon=":material/link_off:")


@contextmanager
def noting() -> Iterator[list[str]]:
    """Controls drawn inside the block show their link notes right after it.

    `with ui.noting(): B = ui.slider("batch", …)`: no hand-kept list of keys; the
    block yields the keys it saw. Page-logic notes from `note()` show there too.
    """
    keys: list[str] = []
    stack = st.session_state.setdefault(_NOTING, [])
    stack.append(keys)
    try:
        yield keys
    finally:
        stack.remove(keys)
    show_notes(keys=keys)
    st.session_state.setdefault(_NOTED, set()).update(keys)  # a later show_notes skips them


def reset_notes() -> None:
    """Forget URL notes (called when the user arrives on a different page)."""
    st.session_state[_NOTES] = {}
    st.session_state[_RUN_NOTES] = []


def leave_page() -> None:
    """The user arrives on a different page: forget the last page's control values and
    notes. Streamlit keeps a widget's value under its key for a run after the widget has
    gone, and pages share names (`seed` is /alternatives' number box and /heads' slider):
    the new page would start from the old page's value, of the other widget's type."""
    for key in st.session_state.pop(_PAGE_KEYS, set()):
        st.session_state.pop(key, None)
    reset_notes()
