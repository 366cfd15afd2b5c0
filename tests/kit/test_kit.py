"""The UI kit's pure helpers and the figure style."""

import re

import numpy as np
import pytest
from plotly.colors import get_colorscale

from figures import Chart, heatmap
from figures.common import weights_heatmap
from figures.parts import fast_figure
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
    s = escape("<b>hi</b> [link](http://x) *bold*", 100)
    assert "<b>" not in s and "](" not in s and "\\*" in s


def test_one_escaping_function_behind_every_name():
    import ui
    from ui import chrome, controls

    assert chrome.escape is controls.escape is ui.escape
    assert safe_text("a`b", 10) == escape("a`b", 10, code=True) == "a'b"


@pytest.mark.parametrize(
    "raw",
    [
        "**INJ**",
        "__INJ__ _x_ ~~s~~",
        "$$\\frac{1}{0}$$ and $x$",
        ":red[RED] :blue-background[x]",
        ":material/home: :smile:",
        "[y](https://example.com)",
        "see https://example.org",
        "www.example.net WWW.EXAMPLE.NET",
        "a@example.com",
        "<b>x</b> &lt;",
        "# heading",
        "> quote | a | b |",
        "1. list",
    ],
)
def test_escape_leaves_no_markup_live(raw):
    """Every ASCII punctuation mark is backslash-escaped; a zero-width space breaks what
    Streamlit finds in the parsed text (directives, icons, emoji, bare links)."""
    s = escape(raw, 100)
    parsed = re.sub(r"\\(.)", r"\1", s)  # what markdown makes of the escapes
    assert parsed.replace("\u200b", "") == raw  # it reads exactly as typed
    assert not re.search(r"(?<!\\)[*_$\[\]<>`#|~.()!&:@-]", s)  # no punctuation left bare
    assert not re.search(r"(?i):[a-z/]|https?://|www\.|@[a-z]", parsed)  # no directive, no link


def test_escape_is_one_short_printable_line():
    s = escape("a\nb\tc\u202eevil" + "x" * 500, 40)
    assert "\n" not in s and "\t" not in s and "\u202e" not in s
    assert s.endswith("…") and len(s.replace("\u200b", "")) <= 41
    assert escape("", 10) == "" and safe_text("", 10) == " "


def _text_app():
    import ui

    ui.text("t", "Text", "", max_chars=5)
    ui.slider("s", "Slider", 0, 10, 5)
    ui.number("n", "Number", 0, 10, 5)
    ui.show_notes()


def _notes(at) -> str:
    return " ".join(w.value for w in at.warning)


@pytest.mark.parametrize(
    ("t", "held", "said"),
    [
        ("abcdefgh", "abcde", ["The link's `t` was 8 characters long; the box holds 5, so its "
                               "first 5 are used."]),
        (["ab", "**INJ**"], "**INJ", ["The link gave `t` 2 times; the last one is used.",
                                      "That one was 7 characters long"]),
        (["**INJ**", "ab"], "ab", ["The link gave `t` 2 times; the last one is used."]),
        ("abc", "abc", []),
    ],
)  # fmt: skip
def test_text_from_a_link_is_cut_or_picked_and_the_note_says_so(t, held, said):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_text_app)
    at.query_params["t"] = t
    at.run()
    assert at.text_input[0].value == held
    notes = _notes(at)
    assert all(x in notes for x in said) and bool(notes) == bool(said), notes
    assert "INJ" not in notes  # the text itself is never echoed
    at.text_input[0].input("xy").run()
    assert not _notes(at)  # the user changed it: the note is gone


@pytest.mark.parametrize(
    ("key", "value", "note"),
    [
        ("n", ["3", "7"], "The link gave `n` 2 times (`n=3,7`); using the last one, **7**."),
        ("s", ["3", "7"], "The link asked for `s=3,7`, which this page cannot use (a number "
                          "from 0 to 10); showing **5** instead."),  # a slider keeps neither
        ("s", ["7", "**INJ**"], "The link asked for `s=7,**INJ**`, which this page cannot use "
                                "(a number from 0 to 10); showing **5** instead."),
        ("s", "**INJ**", "The link asked for `s=**INJ**`, which this page cannot use (a number "
                         "from 0 to 10); showing **5** instead."),
    ],
)  # fmt: skip
def test_a_control_names_a_repeated_or_bad_link_value_in_a_code_span(key, value, note):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_text_app)
    at.query_params[key] = value
    at.run()
    assert _notes(at) == note


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


def test_fast_figure_spells_out_what_plotly_js_would_not_read():
    # unvalidated, `font_size` and a scale's name would reach plotly.js as written
    trace = dict(type="heatmap", z=[[0, 1]], colorscale="Viridis", hoverlabel=dict(font_size=9))
    layout = dict(
        hoverlabel=dict(font_size=14),
        font=dict(color="black"),
        font_size=12,
        plot_bgcolor="#FFFFFF",  # one of plotly's own names with an underscore: kept
        annotations=[dict(text="a", font_size=11)],
    )
    spec = fast_figure([trace], layout).to_plotly_json()
    assert spec["layout"]["hoverlabel"] == {"font": {"size": 14}}
    assert spec["layout"]["font"] == {"color": "black", "size": 12}
    assert spec["layout"]["plot_bgcolor"] == "#FFFFFF"
    assert spec["layout"]["annotations"][0]["font"] == {"size": 11}
    assert spec["data"][0]["hoverlabel"] == {"font": {"size": 9}}
    assert [list(s) for s in spec["data"][0]["colorscale"]] == [
        list(s) for s in get_colorscale("Viridis")
    ]
