"""AppTest: the "Why √d_k" page as a shared link would open it."""

import pytest

import attn_core
from attn_core.lessons import scaling as core
from attn_core.lessons.scaling import row_median
from tests.support.apptest import (
    all_specs,
    explanations,
    no_exception,
    plotly_specs,
    run_page,
    run_steps,
    warnings,
)
from tests.support.apptest import chart_titles as titles
from ui.lesson import lesson

PAGE = "pages/scaling.py"
STEPS = lesson("scaling").steps
FIRST = 4  # charts in the first (default) step
TITLES = [
    "① Raw scores q·k",
    "② Logits softmax sees",
    "③ Weights after softmax",
    "④ Per query row",
    "Distribution of the logits",
    "Variance of the logits against d_k",
    "Saturated rows",
    "Mean entropy of a row",
    "Softmax Jacobian",
    "Jacobian norm of every query row",
    "Two keys: the softmax gradient",
]


LEAD = "Winner's typical lead"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_defaults_show_every_stage_scaled_and_healthy():
    runs = run_steps(PAGE, STEPS)
    for at in runs:
        no_exception(at)
        assert not warnings(at)
    at = runs[0]
    assert at.title[0].value == "Why √d_k"
    assert len(titles(at)) == FIRST  # a closed step sends nothing
    shown = [spec["layout"]["title"]["text"] for spec in all_specs(runs)]
    assert len(shown) == len(TITLES)
    for want, got in zip(TITLES, shown, strict=True):
        assert got.startswith(want), (want, got)
    m = metrics(at)
    assert 0.7 < float(m["Logit SD (this sequence)"]) < 1.3
    assert m["Rows saturated"] == "0%"
    lead = attn_core.scaling_sample(12, 64, seed=0).lead  # winner minus runner-up, per row
    assert m[LEAD] == f"{row_median(lead):.3g}"
    assert "Try this" in " ".join(md.value for md in at.markdown)
    # variance, iid caveat, saturated gradient, initialisation
    assert sum(len(explanations(r)) for r in runs) == 4


def test_unscaled_d_k_64_saturates_and_the_gradient_collapses():
    at = run_page(PAGE, scaled="false", step="Jacobian")
    no_exception(at)
    m = metrics(at)
    assert 6 < float(m["Logit SD (this sequence)"]) < 10  # about √64 = 8
    assert int(m["Rows saturated"].rstrip("%")) >= 25
    lead = attn_core.scaling_sample(12, 64, scaled=False, seed=0).lead
    assert m[LEAD] == f"{row_median(lead):.3g}"
    assert 2 < float(m[LEAD]) < 24  # well past the scaled lead, far short of the lesson's 24
    captions = " ".join(c.value for c in at.caption)
    assert "rows below 1e-3: **" in captions
    at = run_page(PAGE, scaled="false", step="Two keys")
    two_key = plotly_specs(at)[-1]
    assert any("exactly 0 from gap" in a["text"] for a in two_key["layout"]["annotations"])


def test_heavy_view_d_k_1024_with_64_tokens():
    runs = run_steps(PAGE, STEPS, d_k="1024", tokens="64")
    for at in runs:
        no_exception(at)
        assert not warnings(at)
    specs = all_specs(runs)
    assert len(specs) == len(TITLES)
    assert "d_k = 1024" in specs[0]["layout"]["title"]["text"]
    assert specs[0]["data"][0]["z"]["shape"] in ("64, 64", [64, 64])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_every_precision_runs_and_says_where_gradients_vanish(dtype):
    at = run_page(
        PAGE, dtype=dtype, scaled="false", d_k="1024", temperature="0.05", step="Two keys"
    )
    no_exception(at)
    assert not warnings(at)
    assert at.selectbox(key="dtype").value == dtype
    assert all("nan" not in v.lower() for v in metrics(at).values())
    two_key = plotly_specs(at)[-1]
    notes = [a["text"] for a in two_key["layout"]["annotations"]]
    assert any("exactly 0" in n for n in notes) == (dtype != "float64")
    assert two_key["data"][1]["name"] == f"backprop in {dtype}"


def test_temperature_8_unscaled_equals_scaled_at_d_k_64():
    a = run_page(PAGE, scaled="false", temperature="8")
    b = run_page(PAGE)
    no_exception(a)
    assert not warnings(a)
    assert metrics(a) == metrics(b)


