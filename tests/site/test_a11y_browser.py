"""WCAG 2.2 AA in Chromium: axe-core finds no violation on any view (issue 42).

axe-core (bundled by the pinned axe-playwright-python, run offline; tests/support/axe.py)
checks every step of every lesson at a desk's width and on a phone; presenter mode's
every step is audited by tests/site/test_present_phone_browser.py
on its way through. `python bench/a11y.py` prints the same audit as a table by rule.

Then one lesson is walked with the keyboard alone: a step tab, a slider, an exercise's
choice and its Reveal, and the Next button, each reached with Tab and used with the keys,
and the focused element always visibly outlined.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.support.apptest import page_steps
from tests.support.axe import audit
from tests.support.browser import click_and_wait_run, open_page, wait_idle
from ui.lesson import available

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_every_step_at_a_desk_has_no_axe_violation(server_url, browser, lesson):
    page, errors = open_page(browser, f"{server_url}/{lesson.url_path}")
    try:
        found = {}
        for i, step in enumerate(page_steps(lesson.file) or [""]):
            if i:
                click_and_wait_run(page, page.get_by_role("tab", name=step, exact=True))
            if bad := audit(page):
                found[step or "the page"] = [str(v) for v in bad]
        assert not found, found
        assert not errors, errors
    finally:
        page.context.close()


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_every_step_on_a_phone_has_no_axe_violation(server_url, browser, lesson):
    page, errors = open_page(browser, f"{server_url}/{lesson.url_path}", width=390, height=844)
    try:
        found = {}
        for i, step in enumerate(page_steps(lesson.file) or [""]):
            if i:
                click_and_wait_run(page, page.get_by_role("tab", name=step, exact=True))
            if bad := audit(page):
                found[step or "the page"] = [str(v) for v in bad]
        assert not found, found
        assert not errors, errors
    finally:
        page.context.close()


# The focused element's visible outline: a focus ring drawn as outline or box-shadow.
_FOCUS_RING = """() => {
  let el = document.activeElement;
  while (el && el.tagName === "IFRAME" && el.contentDocument) {  // same-origin: look inside
    el = el.contentDocument.activeElement;
  }
  if (!el || el === el.ownerDocument.body) return null;
  const getComputedStyle = (e) => e.ownerDocument.defaultView.getComputedStyle(e);
  const css = getComputedStyle(el);
  const ring = (css.outlineStyle !== "none" && parseFloat(css.outlineWidth) > 0)
    || (css.boxShadow && css.boxShadow !== "none");
  let up = el, inside = false;  // a slider thumb or radio shows its ring on a wrapper
  for (let i = 0; i < 4 && up && !inside; i++, up = up.parentElement) {
    const c = getComputedStyle(up);
    inside = (c.outlineStyle !== "none" && parseFloat(c.outlineWidth) > 0)
      || (c.boxShadow && c.boxShadow !== "none");
  }
  return {tag: el.tagName, role: el.getAttribute("role"), label: el.getAttribute("aria-label")
          || el.innerText?.slice(0, 40), ring: ring || inside};
}"""


def _tab_to(page, accept: str, limit: int = 300) -> dict:
    """Press Tab until the focused element matches the JS predicate `accept` (on the
    element); return what has focus. Every stop on the way must show a focus ring."""
    unringed = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        now = page.evaluate(_FOCUS_RING)
        if now and not now["ring"]:
            unringed.append(now)
        if page.evaluate(f"() => {{ const el = document.activeElement; return !!({accept}); }}"):
            assert not unringed, f"focus without a visible ring: {unringed[:3]}"
            return now
    raise AssertionError(f"Tab never reached {accept}")


def test_a_lesson_can_be_followed_with_the_keyboard_alone(server_url, browser):
    """/scaling by keyboard: into the steps, the Spread tab by arrow keys, its slider moved
    with the arrow keys, then Check yourself's first question answered and revealed, and
    Next pressed with Enter; every focus stop is outlined."""
    page, errors = open_page(browser, f"{server_url}/scaling")
    try:
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        _tab_to(
            page, "el.getAttribute('role') === 'tab' && el.getAttribute('aria-selected') === 'true'"
        )
        page.keyboard.press("ArrowRight")  # Streamlit's tabs: arrows move between them
        page.keyboard.press("Enter")
        page.wait_for_function(
            "() => document.querySelector('[role=tab][aria-selected=true]')?.innerText.trim()"
            " === 'Spread'",
            timeout=30_000,
        )
        wait_idle(page)
        # a slider of the sidebar: its value moves with the arrow keys
        _tab_to(page, "el.type === 'range'")
        label = page.evaluate("() => document.activeElement.getAttribute('aria-label')")
        before = page.evaluate("() => document.activeElement.value")
        ends = page.evaluate("() => window.__finished.length")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(f"() => window.__finished.length > {ends}", timeout=60_000)
        wait_idle(page)
        after = page.locator(f'input[type="range"][aria-label="{label}"]').input_value()
        assert after != before, (label, before, after)
        # the last step's first question: a choice by arrow keys, Reveal by Enter
        page.goto(f"{server_url}/scaling?step=Check%20yourself")
        page.wait_for_selector('[data-testid="stMain"] h1', timeout=60_000)
        wait_idle(page)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        _tab_to(page, "el.type === 'radio' && el.closest('[data-testid=\"stForm\"]')")
        page.keyboard.press("ArrowDown")  # a radio group: arrows choose
        _tab_to(page, "el.tagName === 'BUTTON' && el.closest('[data-testid=\"stForm\"]')")
        ends = page.evaluate("() => window.__finished.length")
        page.keyboard.press("Enter")
        page.wait_for_function(f"() => window.__finished.length > {ends}", timeout=60_000)
        wait_idle(page)
        verdict = (
            page.locator('[data-testid="stAlert"]').filter(has_text="Right").count()
            + page.locator('[data-testid="stAlert"]').filter(has_text="Not quite").count()
        )
        assert verdict >= 1, "Reveal by keyboard showed no verdict"
        # Next, by Enter, opens the step after (or the next lesson from the last step)
        _tab_to(page, "el.tagName === 'A' && (el.innerText || '').includes('Next lesson')")
        ends = page.evaluate("() => window.__finished.length")
        page.keyboard.press("Enter")
        page.wait_for_url("**/softmax**", timeout=60_000)
        wait_idle(page)
        assert not errors, errors
    finally:
        page.context.close()


def test_a_chart_downloads_as_svg_beside_png(server_url, browser):
    """The chart toolbar's SVG button (ui.chrome) saves a vector file; PNG stays PNG."""
    page, errors = open_page(browser, f"{server_url}/scaling")
    try:
        page.evaluate("() => window.__attnMarkScrollables()")  # the buttons, now
        chart = page.locator('[data-testid="stPlotlyChart"]').first
        chart.hover()
        with page.expect_download(timeout=30_000) as svg:
            chart.locator(".attn-svg").click()
        assert svg.value.suggested_filename.endswith(".svg")
        assert (
            svg.value.path()
            .read_text(encoding="utf-8", errors="replace")
            .lstrip()
            .startswith("<svg")
        )
        with page.expect_download(timeout=30_000) as png:
            chart.locator('.modebar-btn[data-title="Download plot as a PNG"]').click()
        assert png.value.suggested_filename.endswith(".png")
        assert not errors, errors
    finally:
        page.context.close()


