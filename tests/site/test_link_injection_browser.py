"""Markdown, LaTeX, directives and links from a link, as Chromium draws them.

Every page is opened with its free-text boxes (in the view that reads them) and one
other reflected control set to a payload that Streamlit would render as bold text,
KaTeX, red text, icons, emoji and live links if a page wrote it unescaped; plus a
repeated and an oversize parameter. Whatever the page shows of it must be plain text.
"""

from urllib.parse import urlencode

import pytest

from tests.site.test_fuzz_urls import _groups, _page_keys
from tests.support.browser import open_page, streamlit_server
from ui.lesson import available

pytestmark = pytest.mark.browser  # `browser` and `server_url` come from tests/conftest.py

PAYLOAD = (
    "**INJ** $$\\frac{1}{0}$$ :red[RED] [y](https://example.com) https://example.org "
    "www.example.net :material/home: :smile: a@example.com <b>INJ</b>"
)

# What the payload would have produced, found in the rendered page (main and sidebar).
RENDERED_JS = """
() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const all = (sel) => [...app.querySelectorAll(sel)];
  const external = (href) => {
    try {
      const u = new URL(href, location.href);
      return u.protocol === 'javascript:' || (u.host !== location.host && href.includes('example'));
    } catch (e) { return true; }
  };
  return {
    links: all('a').map(a => a.getAttribute('href') || a.getAttribute('xlink:href') || '')
      .filter(external),
    bold: all('strong, b').filter(e => e.textContent.includes('INJ')).map(e => e.outerHTML),
    svg_bold: all('svg tspan').filter(e => /bold/.test(e.getAttribute('style') || '')
      && e.textContent.includes('IN')).length,
    katex: all('.katex').filter(e => e.textContent.includes('INJ')
      || (e.querySelector('annotation')?.textContent || '').includes('frac{1}{0}')).length,
    coloured: all('[class*="Colored"], span[style*="color"]')
      .filter(e => e.textContent.includes('RED')).length,
    icons: all('[data-testid="stMarkdownContainer"] [role="img"]')
      .map(e => e.getAttribute('aria-label')).filter(l => (l || '').includes('home')),
    emoji: app.innerText.includes('😄'),
    exception: all('[data-testid="stException"]').length,
    text: app.innerText,
  };
}
"""


EXTRA = {  # the repeated and oversize forms of the free-text parameters
    "heads-repeated": ("heads", {"tokens": ["a b", PAYLOAD]}),
    "masks-repeated": ("masks", {"mask": "custom", "custom": ["1-2", PAYLOAD]}),
    "masks-oversize": ("masks", {"lengths": (PAYLOAD + " ") * 5}),
    "multi-head-oversize": ("multi-head", {"input": "sentence", "sentence": PAYLOAD * 5}),
}
CASES = [lesson.url_path or "home" for lesson in available()] + list(EXTRA)


def _case(name: str) -> tuple[str, dict]:
    """(url path, params). A page: its text boxes (in the view that reads them) and one
    other control reflected in a note, all set to the payload."""
    if name in EXTRA:
        return EXTRA[name]
    lesson = next(x for x in available() if (x.url_path or "home") == name)
    keys, text, _, _ = _page_keys(lesson.file)
    params: dict = {}
    for k in sorted(text):
        params.update(keys[k])
        params[k] = PAYLOAD
    main = [k for need, group in _groups(lesson.file) if not need for k in group]
    params[sorted(k for k in main if k not in text and k not in params)[0]] = PAYLOAD
    return lesson.url_path, params


PROBE = f"""
import plotly.graph_objects as go
import streamlit as st

st.title("probe")
st.warning({PAYLOAD!r})
st.plotly_chart(go.Figure(layout=dict(title=dict(text="<b>INJ</b> <a href='https://example.com'>y</a>"))))
"""


def test_the_check_finds_the_payload_when_a_page_writes_it_raw(browser, tmp_path):
    """The check itself: the payload written raw by a bare page is found live, every part."""
    b = browser
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    with streamlit_server(str(probe)) as url:
        page, _ = open_page(b, url)
        try:
            page.wait_for_selector(".js-plotly-plot .gtitle", timeout=30_000)
            r = page.evaluate(RENDERED_JS)
        finally:
            page.context.close()
    assert any("example.com" in h for h in r["links"]) and any("mailto" in h for h in r["links"])
    assert any("www.example.net" in h for h in r["links"]), r["links"]
    assert r["bold"] and r["svg_bold"] and r["katex"] and r["coloured"]
    assert r["icons"] and r["emoji"]


@pytest.mark.parametrize("name", CASES)
def test_link_text_is_drawn_as_plain_text(server_url, browser, name):
    path, params = _case(name)
    url, b = server_url, browser
    page, errors = open_page(b, f"{url}/{path}?{urlencode(params, doseq=True)}", height=2400)
    try:
        r = page.evaluate(RENDERED_JS)
        assert r["exception"] == 0 and not errors, (name, errors)
        assert not r["links"], (name, r["links"])
        assert not r["bold"] and not r["svg_bold"], (name, r["bold"])
        assert r["katex"] == 0 and r["coloured"] == 0, name
        assert not r["icons"] and not r["emoji"], (name, r["icons"])
        assert "**INJ" in r["text"] or "INJ" in page.locator("input").evaluate_all(
            "els => els.map(e => e.value).join(' ')"
        ), name  # the payload is there, as text
        if name.endswith("-repeated"):
            key = next(k for k, v in params.items() if isinstance(v, list))
            assert f"The link gave {key} 2 times" in r["text"], name
        if name.endswith("-oversize"):
            n = max(len(v) for v in params.values())
            assert f"was {n:,} characters long; the box holds 500" in r["text"], name
    finally:
        page.context.close()
