"""AppTest: the multi-head page as a shared link would open it, including hostile links."""

import pytest

from attn_core.lessons.multi_head import value_width_walkthrough
from tests.support.apptest import (
    all_specs,
    chart_titles,
    explanations,
    no_exception,
    plotly_specs,
    reveal_all,
    run_page,
    run_steps,
    warnings,
)
from ui.lesson import lesson

PAGE = "pages/multi-head.py"
STEPS = lesson("multi_head").steps
FIRST = 2  # charts in the first (default) step
TITLES = {  # step -> the start of each chart title it shows, in order
    "Heads": ["Every head's attention weights", "How sharply each head focuses"],
    "Outputs": ["Head 1's output", "All heads concatenated before W_o"],
    "Reshape": [],
    "Cost": [],
    "Tired cat": ["One head: 0.50 on cat", "Two heads: [head 1 | head 2]"],
    "Diversity": ["How different are the heads?", "How far the output moves"],
}


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label.startswith(label))


def _markdown(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def _starts(titles: list[str], wanted: list[str]) -> bool:
    return len(titles) == len(wanted) and all(
        t.startswith(w) for t, w in zip(titles, wanted, strict=True)
    )


def test_defaults_show_only_the_first_step():
    at = run_page(PAGE)
    no_exception(at)
    assert at.title[0].value == "Multi-head"
    assert not warnings(at)
    assert _metric(at, "d_k = d_model / h = 512 / 8") == "64"
    assert _metric(at, "attention kind") == "MHA"
    titles = chart_titles(at)
    assert len(titles) == FIRST and _starts(titles, TITLES["Heads"])  # a closed step sends nothing
    assert "(8 of 8 heads shown) and their average" in titles[0]
    grid = plotly_specs(at)[0]
    assert grid["layout"]["coloraxis"]["cmax"] == 1
    assert [t["type"] for t in grid["data"]] == ["heatmap", "heatmap"]  # one mosaic + average
    assert "Try this" in _markdown(at)
    assert not at.code and not at.multiselect  # the reshape and pruning steps did not run


def test_every_step_shows_its_own_charts_and_all_charts_appear():
    runs = run_steps(PAGE, STEPS)
    for step, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), (step, warnings(at))
        assert _starts(chart_titles(at), TITLES[step]), (step, chart_titles(at))
        if step == "Diversity":  # there it would answer the MQA question: it waits for it
            assert not [m for m in at.metric if m.label == "distributions per token"]
            assert any("Distributions per token — shown once" in c.value for c in at.caption)
        else:
            assert _metric(at, "distributions per token") == "8"  # the row above the tabs
    shown = [s["layout"]["title"]["text"] for s in all_specs(runs)]
    assert _starts(shown, [t for step in STEPS for t in TITLES[step]])
    _, outputs, reshape, cost, cat, diversity = runs
    assert any("T × d_k = 10 × 64" in t for t in chart_titles(outputs))
    assert any("T × d_model = 10 × 512" in t for t in chart_titles(outputs))
    assert any("view size is not compatible" in c.value for c in reshape.code)
    md = _markdown(reveal_all(cost))  # the KV-cache table waits for the parameter question
    assert "1,050,624" in md  # 4·512² + 4·512, for h = 1 and h = 8 alike
    assert "MQA" in md and "GQA" in md and "← current" in md
    # two heads keep cat and tired apart
    assert any("[4, 0 | 0, 4]" in t for t in chart_titles(cat))
    assert _metric(diversity, "Output moved by") == "0.0%"
    assert sum(len(explanations(r)) for r in runs) == 2  # why .view fails; untrained vs trained