def test_a_student_leaves_and_rejoins_a_class_with_the_keyboard_alone(server_url, browser):
    """Class mode by keyboard: a following student moves a slider with the arrow keys (and
    explores on their own), then reaches "Rejoin the class" by Tab and presses Enter."""
    teacher, errors = open_page(browser, f"{server_url}/masks?room=new")
    student = None
    try:
        code = parse_qs(urlparse(teacher.url).query)["room"][0]
        student, errs = open_page(browser, f"{server_url}/?room={code}")
        errors += errs
        student.wait_for_url("**/masks?*", timeout=15_000)
        student.get_by_text("Following the teacher").wait_for(timeout=15_000)
        wait_idle(student)
        student.evaluate("() => document.activeElement && document.activeElement.blur()")
        _tab_to(student, "el.type === 'range'")
        student.keyboard.press("ArrowLeft")
        student.get_by_text("You are exploring on your own").wait_for(timeout=15_000)
        wait_idle(student)
        student.evaluate("() => document.activeElement && document.activeElement.blur()")
        _tab_to(student, "el.tagName === 'BUTTON' && el.innerText.includes('Rejoin the class')")
        student.keyboard.press("Enter")
        student.get_by_text("Following the teacher").wait_for(timeout=15_000)
        assert not errors, errors
    finally:
        for page in (student, teacher):
            if page is not None:
                page.context.close()
