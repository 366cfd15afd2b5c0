"""The page chrome every page shares: header, device badge, charts, Try this, Previous/Next."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import NamedTuple

import streamlit as st
import torch
from streamlit import config as st_config
from streamlit.runtime.pages_manager import PagesManager

from attn_core import device_label, pick_device
from figures import Chart

from . import (
    classroom,
    content,
    controls,
    events,
    exercises,
    plotly_spec,
    replay,
    runtime,
    share,
    wake,
)
from .controls import (
    escape,  # the one escaping function (also ui.escape)
    noting,
)
from .lesson import Lesson, available, by_file

_CONTROLS_SLOT = "_ui_controls_slot"  # session_state: presenter mode's column for Controls
PLOTLY_CONFIG = {
    "displaylogo": False,
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
    "toImageButtonOptions": {"format": "png", "scale": 2},
}


@st.cache_resource(max_entries=1)
def _device() -> tuple[torch.device, str | None]:
    """Chosen once per server. A bad ATTN_DEVICE falls back to the CPU with a note."""
    try:
        return pick_device(), None
    except ValueError as e:
        return torch.device("cpu"), f"ATTN_DEVICE was ignored: {e}. Computing on the CPU."


def device() -> torch.device:
    """Where this page computes."""
    return _device()[0]


def device_badge() -> None:
    dev, problem = _device()
    if share.presenting():  # short: it shares the title's row on a projector
        st.caption(f":material/memory: **{device_label(dev)}**")
    else:
        version = torch.__version__.split("+")[0]
        st.caption(
            f":material/memory: Computed live by PyTorch {version} on **{device_label(dev)}**"
        )
    if problem:
        st.warning(problem)


def page_header(file: str, intro: str | None = None) -> Lesson:
    """Title, the question the page answers, an intro, and where it computes."""
    replay.arm()
    _LOCAL.present_slot = None  # (a run cut short left its slot behind)
    if PagesManager.uses_pages_directory:
        # The very first request after the server starts may name a page file directly
        # (e.g. /softmax): Streamlit then runs it through its automatic pages/ navigation,
        # without app.py. Switch that mode off and rerun, so app.py's navigation, page
        # config and titles apply; the same URL resolves to the same page. (AppTest resets
        # the mode before every run, so there a rerun would only drop button clicks.)
        PagesManager.uses_pages_directory = False
        if not st_config.get_option("global.appTest"):
            st.rerun()
    lesson = by_file(file)
    if st.session_state.get("_ui_page") != file:
        if st.session_state.get("_ui_page") is not None:
            controls.scroll_to("top")  # a page switch keeps no scroll of the last page
        controls.leave_page()  # the last page's values and notes do not belong here
        st.session_state["_ui_page"] = file
    classroom.sync(lesson.url_path)  # a following page may switch to the teacher's here
    st.session_state["_ui_chart_n"] = 0
    st.session_state.pop(controls._NOTED, None)  # this run's noting() blocks record again
    st.session_state.pop(controls._OPEN_STEP, None)  # set again by this run's ui.steps()
    st.session_state.pop(exercises.EXERCISE_LOG, None)  # this run's exercises log again
    # The title block is drawn after the class banner under it: a woken follower's run
    # is replayed from the banner on (ui.replay), so that all but the banner is shared.
    head = st.container()
    classroom.banner()  # class mode: following, exploring, or the teacher's room
    if held := runtime.slowed():  # this run is one the server held back (ui.runtime.gate)
        n, gap = held
        st.info(content.words("kit", "runtime.slowed", n=n, s="" if n == 1 else "s", gap=gap),
                icon=":material/speed:")  # fmt: skip
    with head:
        _title(lesson)
    st.session_state.pop(_CONTROLS_SLOT, None)
    if share.presenting():
        _present_row(intro)
    elif exercises.following():  # a student's phone: the teacher's chart on the first screen
        _about(st, intro)
        device_badge()
    else:
        if intro:
            st.markdown(share.where(intro))
        device_badge()
    return lesson


def _title(lesson: Lesson) -> None:
    """The page's styles, the sidebar's share box, its title and its question."""
    st.html(_FOCUS_CSS)
    st.html(_SCROLLABLE_JS, unsafe_allow_javascript=True)
    if share.presenting():
        st.html(share.PRESENT_CSS)
    else:
        with st.sidebar:
            st.markdown("**Share this view**")
            share.link_box()
            # Filled at the run's end (prev_next): the controls bound to the URL have
            # written this run's values into it by then (a following student's link
            # carries the teacher's values, not the ones the browser sent).
            _LOCAL.present_slot = st.empty()
    if share.presenting():  # one row: the title and question, then the closed boxes
        widths = [3.6, 0.95, 1.15, 1.8, 1.3] if classroom.teaching() else [4.2, 0.95, 1.15, 1.55]
        row = st.container(key="ui_title_row")
        title, *_LOCAL.present_cols = row.columns(widths, vertical_alignment="center")
        with title:
            st.title(lesson.h1)
            st.markdown(f"*{lesson.question}*")
        return
    st.title(lesson.h1)
    st.markdown(f"*{lesson.question}*")


def _about(where, intro: str | None) -> None:
    """The lesson's introduction in a closed box (presenter mode, a following student)."""
    if intro:
        label = "About" if share.presenting() else "About this lesson"
        with where.expander(label, icon=":material/info:"):
            st.markdown(share.where(intro))


