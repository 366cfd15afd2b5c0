"""The UI kit's pure helpers and the figure style."""

import numpy as np
import pytest

from figures import Chart, heatmap
from figures.common import weights_heatmap
from ui.chrome import escape
from ui.controls import log_values, safe_text


def test_log_values_are_round_sorted_and_bounded():
    v = log_values(0.05, 20, (1.0,))
    assert v[0] == 0.05 and v[-1] == 20 and 1.0 in v
    assert v == sorted(set(v))
    assert all(0.05 <= x <= 20 for x in v)
    assert 0.1 in v and 10 in v


@pytest.mark.parametrize("raw", ["a`b", "x\ny", "<script>", "é" * 100])
def test_safe_text_cannot_break_out_of_a_code_span(raw):
    s = safe_text(raw)
    assert "`" not in s and "\n" not in s and len(s) <= 41


def test_escape_neutralises_html_and_markdown():
    s = escape("<b>hi</b> [link](http://x) *bold*")
    assert "<b>" not in s and "](" not in s and "\\*" in s


def test_heatmap_keeps_repeated_labels_apart_and_blanks_non_finite():
    z = np.array([[0.5, -np.inf], [np.nan, 1.0]], dtype=np.float32)
    fig = heatmap(
        z, title="t", x_title="key", y_title="query", x_labels=["the", "the"], y_labels=["a", "b"]
    )
    tr = fig.data[0]
    assert tr.type == "heatmap"
    assert list(fig.layout.xaxis.ticktext) == ["the", "the"]
    assert list(fig.layout.xaxis.tickvals) == [0, 1]
    assert np.isnan(np.asarray(tr.z, dtype=float)[0, 1])
    assert fig.layout.title.text == "t" and fig.layout.xaxis.title.text == "key"
    assert fig.layout.yaxis.autorange == "reversed"


def test_weights_heatmap_is_a_chart_with_caption_and_fixed_colour_axis():
    c = weights_heatmap(np.eye(3, dtype=np.float32), ["a", "b", "c"])
    assert isinstance(c, Chart) and c.caption and c.alt
    assert c.fig.data[0].zmin == 0 and c.fig.data[0].zmax == 1
    assert c.fig.data[0].colorscale[0][1] != c.fig.data[0].colorscale[-1][1]


def _exercise_app():
    import streamlit as st

    import ui

    seed = st.session_state.get("seed_for_test", 0)
    truth = 0.25 * (seed + 1)
    ui.predict_choice(
        f"c-{seed}", "Which?", ["small", "large"], "large" if seed else "small", "Because."
    )
    ui.predict_number(f"n-{seed}", "How much?", truth, "Since.", rel_tol=0.1)


def test_predict_then_reveal_hides_the_answer_until_committed():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_exercise_app)
    at.run()
    assert not at.success and not at.error  # nothing revealed yet
    at.button[0].click().run()  # reveal without a pick: asked to commit first
    assert not at.success and not at.error and at.info
    at.radio[0].set_value("large")
    at.button[0].click().run()
    assert at.error and "small" in at.error[0].value  # wrong pick, truth shown
    at.number_input[0].set_value(0.26)
    at.button[1].click().run()
    assert any("0.25" in s.value for s in at.success)


def test_a_new_instance_starts_unrevealed():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_exercise_app)
    at.run()
    at.radio[0].set_value("small")
    at.button[0].click().run()
    assert at.success
    at.session_state["seed_for_test"] = 1
    at.run()
    assert not at.success and not at.error
