"""Every page in a real browser: Debian's Chromium driven by Playwright against `streamlit run`.

For each page of the lesson path: it loads, shows no exception box, draws its
charts, and reruns after a slider is moved with the keyboard. The server and Chromium
are the session's shared fixtures (tests/conftest.py: `server_url`, `browser`).
"""

import pytest

from tests.support.browser import (
    SLIDER_VIEW,
    open_page,
    plotly_count,
    rerun_latency_ms,
    reveal_held_back,
    streamlit_server,
    wait_idle,
)
from ui.lesson import available

pytestmark = pytest.mark.browser

EXCEPTION = '[data-testid="stException"]'


@pytest.mark.parametrize("lesson", available(), ids=lambda lesson: lesson.url_path or "home")
def test_page_renders_charts_and_reruns_on_a_slider_key_press(server_url, browser, lesson):
    view = SLIDER_VIEW.get(lesson.url_path, "")  # the page's first view with a slider
    page, errors = open_page(browser, f"{server_url}/{lesson.url_path}{view}")
    try:
        assert page.locator("h1").first.inner_text().strip() == lesson.h1
        assert page.locator(EXCEPTION).count() == 0
        reveal_held_back(page)  # a step whose chart is its exercise's answer shows it now
        page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg', timeout=30_000)
        charts = plotly_count(page)
        assert charts >= 1
        assert page.locator('[data-testid="stSlider"] input[type="range"]').count() >= 1
        ms = rerun_latency_ms(page)
        assert ms > 0
        wait_idle(page)
        assert page.locator(EXCEPTION).count() == 0
        reveal_held_back(page)  # a new setting asks its exercise again
        assert plotly_count(page) >= 1
        assert not errors, errors
    finally:
        page.context.close()


def test_bad_url_value_shows_a_note_in_the_browser(server_url, browser):
    page, _ = open_page(browser, f"{server_url}/?d_k=abc")
    try:
        alert = page.locator('[data-testid="stAlert"]').first
        alert.wait_for(timeout=30_000)
        assert "d_k=abc" in alert.inner_text()
        assert page.locator(EXCEPTION).count() == 0
    finally:
        page.context.close()


def test_link_box_shows_the_link_and_its_copy_button_inside_the_sidebar(server_url, browser):
    page, _ = open_page(browser, f"{server_url}/softmax?tau=2")
    try:
        sidebar = page.locator('[data-testid="stSidebar"]').bounding_box()
        frame = page.frame_locator('[data-testid="stSidebar"] iframe').first
        box = frame.locator("#u")
        box.wait_for(timeout=30_000)
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=\"stSidebar\"] iframe')]"
            ".some(f => f.contentDocument.getElementById('u')?.value.includes('tau=2'))",
            timeout=10_000,
        )
        iframe = page.locator('[data-testid="stSidebar"] iframe').first.bounding_box()
        copy = frame.locator("#b").bounding_box()
        # Playwright reports boxes inside the frame in page coordinates.
        assert copy["x"] >= sidebar["x"]
        assert copy["x"] + copy["width"] <= min(sidebar["x"] + sidebar["width"],
                                                iframe["x"] + iframe["width"]) + 1  # fmt: skip
    finally:
        page.context.close()


def test_url_reproduces_a_view(server_url, browser):
    page, _ = open_page(browser, f"{server_url}/?d_k=512&scaled=false")
    try:
        title = page.locator('[data-testid="stPlotlyChart"] .gtitle').first
        title.wait_for(timeout=30_000)
        assert "d_k = 512, unscaled" in title.text_content()
    finally:
        page.context.close()


def test_first_request_to_a_page_after_server_start_goes_through_app_py(browser):
    """A shared link is often the first request a fresh server sees; it must get the app's
    navigation and titles, not Streamlit's automatic pages/ listing of file names."""
    lesson = available()[-1]
    with streamlit_server() as url:
        page, errors = open_page(browser, f"{url}/{lesson.url_path}")
        try:
            page.wait_for_selector("h1", timeout=30_000)
            wait_idle(page)
            assert page.locator("h1").first.inner_text().strip() == lesson.h1
            nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
            assert "Home" in nav and lesson.title in nav
            assert not errors, errors
        finally:
            page.context.close()


