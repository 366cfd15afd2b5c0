"""The real-model page in Chromium: switching heads off by typing their names."""

import pytest

from tests.support.browser import open_page, settle, wait_idle

pytestmark = pytest.mark.browser  # Chromium and the server: tests/conftest.py

ABLATE = '[data-testid="stMultiSelect"]:has-text("Switch off heads")'


def test_typing_a_head_s_name_and_enter_switches_off_that_head_only(server_url, browser):
    """ "L2H1" is also the start of L2H10 and L2H11: Enter must take L2H1 alone."""
    page, errors = open_page(browser, server_url + "/model?step=Pruning", height=1400)
    box = page.locator(ABLATE)
    for name in ("L2H1", "l0h1"):  # a prefix of two other heads; any case
        box.locator("input").click()
        page.keyboard.type(name)
        page.keyboard.press("Enter")
        page.keyboard.press("Escape")
        wait_idle(page)
        settle(page)
    assert "ablate=L2H1&ablate=L0H1" in page.url or "ablate=L0H1&ablate=L2H1" in page.url, page.url
    assert page.url.count("ablate=") == 2, page.url
    assert not errors
    page.context.close()
