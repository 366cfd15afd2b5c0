"""AppTest: the trained-heads page — its steps, user text, ablation, live training, bad links."""

import re

import pytest
from streamlit.testing.v1 import AppTest

import attn_core.lessons.heads as ind
import ui.jobs as jobs
from tests.support.apptest import (
    ROOT,
    all_specs,
    chart_titles,
    no_exception,
    plotly_specs,
    reveal_all,
    run_page,
    run_steps,
    warnings,
)
from ui.content import Words
from ui.lesson import lesson

PAGE = "pages/heads.py"
STEPS = lesson("heads").steps
W = Words("heads")
CFG = ind.InductionConfig()  # the shipped model's vocabulary and sequence length
# the charts of each step, in order (a closed step sends nothing)
SHOWS = {
    "Maps": ["Every head's attention map"],
    "Scores": ["How much each head looks"],
    "Loss": ["How surprised the model is"],
    "Switch off": ["Switch off one head at a time"],
    "Contribution": ["Attention weight versus what the head actually writes"],
    "Train": ["Training curves"],
}
TITLES = [t for step in STEPS for t in SHOWS[step]]
FIRST = len(SHOWS["Maps"])


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _run_with_list(**params) -> AppTest:
    """Like run_page, but a parameter may repeat (?ablate=L1H0&ablate=L1H1), as the URL does."""
    probe = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    probe.run()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at._registered_pages = probe._registered_pages
    at.switch_page(PAGE)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    return reveal_all(at)  # the Switch off step holds its bars back until its question


def _subheaders(at) -> list[str]:
    return [h.value for h in at.header]


def test_defaults_show_the_first_step_and_every_step_its_charts():
    runs = run_steps(PAGE, STEPS, reveal=True)
    for step, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), step
        titles = chart_titles(at)
        assert len(titles) == len(SHOWS[step]), (step, titles)
        for want, got in zip(SHOWS[step], titles, strict=True):
            assert got.startswith(want), (step, got)
    shown = [spec["layout"]["title"]["text"] for spec in all_specs(runs)]
    assert len(shown) == len(TITLES)
    for want, got in zip(TITLES, shown, strict=True):
        assert got.startswith(want)
    assert "shipped model" in shown[-1]
    at = run_page(PAGE, reveal=True)  # no ?step=: the first step, and only its charts
    no_exception(at)
    assert at.title[0].value == "Trained heads"
    titles = chart_titles(at)
    assert len(titles) == FIRST
    assert all(t.startswith(w) for t, w in zip(titles, SHOWS["Maps"], strict=True))
    assert _subheaders(at) == ["What every head looks at"]
    m = _metrics(at)
    assert float(m["Loss on repeated tokens"]) < 0.1
    assert float(m["Loss on first occurrences"]) > 3.5
    assert m["Blind guess, ln(vocab)"] == "4.159"
    assert not warnings(at)
    # the heads are labelled with their jobs on the map and named in its caption
    caps = " ".join(c.value for c in at.caption)
    assert "Previous-token heads: L0H" in caps and "Induction heads: L1H" in caps
    random_block = W.raw("source.random").split("{{")[0]  # "random block of "
    assert random_block in " ".join(md.value for md in at.markdown)
    maps = plotly_specs(at)[0]
    notes = [a["text"] for a in maps["layout"]["annotations"]]
    assert len(notes) == 8 and "induction" in " ".join(notes)
    assert not maps["layout"]["xaxis"]["showticklabels"]  # random ids: no token ticks


