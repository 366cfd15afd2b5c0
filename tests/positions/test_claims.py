"""/positions: each sentence that states a fact is recomputed here (issue 41, round 2) —
ALiBi's slope rule for every head count, the Order step's symmetric ALiBi, the 90 % span,
the lengths the model never saw, the Try-this claims over every seed, the exercise's
computed answer, and the secret the Order step keeps until its reveal."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from attn_core.lessons import positions as core
from figures import positions as fp
from figures.parts import sci
from tests.site.test_exercise_secrecy import shown_text
from tests.support.apptest import answer_and_reveal, no_exception, plotly_specs, run_page
from ui import content
from ui.exercises import EXERCISE_LOG, figures

PAGE = "pages/positions.py"
ROOT = Path(__file__).resolve().parents[2]
SEEDS = range(100)  # the page's seed slider
FAR = 1e3 * fp.ROUNDING  # "far above" float rounding: a thousand times the rounding yardstick


def text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def _paper_slopes(h: int) -> list[float]:
    """ALiBi's slopes as the paper's code computes them (get_slopes, Press et al.)."""

    def power_of_two(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(h).is_integer():
        return power_of_two(h)
    closest = 2 ** math.floor(math.log2(h))
    return power_of_two(closest) + _paper_slopes(2 * closest)[0::2][: h - closest]


def _numbers(listed: str) -> list[float]:
    """ "1/16, 1/256, 0.707" → [0.0625, 0.00390625, 0.707]"""
    out = []
    for part in listed.split(", "):
        num, _, den = part.partition("/")
        out.append(float(num) / float(den) if den else float(num))
    return out


# ----------------------------------------------------------------------------- 1. ALiBi's slopes
def test_the_alibi_sentence_states_the_rule_its_slopes_follow_for_every_head_count():
    at = run_page(PAGE, step="ALiBi", T="2")
    no_exception(at)
    for h in range(1, 17):
        at.slider(key="h").set_value(h).run()
        no_exception(at)
        slopes = core.alibi_slopes(h).tolist()
        assert slopes == pytest.approx(_paper_slopes(h), rel=1e-12), h
        body = at.markdown[2].value
        assert body.startswith("ALiBi (Press et al.)"), body
        lead = f"{h} heads: slopes " if h > 1 else "1 head: slope "  # never "1 heads"
        (listed,) = [m.value for m in at.markdown if m.value.startswith(lead)]
        one_heads = re.compile(r"(?<![\d.,])1 heads")
        assert not one_heads.search(text(at) + str(plotly_specs(at))), h
        shown = _numbers(listed.removeprefix(lead).removesuffix("."))
        assert shown == pytest.approx(slopes, rel=5e-3), h
        n = 2 ** math.floor(math.log2(h))  # the largest power of two <= h
        if h == 1:
            assert f"With one head, the slope is 2^(−8) = 1/{2**8}." in body
        elif n == h:  # a power of two: geometric from 2^(−8/h) down to 2^(−8)
            m = re.search(r"from (\S+) down to 2\^\(−8\) = (\S+)\.", body)
            assert m, body
            assert _numbers(m[1]) * 2 == pytest.approx([slopes[0], 2 ** (-8 / h)], rel=5e-3)
            assert _numbers(m[2]) * 2 == pytest.approx([slopes[-1], 2**-8], rel=5e-3)
            assert slopes == pytest.approx([2 ** (-8 * k / h) for k in range(1, h + 1)])
        else:  # the n slopes of n heads, then every other one of 2n's, h − n of them
            m = re.search(
                rf"the {n} slopes of {n} heads, 2\^\(−8k/{n}\) for k = 1 … {n} \(([^)]*)\), "
                rf"then every other slope of {2 * n} heads, 2\^\(−8k/{2 * n}\) for odd k, "
                rf"the first {h - n} of them \(([^)]*)\)",
                body,
            )
            assert m, body
            assert _numbers(m[1]) == pytest.approx(slopes[:n], rel=5e-3)
            assert _numbers(m[2]) == pytest.approx(slopes[n:], rel=5e-3)
            assert slopes[:n] == pytest.approx([2 ** (-8 * k / n) for k in range(1, n + 1)])
            odd = [2 ** (-8 * k / (2 * n)) for k in range(1, 2 * n + 1, 2)]
            assert slopes[n:] == pytest.approx(odd[: h - n])
        assert "geometric sequence from 2^(−8/h)" not in body  # the old, wrong-for-11 claim


def test_the_single_heads_slope_in_try_this_is_the_computed_one():
    at = run_page(PAGE, step="ALiBi")
    assert core.alibi_slopes(1).tolist() == [2**-8]
    assert f"a single head gets the gentlest slope, 1/{2**8}" in text(at)


# ----------------------------------------------------------------------------- 2. symmetric ALiBi
def test_the_order_steps_alibi_is_the_symmetric_variant_and_the_page_says_so():
    at = run_page(PAGE, reveal=True)
    no_exception(at)
    causal_alibi = core.shuffle_error(16, 64, "alibi", causal=True)[1].max()
    assert f"that causal version moves the tokens here by up to {causal_alibi:.3g}" in text(at)
    assert "symmetric penalty of the ALiBi step, −slope · |m − n| with no mask" in text(at)
    bias = core.alibi_bias(5, 5, 8)[0]
    assert torch.equal(bias, bias.T)  # symmetric in m − n: it reads keys ahead as well


@pytest.mark.parametrize("d", [8, 64, 128])
def test_with_two_tokens_symmetric_alibi_stays_at_rounding_rope_and_causal_alibi_move(d):
    seeds = SEEDS if d == 64 else SEEDS[::10]  # every seed at the default width
    for seed in seeds:
        alibi = core.shuffle_error(2, d, "alibi", seed=seed)[1].max()
        rope = core.shuffle_error(2, d, "rope", seed=seed)[1].max()
        causal = core.shuffle_error(2, d, "alibi", causal=True, seed=seed)[1].max()
        assert alibi <= fp.ROUNDING, (d, seed, alibi)  # "drops to float rounding"
        assert rope > 1e2 * fp.ROUNDING, (d, seed, rope)  # "RoPE's does not"
        assert causal > FAR, (d, seed, causal)  # "it moves them even with two tokens"


# ----------------------------------------------------------------------------- 3. the 90 % span
@pytest.mark.parametrize(("h", "T"), [(1, 2), (1, 48), (3, 4), (3, 16), (8, 16), (8, 48), (16, 48)])
def test_the_span_is_the_number_of_keys_that_hold_90_percent(h, T):
    w, spans = core.alibi_reach(h, T)
    for i, slope in enumerate(core.alibi_slopes(h).tolist()):
        weights = np.exp(-slope * np.arange(T))  # the key δ back; δ = 0 is its own
        cum = np.cumsum(weights / weights.sum())
        need = int(np.argmax(cum >= 0.9)) + 1  # keys counted, its own included
        assert spans[i] == need, (h, T, i)
        assert cum[need - 1] >= 0.9 and (need == 1 or cum[need - 2] < 0.9)
    chart = fp.alibi_reach_chart(w.numpy(), core.alibi_slopes(h).numpy(), spans)
    sl = core.alibi_slopes(h).numpy()
    steep, gentle = int(np.argmax(sl)), int(np.argmin(sl))  # the extremes, not 0 and h − 1
    if h == 1:
        assert f"nearest {spans[0]} keys (its own included)" in chart.caption
    elif spans[steep] < spans[gentle]:
        assert (f"steepest head, head {steep} (slope {sl[steep]:.3g}), needs its nearest "
                f"{spans[steep]} keys") in chart.caption  # fmt: skip
        gentlest = f"gentlest, head {gentle} (slope {sl[gentle]:.3g}), its nearest {spans[gentle]}:"
        assert gentlest in chart.caption
    else:  # every head needs as many keys: the caption says so, not "steep reads nearer"
        assert len(set(spans)) == 1 and f"needs its nearest {spans[0]} keys" in chart.caption
        assert "steep heads read the last few tokens" not in chart.caption


def _head0_span(h: int, T: int) -> int:
    """Keys head 0 needs for 90 % of the last query's weight (its own key counted)."""
    w = np.exp(-core.alibi_slopes(h)[0].item() * np.arange(T))
    return int(np.argmax(np.cumsum(w / w.sum()) >= 0.9)) + 1