def test_layernorm_init_is_offered_and_explained():
    at = run_page(PAGE, init="layernorm", d_k="4", step="Spread")
    no_exception(at)
    assert not warnings(at)
    assert at.radio(key="init").value == "layernorm"
    assert any("LayerNorm" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "params,bad",
    [
        ({"d_k": "-3"}, ["d_k"]),
        ({"d_k": "abc"}, ["d_k"]),
        (
            {"temperature": "0", "tokens": "100000", "dtype": "float8"},
            ["temperature", "tokens", "dtype"],
        ),
        ({"init": "<b>x</b>", "scaled": "maybe", "seed": "nan"}, ["init", "scaled", "seed"]),
    ],
)  # fmt: skip
def test_bad_url_values_fall_back_with_a_visible_note(params, bad):
    at = run_page(PAGE, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == len(bad), notes
    for name in bad:
        assert any(f"`{name}=" in n for n in notes), (name, notes)
    assert at.select_slider(key="d_k").value == 64
    assert at.slider(key="tokens").value == 12
    assert at.select_slider(key="temperature").value == 1.0
    assert at.selectbox(key="dtype").value == "float32"
    assert len(plotly_specs(at)) == FIRST


def test_a_step_follows_the_link_and_a_bad_one_falls_back_with_a_note():
    at = run_page(PAGE, step="Saturation")
    no_exception(at)
    assert not warnings(at)
    shown = titles(at)
    assert len(shown) == 2
    assert shown[0].startswith("Saturated rows") and shown[1].startswith("Mean entropy")
    at = run_page(PAGE, step="Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`step=Nowhere`" in notes[0]
    assert len(titles(at)) == FIRST


def test_the_jacobian_row_follows_the_link_and_falls_back_with_a_note():
    at = run_page(PAGE, tokens="12", row="7", step="Jacobian")
    no_exception(at)
    assert not warnings(at)
    assert "query 7" in titles(at)[0]
    at = run_page(PAGE, tokens="4", row="10", step="Jacobian")  # only rows 0 … 3 exist
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`row=10`" in notes[0] and "0 to 3" in notes[0]
    assert "query 0" in titles(at)[0]
    at.slider(key="row").set_value(2).run()  # a fragment rerun: only the Jacobian step redraws
    no_exception(at)
    assert not warnings(at)
    assert "query 2" in titles(at)[0]


def test_moving_only_the_temperature_does_not_resample_the_sweeps(monkeypatch):
    calls = []
    real = core.sweep_raw_scores

    def counting(**kw):
        calls.append(kw)
        return real(**kw)

    monkeypatch.setattr(core, "sweep_raw_scores", counting)  # the page samples through it
    at = run_page(
        PAGE, seed="4321", step="Spread"
    )  # a seed no other test uses: the first run must sample
    no_exception(at)
    assert len(calls) == 1
    for t in (2.0, 0.5):
        at.select_slider(key="temperature").set_value(t).run()
        no_exception(at)
    assert len(calls) == 1
    assert "temperature 0.5" in titles(at)[0]


@pytest.mark.browser
def test_in_the_browser_every_chart_draws_and_sliders_rerun(server_url, browser):
    from tests.support.browser import (
        open_page,
        open_step,
        plotly_count,
        rerun_latency_ms,
        wait_charts,
    )

    exception = '[data-testid="stException"]'
    page, errors = open_page(browser, f"{server_url}/scaling?scaled=false")
    try:
        wait_charts(page, FIRST)
        assert plotly_count(page) == FIRST  # only the open step draws
        assert rerun_latency_ms(page, 0) > 0  # d_k, in the sidebar: a full rerun
        assert plotly_count(page) == FIRST
        open_step(page, "Jacobian", "Softmax Jacobian")  # another step, drawn on demand
        assert "step=Jacobian" in page.url  # the open step is in the link
        sliders = page.locator('[data-testid="stSlider"] input[type="range"]')
        assert rerun_latency_ms(page, sliders.count() - 1) > 0  # the row: a fragment rerun
        assert plotly_count(page) == 2
        assert page.locator(exception).count() == 0
        assert not errors, errors
    finally:
        page.context.close()  # the browser is shared: leave no tab open
