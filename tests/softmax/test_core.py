"""attn_core.lessons.softmax: worked example, hull, stability thresholds, temperature, dropout.

Checked against PyTorch's own functions, scipy's hull and closed forms; never against
numbers copied from our own output.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.spatial import ConvexHull

from attn_core import DTYPES
from attn_core.lessons import softmax as core
from attn_core.lessons.softmax import CELL_LIMIT

F64 = torch.float64
COLS = dict(q_columns=["q1", "q2", "q3"], k_columns=["k1", "k2", "k3"], v_columns=["vx", "vy"])


def example(name: str) -> core.WorkedExample:
    _, q, k, v = core.SOFTMAX_EXAMPLES[name]
    return core.parse_example(q, [a + b for a, b in zip(k, v, strict=True)], **COLS)


# ---------------------------------------------------------------- the lesson's numbers


def test_lesson_weights_mix_the_lesson_values_to_the_lesson_output():
    v = torch.tensor(core.SOFTMAX_EXAMPLES["lesson"][3], dtype=F64)
    assert v.tolist() == [[2, 0], [0, 4], [1, 1]]
    z = core.mix_values(torch.tensor(core.LESSON_WEIGHTS, dtype=F64), v)
    assert torch.allclose(z, torch.tensor([0.454, 2.786], dtype=F64), atol=1e-3)
    uniform = core.mix_values(torch.full((3,), 1 / 3, dtype=F64), v)
    assert torch.allclose(uniform, torch.tensor([1.0, 5 / 3], dtype=F64))
    assert abs(float(uniform[1]) - 1.667) < 1e-3


def test_default_keys_land_near_the_lesson_weights():
    s = core.softmax_steps(example("lesson"))
    assert s.weights.tolist() == pytest.approx(core.LESSON_WEIGHTS, abs=5e-3)
    assert s.output.tolist() == pytest.approx([0.454, 2.786], abs=1e-2)
    assert s.mean.tolist() == pytest.approx([1.0, 5 / 3])
    assert s.inside_hull


@pytest.mark.parametrize("name", list(core.SOFTMAX_EXAMPLES))
def test_steps_match_pytorch(name):
    ex = example(name)
    s = core.softmax_steps(ex)
    d_k = ex.q.shape[0]
    torch.testing.assert_close(s.raw, ex.k @ ex.q)
    torch.testing.assert_close(s.scores, ex.k @ ex.q / math.sqrt(d_k))
    torch.testing.assert_close(s.exp, torch.exp(s.scores))
    torch.testing.assert_close(s.weights, torch.softmax(s.scores, -1))
    torch.testing.assert_close(s.weights, s.exp / s.exp.sum())
    ref = F.scaled_dot_product_attention(ex.q[None, None], ex.k[None], ex.v[None])[0, 0]
    torch.testing.assert_close(s.output, ref)
    torch.testing.assert_close(s.contributions.sum(0), s.output)


# ---------------------------------------------------------------- the hull


@settings(max_examples=60, deadline=None)
@given(
    n=hs.integers(3, 6),
    seed=hs.integers(0, 10_000),
    spread=hs.floats(0.01, 30.0),
)
def test_softmax_output_is_inside_the_hull(n, seed, spread):
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(n, 2, generator=g, dtype=F64) * 3
    scores = torch.randn(n, generator=g, dtype=F64) * spread
    z = core.mix_values(torch.softmax(scores, -1), v)
    assert core.in_convex_hull(z, v)


@settings(max_examples=40, deadline=None)
@given(seed=hs.integers(0, 10_000), n=hs.integers(3, 8))
def test_hull_matches_scipy(seed, n):
    g = torch.Generator().manual_seed(seed)
    pts = torch.randn(n, 2, generator=g, dtype=F64)
    ours = {tuple(round(x, 9) for x in p) for p in core.convex_hull(pts).tolist()}
    ref = {tuple(round(x, 9) for x in pts[i].tolist()) for i in ConvexHull(pts.numpy()).vertices}
    assert ours == ref


def test_hull_membership_edges_and_degenerate_sets():
    square = torch.tensor([[0, 0], [2, 0], [2, 2], [0, 2]], dtype=F64)
    assert core.in_convex_hull(torch.tensor([1.0, 1.0], dtype=F64), square)
    assert core.in_convex_hull(torch.tensor([2.0, 1.0], dtype=F64), square)  # on an edge
    assert not core.in_convex_hull(torch.tensor([2.1, 1.0], dtype=F64), square)
    line = torch.tensor([[0, 0], [1, 1], [2, 2]], dtype=F64)  # collinear: a segment
    assert core.convex_hull(line).shape == (2, 2)
    assert core.in_convex_hull(torch.tensor([1.5, 1.5], dtype=F64), line)
    assert not core.in_convex_hull(torch.tensor([3.0, 3.0], dtype=F64), line)
    assert not core.in_convex_hull(torch.tensor([1.0, 1.2], dtype=F64), line)
    same = torch.ones(3, 2, dtype=F64)
    assert core.in_convex_hull(torch.ones(2, dtype=F64), same)
    assert not core.in_convex_hull(torch.zeros(2, dtype=F64), same)


def test_sum_normalisation_with_a_negative_score_leaves_the_hull():
    ex = example("negative")
    s = core.sum_normalised_steps(ex)
    raw = ex.k @ ex.q
    assert (raw < 0).any()
    torch.testing.assert_close(s.weights, raw / raw.sum())
    assert float(s.weights.sum()) == pytest.approx(1.0)
    assert (s.weights < 0).any()
    assert not s.inside_hull and not core.in_convex_hull(s.output, ex.v)
    torch.testing.assert_close(s.output, s.weights @ ex.v)
    # softmax on the very same example stays inside
    assert core.softmax_steps(ex).inside_hull


def test_sum_normalisation_with_a_zero_sum_is_refused():
    ex = core.WorkedExample(
        q=torch.tensor([1.0, 0.0, 0.0], dtype=F64),
        k=torch.tensor([[1.0, 0, 0], [-1.0, 0, 0], [0.0, 1, 0]], dtype=F64),
        v=torch.eye(3, 2, dtype=F64),
    )
    with pytest.raises(ValueError, match="sum to"):
        core.sum_normalised_steps(ex)


# ---------------------------------------------------------------- shift invariance


@settings(max_examples=60, deadline=None)
@given(
    scores=hs.lists(hs.floats(-300, 300), min_size=2, max_size=6),
    c=hs.floats(-50, 50),
)
def test_shift_changes_no_weight(scores, c):
    w, w_c = core.shifted_weights(torch.tensor(scores, dtype=F64), c)
    torch.testing.assert_close(w, w_c, atol=1e-12, rtol=1e-9)
    torch.testing.assert_close(w, torch.softmax(torch.tensor(scores, dtype=F64), -1))


# ---------------------------------------------------------------- stability


def test_lesson_scores_overflow_naively_in_float32_but_not_stably():
    r = core.stability_demo(core.STABILITY_SCORES, "float32")
    assert core.STABILITY_SCORES == (100.0, 101.0, 102.0)
    assert not r.naive_ok and all(math.isnan(x) for x in r.naive)
    assert all(math.isinf(x) for x in r.naive_exp)
    assert r.stable == pytest.approx([0.090, 0.245, 0.665], abs=1e-3)
    assert r.stable == pytest.approx(
        torch.softmax(torch.tensor(core.STABILITY_SCORES), -1).tolist()
    )
    assert r.stable_exp == pytest.approx([math.exp(-2), math.exp(-1), 1.0], rel=1e-6)
    assert r.logsumexp == pytest.approx(float(torch.logsumexp(torch.tensor([100.0, 101, 102]), 0)))


def _e(x: float, dt: torch.dtype) -> float:
    """torch.exp of x stored in dt, as a float."""
    return float(torch.exp(torch.tensor(x, dtype=F64).to(dt)))


def _representable(dt: torch.dtype, lo: float, hi: float) -> list[float]:
    """Every dt value in [lo, hi], by walking float64 points finer than dt's spacing."""
    n = 200_000
    xs = torch.linspace(lo, hi, n, dtype=F64).to(dt).unique()
    return xs.double().tolist()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_exp_limits_are_where_torch_exp_flips_on_every_stored_value(dtype):
    """Walk every value the format can store around each edge: e^x is 0 (inf) exactly
    for the stored values beyond the reported edge, and non-zero (finite) inside it."""
    lim, dt = core.exp_limits(dtype), DTYPES[dtype]
    for x in _representable(dt, lim.underflow_at - 2, lim.underflow_at + 2):
        assert (_e(x, dt) == 0.0) == (x < lim.underflow_at), x
    for x in _representable(dt, lim.overflow_at - 2, lim.overflow_at + 2):
        assert math.isinf(_e(x, dt)) == (x > lim.overflow_at), x


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_exp_limits_match_what_torch_exp_does(dtype):
    lim = core.exp_limits(dtype)
    dt = DTYPES[dtype]
    fi = torch.finfo(dt)
    assert lim.max_finite == fi.max
    # round-to-nearest: e^x becomes inf once it passes max + half a step, 0 once it is
    # below half the smallest subnormal; both within a stored step of the logs
    assert lim.overflow_at == pytest.approx(math.log(fi.max), abs=0.5)
    ln_half_tiny = math.log(fi.smallest_normal * fi.eps) - math.log(2)
    assert lim.underflow_at == pytest.approx(ln_half_tiny, abs=0.5)
    assert lim.underflow_at < math.log(fi.smallest_normal * fi.eps)  # the old ln(tiny) was wrong
    step = 4 * fi.eps * abs(lim.underflow_at)  # a few of dt's steps at the edge
    assert _e(lim.underflow_at + step, dt) > 0.0
    assert _e(lim.underflow_at - step, dt) == 0.0
    step = 4 * fi.eps * lim.overflow_at
    assert math.isfinite(_e(lim.overflow_at - step, dt))
    assert math.isinf(_e(lim.overflow_at + step, dt))
    # the format's bits, from its own numbers: the top power of 2 is 2^(e-1) - 1; eps = 2^(1-p)
    assert 1.0 <= math.ldexp(fi.max, 1 - 2 ** (lim.exponent_bits - 1)) < 2.0
    assert fi.eps == 2.0 ** (1 - lim.significant_bits)


