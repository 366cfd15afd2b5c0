"""AppTest: the home page and the shell (navigation, badge, URL fallbacks)."""

import pytest

from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

HOME = "pages/home.py"


def test_defaults_show_formula_badge_chart_and_lesson_path():
    at = run_page(HOME)
    no_exception(at)
    assert at.title[0].value == "Attention Explorer"
    assert any("softmax" in el.value for el in at.latex)
    assert any("Computed live by PyTorch" in c.value and "CPU" in c.value for c in at.caption)
    specs = plotly_specs(at)
    assert len(specs) == 1
    fig = specs[0]
    assert fig["data"][0]["type"] == "heatmap"
    assert "d_k = 64" in fig["layout"]["title"]["text"]
    assert fig["layout"]["xaxis"]["title"]["text"] and fig["layout"]["yaxis"]["title"]["text"]
    assert not warnings(at)
    typical = float(at.metric[0].value)
    assert 0.1 < typical < 0.9  # scaled: a spread-out row


def test_unscaled_large_d_k_saturates():
    at = run_page(HOME, d_k="1024", scaled="false")
    no_exception(at)
    assert at.select_slider[0].value == 1024 and at.toggle[0].value is False
    assert float(at.metric[0].value) > 0.95
    assert not warnings(at)


def test_d_k_one_scaling_changes_nothing():
    a = run_page(HOME, d_k="1", scaled="true")
    b = run_page(HOME, d_k="1", scaled="false")
    assert a.metric[0].value == b.metric[0].value


@pytest.mark.parametrize(
    "params,bad",
    [
        ({"d_k": "-3"}, "d_k"),
        ({"d_k": "abc"}, "d_k"),
        ({"d_k": "100"}, "d_k"),
        ({"d_k": ""}, "d_k"),
        ({"scaled": "maybe"}, "scaled"),
        ({"seed": "1e99"}, "seed"),
        ({"seed": "nan"}, "seed"),
        ({"d_k": "<script>alert(1)</script>"}, "d_k"),
        ({"d_k": "`![x](http://example.com/x.png)`"}, "d_k"),
    ],
)
def test_bad_url_values_fall_back_with_a_visible_note(params, bad):
    at = run_page(HOME, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0], notes
    assert at.select_slider[0].value == 64 or bad != "d_k"
    # hostile text is quoted inside a code span, never rendered as HTML or an image
    assert "http" not in notes[0] or "`d_k=" in notes[0]
    assert "<script>" not in notes[0].replace("`d_k=<script>", "")


def test_note_disappears_when_the_user_moves_the_control():
    at = run_page(HOME, d_k="abc")
    assert warnings(at)
    at.select_slider[0].set_value(128).run()
    no_exception(at)
    assert not warnings(at)


def test_navigation_lists_available_pages_in_lesson_order():
    from ui.lesson import LESSONS, available

    files = [lesson.file for lesson in available()]
    assert files[0] == HOME
    order = [lesson.file for lesson in LESSONS]
    assert files == sorted(files, key=order.index)
