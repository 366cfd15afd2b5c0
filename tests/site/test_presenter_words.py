"""Presenter mode has no sidebar, so nothing on its pages may point at one (issue 50).

Every step of every page, opened with ?present=1: no text the page shows (markdown,
captions, callouts, help texts, chart captions) mentions the sidebar; ui.where() turns
"in the sidebar" into "under Controls at the top" wherever a lesson's words say it."""

from __future__ import annotations

import pytest

from tests.site.test_exercise_secrecy import CASES, shown_text
from tests.support.apptest import no_exception, run_page


def _helps(at) -> list[str]:
    out = []
    for kind in ("slider", "select_slider", "radio", "toggle", "number_input", "selectbox",
                 "text_input", "multiselect", "button"):  # fmt: skip
        for w in at.get(kind):
            out.append(str(getattr(w.proto, "help", "")))
    return out


@pytest.mark.parametrize(("file", "step"), CASES, ids=[f"{f}:{s}" for f, s in CASES])
def test_presenter_mode_never_mentions_a_sidebar(file, step):
    at = run_page(file, timeout=120, present="1", **({"step": step} if step else {}))
    no_exception(at)
    text = "\n".join([shown_text(at), *_helps(at)]).lower()
    assert "sidebar" not in text, [line for line in text.splitlines() if "sidebar" in line][:3]
