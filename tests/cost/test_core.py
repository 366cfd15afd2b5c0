"""tiled_attention against the explicit and the fused paths; the trace; the measurements;
the lesson's cost figures."""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attn_core import (
    attention,
    attention_macs,
    attention_probs_bytes,
    causal_mask,
    crossover_T,
    fit_slope,
    format_bytes,
    kv_cache_bytes,
    measure_point,
    padding_mask,
    peak_memory_bytes,
    plan_sweep,
    projection_macs,
    sdpa_backend,
    tile_grid,
    tiled_attention,
    trace_state,
)
from attn_core.lessons.cost import (
    METHODS,
    SDPA_BACKENDS,
    make_call,
    memory_source,
    predicted_peak_bytes,
    qkv,
    recurrence,
    recurrent_weights,
    time_call,
    time_parallel_vs_recurrent,
)
from ui.content import words

MiB, GiB = 2**20, 2**30


def rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype)


# ----------------------------------------------------------------------------- agreement


@pytest.mark.parametrize(
    "shape_q,shape_kv,bq,bk",
    [
        ((1, 5), (1, 5), 64, 64),  # T = 1
        ((7, 8), (7, 8), 3, 2),  # odd T, blocks that do not divide it
        ((2, 3, 33, 16), (2, 3, 33, 16), 8, 5),  # batch and heads
        ((2, 3, 10, 16), (2, 3, 21, 16), 4, 6),  # cross-attention: T_q != T_k
        ((2, 1, 17, 8), (1, 4, 17, 8), 16, 16),  # broadcast batch dims
        ((100, 8), (100, 8), 100, 1),  # one key per tile
    ],
)
@pytest.mark.parametrize("causal", [False, True])
def test_tiled_matches_explicit_attention(shape_q, shape_kv, bq, bk, causal):
    q = rand(*shape_q, seed=1)
    k, v = rand(*shape_kv, seed=2), rand(*shape_kv, seed=3)
    T_q, T_k = q.shape[-2], k.shape[-2]
    mask = causal_mask(T_q, T_k) if causal else None
    ref = attention(q, k, v, mask).output
    out = tiled_attention(q, k, v, block_q=bq, block_k=bk, causal=causal)
    assert out.shape == ref.shape
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("causal", [False, True])
def test_tiled_matches_pytorch_sdpa(causal):
    q, k, v = (rand(2, 4, 45, 16, seed=s) for s in (4, 5, 6))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    out = tiled_attention(q, k, v, block_q=16, block_k=7, causal=causal)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_float64_agrees_to_rounding_and_scale_is_honoured():
    q, k, v = (rand(3, 19, 8, seed=s, dtype=torch.float64) for s in (7, 8, 9))
    for scale in (None, 0.3, 2.0):
        ref = attention(q, k, v, scale=scale).output
        out = tiled_attention(q, k, v, block_q=4, block_k=5, scale=scale)
        torch.testing.assert_close(out, ref, atol=1e-12, rtol=1e-12)


def test_masks_bool_float_padding_and_fully_masked_rows():
    q, k, v = (rand(2, 3, 9, 4, seed=s) for s in (10, 11, 12))
    pad = padding_mask([9, 4], 9)  # (B, 1, 1, T_k): broadcast over heads and queries
    torch.testing.assert_close(
        tiled_attention(q, k, v, pad, block_q=4, block_k=2),
        attention(q, k, v, pad).output,
        atol=1e-5,
        rtol=1e-5,
    )
    additive = torch.zeros(9, 9).masked_fill(~causal_mask(9), float("-inf"))
    torch.testing.assert_close(
        tiled_attention(q, k, v, additive, block_q=3, block_k=4),
        attention(q, k, v, causal_mask(9)).output,
        atol=1e-5,
        rtol=1e-5,
    )
    # causal=True and a mask combine; a row with no allowed key reads nothing (zeros)
    none_for_row0 = torch.ones(9, 9, dtype=torch.bool)
    none_for_row0[0] = False
    out = tiled_attention(q, k, v, none_for_row0, causal=True, block_q=2, block_k=2)
    ref = attention(q, k, v, none_for_row0 & causal_mask(9)).output
    assert torch.all(out[..., 0, :] == 0)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_half_precision_accumulates_in_float32():
    q, k, v = (rand(1, 2, 70, 16, seed=s) for s in (13, 14, 15))
    ref = attention(q, k, v).output
    for dt in (torch.float16, torch.bfloat16):
        out = tiled_attention(q.to(dt), k.to(dt), v.to(dt), block_q=16, block_k=16)
        assert out.dtype == dt
        torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=2e-2)


