"""Predict, then reveal, in a real browser: what Chromium shows keeps every answer (issue 41).

The AppTest check (test_exercise_secrecy.py) reads Streamlit's elements. This one reads the
page as a student sees it: each step that asks something (EXERCISE_STEPS) is opened once in
Chromium, its expanders opened, and its visible text (document.body.innerText, plus the
text plotly draws) read without the question boxes. None of the step's secrets (from the
same step's AppTest run at the same defaults: ui.exercises logs them) may be in it. Then
every question is answered and revealed, and all the secrets must be on the page; a choice
that the verdict names, when it is a phrase of its own, must not have been there before.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from tests.site.test_exercise_secrecy import EXERCISE_STEPS, exercises, present
from tests.support.apptest import no_exception, run_page
from tests.support.browser import open_page, settle, wait_idle
from ui.lesson import by_file

pytestmark = pytest.mark.browser

CASES = [(file, step) for file, steps in EXERCISE_STEPS.items() for step in steps]
BOX = '[class*="st-key-predict-"]'  # ui.exercises' question box (a keyed container)
EXCEPTION = '[data-testid="stException"]'

# The page's visible text, every expander open, the question boxes left out when asked
# (hidden for the read, so what is left is laid out as the student sees it), and the
# words plotly draws in its SVG (titles, axes, annotations, legends).
_READ = """([box, withoutBoxes]) => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  const style = document.createElement('style');
  if (withoutBoxes) style.textContent = box + ' { display: none !important; }';
  document.head.appendChild(style);
  const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"] svg text')]
    .map(t => t.textContent);
  const text = document.body.innerText + '\\n' + charts.join('\\n');
  style.remove();
  return text;
}"""

# The choices offered in the question boxes, and the alerts (verdicts) inside them.
_CHOICES = f"""() => [...document.querySelectorAll('{BOX} [data-testid="stRadio"] label')]
  .map(l => l.innerText.trim()).filter(t => t)"""
_VERDICTS = f"""() => [...document.querySelectorAll('{BOX} [data-testid="stAlert"]')]
  .map(a => a.innerText)"""


def read(page, *, boxes: bool) -> str:
    return page.evaluate(_READ, [BOX, not boxes])


def reveal_every_question(page) -> int:
    """Answer each question box (its first choice, or 0 within its range) and press
    Reveal, one run each."""
    forms = page.locator(f'{BOX} [data-testid="stForm"]')
    n = forms.count()
    for i in range(n):
        form = forms.nth(i)
        form.locator("input").first.wait_for(state="attached", timeout=30_000)
        radios = form.locator('input[type="radio"]')
        if radios.count():
            radios.first.check(force=True)
        else:
            box = form.locator('input:not([type="radio"]):not([type="checkbox"])').first
            low = box.get_attribute("min")  # 0, or the lowest the question takes
            box.fill(low if low and float(low) > 0 else "0")
        ends = page.evaluate("() => window.__finished.length")
        form.get_by_role("button", name="Reveal").click()
        page.wait_for_function(  # a whole run, or the step's fragment run (RoPE, the bug)
            f"() => window.__finished.slice({ends}).some(([, status]) => status !== 2)",
            timeout=60_000,
            polling=50,
        )
        settle(page)
    return n


@pytest.mark.parametrize(("file", "step"), CASES, ids=[f"{f}:{s}" for f, s in CASES])
def test_a_step_shows_no_answer_in_the_browser_before_its_reveal(server_url, browser, file, step):
    at = run_page(file, timeout=120, step=step)  # the secrets, from the same defaults
    no_exception(at)
    found = exercises(at)
    secrets = [s for ex in found for s in ex["secrets"]]
    assert found and secrets, (file, step)
    url = f"{server_url}/{by_file(file).url_path}?step={quote(step)}"
    page, errors = open_page(browser, url)
    try:
        page.wait_for_function(
            f"(n) => document.querySelectorAll('{BOX} [data-testid=\"stForm\"]').length >= n",
            arg=len(found),
            timeout=60_000,
        )
        settle(page)
        before = read(page, boxes=False)
        leaks = [s for s in secrets if present(s, before)]
        assert not leaks, f"{file} › {step}: {leaks} shown before the reveal"
        offered = page.evaluate(_CHOICES)
        assert reveal_every_question(page) == len(found)
        settle(page)
        wait_idle(page)
        after = read(page, boxes=True)
        missing = [s for s in secrets if not present(s, after)]
        assert not missing, f"{file} › {step}: revealed, but {missing} not shown"
        verdicts = " ".join(page.evaluate(_VERDICTS))
        named = [c for c in offered if f"computed answer is {c}" in verdicts
                 or f"Right: {c}" in verdicts]  # fmt: skip
        early = [c for c in named if len(c.split()) >= 4 and present(c, before)]
        assert not early, f"{file} › {step}: the computed choice {early} was shown before"
        assert page.locator(EXCEPTION).count() == 0 and not errors, errors
    finally:
        page.context.close()