def test_the_span_try_this_says_what_head_0_does_as_T_grows_for_every_head_count():
    """ "Its span does not grow" held only from h = 4 on (issue 41): with h = 1 head 0's span
    goes 15 -> 43 keys from T = 16 to 48. The page words it from the spans over T = 2 … 48."""
    at = run_page(PAGE, step="ALiBi", T="2")
    no_exception(at)
    Ts = range(2, 49)  # the T slider
    flat = {}  # h -> whether head 0's span stays put over the upper half of the lengths
    said = {}
    for h in range(1, 17):
        at.slider(key="h").set_value(h).run()
        no_exception(at)
        spans = dict(zip(Ts, (_head0_span(h, T) for T in Ts), strict=True))
        flat[h] = len({spans[T] for T in range(24, 49)}) == 1
        (item,) = [m.value for m in at.markdown if "Raise T to 48 and look at head 0" in m.value]
        stops = re.search(r"its 90 % span stops growing: (\d+) keys from T = (\d+) on", item)
        grows = re.search(
            r"with h = (\d+) its slope is only (\S+), and its 90 % span keeps growing with T, "
            r"to (\d+) keys at T = 48\. From h = (\d+) on, head 0 is steep enough to stop: "
            r"(\d+) keys from T = (\d+) on\.",
            item,
        )
        assert bool(stops) != bool(grows), item
        if stops:
            span, stop = int(stops[1]), int(stops[2])
            assert all(spans[T] == span for T in range(stop, 49)), (h, spans)
            assert spans[stop - 1] != span and stop <= 24, (h, spans)
            said[h] = "stops"
        else:
            assert int(grows[1]) == h and int(grows[3]) == spans[48], (h, item)
            assert _numbers(grows[2]) == pytest.approx([core.alibi_slopes(h)[0].item()], 5e-3)
            assert spans[48] > spans[24], (h, spans)  # still growing over the upper half
            assert all(spans[a] <= spans[b] for a, b in itertools.pairwise(Ts)), (h, spans)
            said[h] = "grows"
            h0, span0, stop0 = int(grows[4]), int(grows[5]), int(grows[6])
            spans0 = {T: _head0_span(h0, T) for T in Ts}
            assert all(spans0[T] == span0 for T in range(stop0, 49)) and spans0[stop0 - 1] != span0
            assert all(_head0_span(k, T) == _head0_span(k, 48) for k in range(h0, 17)
                       for T in range(24, 49)), h0  # fmt: skip
            assert any(_head0_span(h0 - 1, T) != _head0_span(h0 - 1, 48) for T in range(24, 49))
    assert said == {h: "stops" if flat[h] else "grows" for h in flat}
    assert said[1] == said[2] == "grows" and said[8] == "stops"  # the counterexample


