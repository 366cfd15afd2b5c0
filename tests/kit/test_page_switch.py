"""Moving to another page starts it from its own link and defaults: no control value of
the last page is carried over (pages share names: `seed` is /alternatives' number box and
/heads' slider, `tokens` a slider on /scaling and on /masks)."""

from streamlit.testing.v1 import AppTest

from tests.support.apptest import ROOT, _registry, no_exception


def _open(file: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at._registered_pages = _registry(120)
    at.switch_page(file)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_a_number_box_s_value_does_not_reach_another_page_s_slider_of_that_name():
    at = _open("pages/alternatives.py", step="Scoring", seed="1234")
    no_exception(at)
    assert at.number_input(key="seed").value == 1234
    at.switch_page("pages/heads.py").run()  # as the Next link does, in the same session
    no_exception(at)
    seed = at.slider(key="seed").value
    assert seed == 0 and isinstance(seed, int)


def test_a_shared_name_starts_from_the_new_page_s_default_and_its_first_step():
    at = _open("pages/scaling.py", tokens="10", step="Spread")
    assert at.slider(key="tokens").value == 10
    at.switch_page("pages/masks.py").run()
    no_exception(at)
    default = _open("pages/masks.py")
    assert at.slider(key="tokens").value == default.slider(key="tokens").value != 10
    assert at.tabs[0].label == default.tabs[0].label
    assert at.session_state["step"] == default.session_state["step"]