def _present_row(intro: str | None) -> None:
    """A projector's first screen belongs to the step's chart: the question stays in view;
    the introduction and the controls wait in two closed boxes, side by side on one row
    with where the page computes (and a teacher's class)."""
    about, knobs, *room, badge = _LOCAL.present_cols  # made in the title's row (_title)
    _about(about, intro)
    st.session_state[_CONTROLS_SLOT] = knobs  # controls_area() opens its box there
    if room:
        with room[0]:
            classroom.teacher_panel()
    with badge:
        device_badge()


_LOCAL = threading.local()  # this script thread's run: the presenter link's slot


def _present_link(file: str) -> None:
    """The sidebar's "Presenter mode" link, with the URL as this run leaves it."""
    slot, _LOCAL.present_slot = getattr(_LOCAL, "present_slot", None), None
    if slot is not None:
        with slot:
            share.present_toggle_link(file)


def _next_chart_number() -> int:
    """A counter that makes every chart's download key unique within a run (and across
    fragment reruns, which continue it)."""
    n = st.session_state.get("_ui_chart_n", 0) + 1
    st.session_state["_ui_chart_n"] = n
    return n


@contextmanager
def controls_area() -> Iterator[None]:
    """Where a page's main controls go: the sidebar, or (presenter mode, no sidebar)
    a closed box at the top of the page. `with ui.controls_area():` — the link notes of
    the controls drawn inside show on the page right below it (ui.noting)."""
    if share.presenting():  # closed: the first screen is the step's chart, not sliders
        slot = st.session_state.get(_CONTROLS_SLOT) or st  # page_header's place for it
        box = slot.container(key=share.CONTROLS_KEY)  # open, a panel beside the charts
        area = box.expander("Controls", expanded=False, icon=":material/tune:")
    else:
        area = st.sidebar
    with noting(), area:
        yield


WORDS_MAX = 40_000  # characters of one chart's words


class InWords(NamedTuple):
    alt: str  # the chart's accessible name: its title and first data sentence
    text: str  # the whole description, shown under the chart
    shown: str  # `text` escaped for markdown, as the "Chart in words" box shows it


def in_words(chart: Chart) -> InWords:
    """A chart's text alternative, computed from the numbers it draws (figures.describe);
    a map drawn as an image is read from its table.

    Pages cache their charts (one object for every session at one setting), so the words
    are kept on the chart: a class of 150 describes each chart once, not 150 times. They
    are made again when content/charts.md changes."""
    say = content.sections("charts")  # the same dict until the file changes
    kept = chart.__dict__.get("_ui_in_words")
    if kept is not None and kept[0] is say:
        return kept[1]
    text = chart.in_words(partial(content.words, "charts"))
    # WORDS_MAX bounds what one chart may say (a mosaic of 144 heads on 64 tokens stays
    # under it); a longer text would be cut with "…", so none is: describe reads the rest
    # panels by their peaks only
    words = InWords(
        ". ".join(text.split(". ")[:2]).rstrip(".") + ".", text, escape(text, WORDS_MAX)
    )
    object.__setattr__(chart, "_ui_in_words", (say, words))  # (a frozen dataclass)
    return words