def test_the_alibi_chart_title_counts_one_head_as_one_head():
    for h in (1, 2):
        w, spans = core.alibi_reach(h, 16)
        title = fp.alibi_reach_chart(w.numpy(), core.alibi_slopes(h).numpy(), spans).fig
        assert f"({h} head{'s' if h > 1 else ''}, T = 16)" in title.layout.title.text


def test_head_0_of_eight_needs_five_keys_at_the_default_length():
    at = run_page(PAGE, step="ALiBi")
    caption = " ".join(c.value for c in at.caption)
    w = np.exp(-0.5 * np.arange(16))
    need = int(np.argmax(np.cumsum(w / w.sum()) >= 0.9)) + 1
    assert (
        need == 5 and f"steepest head, head 0 (slope 0.5), needs its nearest {need} keys" in caption
    )


# ----------------------------------------------------------------------------- 4. unseen lengths
def test_the_longer_step_calls_unseen_only_the_lengths_past_training():
    task = json.loads((ROOT / "assets" / "positions_extrapolation.json").read_text())["task"]
    T0, lengths = task["T_train"], task["lengths"]
    unseen = [n for n in lengths if n > T0]
    assert T0 in lengths and unseen
    at = run_page(PAGE, step="Longer")
    m = re.search(r"at length (\d+) .*then tested at that length and at ([\d, and]+), lengths "
                  r"it never saw", text(at))  # fmt: skip
    assert m, text(at)
    assert int(m[1]) == T0
    assert [int(x) for x in re.findall(r"\d+", m[2])] == unseen


