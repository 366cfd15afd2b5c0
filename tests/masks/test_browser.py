"""The masks page in Chromium: each step draws its own charts, T_q is shared by two steps,
and clicking a cell of the custom grid flips it."""

import pytest

from tests.support.browser import (
    ALERT,
    HELD_BACK,
    open_page,
    open_step,
    plotly_count,
    reveal_held_back,
    wait_charts,
    wait_idle,
)

pytestmark = pytest.mark.browser  # Chromium and the server: tests/conftest.py

EXCEPTION = '[data-testid="stException"]'
# Screen position of a cell centre in the first plotly chart (the mask), from plotly's own axes.
CELL_XY = """([i, j]) => {
  const gd = document.querySelectorAll('.js-plotly-plot')[0];
  const L = gd._fullLayout, r = gd.getBoundingClientRect();
  return [r.left + L._size.l + L.xaxis.d2p(j), r.top + L._size.t + L.yaxis.d2p(i)];
}"""
CELL_STATE = "([i, j]) => document.querySelectorAll('.js-plotly-plot')[0].data[0].customdata[i][j]"


def test_each_step_draws_only_its_own_charts(server_url, browser):
    url, b = server_url, browser
    page, errors = open_page(b, url + "/masks?batch=6", width=1400, height=3000)
    wait_charts(page, 2)
    assert plotly_count(page) == 2  # the first step: mask and masked logits
    open_step(page, "Weights", "Weights, plain softmax")
    assert "step=Weights" in page.url
    assert plotly_count(page) == 2
    page.get_by_role("tab", name="Broadcasting bug").click()
    page.get_by_text(HELD_BACK).first.wait_for(timeout=60_000)
    wait_idle(page)
    assert plotly_count(page) == 0  # the outcome waits for the step's two questions
    assert reveal_held_back(page) == 2
    wait_charts(page, 2)
    assert plotly_count(page) == 2  # B = T_q = 6: the two pictures of the silent bug
    assert page.locator(EXCEPTION).count() == 0 and not errors
    page.context.close()


def set_slider(page, label: str, value: int) -> None:
    """Move a slider with the keyboard until it shows `value`."""
    box = page.locator('[data-testid="stSlider"]').filter(has_text=label)
    thumb = box.locator('input[type="range"]')
    for _ in range(60):
        now = int(float(thumb.input_value()))
        if now == value:
            return
        thumb.focus()
        page.keyboard.press("ArrowRight" if now < value else "ArrowLeft")
        wait_idle(page)
        page.wait_for_timeout(100)
    raise AssertionError(f"{label} did not reach {value}")


def test_query_length_is_one_control_shared_by_two_steps(server_url, browser):
    url, b = server_url, browser
    page, errors = open_page(b, url + "/masks?step=Cross+attention", width=1400, height=2000)
    wait_charts(page, 1)
    set_slider(page, "Query length T_q", 4)
    page.wait_for_function("() => location.search.includes('T_q=4')", timeout=30_000)
    open_step(page, "Broadcasting bug", "B = 6 ≠ T_q = 4", ALERT)  # T_q came along
    assert "step=Broadcasting" in page.url
    open_step(page, "Cross attention", "Cross-attention: 4 queries")
    assert page.locator(EXCEPTION).count() == 0 and not errors
    page.context.close()


def click_cell(page, i: int, j: int) -> None:
    x, y = page.evaluate(CELL_XY, [i, j])
    page.mouse.move(x, y)
    page.mouse.click(x, y)


def test_clicking_a_custom_cell_toggles_it_and_the_url_keeps_it(server_url, browser):
    url, b = server_url, browser
    page, errors = open_page(b, url + "/masks?mask=custom&tokens=4", width=1400, height=2000)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length > 0")
    assert page.evaluate(CELL_STATE, [1, 3]) == "blocked"  # causal: query 1 cannot see key 3

    click_cell(page, 1, 3)
    page.wait_for_function("() => location.search.includes('custom=1-3')", timeout=30_000)
    wait_idle(page)
    page.wait_for_function(
        "() => document.querySelectorAll('.js-plotly-plot')[0].data[0].customdata[1][3]"
        " === 'allowed'",
        timeout=30_000,
    )

    click_cell(page, 1, 3)  # the same cell again: back to blocked, gone from the URL
    page.wait_for_function("() => !location.search.includes('custom=1-3')", timeout=30_000)
    wait_idle(page)
    page.wait_for_function(
        "() => document.querySelectorAll('.js-plotly-plot')[0].data[0].customdata[1][3]"
        " === 'blocked'",
        timeout=30_000,
    )
    assert page.locator(EXCEPTION).count() == 0 and not errors
    page.context.close()
