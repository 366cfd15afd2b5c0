"""The training lab's experiment: the task, the model's numbers against PyTorch's own, the gap."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_core import (
    DEFAULT_LR,
    RetrievalTrainer,
    retrieval_batch,
    softmax_jacobian,
    train_pair,
    train_retrieval,
)
from attn_core.lessons.training import found_share

SMALL = dict(n_pairs=6, n_symbols=12, d_model=16, batch=32)
CURVES = ("loss", "accuracy", "entropy", "max_weight", "saturated", "jacobian_norm", "qk_grad_norm")


@settings(max_examples=25, deadline=None)
@given(
    batch=st.integers(1, 20),
    n_symbols=st.integers(1, 40),
    frac=st.floats(0.0, 1.0),
    seed=st.integers(0, 1000),
)
def test_batch_is_a_well_posed_lookup(batch, n_symbols, frac, seed):
    n_pairs = max(1, round(frac * n_symbols))
    b = retrieval_batch(batch, n_pairs, n_symbols, generator=torch.Generator().manual_seed(seed))
    assert b.keys.shape == b.values.shape == (batch, n_pairs)
    # keys are distinct in every row, so each query has exactly one answer
    assert all(len(set(row.tolist())) == n_pairs for row in b.keys)
    rows = torch.arange(batch)
    assert torch.equal(b.keys[rows, b.position], b.query)
    assert torch.equal(b.values[rows, b.position], b.target)
    assert int(b.keys.min()) >= 0 and int(b.keys.max()) < n_symbols


def test_the_query_alone_says_nothing_chance_is_ln_n_symbols():
    # The empirical conditional entropy H(target | query) is ln(n_symbols): values are
    # drawn independently of keys, so the query alone cannot beat guessing.
    n_symbols = 8
    b = retrieval_batch(200_000, 4, n_symbols, generator=torch.Generator().manual_seed(0))
    joint = torch.zeros(n_symbols, n_symbols)
    joint.index_put_((b.query, b.target), torch.ones(len(b.query)), accumulate=True)
    p_t_given_q = joint / joint.sum(1, keepdim=True)
    p_q = joint.sum(1) / joint.sum()
    h = -(p_q[:, None] * p_t_given_q * p_t_given_q.clamp_min(1e-12).log()).sum()
    assert abs(float(h) - math.log(n_symbols)) < 0.01


def test_a_model_without_attention_stays_at_chance_while_attention_learns():
    # Readout from the query alone (a full lookup table over query symbols), trained with
    # Adam on fresh batches: held-out loss cannot go below ln(n_symbols).
    n_symbols, n_pairs = 12, 6
    g = torch.Generator().manual_seed(0)
    table = torch.zeros(n_symbols, n_symbols, requires_grad=True)
    opt = torch.optim.Adam([table], lr=0.05)
    for _ in range(150):
        b = retrieval_batch(256, n_pairs, n_symbols, generator=g)
        loss = F.cross_entropy(table[b.query], b.target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    held = retrieval_batch(4096, n_pairs, n_symbols, generator=torch.Generator().manual_seed(9))
    with torch.no_grad():
        no_attention = float(F.cross_entropy(table[held.query], held.target))
    assert no_attention > math.log(n_symbols) - 0.05
    run = train_retrieval(8, True, steps=150, optimizer="adam", **SMALL)
    assert run.tail_loss(30) < 0.5 * math.log(n_symbols)  # attention beats chance clearly


def test_same_arguments_same_numbers():
    a = train_retrieval(16, False, steps=12, seed=3, **SMALL)
    b = train_retrieval(16, False, steps=12, seed=3, **SMALL)
    for name in CURVES:
        assert getattr(a, name) == getattr(b, name), name
    assert torch.equal(a.probe_end, b.probe_end)
    c = train_retrieval(16, False, steps=12, seed=4, **SMALL)
    assert c.loss != a.loss


def test_both_runs_start_from_the_same_weights_and_batches():
    s = RetrievalTrainer(32, True, **SMALL)
    u = RetrievalTrainer(32, False, **SMALL)
    for ws, wu in zip(s.model.params(), u.model.params(), strict=True):
        assert torch.equal(ws, wu)
    assert torch.equal(s.probe.keys, u.probe.keys)
    # at d_k = 1 dividing by √1 changes nothing: the two runs are the same run
    a, b = train_pair(1, steps=10, **SMALL)
    assert a.loss == b.loss and a.qk_grad_norm == b.qk_grad_norm


@pytest.mark.parametrize("scaled", [True, False])
def test_step_numbers_match_pytorch_sdpa_and_autograd(scaled):
    """Loss, gradient norm and row statistics recomputed with F.scaled_dot_product_attention."""
    d_k, seed = 16, 5
    t = RetrievalTrainer(d_k, scaled, seed=seed, **SMALL)
    m = t.model
    W = [p.detach().clone().requires_grad_() for p in m.params()]
    b = retrieval_batch(
        SMALL["batch"],
        SMALL["n_pairs"],
        SMALL["n_symbols"],
        generator=torch.Generator().manual_seed(seed + 1),
    )  # fmt: skip  (the trainer's first batch)
    x_pair = F.layer_norm(m.E_key[b.keys] + m.E_val[b.values], (SMALL["d_model"],))
    x_q = F.layer_norm(m.E_key[b.query], (SMALL["d_model"],))[:, None, :]
    q, k, v = x_q @ W[0], x_pair @ W[1], x_pair @ W[2]
    scale = 1 / math.sqrt(d_k) if scaled else 1.0
    out = F.scaled_dot_product_attention(q, k, v, scale=scale)
    loss = F.cross_entropy((out @ W[3])[:, 0], b.target)
    gq, gk = torch.autograd.grad(loss, [W[0], W[1]])
    w = torch.softmax(q @ k.transpose(-2, -1) * scale, -1)[:, 0].detach()  # (B, n_pairs)
    t.step()
    r = t.run
    assert r.loss[0] == pytest.approx(float(loss.detach()), rel=1e-5)
    assert r.qk_grad_norm[0] == pytest.approx(float(torch.cat([gq, gk]).norm()), rel=1e-4)
    assert r.max_weight[0] == pytest.approx(float(w.amax(-1).mean()), rel=1e-5)
    jac = softmax_jacobian(w).flatten(-2).norm(dim=-1).mean()
    assert r.jacobian_norm[0] == pytest.approx(float(jac), rel=1e-5)
    ent = -(w * w.log()).sum(-1).mean()
    assert r.entropy[0] == pytest.approx(float(ent), rel=1e-4)


def test_unscaled_starts_peaked_and_sgd_ends_far_worse_at_d_k_64():
    # The figure at a reduced step count: scaled final-50 loss < 1/4 of unscaled.
    s, u = train_pair(64, steps=120, optimizer="sgd")
    assert s.max_weight[0] < 0.4 < 0.7 < u.max_weight[0]
    assert u.saturated[0] > s.saturated[0]
    assert s.tail_loss(50) < 0.25 * u.tail_loss(50)
    assert s.lr == DEFAULT_LR["sgd"]


def test_a_diverging_learning_rate_stops_the_run_and_records_no_nan():
    s, u = train_pair(64, steps=200, optimizer="sgd", lr=50.0, **SMALL)
    for r in (s, u):
        assert r.stopped == "nan" and r.stopped_at == r.done < 200
        for name in CURVES:
            assert all(math.isfinite(x) for x in getattr(r, name)), name
        assert r.probe_end is not None  # the after-picture exists (rows may be blank)


def test_on_step_can_stop_a_run_and_sees_every_step():
    seen = []
    r = train_retrieval(8, True, steps=50, on_step=lambda i, run: seen.append(i) or i >= 5, **SMALL)
    assert r.stopped == "callback" and r.done == 5 and seen == [1, 2, 3, 4, 5]
    assert r.probe_end is not None
    calls = []
    train_pair(8, steps=4, on_step=lambda i, a, b: calls.append((i, a.done, b.done)), **SMALL)
    assert calls == [(1, 1, 1), (2, 2, 2), (3, 3, 3), (4, 4, 4)]
    full = train_retrieval(8, True, steps=4, on_step=lambda i, run: None, **SMALL)
    assert full.finished and full.done == 4


def test_found_share_counts_rows_on_the_matching_key():
    w = torch.tensor([[0.9, 0.1], [0.2, 0.8], [float("nan"), float("nan")]])
    assert found_share(w, torch.tensor([0, 0, 0])) == pytest.approx(1 / 3)  # NaN row: not found
    assert found_share(w.numpy(), [0, 1, 1]) == pytest.approx(2 / 3)  # arrays and lists too
    assert math.isnan(found_share(torch.zeros(0, 2), torch.zeros(0)))


@pytest.mark.parametrize(
    "kw",
    [
        dict(optimizer="rmsprop"),
        dict(lr=0.0),
        dict(lr=float("nan")),
        dict(init_std=-1.0),
        dict(steps=-1),
        dict(n_pairs=40),
    ],
)
def test_bad_arguments_raise_value_error(kw):
    with pytest.raises(ValueError):
        train_retrieval(8, True, **{**SMALL, **kw})