def test_a_step_follows_the_link_and_a_bad_one_falls_back_with_a_note():
    at = run_page(PAGE, step="Outputs", head="3")
    no_exception(at)
    assert not warnings(at)
    titles = chart_titles(at)
    assert len(titles) == 2 and titles[0].startswith("Head 3's output")
    at = run_page(PAGE, step="Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`step=Nowhere`" in notes[0]
    assert _starts(chart_titles(at), TITLES["Heads"])


def test_heavy_view_works_in_every_step():
    runs = run_steps(PAGE, STEPS, d_model="1024", heads="16", tokens="64")
    for step, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), (step, warnings(at))
        assert _starts(chart_titles(at), TITLES[step]), (step, chart_titles(at))
    specs = all_specs(runs)
    assert len(specs) == sum(len(t) for t in TITLES.values())
    assert "(16 of 16 heads shown)" in specs[0]["layout"]["title"]["text"]
    assert specs[0]["data"][1]["z"]["shape"] in ("64, 64", [64, 64])  # the average's panel
    assert "T × d_model = 64 × 1024" in specs[3]["layout"]["title"]["text"]
    assert specs[6]["data"][0]["z"]["shape"] in ("16, 16", [16, 16])  # heads × heads
    assert _metric(runs[0], "d_k = d_model / h = 1024 / 16") == "64"


def test_h64_with_d_model_1024_warns_about_small_d_k():
    at = run_page(PAGE, d_model="1024", heads="64", tokens="12")
    no_exception(at)
    assert at.select_slider[0].value == 64
    notes = warnings(at)
    assert len(notes) == 1 and "d_k = 1024 / 64 = 16" in notes[0]
    titles = chart_titles(at)
    assert "(16 of 64 heads shown)" in titles[0]
    assert _metric(at, "d_k = d_model / h = 1024 / 64") == "16"


def test_multi_query_attention_from_the_link():
    at = run_page(PAGE, d_model="256", heads="8", kv_heads="1", step="Cost", reveal=True)
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


def test_random_vectors_label_the_grid_by_position_and_sentences_by_word():
    grid = plotly_specs(run_page(PAGE))[0]["layout"]
    assert grid["xaxis"]["ticktext"][:3] == ["1", "2", "3"]  # positions: no words to name
    at = run_page(PAGE, d_model="128", heads="4", input="sentence")
    grid = plotly_specs(at)[0]["layout"]
    assert grid["xaxis"]["ticktext"][:3] == ["The", "tired", "cat"]


def test_empty_and_huge_sentences_fall_back_with_notes():
    at = run_page(PAGE, d_model="128", heads="4", input="sentence", sentence="   ")
    no_exception(at)
    assert any("at least two words" in w for w in warnings(at))
    assert _metric(at, "tokens T") == "8"
    at = run_page(PAGE, d_model="128", heads="4", input="sentence", sentence="word " * 10_000)
    no_exception(at)
    notes = " ".join(warnings(at))
    assert "`sentence" in notes  # the kit: too long for the box, cut (names the parameter)
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
        ({"pruned": "99", "step": "Diversity"}, "pruned", ""),  # a control inside a step
        ({"head": "99", "step": "Outputs"}, "head", ""),
        ({"split": "7", "step": "Tired cat"}, "split", ""),
        ({"d_v": "999", "step": "Reshape"}, "d_v", "1 to 128"),
    ],
)
def test_bad_url_values_fall_back_with_a_visible_note(params, bad, expect):
    at = run_page(PAGE, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0] and expect in notes[0], notes
    assert "<img" not in notes[0].replace(f"`{bad}=<img", "")
    assert _starts(chart_titles(at), TITLES[params.get("step", "Heads")])


def test_moving_d_model_snaps_heads_to_the_nearest_divisor_with_a_note():
    at = run_page(PAGE, d_model="512", heads="16")
    assert at.select_slider[0].value == 16
    at.slider(key="d_model").set_value(520).run()
    no_exception(at)
    notes = " ".join(warnings(at))
    assert "16 heads do not divide d_model = 520" in notes and "13 or 20" in notes
    assert at.select_slider(key="heads").value == 13
    assert _metric(at, "d_k = d_model / h = 520 / 13") == "40"
    assert "(13 of 13 heads shown)" in chart_titles(at)[0]


