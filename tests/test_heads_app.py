"""AppTest: the trained-heads page — defaults, user text, ablation, live training, bad links."""

import pytest
from streamlit.testing.v1 import AppTest

import attn_core.induction as ind
from tests.support.apptest import ROOT, no_exception, plotly_specs, run_page, warnings

PAGE = "pages/heads.py"
TITLES = [
    "Every head's attention map",
    "How much each head looks",
    "How surprised the model is",
    "Switch off one head at a time",
    "Attention weight versus what the head actually writes",
    "Training curves",
]


def _titles(at) -> list[str]:
    return [s["layout"]["title"]["text"] for s in plotly_specs(at)]


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
    return at


def test_defaults_show_every_chart_the_scores_and_no_notes():
    at = run_page(PAGE)
    no_exception(at)
    assert at.title[0].value == "Trained heads"
    titles = _titles(at)
    assert len(titles) == len(TITLES)
    for want, got in zip(TITLES, titles, strict=True):
        assert got.startswith(want)
    assert "shipped model" in titles[-1]
    m = _metrics(at)
    assert float(m["Loss on repeated tokens"]) < 0.1
    assert float(m["Loss on first occurrences"]) > 3.5
    assert m["Blind guess, ln(vocab)"] == "4.159"
    assert not warnings(at)
    # the heads are labelled with their jobs on the map and named in its caption
    caps = " ".join(c.value for c in at.caption)
    assert "Previous-token heads: L0H" in caps and "Induction heads: L1H" in caps
    assert "random block of" in " ".join(md.value for md in at.markdown)


def test_users_pattern_is_predicted_once_it_repeats():
    at = run_page(PAGE, tokens="red fox jumps high red fox jumps high")
    no_exception(at)
    assert not warnings(at)
    assert "your text, read as words" in " ".join(md.value for md in at.markdown)
    m = _metrics(at)
    assert float(m["Loss on repeated tokens"]) < 0.5 < 3 < float(m["Loss on first occurrences"])
    loss = next(s for s in plotly_specs(at) if s["layout"]["title"]["text"].startswith("How sur"))
    assert loss["layout"]["xaxis"]["ticktext"][:4] == ["red", "fox", "jumps", "high"]


def test_no_repeats_says_there_is_no_induction_score():
    at = run_page(PAGE, tokens="one two three four five")
    no_exception(at)
    assert _metrics(at)["Loss on repeated tokens"] == "n/a"
    assert any("nothing to copy" in i.value for i in at.info)


def test_ablating_the_induction_heads_removes_the_gain():
    at = _run_with_list(ablate=["L1H0", "L1H1", "L1H2", "L1H3"])
    no_exception(at)
    assert at.multiselect[0].value == ["L1H0", "L1H1", "L1H2", "L1H3"]
    assert not warnings(at)
    off = [v for k, v in _metrics(at).items() if k.startswith("Loss on repeated tokens with")]
    assert off and float(off[0]) > 4.0  # back to (worse than) a blind guess
    loss = next(s for s in plotly_specs(at) if s["layout"]["title"]["text"].startswith("How sur"))
    assert any("switched off" in (t.get("name") or "") for t in loss["data"])


def test_live_training_on_button_press(monkeypatch):
    monkeypatch.setattr(ind, "PRETRAINED_STEPS", 30)  # a CI-sized run; the page trains this many
    at = run_page(PAGE, seed="97")
    no_exception(at)
    button = next(b for b in at.button if "Train from scratch at seed 97" in b.label)
    button.click().run()
    no_exception(at)
    assert any("your live run, seed 97" in t for t in _titles(at))
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
    at = run_page(PAGE, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0], notes
    assert len(plotly_specs(at)) == len(TITLES)


@pytest.mark.parametrize(
    "tokens,note",
    [
        pytest.param("", None, id="empty"),
        pytest.param("x", "One token leaves nothing to predict", id="one-token"),
        pytest.param(
            " ".join(["a", "b", "c"] * 3334), "only the first 48 of your 10,002 tokens", id="10k"
        ),
        pytest.param("999 3 999 3", "999 is not a token id", id="unknown-ids"),
    ],
)
def test_bad_text_falls_back_or_is_capped_with_a_note(tokens, note):
    at = run_page(PAGE, tokens=tokens)
    no_exception(at)
    notes = warnings(at)
    if note is None:
        assert not notes
    else:
        assert any(note in n for n in notes), notes
    assert len(plotly_specs(at)) == len(TITLES)


def test_html_in_the_text_is_shown_as_text():
    at = run_page(PAGE, tokens="<b>bold</b> <img src=x onerror=alert(1)> <b>bold</b>")
    no_exception(at)
    shown = at.code[0].value
    assert "<b>bold</b>" in shown  # literally, inside a code block
    assert not any("<img" in md.value or "<b>" in md.value for md in at.markdown)
    maps = plotly_specs(at)[0]
    assert "&lt;b&gt;" in " ".join(maps["layout"]["yaxis"]["ticktext"])
