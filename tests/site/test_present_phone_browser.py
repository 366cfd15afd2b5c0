"""In Chromium: presenter mode for a projector, and a phone's narrow screen (issue 18).

- Presenter mode (`?present=1`, 1920×1080): every text inside the charts (ticks, axis and
  chart titles, annotations, legends, colour bars) is at least 18 px, and no sentence
  points at a sidebar that presenter mode does not have.
- Presenter mode's first screen, at 1920×1080 and on every step at 1280×720 with a class
  open (issue 50): the top of the step's first chart (or of its exercise, where the chart
  waits for the reveal) is at most 360 px down, so at least half of it shows. The later
  steps are opened through their tabs, in the page the first step opened.
- A phone (390 px wide, a phone's browser): the sidebar starts closed; on every step
  nothing is wider than the screen and every control of the page is at least 44 px tall.
"""

from __future__ import annotations

import pytest

from tests.support.apptest import page_steps
from tests.support.axe import audit
from tests.support.browser import click_and_wait_run, open_page, reveal_held_back, wait_idle
from ui.lesson import available
from ui.share import PROJECTOR_MIN_PX

CHART = '[data-testid="stPlotlyChart"]'
FORM = '[data-testid="stForm"]'
# The top of the first chart and of the first exercise's box (its heading and question,
# above the form), in page pixels (None: none).
_FIRST_JS = """
() => [document.querySelector('[data-testid="stPlotlyChart"]'),
       document.querySelector('[class*="st-key-predict-"]')]
  .map(e => e ? e.getBoundingClientRect().top + window.scrollY : null)
"""


def _first_top(page) -> float | None:
    """Where the step's first chart, or its exercise box, begins; None for a step that
    draws neither before a button is pressed (a timing, a training run)."""
    try:
        page.wait_for_selector(f"{CHART}, {FORM}", timeout=5_000, state="attached")
    except Exception:  # playwright's TimeoutError
        return None
    # Measure the finished run: while it runs, a step's transient boxes (a model loading,
    # a job's place in line) can sit above the chart and push it down (seen once on /heads
    # on a busy machine).
    wait_idle(page)
    page.wait_for_timeout(300)
    tops = [t for t in page.evaluate(_FIRST_JS) if t is not None]
    return min(tops) if tops else None


EXCEPTION = '[data-testid="stException"]'
pytestmark = pytest.mark.browser

# Every text element plotly draws in a chart's SVG, with its computed size in px.
_FONT_SIZES_JS = """
() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"] svg text'))
  .filter(t => t.textContent.trim() && t.getBBox().width > 0)
  .map(t => [t.textContent.trim().slice(0, 40), parseFloat(getComputedStyle(t).fontSize)])
"""


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_presenter_mode_draws_every_chart_text_in_projector_sized_type(server_url, browser, lesson):
    page, errors = open_page(
        browser, f"{server_url}/{lesson.url_path}?present=1", width=1920, height=1080
    )
    try:
        assert page.locator(EXCEPTION).count() == 0
        assert page.locator('[data-testid="stExpander"] summary').filter(
            has_text="Controls"
        ).count() <= 1  # fmt: skip
        top = _first_top(page)  # before any reveal: what the class sees first
        assert top is not None and top < 1080, f"the first chart starts at {top} px"
        reveal_held_back(page)
        page.wait_for_selector(f"{CHART} .main-svg", timeout=30_000)
        sizes = page.evaluate(_FONT_SIZES_JS)
        assert sizes, "no chart text found"
        small = [(text, px) for text, px in sizes if px < PROJECTOR_MIN_PX]
        assert not small, f"chart text under {PROJECTOR_MIN_PX} px: {small[:8]}"
        assert "in the sidebar" not in page.locator('[data-testid="stMain"]').inner_text()
        assert not errors, errors
    finally:
        page.context.close()


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_presenter_mode_at_720p_opens_every_step_on_its_chart(server_url, browser, lesson):
    """The first step as the link opens it; each later one through its tab, in that page
    (one page load per lesson: a fresh load per step cost this file half its time)."""
    height, most = 720, 360
    page, errors = open_page(
        browser, f"{server_url}/{lesson.url_path}?present=1&room=new", width=1280, height=height
    )
    try:
        late, axe = [], {}
        for i, step in enumerate(page_steps(lesson.file)):
            if i:
                click_and_wait_run(page, page.get_by_role("tab", name=step, exact=True))
            assert page.locator(EXCEPTION).count() == 0, f"step {step}: an exception"
            if bad := audit(page):  # WCAG 2.2 AA in presenter mode too (issue 42)
                axe[step or "the page"] = [str(v) for v in bad]
            top = _first_top(page)
            if top is not None and top > most:
                late.append(f"{step or 'the page'}: {top:.0f} px")
        assert not late, f"the first chart starts below {most} px on: {late}"
        assert not axe, axe
        assert not errors, errors
    finally:
        page.context.close()


# What a finger taps on the page (the sidebar is closed on a phone; plotly's toolbar and
# the slider's thumb, which is dragged along its 44 px row, are not counted).
_SMALL_TAPS_JS = """
() => {
  const small = [];
  const taps = 'button:not(.modebar-btn), a[href], [role="tab"], summary, '
    + '[data-testid="stRadio"] label, [data-testid="stCheckbox"] label';
  for (const el of document.querySelectorAll(`[data-testid="stMain"] :is(${taps})`)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if (el.closest('.modebar, [data-testid="stMarkdownContainer"]')) continue;
    const name = (el.innerText || el.getAttribute('aria-label') || el.tagName).trim();
    if (r.height < 43.5) small.push(`${name.slice(0, 30)}: ${Math.round(r.height)} px`);
  }
  return small;
}
"""


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_a_phone_gets_a_closed_sidebar_no_sideways_scrolling_and_44_px_taps(
    server_url, browser, lesson
):
    page, errors = open_page(
        browser, f"{server_url}/{lesson.url_path}", width=390, height=844, phone=True
    )
    try:
        closed = page.evaluate(
            """() => { const s = document.querySelector('[data-testid="stSidebar"]');
                       const r = s.getBoundingClientRect(); return r.right <= 1 || r.width < 2; }"""
        )
        assert closed, "the sidebar covers the page on a phone's first load"
        wide, small = {}, {}
        for i, step in enumerate(page_steps(lesson.file)):
            if i:
                click_and_wait_run(page, page.get_by_role("tab", name=step, exact=True))
            assert page.locator(EXCEPTION).count() == 0, f"step {step}: an exception"
            width = page.evaluate("() => document.documentElement.scrollWidth")
            if width > 390:
                wide[step or "the page"] = width
            if taps := page.evaluate(_SMALL_TAPS_JS):
                small[step or "the page"] = taps[:6]
        assert not wide, f"the page scrolls sideways on a 390 px phone: {wide}"
        assert not small, f"tap targets under 44 px: {small}"
        assert not errors, errors
    finally:
        page.context.close()