def test_a_link_opens_its_step_and_a_bad_step_falls_back_with_a_note():
    at = run_page(PAGE, reveal=True, step="Switch off")
    no_exception(at)
    assert not warnings(at)
    assert _subheaders(at) == ["Switch heads off"]
    [title] = chart_titles(at)
    assert title.startswith(SHOWS["Switch off"][0])
    at = run_page(PAGE, reveal=True, step="Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`step=Nowhere`" in notes[0], notes
    assert _subheaders(at) == ["What every head looks at"]
    assert len(plotly_specs(at)) == FIRST


def test_a_new_seed_redraws_only_the_open_steps_charts():
    at = run_page(PAGE, reveal=True)
    before = plotly_specs(at)
    at.slider(key="seed").set_value(1).run()
    no_exception(at)
    after = plotly_specs(at)
    assert len(after) == FIRST and all(a != b for a, b in zip(before, after, strict=True))
    at.multiselect(key="ablate").set_value(["L1H0"]).run()  # the maps do not depend on it
    no_exception(at)
    assert plotly_specs(at) == after
    assert "(seed 1)" in " ".join(md.value for md in at.markdown)


def test_users_pattern_is_predicted_once_it_repeats():
    at = run_page(PAGE, reveal=True, tokens="red fox jumps high red fox jumps high", step="Loss")
    no_exception(at)
    assert not warnings(at)
    assert W("source.typed", mode="words") in " ".join(md.value for md in at.markdown)
    m = _metrics(at)
    assert float(m["Loss on repeated tokens"]) < 0.5 < 3 < float(m["Loss on first occurrences"])
    loss = next(s for s in plotly_specs(at) if s["layout"]["title"]["text"].startswith("How sur"))
    assert loss["layout"]["xaxis"]["ticktext"][:4] == ["red", "fox", "jumps", "high"]
    maps = plotly_specs(
        run_page(PAGE, reveal=True, tokens="red fox jumps high red fox jumps high")
    )[0]
    assert maps["layout"]["xaxis"]["ticktext"][:4] == ["red", "fox", "jumps", "high"]  # typed


def test_no_repeats_says_there_is_no_induction_score():
    at = run_page(PAGE, reveal=True, tokens="one two three four five")
    no_exception(at)
    assert _metrics(at)["Loss on repeated tokens"] == "n/a"
    assert any(i.value == W("info.no_repeat") for i in at.info)


def test_ablating_the_induction_heads_removes_the_gain():
    heads = ["L1H0", "L1H1", "L1H2", "L1H3"]
    at = _run_with_list(ablate=heads, step="Switch off")
    no_exception(at)
    assert at.multiselect[0].value == heads
    assert not warnings(at)
    off = [v for k, v in _metrics(at).items() if k.startswith("Loss on repeated tokens with")]
    assert off and float(off[0]) > 4.0  # back to (worse than) a blind guess
    bars, loss = plotly_specs(at)  # the selection's loss along the sequence, beside the bars
    assert bars["layout"]["title"]["text"].startswith("Switch off one head at a time")
    assert any("your selection" in (t.get("name") or "") for t in bars["data"])
    assert any("switched off" in (t.get("name") or "") for t in loss["data"])
    at = _run_with_list(ablate=heads, step="Loss")  # the Loss step draws the same line
    no_exception(at)
    [loss] = plotly_specs(at)
    assert any("switched off" in (t.get("name") or "") for t in loss["data"])
    at = run_page(PAGE, reveal=True, step="Switch off")  # nothing switched off: the bars alone
    assert len(plotly_specs(at)) == 1
    assert not any(k.startswith("Loss on repeated tokens with") for k in _metrics(at))


def test_the_train_button_warns_when_the_run_outlasts_the_servers_budget(monkeypatch):
    monkeypatch.setenv("ATTN_JOB_BUDGET_S", "0.5")
    jobs.reset()
    at = run_page(PAGE, reveal=True, seed="97", step="Train")
    [label] = [b.label for b in at.button if b.label.startswith("Train from scratch")]
    assert label.endswith("; this server stops a job after 0.5 s)"), label


def test_live_training_on_button_press(monkeypatch):
    monkeypatch.setattr(ind, "PRETRAINED_STEPS", 30)  # a CI-sized run; the page trains this many
    jobs.reset()  # no typical time from an earlier test's run: the label uses the shipped one
    at = run_page(PAGE, reveal=True, seed="97", step="Train")
    no_exception(at)
    assert _subheaders(at) == ["Train it live"]
    button = next(b for b in at.button if "Train from scratch at seed 97" in b.label)
    # the button says how long: the shipped run's time per step, for as many steps
    shipped = ind.load_pretrained()[1]
    expect = shipped.seconds * 30 / shipped.done
    assert f"(30 steps, about {expect:.0f} s)" in button.label, button.label
    assert "stops a job after" not in button.label  # 30 steps fit the server's budget
    button.click().run()
    no_exception(at)
    assert any("your live run, seed 97" in t for t in chart_titles(at))
    assert any("30 steps in" in c.value for c in at.caption)


@pytest.mark.parametrize(
    "params,bad",
    [
        ({"seed": "abc"}, "seed"),
        ({"seed": "-5"}, "seed"),
        ({"seed": "1e99"}, "seed"),
        ({"ablate": "L9H9"}, "ablate"),
        ({"ablate": "<script>alert(1)</script>"}, "ablate"),
    ],
)
def test_bad_url_values_fall_back_with_a_note(params, bad):
    at = run_page(PAGE, reveal=True, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0], notes
    assert len(plotly_specs(at)) == FIRST


@pytest.mark.parametrize(
    "tokens,note",
    [
        pytest.param("", None, id="empty"),
        pytest.param("x", W("note.one_token"), id="one-token"),
        pytest.param(
            " ".join(["a", "b", "c"] * 3334),
            W("note.capped", seq_len=CFG.seq_len, total=10_002),
            id="10k",
        ),
        pytest.param(
            "999 3 999 3", W("note.bad_id", number="999", top=CFG.vocab - 1), id="unknown-ids"
        ),
        pytest.param(
            "3 -" + "9" * 20 + " 3",
            W(
                "note.bad_id",
                number=W("note.long_number", head="-" + "9" * 11, digits=20),
                top=CFG.vocab - 1,
            ),
            id="long-number",
        ),
    ],
)
def test_bad_text_falls_back_or_is_capped_with_a_note(tokens, note):
    at = run_page(PAGE, reveal=True, tokens=tokens)
    no_exception(at)
    notes = warnings(at)
    if note is None:
        assert not notes
    else:
        assert any(note in n for n in notes), notes
    assert len(plotly_specs(at)) == FIRST


def test_html_in_the_text_is_shown_as_text():
    at = run_page(PAGE, reveal=True, tokens="<b>bold</b> <img src=x onerror=alert(1)> <b>bold</b>")
    no_exception(at)
    shown = at.code[0].value
    assert "<b>bold</b>" in shown  # literally, inside a code block
    # no raw tag reaches markdown: where the tokens are quoted (a chart in words), each
    # "<" is backslash-escaped and so drawn as text
    raw = re.compile(r"(?<!\\)<(img|b>)")
    assert not any(raw.search(md.value) for md in at.markdown)
    maps = plotly_specs(at)[0]
    assert "&lt;b&gt;" in " ".join(maps["layout"]["yaxis"]["ticktext"])