def test_large_scores_do_not_overflow():
    q = torch.full((4, 2), 30.0)
    k = torch.tensor([[30.0, 30.0], [0.0, 0.0], [-30.0, 0.0], [30.0, 29.0]])
    v = torch.eye(4)
    out = tiled_attention(q, k, v, block_q=2, block_k=1, scale=1.0)  # scores up to 1800
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, attention(q, k, v, scale=1.0).output)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    T_q=st.integers(1, 24),
    T_k=st.integers(1, 24),
    bq=st.integers(1, 30),
    bk=st.integers(1, 30),
    causal=st.booleans(),
    seed=st.integers(0, 10_000),
)
def test_property_any_T_any_blocks(T_q, T_k, bq, bk, causal, seed):
    q, k, v = rand(2, T_q, 4, seed=seed), rand(2, T_k, 4, seed=seed + 1), rand(2, T_k, 3, seed=2)
    mask = causal_mask(T_q, T_k) if causal else None
    ref = attention(q, k, v, mask).output
    out = tiled_attention(q, k, v, block_q=bq, block_k=bk, causal=causal)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_bad_arguments_raise_clear_errors():
    q = rand(4, 3)
    with pytest.raises(ValueError, match="block_q"):
        tiled_attention(q, q, q, block_q=0)
    with pytest.raises(ValueError, match="block_k"):
        tiled_attention(q, q, q, block_k=2.5)
    with pytest.raises(ValueError, match="d_k"):
        tiled_attention(q, rand(4, 5), rand(4, 5))
    with pytest.raises(ValueError, match="mask"):
        tiled_attention(q, q, q, torch.ones(3, 4, dtype=torch.bool))


# ----------------------------------------------------------------------------- the trace


@pytest.mark.parametrize(
    "T,block,causal", [(10, 4, False), (16, 4, True), (13, 5, True), (8, 16, False)]
)
def test_trace_final_state_equals_result(T, block, causal):
    q, k, v = rand(T, 6, seed=1), rand(T, 6, seed=2), rand(T, 3, seed=3)
    out, steps = tiled_attention(q, k, v, block_q=block, block_k=block, causal=causal, trace=True)
    plain = tiled_attention(q, k, v, block_q=block, block_k=block, causal=causal)
    assert torch.equal(out, plain)  # tracing changes nothing
    tiles = tile_grid(T, T, block, block, causal)
    assert len(steps) == sum(vis for *_, vis in tiles)
    assert [(s.q_block, s.k_block) for s in steps] == [(a, b) for a, b, vis in tiles if vis]
    assert [s.index for s in steps] == list(range(len(steps)))
    final = trace_state(steps, len(steps), T)
    torch.testing.assert_close(final.out, out)
    # m is the row maximum of the allowed scores and l the softmax denominator against it
    scores = attention(q, k, v, causal_mask(T) if causal else None).scores
    m = scores.amax(-1)
    torch.testing.assert_close(final.m, m)
    torch.testing.assert_close(final.l, torch.exp(scores - m[:, None]).sum(-1))


def test_trace_running_max_never_falls_and_state_fills_block_by_block():
    T, block = 12, 4
    q, k, v = rand(T, 4, seed=5), rand(T, 4, seed=6), rand(T, 4, seed=7)
    _, steps = tiled_attention(q, k, v, block_q=block, block_k=block, trace=True)
    for a, b in itertools.pairwise(steps):
        if a.q_block == b.q_block:
            assert torch.all(b.m >= a.m)
    start = trace_state(steps, 0, T)
    assert start.current is None and torch.isnan(start.m).all() and torch.isnan(start.out).all()
    mid = trace_state(steps, 4, T)  # first query block done (3 key blocks), second started
    assert mid.current is steps[3]
    assert not torch.isnan(mid.m[:8]).any() and torch.isnan(mid.m[8:]).all()
    with pytest.raises(ValueError):
        trace_state(steps, len(steps) + 1, T)
    with pytest.raises(ValueError):
        trace_state([], 0, T)


def test_causal_skips_the_tiles_above_the_diagonal():
    tiles = tile_grid(16, 16, 4, 4, causal=True)
    assert sum(not vis for *_, vis in tiles) == 6  # 4·3/2 wholly-future tiles
    assert all(vis for *_, vis in tile_grid(16, 16, 4, 4))