# ----------------------------------------------------------------------------- 5. every seed
@pytest.fixture(scope="module")
def sweep() -> dict[str, list[torch.Tensor]]:
    """Every seed's moves at T = 48, d_k = 64 (the Try-this setting), per line."""
    lines = [("none", "none", False), ("causal", "none", True), ("sinusoidal", "sinusoidal", False),
             ("rope", "rope", False), ("alibi", "alibi", False)]  # fmt: skip
    return {
        name: [core.shuffle_error(48, 64, kind, causal=causal, seed=s)[1] for s in SEEDS]
        for name, kind, causal in lines
    }


def _far(sweep) -> float:
    """ "Far above" the no-position line: a thousand times its largest move over the seeds."""
    return 1e3 * max(float(m.max()) for m in sweep["none"])


def test_at_48_tokens_every_seed_no_position_stays_at_rounding_and_codes_far_above(sweep):
    for seed in SEEDS:
        assert sweep["none"][seed].max() <= fp.ROUNDING, seed
        for k in ("sinusoidal", "rope", "alibi"):
            assert sweep[k][seed].min() > _far(sweep), (k, seed)


def test_at_48_tokens_the_causal_line_stays_at_rounding_exactly_where_a_token_is_kept(sweep):
    kept_seeds = 0
    for seed in SEEDS:
        kept = core.kept_in_place(core.shuffle_perm(48, 64, seed))
        move = sweep["causal"][seed]
        assert (move[kept] <= fp.ROUNDING).all(), seed
        assert (move[~kept] > _far(sweep)).all(), seed
        kept_seeds += bool((move <= fp.ROUNDING).any())
    at = run_page(PAGE, reveal=True, T="48")
    no_exception(at)
    assert f"({kept_seeds} of the seeds 0–99 have such a token at this d_k)" in text(at)
    assert 0 < kept_seeds < len(SEEDS)


# ----------------------------------------------------------------------------- 6. the answer
def test_the_order_choice_is_the_nearest_on_a_log_scale():
    assert core.order_choice(0.0) == "zero"
    assert core.order_choice(float(torch.finfo(torch.float32).eps) * 3) == "zero"
    assert core.order_choice(0.012) == "small"
    assert core.order_choice(0.8) == "large" and core.order_choice(3.0) == "large"
    exact = core.relative_move(16, 64, dtype=torch.float64)  # no rounding to speak of
    assert exact < 1e-13 and core.order_choice(exact) == "zero"
    assert core.order_choice(core.relative_move(16, 64, causal=True)) != "zero"


def test_the_order_exercises_answer_is_the_computed_choice():
    at = run_page(PAGE, reveal=True)
    no_exception(at)
    key = core.order_choice(core.relative_move(16, 64))
    choice = content.choices("positions", "order.exercise.choices")[key]
    verdict = " ".join([s.value for s in at.success] + [e.value for e in at.error])
    assert f"**{choice}**" in verdict


# ----------------------------------------------------------------------------- 7. the secret
def test_the_order_step_shows_nothing_of_its_answer_before_the_reveal():
    at = run_page(PAGE)
    no_exception(at)
    key = core.order_choice(core.relative_move(16, 64))
    choice = content.choices("positions", "order.exercise.choices")[key]
    none = float(core.shuffle_error(16, 64)[1].max())
    words = [choice, "float rounding", "rounding", "not at all", sci(none), "Try this"]
    before = shown_text(at)
    assert not [w for w in words if w in before], before
    (entry,) = at.session_state[EXERCISE_LOG]
    # the answer's words are registered as secrets, so the site-wide secrecy tests check them
    assert {choice, "float rounding", *figures(sci(none))} <= set(entry["secrets"]), entry
    answer_and_reveal(at, entry["key"])
    no_exception(at)
    after = shown_text(at)
    assert [w for w in words if w not in after] == [], after
