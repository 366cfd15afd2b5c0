"""AppTest: the "Beyond the dot product" page, as a shared link would open it."""

from tests.support.apptest import (
    all_specs,
    chart_titles,
    no_exception,
    plotly_specs,
    run_page,
    run_steps,
    warnings,
)
from ui.lesson import lesson

PAGE = "pages/alternatives.py"
STEPS = list(lesson("alternatives").steps)
GRIDS = "Scores, and the weights softmax makes of them: the same queries and keys, five ways"
# the charts each step shows before any timing button is pressed
CHARTS = {
    "Scoring": [GRIDS],
    "Cosine": [
        "Cosine attention stays flat unless τ is small",
        "A long key 'advertises louder' — to the dot product only",
    ],
    "Speed": ["Memory of additive's T×T×d intermediate (float32, d = 64)"],
    "Smoother": [
        "Attention as a kernel smoother — bandwidth h = 0.5",
        "Weights of the query at x = 5 over the samples",
    ],
    "Linear attention": [],
    "Contribution": ['What the query "good" attends to, and what it actually receives'],
}
# τ and the seed (sidebar) on every step, plus each step's own: a closed step has none
SIDEBAR = ["seed", "tau"]
CONTROLS = {
    "Scoring": [],
    "Cosine": [],
    "Speed": ["T"],
    "Smoother": ["bandwidth"],
    "Linear attention": ["T"],
    "Contribution": ["value_scale"],
}


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _controls(at) -> list[str]:
    widgets = [*at.select_slider, *at.slider, *at.number_input]
    return sorted(w.key for w in widgets if w.key and not w.key.startswith(("guess-", "pick-")))


def _buttons(at) -> list[str]:
    """The step's own buttons: not the exercises' Reveal, not the Previous/Next at the bottom."""
    return [b.label for b in at.button if b.label != "Reveal" and not b.key.startswith("_ui_")]


def test_each_step_shows_only_its_own_charts_and_controls():
    runs = run_steps(PAGE, STEPS, reveal=True)
    for label, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), (label, warnings(at))
        assert at.title[0].value == "Beyond the dot product"
        assert chart_titles(at) == CHARTS[label], label
        assert _controls(at) == sorted(SIDEBAR + CONTROLS[label]), label
        for spec in plotly_specs(at):
            assert spec["layout"]["xaxis"]["title"]["text"]
    # every chart of the page appears, in the order of the steps
    every = [title for step in STEPS for title in CHARTS[step]]
    assert [s["layout"]["title"]["text"] for s in all_specs(runs)] == every
    # timings wait for a click: one button each in Speed and Linear attention
    assert [_buttons(at) for at in runs] == [
        [],
        [],
        ["Time dot product vs additive on this device"],
        [],
        ["Time softmax vs linear attention on this device"],
        [],
    ]
    # something to try in every step
    for label, at in zip(STEPS, runs, strict=True):
        assert "Try this" in " ".join(md.value for md in at.markdown), label


def test_default_view_is_the_scoring_step():
    at = run_page(PAGE, reveal=True)
    no_exception(at)
    assert not warnings(at)
    assert chart_titles(at) == [GRIDS]  # a closed step sends nothing
    m = _metrics(at)
    assert float(m["Bilinear − absorbed dot"]) < 1e-12
    assert float(m["Largest |cos(q, k)/τ|"]) <= 1.0
    grids = plotly_specs(at)[0]
    assert [t["type"] for t in grids["data"]] == ["heatmap", "heatmap"]