# ----------------------------------------------------------------------------- measurement


def test_tiled_peak_memory_is_far_below_materialised():
    """The acceptance ratio (≤ 1/8) at a small size; bench/cost.py reports it at T = 4096."""
    T, d_k = 1024, 16
    q, k, v = qkv(1, 1, T, d_k, "float32", "cpu")
    inputs = 3 * T * d_k * 4
    peak = {
        m: peak_memory_bytes(make_call(m, q, k, v, block=128), "cpu", inputs_bytes=inputs)
        for m in METHODS
    }
    # three T×T float32 tensors live at once in the explicit path
    assert peak["attention"] >= inputs + 3 * T * T * 4
    assert peak["tiled_attention"] <= peak["attention"] / 8
    # PyTorch's fused CPU kernel also takes a scratch block per thread (about 0.5 MiB each
    # here: 0.8 MiB at 1 thread, 17 MiB at 32), so a many-core machine running the suite
    # in one process would pass the explicit path's 12 MiB: compare it at one thread, and
    # check that what grows with the threads is that scratch, not a T×T matrix.
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        fused = make_call("fused_attention", q, k, v, block=128)
        one = peak_memory_bytes(fused, "cpu", inputs_bytes=inputs)
        torch.set_num_threads(2)
        two = peak_memory_bytes(fused, "cpu", inputs_bytes=inputs)
    finally:
        torch.set_num_threads(threads)
    assert one <= peak["attention"] / 4
    assert two - one < T * T * 4 / 2  # one more thread's scratch: far below one T×T matrix


def test_measure_point_reports_time_and_memory():
    r = measure_point("fused_attention", 128, heads=2, d_k=16)
    assert r.method == "fused_attention" and r.T == 128
    assert r.seconds > 0 and r.peak_bytes >= 3 * 2 * 128 * 16 * 4
    with pytest.raises(ValueError, match="unknown method"):
        measure_point("nope", 128)


def test_peak_memory_counts_a_known_allocation():
    n = 1 << 18  # 1 MiB of float32
    peak = peak_memory_bytes(lambda: torch.empty(n) + 1.0, "cpu", inputs_bytes=123)
    assert 123 + 4 * n <= peak <= 123 + 3 * 4 * n


def test_memory_source_names_how_peak_memory_is_measured_and_the_words_exist():
    assert memory_source("cpu") == memory_source(torch.device("cpu")) == "cpu"
    assert memory_source("cuda:0") == "cuda"  # names the device type; needs no GPU
    assert "torch.profiler" in words("cost", "measure.how.cpu")
    assert words("cost", "measure.how.cuda").startswith("torch.cuda.max_memory_allocated")


def test_sdpa_backend_is_named():
    q, k, v = qkv(1, 2, 64, 16, "float32", "cpu")
    name = sdpa_backend(q, k, v)
    assert name in set(SDPA_BACKENDS.values()) | {"not reported by this version of torch"}


def test_fit_slope_recovers_power_laws():
    Ts = [256, 512, 1024, 2048]
    assert fit_slope(Ts, [3.0 * t**2 for t in Ts]) == pytest.approx(2.0)
    assert fit_slope(Ts, [7.0 * t + 0 for t in Ts]) == pytest.approx(1.0)
    assert math.isnan(fit_slope([256], [1.0]))


def test_plan_sweep_stops_the_materialised_path_at_the_memory_budget():
    plan = plan_sweep(2048, batch=1, heads=8, d_k=64, dtype="float32", device="cpu",
                      budget_bytes=64 * MiB)  # fmt: skip
    att = [t for m, t in plan.points if m == "attention"]
    til = [t for m, t in plan.points if m == "tiled_attention"]
    assert plan.Ts == [256, 512, 1024, 2048]
    assert til == plan.Ts  # the O(T) paths go on
    assert att and max(att) < 2048
    assert all(predicted_peak_bytes("attention", 1, 8, t, 64, "float32") <= 64 * MiB for t in att)
    assert any(s.kind == "budget" and s.method == "attention" for s in plan.stops)
    stop = next(s for s in plan.stops if s.method == "attention")
    assert max(att) * 2 == stop.T and stop.budget_bytes == 64 * MiB < stop.need_bytes


