"""AppTest: the training lab — its steps, Run with small settings, NaN stop, hostile links."""

import json
import re

import pytest

from attn_core.lessons.training import FAILURE
from tests.support.apptest import (
    ROOT,
    all_specs,
    chart_titles,
    no_exception,
    plotly_specs,
    run_page,
    run_steps,
    warnings,
)
from ui.lesson import lesson

PAGE = "pages/training.py"
STEPS = lesson("training").steps
# before any training, the charts of each step (a closed step sends nothing)
SHOWS = {
    "Train": ["Where the query looks: probe examples"],
    "Rows": ["Per-row softmax Jacobian norms at step 0"],
    "Predict": [],
    "Heads": [],  # the head-width sweep trains only on its button
}


def _metrics(at):
    return {m.label: m.value for m in at.metric}


def test_defaults_show_the_start_before_any_training(fresh_server):
    runs = run_steps(PAGE, STEPS)
    for step, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), step
        titles = chart_titles(at)
        assert len(titles) == len(SHOWS[step]), (step, titles)
        assert all(t.startswith(w) for t, w in zip(titles, SHOWS[step], strict=True)), titles
    shown = [spec["layout"]["title"]["text"] for spec in all_specs(runs)]
    assert len(shown) == sum(len(v) for v in SHOWS.values())
    assert not any("Training loss" in t for t in shown)  # nothing trained yet
    at = run_page(PAGE)  # no ?step=: the lab, with Run and the probe rows before training
    no_exception(at)
    assert at.title[0].value == "Training lab"
    assert not warnings(at)
    assert [t[: len(SHOWS["Train"][0])] for t in chart_titles(at)] == SHOWS["Train"]
    assert any("**Run both** trains" in c.value for c in at.caption)
    assert [b.label for b in at.button][:3] == ["Show the failure", "Run both", "Stop"]
    assert any("0.5" in c.value and "SGD" in c.value for c in at.caption)
    m = _metrics(runs[STEPS.index("Rows")])  # the Rows step: how the two start
    assert (
        float(m["Step 0 largest weight, unscaled"])
        > 0.7
        > 0.4
        > float(m["Step 0 largest weight, scaled"])
    )
    assert any("once both runs have ended" in i.value for i in runs[STEPS.index("Rows")].info)
    assert "Predict, then reveal" in " ".join(
        md.value for md in runs[STEPS.index("Predict")].markdown
    )


