"""The training lab's multi-head model against PyTorch's own multi-head attention; the sweep."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import RetrievalTrainer, retrieval_batch, softmax_jacobian, train_retrieval
from attn_core.lessons.training import head_sweep, top_two_gap

SMALL = dict(n_pairs=6, n_symbols=12, d_model=16, batch=32)


def _first_batch(t: RetrievalTrainer, seed: int):
    """The trainer's first training batch (its data generator is seeded with seed + 1)."""
    return retrieval_batch(
        SMALL["batch"], SMALL["n_pairs"], SMALL["n_symbols"],
        generator=torch.Generator().manual_seed(seed + 1),
    )  # fmt: skip


def _inputs(m, b):
    d = SMALL["d_model"]
    x_pair = F.layer_norm(m.E_key[b.keys] + m.E_val[b.values], (d,))  # (B, n_pairs, d_model)
    x_q = F.layer_norm(m.E_key[b.query], (d,))[:, None, :]  # (B, 1, d_model)
    return x_q, x_pair


@pytest.mark.parametrize("heads", [1, 2, 4, 8])
def test_scaled_multi_head_step_matches_nn_multihead_attention(heads):
    """Loss, gradient norm and every row statistic against torch.nn.MultiheadAttention."""
    d_model, seed = SMALL["d_model"], 3
    d_k = d_model // heads
    t = RetrievalTrainer(d_k, True, heads=heads, seed=seed, **SMALL)
    m = t.model
    W_q, W_k, W_v, W_o = (p.detach().clone() for p in m.params())
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=False, batch_first=True)
    with torch.no_grad():  # nn.Linear computes x Wᵀ; the trainer x W
        mha.in_proj_weight.copy_(torch.cat([W_q.T, W_k.T, W_v.T]))
        mha.out_proj.weight.copy_(torch.eye(d_model))  # output = the heads' concatenation
    b = _first_batch(t, seed)
    x_q, x_pair = _inputs(m, b)
    concat, w = mha(x_q, x_pair, x_pair, need_weights=True, average_attn_weights=False)
    loss = F.cross_entropy((concat @ W_o)[:, 0], b.target)  # (B, n_symbols) logits
    g_q, g_k = torch.autograd.grad(loss, [mha.in_proj_weight])[0].split(d_model)[:2]
    w = w[:, :, 0].detach().flatten(0, 1)  # (B·h, n_pairs): every head's row
    t.step()
    r = t.run
    assert r.heads == heads and r.d_k == d_k
    assert r.loss[0] == pytest.approx(float(loss.detach()), rel=1e-5)
    assert r.qk_grad_norm[0] == pytest.approx(float(torch.cat([g_q, g_k]).norm()), rel=1e-4)
    assert r.max_weight[0] == pytest.approx(float(w.amax(-1).mean()), rel=1e-5)
    assert r.saturated[0] == float((w.amax(-1) > 0.99).float().mean())
    jac = softmax_jacobian(w).flatten(-2).norm(dim=-1).mean()
    assert r.jacobian_norm[0] == pytest.approx(float(jac), rel=1e-5)


@pytest.mark.parametrize("heads", [1, 4])
def test_unscaled_multi_head_is_attention_per_head_without_the_division(heads):
    """Each head by hand with SDPA at scale 1, then concatenated: same logits and weights."""
    d_model, seed = SMALL["d_model"], 5
    d_k, d_v = d_model // heads, d_model // heads
    t = RetrievalTrainer(d_k, False, heads=heads, seed=seed, **SMALL)
    m = t.model
    b = _first_batch(t, seed)
    x_q, x_pair = _inputs(m, b)
    outs, rows = [], []
    for i in range(heads):
        cols, vcols = slice(i * d_k, (i + 1) * d_k), slice(i * d_v, (i + 1) * d_v)
        q, k = x_q @ m.W_q[:, cols], x_pair @ m.W_k[:, cols]  # (B, 1, d_k), (B, n_pairs, d_k)
        v = x_pair @ m.W_v[:, vcols]  # (B, n_pairs, d_v)
        outs.append(F.scaled_dot_product_attention(q, k, v, scale=1.0))
        rows.append(torch.softmax(q @ k.transpose(-2, -1), -1)[:, 0])  # (B, n_pairs)
    logits = (torch.cat(outs, -1) @ m.W_o)[:, 0]  # (B, n_symbols)
    with torch.no_grad():
        got_logits, got_w, raw = m.forward(b, scaled=False)
    torch.testing.assert_close(got_logits, logits.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_w, torch.stack(rows, 1).detach(), rtol=1e-5, atol=1e-7)
    # unscaled: the softmax saw the raw scores themselves
    torch.testing.assert_close(torch.softmax(raw, -1), got_w, rtol=1e-5, atol=1e-7)


