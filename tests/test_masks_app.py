"""AppTest: the masks page as a shared link opens it — every mask, every fill, hostile values."""

import pytest

from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

PAGE = "pages/masks.py"


def titles(at) -> list[str]:
    return [s["layout"]["title"]["text"] for s in plotly_specs(at)]


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def test_defaults():
    at = run_page(PAGE)
    no_exception(at)
    assert not warnings(at)
    t = titles(at)
    assert t[:5] == [
        "Mask: causal",
        "Masked logits (float32)",
        "Weights, plain softmax",
        "Weights, safe path (attn_core)",
        "What each fill does, in each precision",
    ]
    assert any(x.startswith("Cross-attention: 6 queries over 8 keys") for x in t)
    assert metric(at, "Fill as float32") == "−inf" and metric(at, "Rows that came out NaN") == "0"
    # default lab: B = 3, T_q = 6: the real shape error is shown
    assert any("must match the size of tensor" in e.value for e in at.error)
    assert len(at.expander) == 2  # the explanations


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
    at = run_page(PAGE, mask=kind, fill=fill, dtype=dtype, **extra)
    no_exception(at)
    assert not warnings(at), warnings(at)
    t = titles(at)
    assert t[0].startswith(f"Mask: {kind}") and t[1] == f"Masked logits ({dtype})"
    spec = plotly_specs(at)[0]
    z = spec["data"][0]["z"]
    assert spec["data"][0]["type"] == "heatmap"
    if kind == "padding":
        assert "example 2" in t[0]
    if fill == "-1e9" and dtype == "float16":
        assert metric(at, "Fill as float16") == "−inf"
        assert any("without overflow" in e.value for e in at.error)  # masked_fill's own error
    if kind == "custom":
        assert len(plotly_specs(at)[0]["data"]) == 2  # the clickable layer
        assert z  # drawn


def test_custom_mask_from_the_url_flips_its_cells_and_explains_an_empty_row():
    at = run_page(PAGE, mask="custom", tokens="4", custom="0-0,1-3")
    no_exception(at)
    assert at.text_input(key="custom").value == "0-0,1-3"
    labels = plotly_specs(at)[0]["layout"]["yaxis"]["ticktext"]
    assert labels[0] == "0 ∅" and labels[1] == "1"
    (info,) = at.info
    assert "Query row 0" in info.value and "zero" in info.value
    assert metric(at, "Rows that came out NaN") == "1"
    assert "1 NaN row" in titles(at)[2]


def test_bad_custom_cells_are_named_and_ignored():
    at = run_page(PAGE, mask="custom", tokens="4", custom="1-3,zz,9-9,<b>x</b>")
    no_exception(at)
    notes = " ".join(warnings(at))
    assert "`zz`" in notes and "`9-9`" in notes and "outside the 4×4 grid" in notes
    assert "`<b>x</b>`" in notes  # user text stays inside a code span: shown, never rendered


def test_bad_lengths_get_notes_and_a_repair():
    at = run_page(PAGE, mask="padding", lengths="5,30,0,abc,-2")
    no_exception(at)
    notes = " ".join(warnings(at))
    assert "longer than T = 8" in notes and "at least one token" in notes
    assert "`abc`" in notes and "not a whole number" in notes
    assert any("In use: 5, 8, 1, 1" in c.value for c in at.sidebar.caption)
    assert len(at.radio(key="example").options) == 4
    empty = run_page(PAGE, lengths="x;y")
    assert any("no usable number" in w for w in warnings(empty))


def test_default_lengths_on_a_small_T_are_clipped_quietly():
    at = run_page(PAGE, tokens="4")
    no_exception(at)
    assert not warnings(at)
    assert any("In use: 4, 3, 4" in c.value for c in at.sidebar.caption)


def test_bad_url_values_fall_back_with_a_note():
    bad = dict(mask="diagonal", tokens="999", fill="-1e99", dtype="int8", batch="0")
    at = run_page(PAGE, logit_size="-5", T_q="nan", **bad)
    no_exception(at)
    notes = " ".join(warnings(at))
    for key in [*bad, "logit_size", "T_q"]:
        assert f"`{key}=" in notes, key
    assert titles(at)[0] == "Mask: causal"


def test_prefix_longer_than_T_is_clipped_with_a_note():
    at = run_page(PAGE, mask="prefix-LM", tokens="5", prefix="9")
    no_exception(at)
    assert any("longer than T = 5" in w for w in warnings(at))


def test_broadcast_bug_when_batch_equals_query_length():
    at = run_page(PAGE, batch="4", T_q="4", lengths="2,7,5,3")
    no_exception(at)
    assert any("no error" in w for w in warnings(at))
    t = titles(at)
    assert "Which example's padding lands on which query row" in t
    assert "How wrong each output row is" in t
    one = run_page(PAGE, batch="1")
    assert any("right by luck" in s.value for s in one.success)


def test_is_causal_measurement_on_button_press():
    at = run_page(PAGE, T_time="256")
    no_exception(at)
    assert not any(x.startswith("Time per call") for x in titles(at))
    next(b for b in at.button if b.label.startswith("Measure both")).click().run()
    no_exception(at)
    assert any(x.startswith("Time per call at T = 256") for x in titles(at))
    assert float(metric(at, "Max |difference|")) < 1e-5


def test_float16_leak_and_score_overflow_are_shown():
    leak = run_page(PAGE, fill="-1e4", dtype="float16", logit_size="10000")
    no_exception(leak)
    assert float(metric(leak, "Largest leaked weight")) > 0.5
    assert metric(leak, "Rows that came out NaN") == "0"
    huge = run_page(PAGE, dtype="float16", logit_size="30000")
    assert any("already ±inf" in i.value for i in huge.info)
