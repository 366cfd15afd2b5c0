"""/masks: every chart's words, on every step, recomputed (issue 51).

Each step is opened as a shared link (AppTest, exercises revealed) at five settings: the
defaults (causal, −inf, float32); padding at example 2 with −1e4 in bfloat16 and larger
logits (the page has no seed: other examples and lengths are its other data); the extremes
48 tokens with a custom mask that empties a row, −1e9 in float16 and logits × 30000 (scores
overflow, NaN rows, the bug at B = T_q = 48) and a sliding window of 1 over 5 tokens with
T_q = B = 1; and a prefix-LM mask with −1e4 in float16 at logits × 10000 (forbidden keys
leak; B ≠ T_q raises). Every number a chart's words state is recomputed here from the
lesson's inputs (the seeded q, k, v) by plain torch: the masks are built again from their
definitions, the scores, fills, softmaxes (in the chosen precision, as the page computes
them), each fill × precision verdict, the cross-attention weights and the broadcast bug's
right and wrong outputs — not read from the page or its figures — and every sentence must
be accounted for. The words' axis order must be the drawn one, every series named.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from attn_core import DTYPES
from attn_core.lessons import masks as core
from attn_core.softmax import stable_softmax
from figures.parts import fmt_value
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.grid_words import check_axes, check_grid, trace_names
from tests.support.word_templates import Sentences, items, same
from tests.support.words import chart_words, close, value
from ui import content

PAGE = "pages/masks.py"
Q, K = "query (attending)", "key (attended to)"
D_K = 8  # core.demo_qkv's width


@dataclass(frozen=True)
class Case:
    """One setting: the link's parameters, and the values they stand for."""

    name: str
    url: dict = field(default_factory=dict, compare=False)  # (its values name the rest)
    kind: str = "causal"
    T: int = 8
    window: int = 3
    prefix: int = 3
    lengths: tuple[int, ...] = (5, 3, 7)
    cells: tuple[tuple[int, int], ...] = ()  # custom: flipped from causal
    example: int = 0
    fill: str = "-inf"
    dtype: str = "float32"
    logit: float = 1.0
    T_q: int = 6
    batch: int = 6


CASES = [
    Case("defaults"),
    Case(
        "padding, example 2, -1e4 in bfloat16",
        dict(
            mask="padding",
            tokens=12,
            example=2,
            fill="-1e4",
            dtype="bfloat16",
            logit_size=5,
            T_q=9,
            batch=9,
        ),
        kind="padding",
        T=12,
        example=2,
        fill="-1e4",
        dtype="bfloat16",
        logit=5.0,
        T_q=9,
        batch=9,
    ),
    Case(
        "48 tokens, an empty row, -1e9 in float16, logits x 30000",
        dict(
            mask="custom",
            custom="0-0,3-5",
            tokens=48,
            fill="-1e9",
            dtype="float16",
            logit_size=30000,
            T_q=48,
            batch=48,
            example=1,
        ),
        kind="custom",
        cells=((0, 0), (3, 5)),
        T=48,
        fill="-1e9",
        dtype="float16",
        logit=30000.0,
        T_q=48,
        batch=48,
        example=1,
    ),
    Case(
        "a window of 1 over 5 tokens, finfo.min in float16, B = T_q = 1",
        dict(
            mask="sliding-window",
            window=1,
            tokens=5,
            fill="finfo.min",
            dtype="float16",
            T_q=1,
            batch=1,
        ),
        kind="sliding-window",
        window=1,
        T=5,
        fill="finfo.min",
        dtype="float16",
        T_q=1,
        batch=1,
    ),
    Case(
        "prefix-LM, -1e4 in float16, logits x 10000 (a leak)",
        dict(
            mask="prefix-LM",
            prefix=2,
            fill="-1e4",
            dtype="float16",
            logit_size=10000,
            lengths="4,8",
            T_q=5,
            batch=4,
        ),
        kind="prefix-LM",
        prefix=2,
        fill="-1e4",
        dtype="float16",
        logit=10000.0,
        lengths=(4, 8),
        T_q=5,
        batch=4,
    ),
]
STEPS = [s for s in page_steps(PAGE) if s != "Cost"]  # Cost draws after a button: its own test


# ------------------------------------------------------------------ the recomputation


def clipped(c: Case) -> list[int]:
    return [min(max(n, 1), c.T) for n in c.lengths]


