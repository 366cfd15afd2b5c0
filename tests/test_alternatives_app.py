"""AppTest: the "Beyond the dot product" page, as a shared link would open it."""

from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

PAGE = "pages/alternatives.py"


def _titles(at) -> list[str]:
    return [s["layout"]["title"]["text"] for s in plotly_specs(at)]


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_defaults_show_every_section_without_timing():
    at = run_page(PAGE)
    no_exception(at)
    assert at.title[0].value == "Beyond the dot product"
    assert not warnings(at)
    titles = _titles(at)
    assert titles[:2] == [
        "Scores: the same queries and keys, five ways",
        "Weights: softmax of each row of scores",
    ]
    assert any("advertises louder" in t for t in titles)
    assert any(t.startswith("Memory of additive") for t in titles)
    assert "Attention as a kernel smoother — bandwidth h = 0.5" in titles
    assert any(t.startswith("What the query") for t in titles)
    assert not any(t.startswith("Time to score") for t in titles)  # timings wait for a click
    m = _metrics(at)
    assert float(m["Bilinear − absorbed dot"]) < 1e-12
    assert float(m["Largest |cos(q, k)/τ|"]) <= 1.0
    top, light = float(m["without “[SEP]” (α = 0.58)"]), float(m["without “not” (α = 0.05)"])
    assert top < 0.02 < light
    assert [b.label for b in at.button if b.label != "Reveal"] == [
        "Time dot product vs additive on this device",
        "Time softmax vs linear attention on this device",
    ]
    for spec in plotly_specs(at):
        assert spec["layout"]["xaxis"]["title"]["text"]


def test_bad_url_values_fall_back_with_one_note_each():
    at = run_page(PAGE, tau="abc", T="3000", bandwidth="-1", value_scale="nan", seed="1e99")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 5, notes
    for key in ("tau", "T", "bandwidth", "value_scale", "seed"):
        assert sum(f"`{key}=" in n for n in notes) == 1, (key, notes)
    # every control shows its default
    assert at.select_slider(key="tau").value == 1.0
    assert at.select_slider(key="T").value == 1024
    assert at.select_slider(key="bandwidth").value == 0.5
    assert at.slider(key="value_scale").value == 0.02
    assert "Attention as a kernel smoother — bandwidth h = 0.5" in _titles(at)


def test_extremes_cap_additive_with_a_note_and_change_the_story():
    at = run_page(PAGE, tau="0.01", T="4096", bandwidth="0.1", value_scale="1")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "T = 4096" in notes[0] and "1024" in notes[0], notes
    assert "4 GiB" in notes[0]
    titles = _titles(at)
    assert "Attention as a kernel smoother — bandwidth h = 0.1" in titles
    m = _metrics(at)
    assert float(m["without “[SEP]” (α = 0.58)"]) > float(m["without “not” (α = 0.05)"])
    contrib = next(s for s in plotly_specs(at) if s["layout"]["title"]["text"].startswith("What"))
    assert len(contrib["data"]) == 2


def test_pressing_the_timing_buttons_measures_and_shows_the_charts():
    at = run_page(PAGE, T="256")
    at.button(key="time_scores").click().run()
    at.button(key="time_linear").click().run()
    no_exception(at)
    titles = _titles(at)
    assert "Time to score every query against every key (d = 64)" in titles
    assert "Softmax attention against linear attention (d = 64)" in titles
    m = _metrics(at)
    assert float(m["Additive ÷ dot at T = 256"].rstrip("×")) > 0
    assert m["Intermediate at T = 256"] == "16 MiB"
    assert float(m["Softmax ÷ linear at T = 256"].rstrip("×")) > 0
    speed = next(s for s in plotly_specs(at) if s["layout"]["title"]["text"].startswith("Time"))
    assert speed["data"][0]["x"] == [128, 256]