def test_float16_and_float32_edges_are_not_the_old_ln_formula():
    """The page used to print ln(smallest subnormal) (-16.64 in float16, -103.28 in float32)
    as the underflow edge; torch.exp still gives a non-zero number there."""
    for dtype in ("float16", "float32"):
        fi, dt = torch.finfo(DTYPES[dtype]), DTYPES[dtype]
        old = math.log(fi.smallest_normal * fi.eps)
        assert _e(old - 0.2, dt) > 0.0  # below the old edge, e^x is not yet 0
        assert core.exp_limits(dtype).underflow_at < old - 0.5


def test_naive_offset_band_brackets_where_the_naive_softmax_works():
    from attn_core.lessons.softmax import naive_offset_band, naive_outcome

    for dtype in DTYPES:
        lo, hi = naive_offset_band(dtype)

        def demo(c, dtype=dtype):
            return core.stability_demo([s + c for s in core.STABILITY_SCORES], dtype)

        assert demo(lo).naive_ok and demo(hi).naive_ok and demo((lo + hi) // 2).naive_ok
        assert naive_outcome(demo(lo - 1)) == "underflow"
        assert naive_outcome(demo(hi + 1)) == "overflow"


def test_named_thresholds():
    assert core.exp_limits("float32").overflow_at == pytest.approx(88.72, abs=0.01)
    assert core.exp_limits("float16").overflow_at == pytest.approx(11.09, abs=0.01)
    assert core.exp_limits("float64").overflow_at == pytest.approx(709.78, abs=0.01)
    assert core.exp_limits("float16").underflow_at == pytest.approx(-17.33, abs=0.01)
    assert core.exp_limits("float32").underflow_at == pytest.approx(-103.97, abs=0.01)
    assert core.exp_limits(torch.bfloat16).dtype == "bfloat16"


def test_the_page_try_this_claims_hold():
    def shifted(off):
        return [s + off for s in core.STABILITY_SCORES]

    assert core.stability_demo(shifted(-14), "float32").naive_ok
    assert not core.stability_demo(shifted(-13), "float32").naive_ok
    assert core.stability_demo(shifted(-95), "float16").naive_ok
    under = core.stability_demo(shifted(-120), "float16")
    assert not under.naive_ok and all(x == 0.0 for x in under.naive_exp)
    assert under.stable == pytest.approx([0.090, 0.245, 0.665], abs=2e-3)
    stored = core.stability_demo(shifted(700), "bfloat16").scores
    assert len(set(stored)) < 3


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_stable_is_always_finite_and_sums_to_one(dtype):
    for off in (-850, -120, 0, 700):
        r = core.stability_demo([s + off for s in core.STABILITY_SCORES], dtype)
        assert all(math.isfinite(x) for x in r.stable)
        assert sum(r.stable) == pytest.approx(1.0, abs=2e-2)


# ---------------------------------------------------------------- temperature


def test_temperature_limits_and_monotone_entropy():
    s = torch.tensor([0.0, 2.0, 1.0, -1.0], dtype=F64)
    taus = torch.logspace(-2, 2, 81, dtype=F64)
    sw = core.temperature_sweep(s, taus)
    torch.testing.assert_close(sw.weights[20], torch.softmax(s / taus[20], -1))
    assert sw.cold_limit == 0.0 and sw.hot_limit == pytest.approx(math.log(4))
    assert float(sw.entropy[0]) < 1e-6  # τ = 0.01: argmax
    assert float(sw.weights[0].argmax()) == 1
    assert float(sw.entropy[-1]) == pytest.approx(math.log(4), abs=2e-3)  # τ = 100: uniform
    assert (sw.entropy.diff() >= -1e-12).all()


def test_temperature_cold_limit_with_tied_maxima():
    sw = core.temperature_sweep(torch.tensor([1.0, 3.0, 3.0], dtype=F64), torch.tensor([0.01]))
    assert sw.cold_limit == pytest.approx(math.log(2))
    assert float(sw.entropy[0]) == pytest.approx(math.log(2), abs=1e-6)


# ---------------------------------------------------------------- dropout


def test_eval_rows_sum_to_one():
    d = core.dropout_stats(0.5, training=False, seed=3, n_samples=50)
    torch.testing.assert_close(d.sample, d.clean)
    assert (d.sample_row_sums - 1).abs().max() < 1e-12
    assert d.survivor_scale == 1.0 and d.zeroed_fraction == 0.0


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_training_scales_survivors_and_is_right_on_average(p):
    d = core.dropout_stats(p, training=True, seed=1, n_samples=2000)
    kept = d.sample != 0
    torch.testing.assert_close(d.sample[kept], d.clean[kept] / (1 - p))
    assert d.survivor_scale == pytest.approx(1 / (1 - p))
    assert (d.sample_row_sums - 1).abs().max() > 1e-3  # one draw is off
    assert (d.mean_row_sums - 1).abs().max() < 0.05  # the average is not
    assert 0 < d.zeroed_fraction < 1


def test_dropout_is_pytorchs_own_and_reproducible():
    p, seed, n = 0.3, 7, 16
    d = core.dropout_stats(p, training=True, seed=seed, n_samples=n)
    torch.manual_seed(seed)
    ref = F.dropout(d.clean.expand(n, *d.clean.shape), p=p, training=True)
    torch.testing.assert_close(d.sample, ref[0])
    again = core.dropout_stats(p, training=True, seed=seed, n_samples=n)
    assert torch.equal(again.sample, d.sample)
    other = core.dropout_stats(p, training=True, seed=seed + 1, n_samples=n)
    assert not torch.equal(other.sample, d.sample)


# ---------------------------------------------------------------- the table


def rows_of(name):
    _, _, k, v = core.SOFTMAX_EXAMPLES[name]
    return [list(map(str, a + b)) for a, b in zip(k, v, strict=True)]


def test_parse_accepts_text_numbers_and_the_typographic_minus():
    rows = rows_of("lesson")
    rows[0][0] = " −2.5 "
    ex = core.parse_example(["1", "2", "0"], rows, **COLS)
    assert ex.k[0, 0] == -2.5 and ex.q.tolist() == [1, 2, 0]
    assert ex.k.shape == (3, 3) and ex.v.shape == (3, 2) and ex.k.dtype == F64


@pytest.mark.parametrize(
    "cell,reason",
    [
        ("", "empty"),
        (None, "empty"),
        (float("nan"), "empty"),  # a freshly added row
        ("abc", "not a number"),
        ("1,5", "dot"),
        ("nan", "NaN"),
        ("inf", "infinite"),
        ("1e9", "too large"),
        (str(CELL_LIMIT + 0.5), "too large"),
    ],
)
def test_parse_names_the_bad_cell(cell, reason):
    rows = rows_of("lesson")
    rows[1][3] = cell
    with pytest.raises(core.ExampleError, match=reason) as e:
        core.parse_example([1, 2, 0], rows, **COLS)
    assert e.value.row == 2 and e.value.column == "vx"


def test_parse_row_of_minus_infinity_and_row_counts():
    rows = rows_of("lesson")
    rows[2] = ["-inf"] * 5
    with pytest.raises(core.ExampleError, match="-inf") as e:
        core.parse_example([1, 2, 0], rows, **COLS)
    assert e.value.row == 3
    with pytest.raises(core.ExampleError, match="3 to 6"):
        core.parse_example([1, 2, 0], rows_of("lesson")[:2], **COLS)
    with pytest.raises(core.ExampleError, match="3 to 6"):
        core.parse_example([1, 2, 0], rows_of("lesson") * 3, **COLS)
    with pytest.raises(core.ExampleError) as e:
        core.parse_example([1, "x", 0], rows_of("lesson"), **COLS)
    assert e.value.column == "q2" and e.value.row is None