def keep_all(c: Case) -> np.ndarray:
    """(B, T, T) may-attend mask, from each kind's definition (B > 1 for padding only)."""
    T = c.T
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    causal = j <= i
    if c.kind == "padding":
        return np.stack([np.broadcast_to(j < n, (T, T)) for n in clipped(c)])
    if c.kind == "none":
        m = np.ones((T, T), bool)
    elif c.kind == "causal":
        m = causal
    elif c.kind == "sliding-window":
        m = causal & (i - j < c.window)  # itself and the window-1 before it
    elif c.kind == "prefix-LM":
        m = causal | (j < min(c.prefix, T))  # the prefix is read by every query
    elif c.kind == "custom":
        m = causal.copy()
        for a, b in c.cells:
            m[a, b] = not m[a, b]
    else:
        raise AssertionError(c.kind)
    return m[None]


def example(c: Case) -> int:
    return min(c.example, keep_all(c).shape[0] - 1)


def scores(c: Case, dtype: torch.dtype) -> torch.Tensor:
    """(B, T, T) q·kᵀ/√d_k × logit size, in float64 and then rounded once to `dtype`."""
    q, k, _ = core.demo_qkv(keep_all(c).shape[0], c.T, c.T)
    return (q @ k.transpose(-1, -2) / math.sqrt(D_K) * c.logit).to(dtype)


def stored(fill: str, dtype: torch.dtype) -> torch.Tensor:
    asked = float(torch.finfo(dtype).min) if fill == "finfo.min" else float(fill)
    return torch.tensor(asked, dtype=torch.float64).to(dtype)


