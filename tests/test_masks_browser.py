"""The masks page in Chromium: it renders, and clicking a cell of the custom grid flips it."""

import os
from pathlib import Path

import pytest

from tests.support.browser import (
    CHROMIUM,
    chromium,
    open_page,
    plotly_count,
    streamlit_server,
    wait_idle,
)

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists():
    if os.environ.get("REQUIRE_BROWSER"):
        raise RuntimeError(f"REQUIRE_BROWSER is set but {CHROMIUM} is missing")
    pytest.skip(f"{CHROMIUM} not installed", allow_module_level=True)

EXCEPTION = '[data-testid="stException"]'
# Screen position of a cell centre in the first plotly chart (the mask), from plotly's own axes.
CELL_XY = """([i, j]) => {
  const gd = document.querySelectorAll('.js-plotly-plot')[0];
  const L = gd._fullLayout, r = gd.getBoundingClientRect();
  return [r.left + L._size.l + L.xaxis.d2p(j), r.top + L._size.t + L.yaxis.d2p(i)];
}"""
CELL_STATE = "([i, j]) => document.querySelectorAll('.js-plotly-plot')[0].data[0].customdata[i][j]"


@pytest.fixture(scope="module")
def browser():
    with streamlit_server() as url, chromium() as b:
        yield url, b


def test_page_renders_without_exception(browser):
    url, b = browser
    page, errors = open_page(b, url + "/masks?batch=6", width=1400, height=3000)
    page.wait_for_function("() => document.querySelectorAll('.main-svg').length > 0")
    assert page.locator(EXCEPTION).count() == 0 and not errors
    assert plotly_count(page) >= 7  # mask, logits, 2 weights, fills, cross, 2 broadcast
    page.context.close()


def click_cell(page, i: int, j: int) -> None:
    x, y = page.evaluate(CELL_XY, [i, j])
    page.mouse.move(x, y)
    page.mouse.click(x, y)


def test_clicking_a_custom_cell_toggles_it_and_the_url_keeps_it(browser):
    url, b = browser
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
