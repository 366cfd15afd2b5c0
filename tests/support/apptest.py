"""AppTest helpers: run one page through app.py (real navigation) with URL parameters."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui.lesson import by_file

ROOT = Path(__file__).resolve().parents[2]


_REGISTRY: dict = {}


def page_steps(file: str) -> tuple[str, ...]:
    """A page's step labels, from the registry (ui/lesson.py); ("",) for a page without steps."""
    return by_file(file).steps or ("",)


def _registry(timeout: float) -> dict:
    """The app's page registry, from one probe run of app.py per test process."""
    if not _REGISTRY:
        probe = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        probe.run()
        _REGISTRY.update(probe._registered_pages)
    return dict(_REGISTRY)


def reveal_all(at: AppTest, timeout: float = 120) -> AppTest:
    """Answer every unrevealed exercise on the page (the first choice, or its lowest number)
    and press its Reveal, until none is left: what a step holds back until the reveal
    (ui.exercises' secrecy rule) is then on the page."""
    from ui.exercises import EXERCISE_LOG

    for _ in range(8):
        try:
            log = at.session_state[EXERCISE_LOG]
        except KeyError:
            log = []
        todo = [e["key"] for e in log if not e["revealed"]]
        if not todo:
            return at
        answer_and_reveal(at, todo[0], timeout)
    return at


def answer_and_reveal(at: AppTest, key: str, timeout: float = 120) -> AppTest:
    """Commit to any answer of exercise `key` (the first choice, or the lowest number) and
    press its Reveal."""
    radios = [r for r in at.radio if r.key == f"pick-{key}"]
    if radios:
        radios[0].set_value(radios[0].options[0])
    else:
        box = at.number_input(key=f"guess-{key}")
        box.set_value(box.min if box.min is not None else 0.0)
    return at.button(key=f"FormSubmitter:form-{key}-Reveal").click().run(timeout=timeout)


def run_page(file: str, timeout: float = 60, *, reveal: bool = False, **params: str) -> AppTest:
    """Run `file` (e.g. "pages/scaling.py") as if opened with ?k=v…; return the AppTest.

    Goes through app.py so st.navigation, page config and the UI kit are exercised.
    """
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
    if file != "pages/home.py":
        # Open the page directly, like a shared link: the first run of a fresh session
        # lands on it. (A switch after a first run would behave like in-app navigation,
        # which clears the URL's parameters.) The page registry comes from a probe run.
        at._registered_pages = _registry(timeout)
        at.switch_page(file)
    for k, v in params.items():
        at.query_params[k] = str(v)
    at.run()
    return reveal_all(at, timeout) if reveal else at


def run_steps(
    file: str, steps, *, key: str = "step", reveal: bool = False, **params: str
) -> list[AppTest]:
    """The page once per step tab (?step=<label>), each opened like a shared link.

    Pages split into `ui.steps` tabs run only the open tab's body, so a single run
    shows one step's charts; this visits them all."""
    return [run_page(file, reveal=reveal, **params, **{key: label}) for label in steps]


def all_specs(runs: list[AppTest]) -> list[dict]:
    """plotly_specs of several runs (e.g. run_steps), in order."""
    return [spec for at in runs for spec in plotly_specs(at)]


def chart_titles(at: AppTest) -> list[str]:
    """The titles of the page's plotly charts, in order."""
    return [spec["layout"]["title"]["text"] for spec in plotly_specs(at)]


def plotly_specs(at: AppTest) -> list[dict]:
    """Every plotly chart on the page as its JSON figure (AppTest shows them as UnknownElement)."""
    specs = []
    for el in at.main.get("plotly_chart") + at.sidebar.get("plotly_chart"):
        specs.append(json.loads(el.proto.spec))
    return specs


def warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


def reveal(at: AppTest, key: str) -> None:
    """Press the Reveal button of the predict-then-reveal exercise `key`."""
    at.button(key=f"FormSubmitter:form-{key}-Reveal").click().run()
    no_exception(at)


def verdicts(at: AppTest) -> tuple[list[str], list[str]]:
    """(right-answer messages, wrong-answer messages) shown by revealed exercises."""
    ok = [s.value for s in at.success if s.value.startswith(("Right", "Close enough"))]
    bad = [e.value for e in at.error if e.value.startswith(("Not quite", "Computed"))]
    return ok, bad


CHART_WORDS = "Chart in words"  # ui.show's box under every chart (content/charts.md)


def explanations(at: AppTest) -> list:
    """The page's expanders other than the "Chart in words" box every chart has."""
    return [e for e in at.expander if e.label != CHART_WORDS]