_CONTROLS_JS = """
() => {
  const sel = [
    '[data-testid="stSlider"] input[type="range"]', '[data-testid="stNumberInput"] input',
               '[data-testid="stTextInput"] input', '[data-testid="stSelectbox"] input',
               '[data-testid="stCheckbox"] input', '[data-testid="stToggle"] input',
               '[data-testid="stMultiSelect"] input', '[data-testid="stRadio"] input'];
  const els = [...document.querySelectorAll(sel.join(', '))];
  els.forEach((el, i) => el.setAttribute('data-kb', String(i)));
  // a radio group is one tab stop: only its checked option (or the first) takes focus
  return els.filter(el => el.type !== 'radio' || el.checked).map(el => el.getAttribute('data-kb'));
}
"""


def test_tour_stays_on_localhost_and_every_control_is_reachable_by_keyboard(server_url, browser):
    """Every request a full tour makes goes to 127.0.0.1 (works offline, no CDN), and Tab
    reaches every control (sidebar and main) of every page."""
    page, errors = open_page(browser, server_url)
    requests: list[str] = []
    page.context.on("request", lambda r: requests.append(r.url))
    try:
        for lesson in available():
            page.goto(f"{server_url}/{lesson.url_path}")
            page.wait_for_selector('[data-testid="stApp"] h1', timeout=60_000)
            wait_idle(page)
            page.wait_for_timeout(300)
            wait_idle(page)
            reveal_held_back(page)  # the step's own controls and chart come with the answer
            page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg', timeout=60_000)
            wait_idle(page)
            wanted = set(page.evaluate(_CONTROLS_JS))
            assert wanted, f"no controls found on /{lesson.url_path}"
            page.evaluate("() => document.activeElement && document.activeElement.blur()")
            reached: set[str] = set()
            for _ in range(600):
                page.keyboard.press("Tab")
                kb = page.evaluate("() => document.activeElement?.getAttribute('data-kb')")
                if kb is not None:
                    reached.add(kb)
                if wanted <= reached:
                    break
            assert wanted <= reached, (lesson.url_path, sorted(wanted - reached))
        hosts = {r.split("/")[2] for r in requests if r.startswith("http")}
        assert hosts <= {server_url.split("/")[2]}, hosts
        assert not [
            r
            for r in requests
            if not r.startswith(("http://127.0.0.1", "data:", "blob:", "about:"))
        ]
        assert not errors, errors
    finally:
        page.context.close()


def test_next_opens_the_next_step_from_its_top_and_puts_it_in_the_link(server_url, browser):
    """The bottom Next button walks the steps: the tab, the URL and the scroll follow (to the
    step's first chart)."""
    page, errors = open_page(browser, f"{server_url}/scaling")
    try:
        main = '[data-testid="stMain"]'
        page.get_by_role("button", name="Next: Spread").scroll_into_view_if_needed()
        assert page.eval_on_selector(main, "m => m.scrollTop") > 0
        page.get_by_role("button", name="Next: Spread").click()
        page.wait_for_function(
            "() => document.querySelector('[role=tab][aria-selected=true]')?.innerText"
            ".trim() === 'Spread'",
            timeout=30_000,
        )
        wait_idle(page)
        page.wait_for_function(  # the step's first chart near the screen's top (issue 40)
            """() => { const c = document.querySelector(
                '[role=tabpanel]:not([hidden]) [data-testid="stPlotlyChart"]');
              const t = c && c.getBoundingClientRect().top;
              return t !== null && t > -2 && t < 0.3 * window.innerHeight; }""",
            timeout=30_000,  # a loaded CI's renderer took more than 10 s once
        )
        assert "step=Spread" in page.url
        assert page.get_by_role("button", name="Next: Saturation").count() == 1
        assert page.get_by_role("link", name="Next lesson: Softmax and values").count() == 1
        assert not errors
    finally:
        page.context.close()