def test_a_link_opens_its_step_and_a_bad_step_falls_back_with_a_note():
    at = run_page(PAGE, step="Rows")
    no_exception(at)
    assert not warnings(at)
    assert [h.value for h in at.header] == ["Row by row: who still passes gradient back"]
    assert not [b for b in at.button if b.label == "Run both"]
    at = run_page(PAGE, step="Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`step=Nowhere`" in notes[0], notes
    first = ["Show the failure", "Run both", "Stop"]  # the first step
    assert [b.label for b in at.button][:3] == first
    assert len(plotly_specs(at)) == len(SHOWS["Train"])


def test_sliders_that_do_not_change_the_start_rebuild_no_chart():
    at = run_page(PAGE)
    [before] = plotly_specs(at)
    at.select_slider(key="lr").set_value(0.1).run()
    at.slider(key="steps").set_value(500).run()
    no_exception(at)
    assert plotly_specs(at) == [before]  # same spec: the browser redraws nothing
    at.select_slider(key="d_k").set_value(8).run()
    [after] = plotly_specs(at)
    assert after != before


def test_run_trains_both_and_a_second_visit_reuses_the_finished_runs():
    at = run_page(PAGE, d_k="8", steps="50", seed="7")
    at.button(key="run").click().run()
    no_exception(at)
    titles = chart_titles(at)
    assert any("Training loss — d_k = 8, SGD, lr 0.5" in t for t in titles)
    assert any("Accuracy" in t for t in titles)
    probe = next(s for s in plotly_specs(at) if "probe examples" in s["layout"]["title"]["text"])
    assert len([t for t in probe["data"] if t["type"] == "heatmap"]) == 4  # before and after
    loss = next(s for s in plotly_specs(at) if "Training loss" in s["layout"]["title"]["text"])
    assert loss["layout"]["yaxis"]["type"] == "log"
    assert len(loss["data"]) == 2
    m = _metrics(at)
    assert float(m["Final loss, scaled"]) > 0
    assert m["Right pair after, unscaled"].endswith("%")
    # another student opening the same settings sees the cached result without training
    again = run_page(PAGE, d_k="8", steps="50", seed="7")
    no_exception(again)
    assert any("Training loss" in t for t in chart_titles(again))
    rows = run_page(PAGE, d_k="8", steps="50", seed="7", step="Rows")
    no_exception(rows)
    assert any("Jacobian norms after training" in t for t in chart_titles(rows))
    assert any("Jacobian norms at step 0" in t for t in chart_titles(rows))


def test_a_diverging_learning_rate_stops_and_says_so():
    at = run_page(PAGE, d_k="64", lr="10", steps="100", seed="3")
    at.button(key="run").click().run()
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
    at = run_page(PAGE, step="Rows", **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0], notes
    assert "<script>" not in notes[0].replace("`d_k=<script>", "")
    assert (
        float(_metrics(at)["Step 0 largest weight, unscaled"]) > 0
    )  # the page still draws the defaults


def span(xs: list[float], fmt) -> str:
    """A range of measured values as the answer words it: "91–99%", or "100%" when both
    ends read the same."""
    lo, hi = fmt(min(xs)), fmt(max(xs))
    return hi if lo == hi else f"{lo.removesuffix('%')}–{hi}"


def pct(x: float) -> str:
    return f"{x:.0%}"


def two_digits(x: float) -> str:
    return f"{float(f'{x:.2g}'):,g}"  # 270, not 2.7e+02


def test_once_the_server_trains_the_defaults_the_answer_quotes_that_one_run(
    fresh_server, monkeypatch
):
    """A run of this server replaces the file's seeds for its setting, and the caption says
    it is one run (seed 0); the failure setting's figures stay the file's ranges."""
    monkeypatch.setenv("ATTN_JOB_BUDGET_S", "3600")  # a loaded machine must finish the run
    at = run_page(PAGE)
    at.button(key="run").click().run(timeout=300)
    no_exception(at)
    again = run_page(PAGE)
    box = next(i.value for i in again.info if "Measured: not at the defaults" in i.value)
    assert re.search(r"still learns \(\d+% of its last 50 batches right, scaled \d+%\)", box)
    assert re.search(r"just higher \([\d.,]+ times\)", box), box
    seeds = json.loads((ROOT / "assets" / "training_answer.json").read_text())["seeds"]
    where = (
        "Defaults: one run (seed 0) on this server. "
        f"Failure: seeds {seeds[0]}–{seeds[-1]} on a CPU when this app was built."
    )
    assert any(c.value == where for c in again.caption)


def test_the_answer_comes_first_with_measured_figures_and_one_click_shows_the_failure(
    fresh_server,
):
    """The box quotes the file's runs as ranges over its seeds, and says where they ran."""
    shipped = json.loads((ROOT / "assets" / "training_answer.json").read_text())
    (s, u), (fs_, fu) = (
        ([r["scaled"] for r in shipped[n]["runs"]], [r["unscaled"] for r in shipped[n]["runs"]])
        for n in ("default", "failure")
    )
    at = run_page(PAGE)
    box = next(i.value for i in at.info if "Measured: not at the defaults" in i.value)
    acc = [x["tail_accuracy"] for x in u]
    assert f"learns ({span(acc, pct)} of its last 50 batches right" in box
    ratio = [b["tail_loss"] / a["tail_loss"] for a, b in zip(s, u, strict=True)]
    assert f"just higher ({span(ratio, two_digits)} times)" in box
    assert (
        f"the scaled run answers a batch 99% right by step {max(x['first_99'] for x in fs_)}" in box
    )
    assert "the unscaled run never answers a batch 99% right" in box
    assert f"ends at {span([x['tail_accuracy'] for x in fu], pct)} right after 400 steps" in box
    f_ratio = [b["tail_loss"] / a["tail_loss"] for a, b in zip(fs_, fu, strict=True)]
    assert f"({span(f_ratio, two_digits)} times the scaled loss)" in box
    assert f"{span([x['saturated_start'] for x in fu], pct)} of the unscaled rows above 0.99" in box
    seeds = shipped["seeds"]
    assert seeds == list(range(seeds[0], seeds[-1] + 1))
    where = f"Over seeds {seeds[0]}–{seeds[-1]}, on a CPU when this app was built"
    assert any(where in c.value for c in at.caption)
    assert f"(torch {shipped['torch']})" in next(c.value for c in at.caption if where in c.value)
    at.button(key="failure").click().run()
    no_exception(at)
    assert at.select_slider(key="d_k").value == FAILURE["d_k"]
    assert at.select_slider(key="init_std").value == FAILURE["init_std"]
    assert not warnings(at)