def show(chart: Chart, *, key: str | None = None, **plotly_kw) -> None:
    """A chart, then the caption that says what to notice, and its data as CSV.

    PNG export is plotly's own toolbar (works offline). Extra keyword arguments go to
    st.plotly_chart (e.g. on_select for clickable charts)."""
    # the cached chart's figure (or its projector's copy), serialised once for every
    # session that shows it (plotly_spec.sent)
    fig = plotly_spec.sent(chart, share.for_projector if share.presenting() else None)
    words = in_words(chart)
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key, alt=words.alt, **plotly_kw)
    st.caption(chart.caption)
    with st.expander(content.words("charts", "expander"), icon=":material/description:"):
        st.markdown(words.shown)
    title = chart.fig.layout.title.text or "chart"
    st.download_button(
        "Data (CSV)",
        type="tertiary",
        data=lambda fig=chart.table or chart.fig: share.figure_csv(fig),  # only when clicked
        file_name=share.csv_name(title),
        mime="text/csv",
        icon=":material/download:",
        help=f"Download the numbers behind “{escape(title, 200)}” as CSV",
        key=f"csv-{key or ''}-{_next_chart_number()}",
        on_click="ignore",
    )


events.subscribe(events.CHART, show)  # class mode's reveal charts are drawn like any other


def tokens(where, heading: str, text: str) -> None:
    """A line saying what a model reads, and its tokens as code. On a projector the
    tokens wait in a closed box under that line (the first screen is the step's chart)."""
    if share.presenting():
        with where.expander(heading.rstrip(": "), icon=":material/notes:"):
            st.code(text, language=None, wrap_lines=True)
        return
    where.markdown(heading)
    where.code(text, language=None, wrap_lines=True)


def try_this(items: list[tuple[str, str]]) -> None:
    """A box of experiments: (what to do, what you should see)."""
    with st.container(border=True):
        st.markdown("### :material/science: Try this")
        st.markdown(share.where("\n".join(f"- **{do}** — {see}" for do, see in items)))


def explain(title: str, body: str, *, expanded: bool = False) -> None:
    """A short explanation in a collapsible box."""
    with st.expander(title, expanded=expanded, icon=":material/lightbulb:"):
        st.markdown(body)


_FOCUS_CSS = """
<style>
/* A visible focus ring on whatever the keyboard reaches (WCAG 2.4.7): Streamlit's own
   styles drop the outline of some links and buttons. */
a:focus-visible, button:focus-visible, [role="tab"]:focus-visible, [tabindex]:focus-visible,
input:focus-visible, [role="slider"]:focus-visible, summary:focus-visible {
  outline: 3px solid #0072B2 !important; outline-offset: 2px;
}
/* A phone (issue 50): a finger, not a mouse, so every control of the page is at least
   44 px tall; a wide table scrolls in its own box, never the page. Plotly's own toolbar
   keeps its size. */
@media (max-width: 640px) {
  [data-testid="stMain"] button:not(.modebar-btn), [data-testid="stMain"] [role="tab"],
  [data-testid="stMain"] summary, [data-testid="stMain"] a[data-testid="stPageLink-NavLink"],
  [data-testid="stMain"] [data-testid="stRadio"] label,
  [data-testid="stMain"] [data-testid="stCheckbox"] label { min-height: 44px; }
  [data-testid="stMain"] [data-testid="stRadio"] label,
  [data-testid="stMain"] [data-testid="stCheckbox"] label,
  [data-testid="stMain"] summary { display: flex; align-items: center; }
  [data-testid="stTable"], [data-testid="stMarkdownContainer"] table {
    display: block; max-width: 100%; overflow-x: auto; }
}
/* Class mode's join screen: the code in type the back row reads. */
.st-key-ui_join_screen [data-testid="stMarkdownContainer"] p { font-size: 1.6rem !important; }
.st-key-ui_join_screen [data-testid="stMarkdownContainer"] p:first-child {
  font-size: 2.4rem !important; }
.st-key-ui_join_screen strong { font-size: 3.4rem; letter-spacing: 0.08em; }
/* Code blocks: the highlighter's light token colours fall below 4.5:1 on the block's
   background; darker ones of the same hue. */
[data-testid="stCode"] .token.boolean, [data-testid="stCode"] .token.number,
[data-testid="stCode"] .token.constant { color: #8A4B00 !important; }
[data-testid="stCode"] .token.comment, [data-testid="stCode"] .token.prolog,
[data-testid="stCode"] .token.punctuation { color: #5F6B7A !important; }
[data-testid="stCode"] .token.string, [data-testid="stCode"] .token.char,
[data-testid="stCode"] .token.attr-value { color: #1F7A3A !important; }
[data-testid="stCode"] .token.keyword, [data-testid="stCode"] .token.operator,
[data-testid="stCode"] .token.builtin { color: #0B5CA8 !important; }
[data-testid="stCode"] .token.function, [data-testid="stCode"] .token.class-name,
[data-testid="stCode"] .token.decorator { color: #8E3C9E !important; }
</style>
"""

