"""AppTest: the multi-head page as a shared link would open it, including hostile links."""

import pytest

from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

PAGE = "pages/multi-head.py"


def _titles(at) -> list[str]:
    return [s["layout"]["title"]["text"] for s in plotly_specs(at)]


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def test_defaults_show_heads_outputs_reshape_costs_cat_and_pruning():
    at = run_page(PAGE)
    no_exception(at)
    assert at.title[0].value == "Multi-head"
    assert not warnings(at)
    assert _metric(at, "d_k = d_model / h = 512 / 8") == "64"
    assert _metric(at, "attention kind") == "MHA"
    titles = _titles(at)
    assert len(titles) == 8
    assert "(8 of 8 heads shown) and their average" in titles[0]
    assert any("T × d_k = 10 × 64" in t for t in titles)
    assert any("T × d_model = 10 × 512" in t for t in titles)
    assert any("[4, 0 | 0, 4]" in t for t in titles)  # the two heads keep cat and tired apart
    assert any("0.50 on cat" in t for t in titles)
    grid = plotly_specs(at)[0]
    assert grid["layout"]["coloraxis"]["cmax"] == 1
    md = _markdown(at)
    assert "1,050,624" in md  # 4·512² + 4·512, for h = 1 and h = 8 alike
    assert "MQA" in md and "GQA" in md and "← current" in md
    assert any("view size is not compatible" in c.value for c in at.code)
    assert _metric(at, "Output moved by") == "0.0%"


def test_h64_with_d_model_1024_warns_about_small_d_k():
    at = run_page(PAGE, d_model="1024", heads="64", tokens="12")
    no_exception(at)
    assert at.select_slider[0].value == 64
    notes = warnings(at)
    assert len(notes) == 1 and "d_k = 1024 / 64 = 16" in notes[0]
    titles = _titles(at)
    assert "(16 of 64 heads shown)" in titles[0]
    assert _metric(at, "d_k = d_model / h = 1024 / 64") == "16"


def test_multi_query_attention_from_the_link():
    at = run_page(PAGE, d_model="256", heads="8", kv_heads="1")
    no_exception(at)
    assert at.selectbox(key="kv_heads").value == 1
    assert _metric(at, "attention kind") == "MQA"
    assert "**MQA** ← current" in _markdown(at)
    assert not warnings(at)


@pytest.mark.parametrize(
    "sentence",
    ["<b>bold</b> & 🐈‍⬛ 😀", "<script>alert(1)</script> [x](javascript:alert(1)) `code` **st**"],
)
def test_typed_sentences_are_shown_as_text(sentence):
    at = run_page(PAGE, d_model="128", heads="4", input="sentence", sentence=sentence)
    no_exception(at)
    assert not warnings(at)
    tokens = next(c.value for c in at.caption if c.value.startswith("Tokens:"))
    assert "<b>" not in tokens and "<script>" not in tokens and "](" not in tokens
    grid = plotly_specs(at)[0]
    ticks = " ".join(
        " ".join(v.get("ticktext", [])) for k, v in grid["layout"].items() if k.startswith("yaxis")
    )
    if "😀" in sentence:  # 10 tokens: the small maps carry token labels
        assert "<" not in ticks and "&lt;" in ticks and "&amp;" in ticks and "😀" in ticks


def test_empty_and_huge_sentences_fall_back_with_notes():
    at = run_page(PAGE, d_model="128", heads="4", input="sentence", sentence="   ")
    no_exception(at)
    assert any("at least two words" in w for w in warnings(at))
    assert _metric(at, "tokens T") == "8"
    at = run_page(PAGE, d_model="128", heads="4", input="sentence", sentence="word " * 10_000)
    no_exception(at)
    notes = " ".join(warnings(at))
    assert "`sentence=" in notes  # the kit: too long for the box, cut
    assert "Only the first 64 tokens" in notes
    assert _metric(at, "tokens T") == "64"


@pytest.mark.parametrize(
    "params,bad,expect",
    [
        ({"heads": "3"}, "heads", "valid: 1, 2, 4, 8, 16, 32, 64"),
        ({"heads": "abc"}, "heads", "heads must divide d_model = 512"),
        ({"d_model": "1019", "heads": "4"}, "heads", "valid: 1)"),  # prime, off the slider's step
        ({"d_model": "100000"}, "d_model", "16 to 1024"),
        ({"kv_heads": "3"}, "kv_heads", "one of 1, 2, 4, 8"),
        ({"tokens": "0"}, "tokens", "2 to 64"),
        ({"input": "<img src=x onerror=alert(1)>"}, "input", "random"),
        ({"pruned": "99"}, "pruned", ""),
    ],
)
def test_bad_url_values_fall_back_with_a_visible_note(params, bad, expect):
    at = run_page(PAGE, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0] and expect in notes[0], notes
    assert "<img" not in notes[0].replace(f"`{bad}=<img", "")
    assert len(plotly_specs(at)) == 8


def test_moving_d_model_snaps_heads_to_the_nearest_divisor_with_a_note():
    at = run_page(PAGE, d_model="512", heads="16")
    assert at.select_slider[0].value == 16
    at.slider(key="d_model").set_value(520).run()
    no_exception(at)
    notes = " ".join(warnings(at))
    assert "16 heads do not divide d_model = 520" in notes and "13 or 20" in notes
    assert at.select_slider(key="heads").value == 13
    assert _metric(at, "d_k = d_model / h = 520 / 13") == "40"


def test_changing_heads_keeps_plain_multi_head_and_prunes_every_head():
    at = run_page(PAGE, d_model="256", heads="4")
    assert at.selectbox(key="kv_heads").value == 4
    at.select_slider(key="heads").set_value(8).run()
    no_exception(at)
    assert at.selectbox(key="kv_heads").value == 8 and _metric(at, "attention kind") == "MHA"
    at.multiselect(key="pruned").set_value(list(range(1, 9))).run()
    no_exception(at)
    assert _metric(at, "Heads pruned") == "8 of 8"
    assert any("W_o's bias alone" in i.value for i in at.info)