def test_changing_heads_keeps_plain_multi_head_and_prunes_every_head():
    at = run_page(PAGE, d_model="256", heads="4", step="Diversity")
    assert at.selectbox(key="kv_heads").value == 4
    at.select_slider(key="heads").set_value(8).run()
    no_exception(at)
    assert at.selectbox(key="kv_heads").value == 8 and _metric(at, "attention kind") == "MHA"
    assert plotly_specs(at)[0]["data"][0]["z"]["shape"] in ("8, 8", [8, 8])  # heads × heads
    at.multiselect(key="pruned").set_value(list(range(1, 9))).run()
    no_exception(at)
    assert _metric(at, "Heads pruned") == "8 of 8"
    assert any("W_o's bias alone" in i.value for i in at.info)


@pytest.mark.browser
def test_in_the_browser_only_the_open_step_draws_and_the_mosaic_hovers(server_url, browser):
    from tests.support.browser import (
        open_page,
        open_step,
        plotly_count,
        rerun_latency_ms,
    )

    drawn = '[data-testid="stPlotlyChart"]:has(.main-svg)'  # a chart plotly has drawn
    page, errors = open_page(browser, f"{server_url}/multi-head", height=1400)
    try:
        page.wait_for_function(
            f"() => document.querySelectorAll('{drawn}').length >= {FIRST}", timeout=60_000
        )
        assert plotly_count(page) == FIRST  # only the open step draws
        assert rerun_latency_ms(page, 0) > 0  # d_model, in the sidebar: a full rerun
        assert plotly_count(page) == FIRST
        # one heatmap holds every head: hovering a cell names its head, query and key
        box = page.locator('[data-testid="stPlotlyChart"] .nsewdrag').first.bounding_box()
        page.mouse.move(box["x"] + 0.05 * box["width"], box["y"] + 0.1 * box["height"])
        page.wait_for_function(
            "() => [...document.querySelectorAll('.hoverlayer')]"
            ".some(h => /head 1.*query #\\d+ → key #\\d+/.test(h.textContent))",
            timeout=10_000,
        )
        open_step(page, "Diversity", "How different are the heads")  # drawn on demand
        assert "step=Diversity" in page.url  # the open step is in the link
        page.wait_for_function(f"() => document.querySelectorAll('{drawn}').length == 2")
        assert page.locator('[data-testid="stException"]').count() == 0
        assert not errors, errors
    finally:
        page.context.close()  # the browser is shared: leave no tab open


def test_reshape_step_shows_values_of_another_width_than_queries_and_keys():
    at = run_page(PAGE, step="Reshape")  # d_model 512, 8 heads, T = 10, d_v = 32
    no_exception(at)
    assert not warnings(at)
    assert at.slider(key="d_v").value == 32
    md = _markdown(at)
    walk = value_width_walkthrough(1, 10, 512, 8, 32)
    nb = "\u00a0"
    shape = nb.join(f"{n}," for n in walk.head_output)[:-1]  # "1, 8, 10, 32" as printed
    assert "only q and k must share a width" in md
    assert f"every head returns ({shape})" in md and f"d_k = {walk.d_k} products" in md
    assert f"merge into {walk.merged[-1]} = h·d_v" in md
    assert f"back to d_model = {walk.output[-1]}" in md
    assert walk.head_output[-1] == 32 != walk.d_k  # the page's default shows d_v ≠ d_k
    assert "move the d_v slider" not in md
    errors = [c.value for c in at.code if c.value.startswith("ValueError")]
    assert len(errors) == 1 and "q and k must share d_k" in errors[0]
    assert "k (1, 8, 10, 32)" in errors[0]  # the slip: keys as wide as the values
    at.slider(key="d_v").set_value(64).run()  # = d_k: the text says so
    no_exception(at)
    assert "Here d_v = 64" in _markdown(at) and "move the d_v slider" in _markdown(at)