def plain(c: Case, fill: str, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(logits, weights) of the additive mask and a plain softmax, in `dtype`."""
    keep = torch.from_numpy(keep_all(c))
    s = scores(c, dtype)
    logits = s + torch.where(keep, torch.zeros((), dtype=dtype), stored(fill, dtype))
    return logits, torch.softmax(logits, -1)


def query_names(keep: np.ndarray) -> list[str]:
    return [f"{i} ∅" if not row.any() else str(i) for i, row in enumerate(keep)]


# ------------------------------------------------------------------ each chart


def mask_chart(s: Sentences, c: Case) -> None:
    keep = keep_all(c)[example(c)]
    who = f" — example {c.example}" if c.kind == "padding" else ""
    s.take("title", title=f"Mask: {c.kind}{who}")
    n = keep.sum(1)
    counts = "; ".join(f"{i}: {int(k)}" for i, k in enumerate(n))  # every row
    s.take("mask", allowed=int(n.sum()), total=keep.size, down=Q, counts=counts)
    if (n == 0).any():
        s.take("mask.empty", n=int((n == 0).sum()), down=Q)


def logits_chart(s: Sentences, c: Case) -> None:
    dtype = DTYPES[c.dtype]
    b = example(c)
    keep = keep_all(c)[b]
    z = plain(c, c.fill, dtype)[0][b].double().numpy()
    s.take("title", title=f"Masked logits ({c.dtype})")
    over = keep & np.isinf(z)
    check_grid(s, np.where(keep, z, np.nan), down=Q, across=K,
               blank="blank" if over.any() else "forbidden")  # fmt: skip
    if (~keep).any():
        held = z[~keep]
        said = items(s.take("forbidden.fill", texts=("fill",))["fill"], ", ")
        if said[-1] == "NaN":  # a fill that met a score already +inf
            assert np.isnan(held).any()
            said = said[:-1]
        else:
            assert not np.isnan(held).any()
        held = held[~np.isnan(held)]
        if len(said) == 1 and " … " in said[0]:  # many values: their range
            lo, hi = (_value(t) for t in said[0].split(" … "))
            assert _same(lo, held.min()) and _same(hi, held.max()), (said, held.min(), held.max())
            assert len({fmt_value(float(x)) for x in held}) > 4
        else:
            assert sorted(said, key=_value) == said  # in order
            assert {fmt_value(float(x)) for x in held} == set(said)
    if over.any():
        s.take("overflow.cells", n=int(over.sum()), dtype=c.dtype,
               pos=int(np.isposinf(z[over]).sum()), neg=int(np.isneginf(z[over]).sum()),
               forbidden=int((~keep).sum()))  # fmt: skip


def _value(t: str) -> float:
    return {"−inf": -math.inf, "inf": math.inf}.get(t) or value(t)


def _same(said: float, true: float) -> bool:
    return said == true if math.isinf(true) else same(said, true)


def weights_chart(s: Sentences, c: Case, safe: bool) -> None:
    dtype = DTYPES[c.dtype]
    b = example(c)
    keep = keep_all(c)[b]
    if safe:
        masked = scores(c, dtype).masked_fill(~torch.from_numpy(keep_all(c)), float("-inf"))
        w = stable_softmax(masked, -1)[b].double().numpy()  # the safe path: attn_core's
        s.take("title", title="Weights, safe path (attn_core)")
    else:
        w = plain(c, c.fill, dtype)[1][b].double().numpy()
        rows = int(np.isnan(w).any(-1).sum())
        nan = f" — {rows} NaN row{'s' * (rows != 1)}" if rows else ""
        s.take("title", title=f"Weights, plain softmax{nan}")
    check_grid(s, w, down=Q, across=K, rows=query_names(keep), blank="nan")
    leaks(s, w, keep, query_names(keep))


def leaks(s: Sentences, w: np.ndarray, keep: np.ndarray, names: list[str]) -> None:
    """The × marks in words, recomputed: how many forbidden cells, how many carry an ×
    (those holding a number), and the weight that leaked into them, where and how much."""
    nan = np.isnan(w)
    marked = ~keep & ~nan
    if not (~keep).any():
        return
    counts = dict(forbidden=int((~keep).sum()), n=int(marked.sum()), nan=int((~keep & nan).sum()))
    share = np.where(marked, np.nan_to_num(w), 0.0)  # weight on forbidden keys
    if not (share > 0).any():
        s.take("marks.none", **counts)
        return
    got = s.take("marks.leak", texts=("row", "which"), **counts)
    rows = share.sum(1)
    assert got["cells"] == int((share > 0).sum()) and got["rows"] == int((rows > 0).sum()), got
    assert close(got["top"], float(share.max())) and close(got["most"], float(rows.max())), got
    r = names.index(got["row"])
    assert close(float(share[r, int(got["key"])]), float(share.max())), got  # that very cell
    leaking = [names[i] for i in np.flatnonzero(rows > 0)]
    said = [item.rsplit(" (", 1)[0] for item in got["which"].split(" and ")[0].split(", ")]
    assert said == leaking[: len(said)] and len(said) == min(16, len(leaking)), (said, leaking)


def fill_grid(s: Sentences, c: Case) -> None:
    """Every fill in every precision, recomputed: the verdict and the fill as stored."""
    keep = torch.from_numpy(keep_all(c))
    empty = ~keep.any(-1)
    rows = []
    for fill in core.FILLS:
        said = []
        for name, dtype in DTYPES.items():
            w = plain(c, fill, dtype)[1].double()
            nan = torch.isnan(w).any(-1)
            leaked = (w * (~keep).double()).sum(-1)
            ok = ~empty & ~nan  # rows with allowed keys (and a number)
            leak = float(leaked[ok].max()) if bool(ok.any()) else 0.0
            lonely = empty & ~nan
            if nan.any():
                n = int(nan.sum())
                verdict = f"NaN in {n} row{'s' * (n != 1)}"
            elif leak > 1e-3:
                verdict = f"leaks {leak:.0%}"
            elif bool(lonely.any()) and float(leaked[lonely].max()) > 0.5:
                verdict = "empty row reads forbidden keys"
            else:
                verdict = "exact"
            said.append(f"{name} {verdict} (stored {fmt_value(float(stored(fill, dtype)))})")
        rows.append(f"{fill}: " + ", ".join(said))
    s.take("title", title="What each fill does, in each precision")
    s.take("fill.grid", cells="; ".join(rows))
    s.take("fill.choice", fill=c.fill, dtype=c.dtype)


def cross_chart(s: Sentences, c: Case) -> None:
    B, lengths = len(c.lengths), clipped(c)
    b = min(c.example, B - 1)
    q, k, _ = core.demo_qkv(B, c.T_q, c.T)
    sc = (q[b] @ k[b].T / math.sqrt(D_K)).masked_fill(torch.arange(c.T) >= lengths[b], -math.inf)
    w = torch.softmax(sc, -1).numpy()  # (T_q, T): padding on the keys only
    s.take("title", title=f"Cross-attention: {c.T_q} queries over {c.T} keys (example {b})")
    check_grid(s, w, down="decoder query", across="encoder key")
    keep = np.broadcast_to(np.arange(c.T) < lengths[b], w.shape)
    leaks(s, w, keep, [str(i) for i in range(c.T_q)])


def bug_lengths(c: Case) -> list[int]:
    return [clipped(c)[i % len(c.lengths)] for i in range(c.batch)]


def bug_masks(s: Sentences, c: Case) -> None:
    L, T = bug_lengths(c), c.T
    ex = min(c.example, c.batch - 1)
    s.take("title", title="Which example's padding lands on which query row")
    s.take("broadcast.right", name=f"(B, 1, 1, T_k): example {ex} (length {L[ex]})",
           allowed=c.T_q * L[ex], total=c.T_q * T, length=L[ex], keys=T)  # fmt: skip
    # query row i of every example is masked with example i's padding (B = T_q)
    opened = [max(0, L[i] - L[ex]) for i in range(c.T_q)]
    shut = [max(0, L[ex] - L[i]) for i in range(c.T_q)]
    ok = sum(min(L[i], L[ex]) for i in range(c.T_q))
    rows = "; ".join(f"{i} ← {i} ({L[i]}): {opened[i]}, {shut[i]}" for i in range(c.T_q))
    s.take("broadcast.wrong", name="(B, T_k) as is: row i gets example i's padding", ok=ok,
           open=sum(opened), shut=sum(shut), blocked=c.T_q * T - ok - sum(opened) - sum(shut),
           rows=rows)  # fmt: skip


def bug_diff(s: Sentences, c: Case) -> None:
    L, B, T_q, T = bug_lengths(c), c.batch, c.T_q, c.T
    g = torch.Generator().manual_seed(0)  # broadcast_lab's inputs: q, k, v of 2 heads
    q = torch.randn(B, 2, T_q, D_K, generator=g, dtype=torch.float64)
    k = torch.randn(B, 2, T, D_K, generator=g, dtype=torch.float64)
    v = torch.randn(B, 2, T, D_K, generator=g, dtype=torch.float64)
    sc = q @ k.transpose(-1, -2) / math.sqrt(D_K)  # (B, h, T_q, T)
    j = torch.arange(T)
    right = j < torch.tensor(L)[:, None, None, None]  # example b: its own first L[b] keys
    wrong = j < torch.tensor(L)[None, None, :, None]  # query row i: example i's padding

    def out(keep):
        return torch.softmax(sc.masked_fill(~keep, -math.inf), -1) @ v

    diff = (out(wrong) - out(right)).abs().amax(dim=(1, 3)).numpy()  # (B, T_q)
    s.take("title", title="How wrong each output row is")
    check_grid(s, diff, down="example", across="query row")


READ = {  # a chart's title start -> its check
    "Mask:": mask_chart,
    "Masked logits": logits_chart,
    "Weights, plain": lambda s, c: weights_chart(s, c, safe=False),
    "Weights, safe": lambda s, c: weights_chart(s, c, safe=True),
    "What each fill does": fill_grid,
    "Cross-attention": cross_chart,
    "Which example's padding": bug_masks,
    "How wrong each output row": bug_diff,
}


def expected_charts(c: Case, step: str) -> int:
    if step == "Broadcasting bug":
        return 2 if c.batch == c.T_q > 1 else 0  # B ≠ T_q raises; B = 1 is right by luck
    return {"Mask": 2, "Weights": 2, "Fill": 1, "Cross attention": 1}[step]


def check_chart(spec: dict, text: str, c: Case) -> None:
    s = Sentences(text)
    check = next(f for start, f in READ.items() if text.startswith(start))
    check(s, c)
    s.done()  # nothing said that was not recomputed
    check_axes(spec, text)
    if (spec["layout"].get("meta") or {}).get("words") != "declared":
        for name in trace_names(spec):  # every series named, none dropped
            assert name in text, (name, text)


# ------------------------------------------------------------------ the tests


def test_the_masks_rebuilt_here_are_the_lesson_s():
    """The definitions above agree with the lesson's builders on every case (so the
    words are checked against the masks the page draws, not another one)."""
    for c in CASES:
        opts = dict(window=c.window, prefix=min(c.prefix, c.T), lengths=tuple(clipped(c)),
                    cells=c.cells)  # fmt: skip
        assert (core.build_mask(c.kind, c.T, **opts).numpy() == keep_all(c)).all(), c.name
    assert core.batch_lengths((5, 3, 7), 9, 12) == bug_lengths(CASES[1])


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
def test_every_chart_s_words_are_the_recomputed_numbers(c: Case, step: str):
    at = run_page(PAGE, reveal=True, step=step, **{k: str(v) for k, v in c.url.items()})
    no_exception(at)
    charts = chart_words(at)
    assert len(charts) == expected_charts(c, step), [w[:50] for _, w in charts]
    for spec, text in charts:
        check_chart(spec, text, c)


def test_the_timing_chart_reads_the_measured_times():
    """The Cost step's chart (drawn after its button): its bars are the measurement the
    metrics above it show, under the measurement's own settings."""
    at = run_page(PAGE, reveal=True, T_time="256", step="Cost")
    assert chart_words(at) == []
    next(b for b in at.button if b.label.startswith("Measure both")).click().run()
    no_exception(at)
    ((spec, text),) = chart_words(at)
    times = next(m.value for m in at.metric if m.label == "Time: flag / mask")
    flag, mask = times.removesuffix(" ms").split(" / ")
    d = inspect.signature(core.causal_cost).parameters
    setting = f"{d['h'].default} heads, d_k = {d['d_k'].default}, float32"
    s = Sentences(text)
    s.take("title", title=f"Time per call at T = 256 ({setting})")
    s.take("axes", x="how the causal structure is given", up="up",
           y="milliseconds per call (median)")  # fmt: skip
    s.take("bars", name="median time per call (ms)", n=2,
           bars=f"is_causal=True {flag}; materialised mask {mask}")  # fmt: skip
    s.done()
    check_axes(spec, text)


