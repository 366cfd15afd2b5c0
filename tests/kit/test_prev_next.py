"""Previous/Next walk a page's steps first, then the lesson path (issue 18, item 3)."""

from __future__ import annotations

import pytest

from tests.support.apptest import no_exception, run_page
from ui.lesson import available

LESSONS = available()


def _nav(at) -> tuple[list[str], list[str], str]:
    """(step buttons, lesson links, the 'Lesson i of n' caption) at the page's bottom."""
    buttons = [b.label for b in at.button if b.label.startswith(("Next: ", "Previous: "))]
    links = [link.proto.label for link in at.get("page_link")]
    links = [label for label in links if " lesson: " in label]
    [where] = [c.value for c in at.caption if c.value.startswith("Lesson ")]
    return buttons, links, where


@pytest.mark.parametrize("i", range(len(LESSONS)), ids=lambda i: LESSONS[i].url_path or "home")
def test_next_walks_every_step_then_the_lesson_links_move_on(i):
    lesson = LESSONS[i]
    at = run_page(lesson.file)
    no_exception(at)
    labels = [t.label for t in at.tabs]
    buttons, links, where = _nav(at)
    n = len(LESSONS)
    assert where.startswith(f"Lesson {i + 1} of {n}")
    want = ([f"Previous lesson: {LESSONS[i - 1].title}"] if i else []) + (
        [f"Next lesson: {LESSONS[i + 1].title}"] if i + 1 < n else []
    )
    assert links == want  # always there: a class can move on without every step
    if not labels:  # a page without steps: only the lesson links
        assert buttons == [] and "step" not in where
        return
    for j, label in enumerate(labels):  # press Next from the first step to the last
        assert at.session_state["step"] == label
        buttons, links, where = _nav(at)
        assert where == f"Lesson {i + 1} of {n} · step {j + 1} of {len(labels)}"
        expect = ([f"Previous: {labels[j - 1]}"] if j else []) + (
            [f"Next: {labels[j + 1]}"] if j + 1 < len(labels) else []
        )
        assert buttons == expect
        assert links == want
        if j + 1 < len(labels):
            next(b for b in at.button if b.label == f"Next: {labels[j + 1]}").click().run()
            no_exception(at)
            assert at.query_params["step"] == labels[j + 1]  # the link names the step
    back = labels[-2]
    next(b for b in at.button if b.label == f"Previous: {back}").click().run()
    assert at.session_state["step"] == back