def test_plan_sweep_caps_T_with_a_note():
    plan = plan_sweep(131072, batch=1, heads=8, d_k=64, dtype="float32", device="cpu")
    assert plan.Ts[-1] <= 4096
    assert any(s.kind == "cap" and s.asked == 131072 and plan.Ts[-1] == s.T for s in plan.stops)
    small = plan_sweep(16, batch=1, heads=1, d_k=64, dtype="float32", device="cpu")
    assert small.Ts == [256, 512, 1024, 2048] and not small.stops


# ----------------------------------------------------------------------------- the lesson's numbers


def test_lessons_memory_figures():
    assert attention_probs_bytes(32, 8, 1024, "float16") == 512 * MiB
    assert attention_probs_bytes(32, 8, 1024, "float16", layers=12) == 6 * GiB
    assert attention_probs_bytes(32, 8, 2048, "float16") == 2 * GiB
    assert attention_probs_bytes(32, 8, 2048, "float16", layers=12) == 24 * GiB
    assert format_bytes(512 * MiB) == "512 MiB" and format_bytes(6 * GiB) == "6 GiB"


def test_crossover_and_mqa_factor():
    assert crossover_T(512) == 1024
    assert projection_macs(1024, 512) == attention_macs(1024, 512)
    assert attention_macs(2048, 512) == 2 * projection_macs(2048, 512)
    mha = kv_cache_bytes(4, 1024, 12, 8, 64, "float16")
    assert mha == 8 * kv_cache_bytes(4, 1024, 12, 1, 64, "float16")


# ------------------------------------------------------------------------ parallel vs recurrent


@pytest.mark.parametrize("B,T,d_in,d", [(1, 1, 3, 3), (2, 7, 5, 6), (3, 33, 16, 16)])
def test_recurrence_is_torch_rnn_with_the_same_weights(B, T, d_in, d):
    g = torch.Generator().manual_seed(T)
    x = torch.randn(B, T, d_in, generator=g, dtype=torch.float64)
    W_hh = torch.randn(d, d, generator=g, dtype=torch.float64) / math.sqrt(d)
    W_ih = torch.randn(d, d_in, generator=g, dtype=torch.float64) / math.sqrt(d_in)
    rnn = torch.nn.RNN(d_in, d, nonlinearity="tanh", bias=False, batch_first=True).double()
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(W_hh)
        rnn.weight_ih_l0.copy_(W_ih)
        ref, h_last = rnn(x)
    h = recurrence(x, W_hh, W_ih)
    assert h.shape == (B, T, d)
    torch.testing.assert_close(h, ref)
    torch.testing.assert_close(h[:, -1], h_last[0])


def test_recurrence_is_a_chain_and_scores_are_independent():
    """Changing x_t moves every later state and no earlier one; changing k_j moves only
    column j of the scores: the dependency the Parallel step is about."""
    W_hh, W_ih = recurrent_weights(8, seed=1)
    x = torch.randn(1, 12, 8, generator=torch.Generator().manual_seed(2))
    y = x.clone()
    y[:, 5] += 1.0
    moved = (recurrence(y, W_hh, W_ih) - recurrence(x, W_hh, W_ih)).abs().amax(-1)[0]  # (T,)
    assert torch.all(moved[:5] == 0) and torch.all(moved[5:] > 0)
    q, k = torch.randn(2, 12, 8, generator=torch.Generator().manual_seed(3)).unbind(0)
    k2 = k.clone()
    k2[5] += 1.0
    changed = (q @ k2.T - q @ k.T).abs() > 0  # (T, T)
    assert changed[:, 5].all() and not changed[:, :5].any() and not changed[:, 6:].any()


def test_time_parallel_vs_recurrent_rows():
    Ts, d = (4, 16), 8
    rows = time_parallel_vs_recurrent(Ts, d, budget_s=0.01)
    assert [r.T for r in rows] == list(Ts) and all(r.d == d for r in rows)
    for r in rows:
        assert r.sequential_steps == r.T  # one state per token, one after another
        secs = (r.loop_s, r.rnn_s, r.scores_s, r.attention_s)
        assert all(math.isfinite(s) and s > 0 for s in secs)
        # the counts are the multiply–adds of the timed calls: x W_ihᵀ and h W_hhᵀ per step;
        # q kᵀ and weights @ v
        assert r.recurrent_macs == r.T * d * d + r.T * d * d
        assert r.attention_macs == attention_macs(r.T, d)


def test_time_call_hands_its_timings_to_stat():
    seen = []
    out = time_call(lambda: torch.zeros(1), "cpu", budget_s=10, reps=3, stat=seen.append)
    assert out is None and len(seen[0]) == 3 and all(t >= 0 for t in seen[0])