# ------------------------------------------------------------------ the fixes (issue 51)


def test_fix_the_custom_mask_has_its_words():
    """The clickable custom grid was drawn without "Chart in words" (chart_words found
    one box fewer than charts)."""
    at = run_page(PAGE, mask="custom", custom="0-0", step="Mask")
    no_exception(at)
    words = [w for _, w in chart_words(at)]
    assert words[0].startswith("Mask: custom. 35 of 64 cells are allowed")


def test_fix_overflowed_scores_are_not_counted_as_forbidden():
    """Scores already ±inf in float16 were counted among the cells "forbidden by the mask"."""
    text = chart_words(run_page(PAGE, dtype="float16", logit_size="30000", step="Mask"))[1][1]
    assert "forbidden by the mask and drawn grey, without a value" not in text
    s = Sentences(text)
    s.take("overflow.cells", dtype="float16", forbidden=28)


def test_fix_many_forbidden_values_are_given_as_their_range():
    """A finite fill plus large scores holds many values: the words listed the first four
    in alphabetical order of their text and dropped the rest; now lowest … highest."""
    text = chart_words(run_page(PAGE, fill="-1e4", logit_size="3000", step="Mask"))[1][1]
    fill = Sentences(text).take("forbidden.fill", texts=("fill",))["fill"]
    assert " … " in fill and "," not in fill, fill


