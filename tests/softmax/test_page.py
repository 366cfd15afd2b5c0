"""AppTest: the softmax page as a shared link opens it, then as a student edits it.

The page is split into steps (?step=); each test opens one step and reruns it with edits,
so the whole file stays quick on a 2-core machine.
"""

import re

import pytest

from attn_core import DTYPES, exp_limits
from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

PAGE = "pages/softmax.py"
TITLES = {
    "Example": ["Where the output lands among the values", "From scores to weights, step by step"],
    "Shift": ["Adding c = 5 to every score"],
    "Stability": [
        "Naive against stable softmax in float32",
        "Where e^x stays finite, per precision",
    ],
    "Temperature": ["Weights at temperature τ = 1", "Entropy against temperature"],
    "Dropout": ["One draw of the weights after dropout (training, p = 0.1)", "Row sums"],
    "Check yourself": [],
}


def metric(at, label_start: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label_start))


def output_latex(at) -> str:
    return next(el.value for el in at.latex if "w_i v_i" in el.value)


def table_errors(at) -> list[str]:
    return [e.value for e in at.error if "last valid example" in e.value]


def edit(at, table="kv_table", edited=None, added=(), deleted=()):
    at.session_state[table] = {
        "edited_rows": edited or {},
        "added_rows": list(added),
        "deleted_rows": list(deleted),
    }
    at.run()
    no_exception(at)


def test_every_step_at_its_defaults_has_titled_charts_and_no_note():
    for step, titles in TITLES.items():
        at = run_page(PAGE, step=step)
        no_exception(at)
        assert at.title[0].value == "Softmax and values"
        assert [s["layout"]["title"]["text"] for s in plotly_specs(at)] == titles, step
        for spec in plotly_specs(at):
            assert spec["layout"]["xaxis"]["title"]["text"]
            assert spec["layout"]["yaxis"]["title"]["text"]
        assert not warnings(at) and not table_errors(at), step
        assert any("Try this" in md.value for md in at.markdown) or step == "Check yourself"
        if step == "Example":  # weights near the lesson's, output near [0.454, 2.786]
            assert "[0.455,\\ 2.781]" in output_latex(at)
            assert list(at.table[0].value["t2"])[:2] == ["3.7", "2.136"]
        if step == "Shift":  # the weights do not move
            assert float(metric(at, "Largest change")) < 1e-12
        if step == "Temperature":
            assert metric(at, "Entropy of the weights").endswith("nats")
        if step == "Dropout":
            assert metric(at, "Survivors are multiplied by") == "1.111"


def test_stability_in_every_dtype():
    at = run_page(PAGE, step="Stability")
    no_exception(at)
    # [100, 101, 102] in float32: naive overflows, stable does not
    assert metric(at, "e^x overflows above, in float32") == "88.72"
    assert metric(at, "Largest finite float32") == "3.4e+38"
    assert any("Naive softmax broke" in e.value for e in at.error)
    stab = at.table[0].value
    assert list(stab.iloc[2])[1:] == ["NaN", "NaN", "NaN"]
    assert [float(x) for x in list(stab.iloc[4])[1:]] == pytest.approx(
        [0.090, 0.245, 0.665], abs=1e-3
    )
    for dtype in DTYPES:
        at.radio(key="dtype").set_value(dtype).run()
        no_exception(at)
        lim = exp_limits(dtype)
        assert metric(at, f"e^x overflows above, in {dtype}") == f"{lim.overflow_at:.2f}"
        assert metric(at, f"Largest finite {dtype}") == f"{lim.max_finite:.3g}"
        assert any(f"in {dtype}" in s["layout"]["title"]["text"] for s in plotly_specs(at))
    # float64 holds e^102: naive works; float16 underflows far below zero
    assert any("agree" in s.value for s in at.success)
    at.radio(key="dtype").set_value("float16")
    at.slider(key="offset").set_value(-120).run()
    assert any("other way" in e.value for e in at.error)
    at.slider(key="offset").set_value(-95).run()
    assert any("agree" in s.value for s in at.success)
    at.radio(key="dtype").set_value("bfloat16")
    at.slider(key="offset").set_value(700).run()
    assert any("cannot even store" in i.value for i in at.info)
    assert not warnings(at)


