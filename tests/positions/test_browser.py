"""/positions in Chromium: every step draws, the Order step's chart waits for the reveal,
and the RoPE pair slider redraws only its own step."""

import pytest

from tests.support.browser import (
    HELD_BACK,
    open_page,
    open_step,
    plotly_count,
    reveal_held_back,
    wait_charts,
)

pytestmark = pytest.mark.browser  # Chromium and the server: tests/conftest.py

EXCEPTION = '[data-testid="stException"]'


def test_the_steps_draw_and_the_order_chart_waits_for_the_reveal(server_url, browser):
    page, errors = open_page(browser, f"{server_url}/positions")
    try:
        assert page.get_by_text(HELD_BACK).count()  # the shuffle's moves are the answer
        assert plotly_count(page) == 0
        assert reveal_held_back(page) == 1
        wait_charts(page, 1)
        for label, title in (
            ("Added", "One token at all 16 positions"),
            ("RoPE", "Pair 0 of q"),
            ("ALiBi", "ALiBi alone"),
            ("Longer", "Trained at length 16"),
            ("In a model", "all-MiniLM-L6-v2"),
        ):
            open_step(page, label, title)
            assert page.locator(EXCEPTION).count() == 0, label
        assert not errors, errors
    finally:
        page.context.close()
