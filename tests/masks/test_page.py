"""AppTest: the masks page as a shared link opens it — every step, every mask, every fill,
hostile values."""

import pytest

from attn_core.lessons.masks import MAX_EXAMPLES
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
from ui.content import Words
from ui.lesson import lesson

PAGE = "pages/masks.py"
W = Words("masks")
STEPS = lesson("masks").steps
# what each step draws at the defaults (the bug lab's default B = 3 ≠ T_q = 6 raises: no chart;
# the timing draws only after its button)
STEP_TITLES = {
    "Mask": ["Mask: causal", "Masked logits (float32)"],
    "Weights": ["Weights, plain softmax", "Weights, safe path (attn_core)"],
    "Fill": ["What each fill does, in each precision"],
    "Cross attention": ["Cross-attention: 6 queries over 8 keys (example 0)"],
    "Broadcasting bug": [  # the default B = T_q: the silent bug, drawn
        "Which example's padding lands on which query row",
        "How wrong each output row is",
    ],
    "Cost": [],
}


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def test_defaults_open_the_first_step_only():
    at = run_page(PAGE, reveal=True)
    no_exception(at)
    assert not warnings(at)
    assert titles(at) == STEP_TITLES["Mask"]  # a closed step sends nothing
    assert "Try this" in " ".join(md.value for md in at.markdown)
    assert not at.metric and not explanations(at)


def test_every_step_shows_its_own_charts_and_all_charts_appear():
    runs = run_steps(PAGE, STEPS, reveal=True)
    for step, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), (step, warnings(at))
        assert titles(at) == STEP_TITLES[step], step
    assert [s["layout"]["title"]["text"] for s in all_specs(runs)] == [
        t for step in STEPS for t in STEP_TITLES[step]
    ]
    weights, fill, cross, bug, cost = runs[1:]
    assert metric(weights, "Fill as float32") == "−inf"
    assert metric(weights, "Rows that came out NaN") == "0"
    assert len(explanations(fill)) == 1 and len(explanations(bug)) == 1  # the two explanations
    assert cross.slider(key="T_q").value == 6
    # default lab: B = T_q = 6: the silent bug (the step's point), and the loud case named
    assert not [e for e in bug.error if not e.value.startswith(("Not quite", "Computed"))]
    assert any("B = T_q = 6: **no error**" in i.value for i in bug.info)
    assert any("PyTorch refuses the shapes with a RuntimeError" in m.value for m in bug.markdown)
    assert bug.slider(key="batch").value == 6 and bug.slider(key="T_q").value == 6
    assert any(b.label.startswith("Measure both at T = 1024") for b in cost.button)
    # the step's own controls live in the step, not in the sidebar
    for at in runs:
        assert {s.key for s in at.sidebar.slider} == {"tokens"}