def test_table_edits_bad_cells_and_the_last_valid_example():
    at = run_page(PAGE, step="Example")
    before = output_latex(at)
    # a valid edit: t2's key turns away from the query, its weight collapses
    edit(at, edited={1: {"k 2": "-3"}})
    assert not table_errors(at)
    edited = output_latex(at)
    assert edited != before
    assert at.table[0].value["t2"].iloc[0] == "-4.3"
    # bad cells: a clear message, the last valid example stays on show
    bad = [
        ({2: {"v x": "abc"}}, "row 3, column **v x**: `abc`", "not a number"),
        ({0: {"k 1": ""}}, "row 1, column **k 1**", "empty"),
        ({0: {"k 1": "1e9"}}, "`1e9`", "too large"),
        ({0: {"k 1": "inf"}}, "`inf`", "infinite"),
        (
            {1: {c: "-inf" for c in ["k 1", "k 2", "k 3", "v x", "v y"]}},
            "row 2",
            "every entry is -inf",
        ),
        ({0: {"k 1": "`![x](http://example.com/x.png)`"}}, "row 1", "not a number"),
    ]
    for cells, where, why in bad:
        edit(at, edited={1: {"k 2": "-3"}, **cells} if 1 not in cells else cells)
        errs = table_errors(at)
        assert len(errs) == 1 and where in errs[0] and why in errs[0], errs
        assert "](" not in errs[0].replace("`", "") or errs[0].count("`") == 2
        assert output_latex(at) == edited  # the last valid example
        assert len(plotly_specs(at)) == len(TITLES["Example"])
    # too few and too many rows
    edit(at, deleted=[0, 1])
    assert "3 to 6" in table_errors(at)[0]
    edit(at, added=[{"token": f"x{i}", **dict.fromkeys(["k 1", "k 2", "k 3", "v x", "v y"], "1")}
                    for i in range(4)])  # fmt: skip
    assert not table_errors(at)  # a seventh row is cut, with a note (test_editor_state.py)
    assert len(at.table[0].value.columns) == 2 + 6 and len(warnings(at)) == 1
    # a fourth token, named with markup: it is cleaned before it reaches a chart
    edit(at, added=[{"token": "<b>dog</b>", "k 1": "1", "k 2": "1", "k 3": "0", "v x": "3",
                     "v y": "3"}])  # fmt: skip
    assert not table_errors(at)
    assert "bdogb" in at.table[0].value.columns
    # the query table is checked too
    edit(at, table="q_table", edited={0: {"q 2": "two"}})
    assert "column **q 2**" in table_errors(at)[0]
    # Undo clears every edit
    at.button[0].click().run()
    no_exception(at)
    assert output_latex(at) == before and not table_errors(at)


def test_sum_normalisation_leaves_the_hull_for_a_negative_score():
    at = run_page(PAGE, example="negative", sumnorm="true")
    no_exception(at)
    assert not warnings(at)
    assert any("left the convex hull" in e.value for e in at.error)
    assert "[-1.500,\\ 6.500]" in output_latex(at)
    hull = plotly_specs(at)[0]
    assert "LEFT" not in hull["layout"]["title"]["text"]
    assert any("softmax output" in (t.get("name") or "") for t in hull["data"])
    at.toggle(key="sumnorm").set_value(False).run()
    assert not any("left the convex hull" in e.value for e in at.error)
    # a zero sum of raw scores: refused with a message, softmax shown instead
    at.toggle(key="sumnorm").set_value(True)
    edit(at, table="q_table", edited={0: {"q 1": "0", "q 2": "0", "q 3": "0"}})
    assert any("Sum normalisation is impossible" in e.value for e in at.error)
    assert "[1.000,\\ 1.667]" in output_latex(at)  # zero query: the plain mean