def test_a_step_follows_the_link_and_a_bad_one_falls_back_with_a_note():
    at = run_page(PAGE, reveal=True, step="Contribution")
    no_exception(at)
    assert not warnings(at)
    assert chart_titles(at) == CHARTS["Contribution"]
    m = _metrics(at)
    top, light = float(m["without “[SEP]” (α = 0.58)"]), float(m["without “not” (α = 0.05)"])
    assert top < 0.02 < light
    assert len(at.table) == 1  # every token, and two ways of removing it
    at = run_page(PAGE, reveal=True, step="Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`step=Nowhere`" in notes[0], notes
    assert chart_titles(at) == [GRIDS]


def test_a_control_shared_by_two_steps_keeps_its_value_from_one_to_the_other():
    at = run_page(PAGE, reveal=True, step="Speed")
    at.select_slider(key="T").set_value(512).run()
    at.query_params["step"] = at.session_state["step"] = "Linear attention"  # a tab click
    at.run()
    no_exception(at)
    assert at.select_slider(key="T").value == 512
    assert any("T = 128 … 512" in c.value for c in at.caption)
    at = run_page(
        PAGE, reveal=True, tau="0.1", seed="3", step="Cosine"
    )  # the sidebar's, on step two
    assert not warnings(at)
    assert plotly_specs(at)[0]["data"][1]["name"] == "τ = 0.1 (slider)"
    assert "seed 3" in " ".join(md.value for md in at.markdown)


def test_bad_url_values_fall_back_with_one_note_each():
    for step, params, key, default in (
        ("Scoring", dict(tau="abc", seed="1e99"), "tau", 1.0),
        ("Cosine", dict(tau="0", seed="-4"), "tau", 1.0),
        ("Speed", dict(T="3000"), "T", 1024),
        ("Smoother", dict(bandwidth="-1"), "bandwidth", 0.5),
        ("Linear attention", dict(T="huge"), "T", 1024),
        ("Contribution", dict(value_scale="nan"), "value_scale", 0.02),
    ):
        at = run_page(PAGE, reveal=True, step=step, **params)
        no_exception(at)
        notes = warnings(at)
        assert len(notes) == len(params), (step, notes)
        for name in params:
            assert sum(f"`{name}=" in n for n in notes) == 1, (name, notes)
        widget = at.slider(key=key) if key == "value_scale" else at.select_slider(key=key)
        assert widget.value == default
        assert chart_titles(at) == CHARTS[step]


def test_extremes_cap_additive_with_a_note_and_change_the_story():
    at = run_page(PAGE, reveal=True, T="4096", step="Speed")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "T = 4096" in notes[0] and "1024" in notes[0], notes
    assert "4 GiB" in notes[0]
    memory = plotly_specs(at)[0]
    assert memory["data"][0]["x"] == ["128", "256", "512", "1024", "2048", "4096"]
    at = run_page(
        PAGE, reveal=True, T="4096", step="Linear attention"
    )  # no additive here: no cap note
    no_exception(at)
    assert not warnings(at)
    at = run_page(PAGE, reveal=True, bandwidth="0.1", step="Smoother")
    assert "Attention as a kernel smoother — bandwidth h = 0.1" in chart_titles(at)
    at = run_page(PAGE, reveal=True, value_scale="1", step="Contribution")
    m = _metrics(at)
    assert float(m["without “[SEP]” (α = 0.58)"]) > float(m["without “not” (α = 0.05)"])
    contrib = plotly_specs(at)[0]
    assert len(contrib["data"]) == 2


def test_pressing_the_timing_buttons_measures_and_shows_the_charts():
    at = run_page(PAGE, reveal=True, T="256", step="Speed")
    at.button(key="time_scores").click().run()
    no_exception(at)
    assert "Time to score every query against every key (d = 64)" in chart_titles(at)
    m = _metrics(at)
    assert float(m["Additive ÷ dot at T = 256"].rstrip("×")) > 0
    assert m["Intermediate at T = 256"] == "16 MiB"
    speed = next(s for s in plotly_specs(at) if s["layout"]["title"]["text"].startswith("Time"))
    assert speed["data"][0]["x"] == [128, 256]
    at = run_page(PAGE, reveal=True, T="256", step="Linear attention")
    at.button(key="time_linear").click().run()
    no_exception(at)
    assert chart_titles(at) == ["Softmax attention against linear attention (d = 64)"]
    assert float(_metrics(at)["Softmax ÷ linear at T = 256"].rstrip("×")) > 0
