"""AppTest: the training lab — step-0 view, Run with small settings, NaN stop, hostile links."""

import pytest

from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

PAGE = "pages/training.py"


def _titles(at):
    return [s["layout"]["title"]["text"] for s in plotly_specs(at)]


def _metrics(at):
    return {m.label: m.value for m in at.metric}


def test_defaults_show_the_start_before_any_training():
    at = run_page(PAGE)
    no_exception(at)
    assert at.title[0].value == "Training lab"
    assert not warnings(at)
    titles = _titles(at)
    assert any("Jacobian norms at step 0" in t for t in titles)
    assert any("probe examples" in t for t in titles)
    assert not any("Training loss" in t for t in titles)  # nothing trained yet
    m = _metrics(at)
    assert (
        float(m["Step 0 largest weight, unscaled"])
        > 0.7
        > 0.4
        > float(m["Step 0 largest weight, scaled"])
    )
    assert any("Run both" in i.value for i in at.info)
    assert [b.label for b in at.button][:2] == ["Run both", "Stop"]
    assert any("0.5" in c.value and "SGD" in c.value for c in at.caption)


def test_run_trains_both_and_a_second_visit_reuses_the_finished_runs():
    at = run_page(PAGE, d_k="8", steps="50", seed="7")
    at.button[0].click().run()
    no_exception(at)
    titles = _titles(at)
    assert any("Training loss — d_k = 8, SGD, lr 0.5" in t for t in titles)
    assert any("Accuracy" in t for t in titles) and any("after training" in t for t in titles)
    loss = next(s for s in plotly_specs(at) if "Training loss" in s["layout"]["title"]["text"])
    assert loss["layout"]["yaxis"]["type"] == "log"
    assert len(loss["data"]) == 2
    m = _metrics(at)
    assert float(m["Final loss, scaled"]) > 0
    assert m["Right pair after, unscaled"].endswith("%")
    # another student opening the same settings sees the cached result without training
    again = run_page(PAGE, d_k="8", steps="50", seed="7")
    no_exception(again)
    assert any("Training loss" in t for t in _titles(again))


def test_a_diverging_learning_rate_stops_and_says_so():
    at = run_page(PAGE, d_k="64", lr="10", steps="100", seed="3")
    at.button[0].click().run()
    no_exception(at)
    errors = [e.value for e in at.error]
    assert errors and all("diverged" in e for e in errors)
    loss = next(s for s in plotly_specs(at) if "Training loss" in s["layout"]["title"]["text"])
    for trace in loss["data"]:
        ys = trace["y"]
        assert "nan" not in str(ys).lower()


def test_adam_with_auto_learning_rate():
    at = run_page(PAGE, optimizer="adam")
    no_exception(at)
    assert not warnings(at)
    assert any("0.01" in c.value and "Adam" in c.value for c in at.caption)
    # a link with an explicit learning rate (or "auto") is taken as it is, without a note
    for lr in ("auto", "0.01", "0.5"):
        link = run_page(PAGE, optimizer="adam", lr=lr)
        no_exception(link)
        assert not warnings(link), lr


@pytest.mark.parametrize(
    "params,bad",
    [
        ({"d_k": "100"}, "d_k"),
        ({"d_k": "1024"}, "d_k"),
        ({"optimizer": "rmsprop"}, "optimizer"),
        ({"lr": "abc"}, "lr"),
        ({"lr": "-1"}, "lr"),
        ({"steps": "5"}, "steps"),
        ({"steps": "1e9"}, "steps"),
        ({"init_std": "nan"}, "init_std"),
        ({"seed": "-1"}, "seed"),
        ({"d_k": "<script>alert(1)</script>"}, "d_k"),
    ],
)
def test_bad_url_values_fall_back_with_a_note(params, bad):
    at = run_page(PAGE, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0], notes
    assert "<script>" not in notes[0].replace("`d_k=<script>", "")
    assert (
        float(_metrics(at)["Step 0 largest weight, unscaled"]) > 0
    )  # the page still draws the defaults