def test_an_edit_carries_to_the_later_steps_and_survives_a_round_trip():
    at = run_page(PAGE, step="Example")
    edit(at, edited={1: {"k 2": "-3", "token": "cat"}})
    edited = output_latex(at)
    at.button(key="_ui_next_step").click().run()  # Next: Shift
    no_exception(at)
    assert at.session_state["step"] == "Shift"
    assert "cat" in at.table[0].value.iloc[:, 0].tolist() or "cat" in str(at.table[0].value)
    assert any("from the Example step (t1, cat, t3)" in c.value for c in at.caption)
    at.button(key="_ui_prev_step").click().run()  # back: the editors rebuild from the edit
    no_exception(at)
    assert output_latex(at) == edited and not table_errors(at)
    assert at.table[0].value["cat"].iloc[0] == "-4.3"
    at.button(key=next(b.key for b in at.button if b.label == "Undo my edits")).click().run()
    assert output_latex(at) != edited and "t2" in at.table[0].value.columns


def test_the_sidebar_example_says_which_steps_it_drives():
    at = run_page(PAGE, step="Stability")
    (note,) = [c.value for c in at.sidebar.caption if "These drive" in c.value]
    assert "Example, Shift, Temperature and Check yourself steps" in note
    assert "The open step, Stability, does not use them" in note
    at = run_page(PAGE, step="Shift", example="peaked")
    (note,) = [c.value for c in at.sidebar.caption if "These drive" in c.value]
    assert "does not use" not in note
    assert len(at.table[0].value) == 4  # peaked: four tokens reach the Shift step


def test_dropout_and_temperature_url_values():
    at = run_page(PAGE, step="Dropout", dropout="0.5", mode="train", seed="3")
    no_exception(at)
    assert not warnings(at)
    assert metric(at, "Survivors are multiplied by") == "2.000"
    assert float(metric(at, "Largest |row sum − 1|")) > 0.01
    assert "p = 0.5" in plotly_specs(at)[0]["layout"]["title"]["text"]
    at.radio(key="mode").set_value("eval").run()
    no_exception(at)
    assert metric(at, "Survivors are multiplied by") == "1.000"
    assert float(metric(at, "Largest |row sum − 1|")) < 1e-12
    assert metric(at, "Entries zeroed") == "0%"
    assert "(eval)" in plotly_specs(at)[0]["layout"]["title"]["text"]
    at = run_page(PAGE, step="Shift", shift="-20")
    assert float(metric(at, "Largest change")) < 1e-12 and not warnings(at)
    at = run_page(PAGE, step="Temperature", temperature="0.05")
    assert "τ = 0.05" in plotly_specs(at)[0]["layout"]["title"]["text"]
    assert float(metric(at, "Entropy of the weights").split()[0]) < 0.05


BAD = {  # step: its bad link values (the sidebar's example is read on every step)
    "Example": {"example": "<script>alert(1)</script>", "sumnorm": "maybe"},
    "Shift": {"shift": "inf"},
    "Stability": {"offset": "abc", "dtype": "float8"},
    "Temperature": {"temperature": "0"},
    "Dropout": {"dropout": "1.5", "mode": "test", "seed": "-1"},
}


def test_bad_url_values_fall_back_to_defaults_with_a_note_each():
    for step, bad in BAD.items():
        at = run_page(PAGE, step=step, **bad)
        no_exception(at)
        notes = warnings(at)
        for key in bad:
            assert sum(f"`{key}=" in n for n in notes) == 1, (key, notes)
        assert len(notes) == len(bad)
        assert at.radio(key="example").value == "lesson"
        assert not any("<script>" in re.sub(r"`[^`]*`", "", n) for n in notes)
        assert [s["layout"]["title"]["text"] for s in plotly_specs(at)] == TITLES[step]
    assert at.slider(key="dropout").value == 0.1
    at = run_page(PAGE, step="Stability", offset="abc")
    assert at.radio(key="dtype").value == "float32" and at.slider(key="offset").value == 0
    at.slider(key="offset").set_value(-14).run()  # moving a control clears its note
    assert not any("`offset=" in n for n in warnings(at))