def test_words_of_the_steps_come_from_the_computation():
    from attn_core import V_CAT, reshape_walkthrough, tired_cat_one_head, tired_cat_two_heads
    from figures import multi_head as fg

    cat = run_page(PAGE, step="Tired cat")
    md = _markdown(cat)
    assert f"v_cat = {fg.vec(V_CAT)}" in md
    assert f"the output is {fg.vec(tired_cat_one_head(0.5).tolist())}" in md
    assert f"becomes {fg.vec(tired_cat_two_heads(1.0, 1.0).tolist())}" in md
    cost = run_page(PAGE, step="Cost", reveal=True)
    assert any("context of 8,192 tokens, 32 layers" in c.value for c in cost.caption)
    div = run_page(PAGE, step="Diversity")
    md = _markdown(div)
    assert "least useful of 8 heads moves the output by" in md and "closer to" in md
    assert "the curve ends at" in md
    reshape = run_page(PAGE, step="Reshape")
    steps = reshape_walkthrough(1, 10, 512, 8).steps
    merge = next(i for i, s in enumerate(steps, 1) if s.key == "merge")
    assert f"Leave out `.contiguous()` in step {merge} " in _markdown(reshape)  # its table row


@pytest.mark.parametrize("d_v", [8, 16])
def test_value_width_text_reads_the_walk(d_v):
    at = run_page(PAGE, step="Reshape", d_model="64", heads="4", tokens="5", d_v=str(d_v))
    no_exception(at)
    walk = value_width_walkthrough(1, 5, 64, 4, d_v)  # d_k = 16
    text = _markdown(at)
    assert "only q and k must share a width" in text
    assert f"d_k = {walk.d_k} products" in text and f"Here d_v = {d_v}" in text
    assert f"merge into {walk.merged[-1]} = h·d_v" in text
    assert f"agrees to {walk.sdpa_max_diff:.2g}" in text
    assert ("move the d_v slider" in text) == (d_v == walk.d_k)


def test_pruning_words_read_the_curve():
    from attn_core import pruning_curve, random_tokens, run_heads, seeded_mha

    curve = pruning_curve(run_heads(random_tokens(6, 64, 0), seeded_mha(64, 8, 8, 0)))[1]
    at = run_page(PAGE, step="Diversity", d_model="64", heads="8", tokens="6")
    no_exception(at)
    end = 100 * float(curve[-1])
    assert f"the curve ends at {end:.0f} %" in _markdown(at)  # the Try-this list
    text = "\n".join(m.value for e in at.expander for m in e.markdown)
    moved = 100 * float(curve[4])
    assert f"least useful of 8 heads moves the output by {moved:.0f} %" in text
    closer = "√(k/h)" if abs(moved - 100 * 0.5**0.5) <= abs(moved - 50) else "k/h"
    assert f"closer to {closer}" in text
    one = run_page(PAGE, step="Diversity", d_model="32", heads="1", tokens="6")
    assert "only W_o's bias" in "\n".join(m.value for e in one.expander for m in e.markdown)


def test_tired_cat_words_come_from_the_computation():
    from attn_core import (
        MAX_SENTENCE_TOKENS,
        V_CAT,
        V_TIRED,
        tired_cat_one_head,
        tired_cat_two_heads,
    )
    from figures import multi_head as fg

    half, same = tired_cat_one_head(0.5), tired_cat_two_heads(1.0, 1.0)
    md = _markdown(run_page(PAGE, step="Tired cat"))
    assert f"the output is {fg.vec(half.tolist())}" in md
    assert f"becomes {fg.vec(same.tolist())}" in md
    assert f"v_cat = {fg.vec(V_CAT)}" in md and f"v_tired = {fg.vec(V_TIRED)}" in md
    cost = run_page(PAGE, step="Cost", reveal=True)
    note = "context of 8,192 tokens, 32 layers, batch 1, float16"
    assert any(note in c.value for c in cost.caption)
    assert MAX_SENTENCE_TOKENS == 64
    heads = _markdown(run_page(PAGE, step="Heads"))
    assert "- **Raise tokens to 64** — each row shares" in heads and "1/T = 0.0156" in heads