def test_a_step_follows_the_link_and_a_bad_one_falls_back_with_a_note():
    at = run_page(PAGE, reveal=True, step="Fill", fill="-1e9", dtype="float16")
    no_exception(at)
    assert not warnings(at)
    assert titles(at) == STEP_TITLES["Fill"]
    at = run_page(PAGE, reveal=True, step="Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`step=Nowhere`" in notes[0]
    assert titles(at) == STEP_TITLES["Mask"]


# every mask type, each with a different fill/precision so all four fills are exercised
CASES = [
    ("none", "-inf", "float32", {}),
    ("causal", "-1e9", "float16", {}),
    ("padding", "finfo.min", "bfloat16", {"example": "2"}),
    ("sliding-window", "-1e4", "float64", {"window": "2"}),
    ("prefix-LM", "-inf", "float16", {"prefix": "3"}),
    ("block-diagonal", "-1e9", "float32", {"causal": "true"}),
    ("custom", "finfo.min", "float16", {"custom": "2-5"}),
]


@pytest.mark.parametrize("kind,fill,dtype,extra", CASES, ids=[c[0] for c in CASES])
def test_every_mask_type_and_fill(kind, fill, dtype, extra):
    at, weights = run_steps(
        PAGE, STEPS[:2], reveal=True, mask=kind, fill=fill, dtype=dtype, **extra
    )
    for run in (at, weights):
        no_exception(run)
        assert not warnings(run), warnings(run)
    t = titles(at)
    assert t[0].startswith(f"Mask: {kind}") and t[1] == f"Masked logits ({dtype})"
    assert [x.split(" — ")[0] for x in titles(weights)] == STEP_TITLES["Weights"]
    spec = plotly_specs(at)[0]
    z = spec["data"][0]["z"]
    assert spec["data"][0]["type"] == "heatmap"
    if kind == "padding":
        assert "example 2" in t[0]
    if fill == "-1e9" and dtype == "float16":
        assert metric(weights, "Fill as float16") == "−inf"
        assert any("without overflow" in e.value for e in weights.error)  # masked_fill's error
    if kind == "custom":
        assert len(plotly_specs(at)[0]["data"]) == 2  # the clickable layer
        assert z  # drawn


def test_custom_mask_from_the_url_flips_its_cells_and_explains_an_empty_row():
    at, weights = run_steps(
        PAGE, STEPS[:2], reveal=True, mask="custom", tokens="4", custom="0-0,1-3"
    )
    no_exception(at)
    assert at.text_input(key="custom").value == "0-0,1-3"
    labels = plotly_specs(at)[0]["layout"]["yaxis"]["ticktext"]
    assert labels[0] == "0 ∅" and labels[1] == "1"
    for run in (at, weights):  # the empty row is named beside the mask and beside the weights
        (info,) = run.info
        assert "Query row 0" in info.value and "zero" in info.value
    assert metric(weights, "Rows that came out NaN") == "1"
    assert "1 NaN row" in titles(weights)[0]


def test_bad_custom_cells_are_named_and_ignored():
    at = run_page(PAGE, reveal=True, mask="custom", tokens="4", custom="1-3,zz,9-9,<b>x</b>")
    no_exception(at)
    notes = warnings(at)
    assert notes == [
        W("note.custom.bad", items="`zz`, `<b>x</b>`"),
        W("note.custom.outside", items="`9-9`", T=4),
    ]
    joined = " ".join(notes)
    assert "`zz`" in joined and "`9-9`" in joined and "outside the 4×4 grid" in joined
    assert "`<b>x</b>`" in joined  # user text stays inside a code span: shown, never rendered


def test_bad_lengths_get_notes_and_a_repair():
    at = run_page(PAGE, reveal=True, mask="padding", lengths="5,30,0,abc,-2")
    no_exception(at)
    assert warnings(at) == [
        W("note.lengths.non_numeric", items="`abc`"),
        W("note.lengths.too_long", items="`30`", T=8),
        W("note.lengths.not_positive", items="`0`, `-2`"),
    ]
    notes = " ".join(warnings(at))
    assert "longer than T = 8" in notes and "at least one token" in notes
    assert "`abc`" in notes and "not a whole number" in notes
    assert any("In use: 5, 8, 1, 1" in c.value for c in at.sidebar.caption)
    assert len(at.radio(key="example").options) == 4
    empty = run_page(PAGE, reveal=True, lengths="x;y")
    assert warnings(empty) == [
        W("note.lengths.non_numeric", items="`x`, `y`"),
        W("note.lengths.used_default", lengths="5, 3, 7"),
    ]
    assert any("no usable number" in w for w in warnings(empty))


def test_many_bad_lengths_are_cut_short_and_extra_examples_dropped():
    at = run_page(PAGE, reveal=True, lengths="a,b,c,d,e,f," + ",".join(["2"] * 9))
    no_exception(at)
    assert warnings(at) == [
        W("note.lengths.non_numeric", items="`a`, `b`, `c`, `d`, `e` …"),
        W("note.lengths.dropped_extra", most=MAX_EXAMPLES, n=1),
    ]
    assert len(at.radio(key="example").options) == MAX_EXAMPLES


def test_default_lengths_on_a_small_T_are_clipped_quietly():
    at = run_page(PAGE, reveal=True, tokens="4")
    no_exception(at)
    assert not warnings(at)
    assert any("In use: 4, 3, 4" in c.value for c in at.sidebar.caption)


def test_bad_url_values_fall_back_with_a_note():
    bad = dict(mask="diagonal", tokens="999", fill="-1e99", dtype="int8", logit_size="-5")
    at = run_page(PAGE, reveal=True, **bad)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == len(bad), notes
    for key in bad:
        assert any(f"`{key}=" in n for n in notes), key
    assert titles(at) == STEP_TITLES["Mask"]


def test_a_steps_own_controls_note_bad_values_inside_that_step():
    bug = run_page(PAGE, reveal=True, step="Broadcasting bug", batch="0", T_q="nan", tokens="999")
    no_exception(bug)
    notes = warnings(bug)
    assert len(notes) == 3, notes
    for key in ("batch", "T_q", "tokens"):
        assert any(f"`{key}=" in n for n in notes), key
    assert bug.slider(key="batch").value == 6 and bug.slider(key="T_q").value == 6
    loud = run_page(
        PAGE, reveal=True, step="Broadcasting bug", batch="3"
    )  # B ≠ T_q: the shape error
    assert any("must match the size of tensor" in e.value for e in loud.error)
    cost = run_page(PAGE, reveal=True, step="Cost", T_time="100")
    no_exception(cost)
    assert [n for n in warnings(cost) if "`T_time=100`" in n]
    assert cost.select_slider(key="T_time").value == 1024
    # the T_q slider of the cross-attention step is the same control, from the same link
    cross = run_page(PAGE, reveal=True, step="Cross attention", T_q="3")
    no_exception(cross)
    assert titles(cross)[0].startswith("Cross-attention: 3 queries over 8 keys")


def test_prefix_longer_than_T_is_clipped_with_a_note():
    at = run_page(PAGE, reveal=True, mask="prefix-LM", tokens="5", prefix="9")
    no_exception(at)
    assert any("longer than T = 5" in w for w in warnings(at))


def test_broadcast_bug_when_batch_equals_query_length():
    step = "Broadcasting bug"
    at = run_page(PAGE, reveal=True, batch="4", T_q="4", lengths="2,7,5,3", step=step)
    no_exception(at)
    assert any("no error" in i.value for i in at.info)
    assert titles(at) == [
        "Which example's padding lands on which query row",
        "How wrong each output row is",
    ]
    at.slider(key="T_q").set_value(5).run()  # a fragment rerun: B ≠ T_q raises again
    no_exception(at)
    assert titles(at) == []
    assert any("B = 4 ≠ T_q = 5" in e.value for e in at.error)
    one = run_page(PAGE, reveal=True, batch="1", step=step)
    assert any("right by luck" in s.value for s in one.success)


def test_is_causal_measurement_on_button_press():
    at = run_page(PAGE, reveal=True, T_time="256", step="Cost")
    no_exception(at)
    assert not any(x.startswith("Time per call") for x in titles(at))
    next(b for b in at.button if b.label.startswith("Measure both")).click().run()
    no_exception(at)
    assert any(x.startswith("Time per call at T = 256") for x in titles(at))
    assert float(metric(at, "Max |difference|")) < 1e-5


def test_float16_leak_and_score_overflow_are_shown():
    leak = run_page(
        PAGE, reveal=True, fill="-1e4", dtype="float16", logit_size="10000", step="Weights"
    )
    no_exception(leak)
    assert float(metric(leak, "Largest leaked weight")) > 0.5
    assert metric(leak, "Rows that came out NaN") == "0"
    huge = run_page(PAGE, reveal=True, dtype="float16", logit_size="30000")
    assert any("already ±inf" in i.value for i in huge.info)