def test_fix_categorical_grids_are_said_by_their_categories_not_as_values():
    """The fill grid's colours (verdict codes 0–3) were read as "values run from 0 to 0",
    and the bug's right panel as numbers "from 0 to 3" with "the largest, 3"."""
    fill = chart_words(run_page(PAGE, reveal=True, step="Fill"))[0][1]
    assert "values run from" not in fill and "float16 exact (stored −inf)" in fill
    bug = chart_words(run_page(PAGE, reveal=True, step="Broadcasting bug"))[0][1]
    assert "values run from" not in bug and "The largest" not in bug
    assert content.words("charts", "broadcast.wrong", name="(B, T_k) as is: row i gets "
                         "example i's padding", ok=26, open=4, shut=4, blocked=14,
                         rows=_DEFAULT_ROWS) in bug  # fmt: skip


_DEFAULT_ROWS = "0 ← 0 (5): 0, 0; 1 ← 1 (3): 0, 2; 2 ← 2 (7): 2, 0; 3 ← 3 (5): 0, 0; " \
    "4 ← 4 (3): 0, 2; 5 ← 5 (7): 2, 0"  # fmt: skip


def test_fix_every_row_of_a_tall_mask_is_counted():
    """Past 32 rows the counts ended in "…" (rows 32–47 dropped)."""
    text = chart_words(run_page(PAGE, tokens="48", step="Mask"))[0][1]
    assert "…" not in text and "47: 48." in text


def test_fix_a_leak_is_said_not_only_drawn():
    """At −1e4 in float32 with logits × 30000, rows 0–3 put all their weight on forbidden
    keys: the plain softmax's words say so, and the safe path's say nothing leaked."""
    at = run_page(PAGE, reveal=True, step="Weights", fill="-1e4", dtype="float32",
                  logit_size="30000")  # fmt: skip
    words = dict((w.split(".")[0], w) for _, w in chart_words(at))
    plain_words = next(w for t, w in words.items() if t.startswith("Weights, plain"))
    assert "Weight leaked through the mask into" in plain_words
    assert "nothing leaked" in words["Weights, safe path (attn_core)"]
