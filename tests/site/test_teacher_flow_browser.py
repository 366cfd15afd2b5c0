"""The teacher's flow in Chromium (issue 40): moving through a lesson in front of a class.

- "Next lesson" / "Previous lesson" keep presenter mode and the class, open the lesson on
  its first step from the page's top, and carry no control value of the last page.
- "Next: <step>" lands with the step's first chart near the top of the screen.
- At 1280×720, opening Controls leaves the chart where it was: the controls are a narrow
  panel beside it, and they stay open while a slider moves.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.support.browser import (
    SLIDERS,
    click_and_wait_run,
    open_page,
    settle,
    step_labels,
    wait_idle,
)

pytestmark = pytest.mark.browser

MAIN = '[data-testid="stMain"]'
SELECTED = "() => document.querySelector('[role=tab][aria-selected=true]')?.innerText.trim()"
# The top of the open step's first chart, in the screen's pixels (None: no chart drawn).
CHART_TOP = """() => { const c = document.querySelector(
  '[role=tabpanel]:not([hidden]) [data-testid="stPlotlyChart"] .main-svg');
  return c ? c.getBoundingClientRect().top : null; }"""
SCROLL_TOP = f"() => document.querySelector('{MAIN}').scrollTop"
# The top of what the open step shows first: its first chart or exercise, else its tabs.
FIRST_TOP = """() => { const p = document.querySelector('[role=tabpanel]:not([hidden])');
  const f = p && p.querySelector('[data-testid="stPlotlyChart"], [class*="st-key-predict-"]');
  return (f || document.querySelector('[role=tablist]')).getBoundingClientRect().top; }"""


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


def _follow_link(page, name: str) -> None:
    """Scroll to a lesson link at the bottom as a reader does (the mouse wheel: the page
    holds its own scroll for a few seconds after a page switch, until the reader scrolls),
    click it, wait for the new page's run."""
    link = page.get_by_role("link", name=name)
    box = page.locator(MAIN).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    for _ in range(100):  # until the link is on screen
        if link.evaluate("(a) => a.getBoundingClientRect().bottom <= innerHeight"):
            break
        page.mouse.wheel(0, 400)
        page.wait_for_timeout(50)
    assert page.evaluate(SCROLL_TOP) > 0  # the link sat below the first screen
    old = page.url
    link.click()
    page.wait_for_url(lambda url: url != old, timeout=60_000)
    settle(page)


def test_lesson_links_keep_presenter_mode_and_the_class_and_open_step_one(server_url, browser):
    page, errors = open_page(
        browser,
        f"{server_url}/alternatives?present=1&room=new&step=Speed&seed=1234",
        width=1280,
        height=720,
    )
    try:
        code = _query(page.url)["room"][0]
        assert code != "new"
        _follow_link(page, "Next lesson: Trained heads")
        assert urlsplit(page.url).path.endswith("/heads")
        # no step and no seed: a control bound to the link would write a carried value there
        assert _query(page.url) == {"present": ["1"], "room": [code]}
        assert page.evaluate(SELECTED) == step_labels(page)[0]
        assert page.locator('[data-testid="stSidebar"]').is_hidden()  # still presenting
        assert page.get_by_text(f"Class {code}").count() >= 1  # still the class's teacher
        page.wait_for_function(f"{SCROLL_TOP} === 0", timeout=30_000)  # from the top
        _follow_link(page, "Previous lesson: Beyond the dot product")
        assert urlsplit(page.url).path.endswith("/alternatives")
        assert _query(page.url) == {"present": ["1"], "room": [code]}
        assert page.evaluate(SELECTED) == "Scoring"  # its first step, not Speed
        assert not errors, errors
    finally:
        page.context.close()


@pytest.mark.parametrize(
    "path, steps",
    [
        ("multi-head", ("Outputs", "Reshape", "Cost", "Tired cat")),
        ("positions", ("Added", "RoPE", "ALiBi", "Longer")),
    ],
)
def test_next_step_lands_with_the_step_s_first_chart_at_the_top(server_url, browser, path, steps):
    height = 720
    page, errors = open_page(
        browser, f"{server_url}/{path}?present=1&step={steps[0]}", width=1280, height=height
    )
    try:
        for step in steps[1:]:
            button = page.get_by_role("button", name=f"Next: {step}")
            button.scroll_into_view_if_needed()
            click_and_wait_run(page, button)
            assert page.evaluate(SELECTED) == step
            near_top = (
                f"() => {{ const t = ({FIRST_TOP})(); return t > -2 && t < {height * 0.3}; }}"
            )
            page.wait_for_function(near_top, timeout=30_000)  # followed while charts draw
        assert not errors, errors
    finally:
        page.context.close()


def test_controls_open_beside_the_chart_at_720p_and_stay_open_while_a_slider_moves(
    server_url, browser
):
    page, errors = open_page(browser, f"{server_url}/scaling?present=1", width=1280, height=720)
    try:
        page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg', timeout=60_000)
        wait_idle(page)
        before = page.evaluate(CHART_TOP)
        assert before is not None and before < 720
        page.locator('[data-testid="stExpander"] summary').filter(has_text="Controls").click()
        panel = page.locator('.st-key-ui_controls [data-testid="stExpanderDetails"]')
        panel.wait_for(state="visible", timeout=10_000)
        page.wait_for_timeout(500)  # the charts take their narrower width
        box = panel.bounding_box()
        assert box["x"] + box["width"] <= 1280 and box["width"] <= 1280 / 3  # a narrow panel
        assert box["y"] >= 0 and box["y"] + box["height"] <= 720  # all of it on the screen
        after = page.evaluate(CHART_TOP)
        assert after is not None and after < 720 and after - before < 100  # not pushed down
        chart = page.locator('[data-testid="stPlotlyChart"]').first.bounding_box()
        assert chart["x"] + chart["width"] <= box["x"] + 1  # beside the panel, not under it
        thumb = panel.locator(SLIDERS).first
        old = thumb.get_attribute("value")
        thumb.focus()
        ends = page.evaluate("() => window.__finished.length")
        page.keyboard.press("ArrowLeft" if old == thumb.get_attribute("max") else "ArrowRight")
        page.wait_for_function(
            f"() => window.__finished.slice({ends}).some(([, s]) => s === 0)", timeout=60_000
        )
        settle(page)
        assert panel.is_visible() and panel.locator(SLIDERS).first.get_attribute("value") != old
        assert page.evaluate(CHART_TOP) < 720
        assert not errors, errors
    finally:
        page.context.close()