def test_probe_scores_at_the_start_are_the_raw_q_dot_k_shared_by_both_runs():
    s = RetrievalTrainer(16, True, seed=2, **SMALL)
    u = RetrievalTrainer(16, False, seed=2, **SMALL)
    torch.testing.assert_close(s.run.probe_scores_start, u.run.probe_scores_start)
    raw = s.run.probe_scores_start  # (N_PROBE, n_pairs)
    # the scaled run's starting rows are softmax(raw / √d_k), the unscaled run's softmax(raw)
    torch.testing.assert_close(s.run.probe_start, torch.softmax(raw / 4.0, -1), atol=1e-6, rtol=0)
    torch.testing.assert_close(u.run.probe_start, torch.softmax(raw, -1), atol=1e-6, rtol=0)
    assert raw.shape == s.run.probe_start.shape


@settings(max_examples=40, deadline=None)
@given(
    rows=st.integers(1, 6),
    n=st.integers(2, 9),
    seed=st.integers(0, 10_000),
    ties=st.booleans(),
)
def test_top_two_gap_is_best_minus_runner_up(rows, n, seed, ties):
    x = torch.randn(rows, n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    if ties:
        top = x.amax(-1)
        x[:, 0], x[:, 1] = top, top  # the best score twice: no lead
    gap = top_two_gap(x)
    srt = x.sort(-1, descending=True).values
    assert torch.equal(gap, srt[:, 0] - srt[:, 1])
    assert bool((gap >= 0).all())
    if ties:
        assert bool((gap == 0).all())


def test_every_head_count_starts_from_the_same_weights():
    """At a fixed d_model, W_q is d_model × d_model whatever h is: only the cut differs."""
    d_model = SMALL["d_model"]
    first = RetrievalTrainer(d_model, True, heads=1, **SMALL)
    for heads in (2, 4, 8, 16):
        t = RetrievalTrainer(d_model // heads, True, heads=heads, **SMALL)
        for a, b in zip(first.model.params(), t.model.params(), strict=True):
            assert torch.equal(a, b)
        assert torch.equal(first.probe.keys, t.probe.keys)


def test_head_sweep_trains_one_scaled_run_per_width_and_can_be_stopped():
    seen = []
    kw = dict(steps=6, n_pairs=6, n_symbols=12, batch=16)
    runs = head_sweep(16, (4, 8, 16), on_step=lambda i, step, run: seen.append((i, step)), **kw)
    assert [(r.d_k, r.heads, r.d_model, r.scaled) for r in runs] == [
        (4, 4, 16, True),
        (8, 2, 16, True),
        (16, 1, 16, True),
    ]
    assert all(r.finished for r in runs)
    assert seen[:6] == [(0, s) for s in range(1, 7)] and seen[-1] == (2, 6)
    # each run is train_retrieval with the matching head count, number for number
    alone = train_retrieval(8, True, heads=2, d_model=16, **kw)
    assert alone.loss == runs[1].loss and alone.accuracy == runs[1].accuracy
    # True from on_step ends the sweep: the run in progress stops, later ones never start
    stopped = head_sweep(16, (4, 8, 16), on_step=lambda i, step, run: i == 1 and step == 2, **kw)
    assert [r.d_k for r in stopped] == [4, 8]
    assert stopped[1].stopped == "callback" and stopped[1].done == 2


@pytest.mark.parametrize(
    "call",
    [
        lambda: head_sweep(16, (3,), steps=1),
        lambda: head_sweep(16, (32,), steps=1),
        lambda: train_retrieval(4, True, heads=3, steps=1, **SMALL),
        lambda: train_retrieval(4, True, heads=0, steps=1, **SMALL),
    ],
)
def test_head_counts_that_do_not_divide_d_model_raise(call):
    with pytest.raises(ValueError):
        call()


def test_multi_head_probe_snapshots_keep_a_head_axis():
    r = train_retrieval(4, True, heads=4, steps=2, **SMALL)
    assert r.probe_start.shape == (256, 4, SMALL["n_pairs"])
    assert r.probe_end.shape == (256, 4, SMALL["n_pairs"])
    assert r.probe_jacobian_start.shape == (256, 4)
    torch.testing.assert_close(r.probe_start.sum(-1), torch.ones(256, 4))
    assert math.isfinite(r.tail_accuracy()) and 0 <= r.tail_accuracy() <= 1