# A box that scrolls sideways (a wide formula or table on a phone) must be reachable by
# keyboard (WCAG 2.1.1; axe's scrollable-region-focusable): each gets tabindex=0 and a
# name. Installed once per browser tab; it watches the page as runs redraw it.
_SCROLLABLE_JS = """
<script>
(() => {
  if (window.__attnScrollables) return;
  window.__attnScrollables = true;  // tests call window.__attnMarkScrollables() before axe
  const mark = () => {
    for (const el of document.querySelectorAll(
        '.katex-display, [data-testid="stTable"], [data-testid="stTable"] div, '
        + '[data-testid="stMarkdownContainer"] pre, [data-testid="stMarkdownContainer"] table')) {
      const wide = el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1;
      const css = getComputedStyle(el);
      const scrolls = /(auto|scroll)/.test(css.overflowX + css.overflowY);
      if (wide && scrolls && !el.hasAttribute("tabindex")) {
        el.setAttribute("tabindex", "0");
        el.setAttribute("role", "region");
        el.setAttribute("aria-label", "Scrolls sideways: "
          + (el.innerText || el.textContent || "").trim().slice(0, 60));
      }
    }
  };
  // Beside plotly's PNG button, one for SVG (vector, for papers and slides): it clicks
  // the PNG button with the chart's image format set to SVG for that one click.
  const svgButtons = () => {
    const pngs = '.modebar-btn[data-title="Download plot as a PNG"]';
    for (const png of document.querySelectorAll(pngs)) {
      if (png.parentElement.querySelector(".attn-svg")) continue;
      const a = document.createElement("a");
      a.className = "modebar-btn attn-svg";
      a.setAttribute("rel", "tooltip");
      a.setAttribute("role", "button");
      a.setAttribute("tabindex", "0");
      a.setAttribute("data-title", "Download plot as an SVG (vector)");
      a.setAttribute("aria-label", "Download plot as an SVG (vector)");
      a.textContent = "SVG";  // (markup in this script would be sanitised away)
      a.style.font = "700 11px sans-serif";
      a.style.padding = "3px 4px";
      const save = (e) => {
        e.preventDefault();
        const gd = a.closest(".js-plotly-plot");
        const opts = gd && gd._context && gd._context.toImageButtonOptions;
        if (!opts) return;
        const was = opts.format;
        opts.format = "svg";  // plotly reads it when the click starts
        try { png.click(); } finally { opts.format = was; }
      };
      a.addEventListener("click", save);
      a.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") save(e); });
      png.after(a);
    }
  };
  const mark_all = () => { mark(); svgButtons(); };
  window.__attnMarkScrollables = mark_all;
  let due = null;
  new MutationObserver(() => { clearTimeout(due); due = setTimeout(mark_all, 200); })
    .observe(document.body, {childList: true, subtree: true});
  window.addEventListener("resize", () => { clearTimeout(due); due = setTimeout(mark_all, 200); });
  mark_all();
})();
</script>
"""

# Run once where the run asked for it (ui.controls.scroll_to): the page's scroller (stMain)
# to its top, or to the open step's first chart or exercise, near the top of the screen,
# with the step's tabs still in view when they are close above it. The step's charts draw
# after the run, so it follows the layout for a few seconds, until the reader scrolls.
_SCROLL_JS = """
<script>
(() => {
  const where = "%(where)s", run = %(run)d;  // run: a new script every time, so it runs
  const main = document.querySelector('[data-testid="stMain"]');
  if (!main) return;
  let mine = true;
  const off = () => { mine = false; };
  for (const e of ["wheel", "touchmove", "keydown", "mousedown"])
    window.addEventListener(e, off, {once: true, capture: true, passive: true});
  const at = (el) => el.getBoundingClientRect().top - main.getBoundingClientRect().top
    + main.scrollTop;
  const goal = () => {
    const tabs = main.querySelector('.stTabs');
    if (where !== "step" || !tabs) return 0;
    const panel = tabs.querySelector('[role="tabpanel"]:not([hidden])');
    const first = panel && panel.querySelector(
      '[data-testid="stPlotlyChart"], [class*="st-key-predict-"]');
    const gap = Math.min(120, 0.12 * main.clientHeight);
    return first ? Math.max(at(tabs), at(first) - gap) : at(tabs);
  };
  const t0 = performance.now();
  const tick = () => {
    if (!mine) return;
    const y = Math.max(0, Math.min(goal(), main.scrollHeight - main.clientHeight));
    if (Math.abs(main.scrollTop - y) > 1) main.scrollTop = y;
    if (performance.now() - t0 < 5000) setTimeout(tick, 100);
  };
  tick();
})();
</script>
"""


def _scroll() -> None:
    """Where this run asked the page to scroll (a step button, a page switch, a class)."""
    where = st.session_state.pop(controls.SCROLL, None)
    if where:
        run = st.session_state.get("_ui_scroll_n", 0) + 1
        st.session_state["_ui_scroll_n"] = run
        st.html(_SCROLL_JS % {"where": where, "run": run}, unsafe_allow_javascript=True)


def _follow_scroll(file: str, label: str) -> None:
    """A following student's page goes to the step the teacher opened, as the teacher's
    Next button does (the student's own tab click stops following first)."""
    seen = st.session_state.get("_ui_seen_step")
    if exercises.following() and seen and seen[0] == file and seen[1] != label:
        controls.scroll_to("step")
    st.session_state["_ui_seen_step"] = (file, label)


def carried() -> dict[str, str]:
    """What a link to another lesson keeps: presenter mode and the class this session is
    in. Nothing else: the next lesson opens on its first step with its own defaults."""
    keep = {"present": "1"} if share.presenting() else {}
    room = st.session_state.get(classroom._ROOM)  # the class ui.classroom keeps, if any
    if room and room.get("code"):
        keep["room"] = room["code"]
    return keep


def prev_next(file: str) -> None:
    """Previous / Next: through the page's steps first, then along the lesson path.

    A page split by ui.steps() gets buttons to the step before and after the open one
    ("Next: Spread"); the links to the neighbouring lessons are always there too, so a
    class can move on without visiting every step. Lessons are counted as lessons and
    steps as steps, so "Lesson 2 of 9 · step 3 of 6" never mixes the two. (The new step
    shows from its top without help: a closed step sends nothing, so the page is short
    for a moment when the tab changes and the browser's scroll position resets.)
    """
    classroom.commit()  # the end of a teacher's run: the class sees this view now
    _present_link(file)
    lessons = available()
    files = [lesson.file for lesson in lessons]
    i = files.index(file)
    opened = controls.open_step()
    key, labels, label = opened if opened else ("", (), "")
    j = labels.index(label) if label in labels else 0
    _follow_scroll(file, label)
    st.divider()
    left, mid, right = st.columns([2, 1, 2], vertical_alignment="top")
    with left:
        if j > 0:
            st.button(
                f"Previous: {labels[j - 1]}", icon=":material/arrow_back:", key="_ui_prev_step",
                on_click=controls.go_to_step, args=(key, labels[j - 1]),
            )  # fmt: skip
        if i > 0:
            prev = lessons[i - 1]
            st.page_link(
                prev.file, label=f"Previous lesson: {prev.title}", icon=":material/first_page:",
                query_params=carried(),
            )  # fmt: skip
    where = f"Lesson {i + 1} of {len(lessons)}"
    mid.caption(where + (f" · step {j + 1} of {len(labels)}" if labels else ""))
    if share.presenting():
        with mid:
            share.present_toggle_link(file)
    with right:
        if j + 1 < len(labels):
            st.button(
                f"Next: {labels[j + 1]}", icon=":material/arrow_forward:", type="primary",
                key="_ui_next_step", on_click=controls.go_to_step, args=(key, labels[j + 1]),
            )  # fmt: skip
        if i + 1 < len(lessons):
            nxt = lessons[i + 1]
            st.page_link(
                nxt.file, label=f"Next lesson: {nxt.title}", icon=":material/last_page:",
                query_params=carried(),
            )  # fmt: skip
    _scroll()
    replay.end()  # a follower's body ends here: its record is kept for the next ones
    wake.finished()  # a woken follower's turn ends with its run (ui.wake's line)
