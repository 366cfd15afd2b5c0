"""/cost: every chart's words (issue 51), on every step, at the defaults and at two other
settings (the ends of the sidebar's model and of the walkthrough's tiling), each number
recomputed here — the multiply–add and byte counts from their formulas, the walkthrough's
scores, output, running max and sum with torch (softmax over the keys each row has seen,
F.scaled_dot_product_attention), the timings from what the page measured — never read from
the figure; every sentence accounted for, so a chart whose words say anything the test did
not recompute fails."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import attn_core.lessons.cost as core
from attn_core import random_qkv, tile_grid
from figures.cost import METHOD_LABEL, PARALLEL_STYLE
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.grid_words import check_grid
from tests.support.word_templates import Sentences, items, same
from tests.support.words import NUMBER, chart_words, value
from ui import jobs

PAGE = "pages/cost.py"
MODEL = dict(T=1024, d_model=512, heads=8, kv_heads=2, batch=32, layers=12, dtype="float16")
WALK = dict(walk_T=16, block=4, causal=False, tiles=1, stats=False)
SMALL = dict(T=16, d_model=64, heads=1, kv_heads=1, batch=1, layers=1, dtype="float32")
LARGE = dict(T=131072, d_model=8192, heads=64, kv_heads=1, batch=1024, layers=128,
             dtype="bfloat16")  # fmt: skip
CASES = {  # the sidebar's model at its defaults and at both ends; the walkthrough's tiling
    "Compute": [{}, SMALL, LARGE],
    "Parallel": [{}],  # nothing drawn until "Time both" (test below)
    "Memory": [{}, SMALL, LARGE],
    "KV cache": [{}, SMALL, dict(LARGE, kv_heads=8, dtype="float32")],
    "Sweep": [{}],  # nothing drawn until "Run the sweep" (test below)
    "Walkthrough": [
        {},
        dict(stats="true", tiles=5),
        dict(walk_T=8, block=2, causal="true", tiles=0, stats="true"),  # nothing done yet
        dict(walk_T=12, block=8, causal="true", tiles=2, stats="true"),  # short edge tiles
        dict(walk_T=64, block=16, causal="true", tiles=10, stats="true"),  # every tile done
    ],
}
BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
T_AXIS = "sequence length T (tokens, log scale)"
TS = [2**i for i in range(4, 18)]  # the sidebar's T: 16 … 131,072
NUM = NUMBER.pattern
UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def y_down(spec: dict) -> bool:
    a = spec["layout"].get("yaxis") or {}
    r = a.get("range")
    return a.get("autorange") == "reversed" or bool(r and len(r) == 2 and r[0] > r[1])


def axes(s: Sentences, spec: dict, x: str, y: str) -> None:
    s.take("axes", x=x, y=y, up="down (the first at the top)" if y_down(spec) else "up")


def check_line(s: Sentences, name, x, y, across: str) -> None:
    """A curve over x: its count, span, lowest and highest (any tied x), and its end."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    got = s.take("line", name=name, x=across)
    assert got["n"] == y.size and same(got["x0"], x[0]) and same(got["x1"], x[-1]), (got, x)
    assert same(got["lo"], y.min()) and got["at_lo"] in x[y <= y.min() * (1 + 1e-6)], got
    assert same(got["hi"], y.max()) and got["at_hi"] in x[y >= y.max() * (1 - 1e-6)], got
    assert same(got["last"], y[-1]), (got, y[-1])
    return got


def check_items(text: str, labels: list[str], values) -> None:
    """A list of "label value" items: every label in order, each with its value."""
    said = items(text)
    assert len(said) == len(labels), (said, labels)
    for item, label, v in zip(said, labels, values, strict=True):
        assert item.startswith(label + " "), (item, label)
        assert same(value(item[len(label) + 1 :]), float(v)), (item, v)


# ------------------------------------------------------------------- the sidebar's model


def compute(charts, p) -> None:
    """Both lines from 4·T·d² and 2·T²·d, and the two marks at your T read as the two
    values they are (not a level line, nor a vertical line)."""
    [(spec, words)] = charts
    T, d = p["T"], p["d_model"]
    s = Sentences(words)
    s.take("title", title=f"Compute per layer against sequence length (d_model = {d})")
    # issue 51 fix: these two marks were read as "a level line" (T = 2·d) or a vertical line
    got = s.take("values", texts=("items",), name=f"your T = {T:,}, multiply–adds")
    assert got["n"] == 2
    check_items(got["items"], ["projections", "attention"], [4 * T * d * d, 2 * T * T * d])
    axes(s, spec, T_AXIS, "multiply–adds per layer (log scale)")
    check_line(s, "projections: 4·T·d²", TS, [4 * t * d * d for t in TS], T_AXIS)
    check_line(s, "attention: 2·T²·d", TS, [2 * t * t * d for t in TS], T_AXIS)
    s.done()


def memory(charts, p) -> None:
    """The probabilities' bytes (in bytes, as the axis now says) for one layer and all,
    and the two marks at your T as two values."""
    [(spec, words)] = charts
    T, b, h, L, n = p["T"], p["batch"], p["heads"], p["layers"], BYTES[p["dtype"]]
    one = [b * h * t * t * n for t in TS]
    s = Sentences(words)
    s.take("title", title=f"Stored attention probabilities: batch {b} × {h} heads × T² × {n} bytes")
    # issue 51 fix: the two marks were read as "a vertical line"; the axis now says bytes
    got = s.take("values", texts=("items",), name=f"your T = {T:,}, bytes")
    assert got["n"] == 2
    check_items(
        got["items"], [f"all {L} layers", "one layer"], [b * h * T * T * n * L, b * h * T * T * n]
    )
    axes(s, spec, T_AXIS, "memory in bytes (log scale)")
    check_line(s, f"all {L} layers", TS, [x * L for x in one], T_AXIS)
    check_line(s, "one layer", TS, one, T_AXIS)
    s.done()


def kv(charts, p) -> None:
    """The three caches, 2 × batch × T × layers × K/V heads × d_head × bytes, in the unit the
    axis names (MHA's size between 1 and 1,024 of it)."""
    [(spec, words)] = charts
    T, b, L, h, kvh = p["T"], p["batch"], p["layers"], p["heads"], p["kv_heads"]
    d_head, n = p["d_model"] // h, BYTES[p["dtype"]]
    size = [2 * b * T * L * heads * d_head * n for heads in (h, kvh, 1)]
    unit = max(i for i in range(len(UNITS)) if size[0] >= 1024**i or i == 0)
    assert 1 <= size[0] / 1024**unit < 1024 or unit == len(UNITS) - 1
    s = Sentences(words)
    s.take("title", title=f"KV cache while generating: batch {b}, T = {T:,}, {L} layers, "
                          f"d_head = {d_head}")  # fmt: skip
    axes(s, spec, "attention variant", f"K and V cache ({UNITS[unit]})")
    got = s.take("bars", texts=("bars",), name=f"K and V cache in {UNITS[unit]}")  # fix: "Series 1"
    labels = [f"MHA: {h} K/V heads", f"GQA: {kvh} K/V heads", "MQA: 1 K/V head"]
    assert got["n"] == 3
    check_items(got["bars"], labels, [x / 1024**unit for x in size])
    s.done()


def nothing(charts, p) -> None:
    assert charts == [], "a measurement is drawn before anyone asked for it"


# ------------------------------------------------------------------- the walkthrough


def walk_truth(p: dict):
    """The walkthrough after `tiles` tiles, recomputed: for each row, the softmax over the
    keys its done tiles hold (its running max m and sum l), and the exact output."""
    T, b, causal, step = (
        int(p["walk_T"]),
        int(p["block"]),
        p["causal"] in (True, "true"),
        int(p["tiles"]),
    )
    q, k, v = (x.double() for x in random_qkv(T, 8, d_v=4, seed=3))
    scores = q @ k.T / math.sqrt(8)
    allowed = (
        torch.tril(torch.ones(T, T, dtype=torch.bool))
        if causal
        else torch.ones(T, T, dtype=torch.bool)
    )
    tiles = tile_grid(T, T, b, b, causal)
    visited = [(qi, ki) for qi, ki, go in tiles if go]
    seen = torch.zeros(T, T, dtype=torch.bool)
    for qi, ki in visited[:step]:
        seen[qi * b : (qi + 1) * b, ki * b : (ki + 1) * b] = True
    seen &= allowed
    started = seen.any(-1)
    s_seen = scores.masked_fill(~seen, -math.inf)
    m = torch.where(started, s_seen.amax(-1), math.nan)
    l = torch.where(started, torch.exp(s_seen - m[:, None]).sum(-1), math.nan)
    out = torch.softmax(s_seen, -1) @ v
    out[~started] = math.nan
    exact = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal)[0]
    s_all = scores.masked_fill(~allowed, -math.inf)
    m_final = s_all.amax(-1)
    area = {(qi, ki): min(b, T - qi * b) * min(b, T - ki * b) for qi, ki, _ in tiles}
    return dict(
        T=T, step=step, n=len(visited), current=visited[step - 1] if step else None, b=b,
        scores=s_all.masked_fill(~allowed, math.nan).numpy(), causal=causal,
        todo=sum(area[t] for t in visited[step:]),
        skipped=sum(area[(qi, ki)] for qi, ki, go in tiles if not go),
        m=m.numpy(), l=l.numpy(), out=out.numpy(), exact=exact.numpy(),
        m_final=m_final.numpy(), l_final=torch.exp(s_all - m_final[:, None]).sum(-1).numpy(),
    )  # fmt: skip


def row_stat(s: Sentences, name: str, now: np.ndarray) -> None:
    started = np.flatnonzero(np.isfinite(now))
    what = f"{name} so far, by started row"
    if not started.size:
        s.take("title", title=f"No row has started yet: no {name} so far")
    elif started.size <= 12:
        got = s.take("values", texts=("items",), name=what)
        assert got["n"] == started.size
        check_items(got["items"], [str(i) for i in started], now[started])
    else:
        got = s.take("bars.many", texts=("at_hi", "at_lo"), name=what)
        assert got["n"] == started.size
        for end, best in (("hi", now[started].max()), ("lo", now[started].min())):
            rows = [f"row {i}" for i in started if abs(now[i] - best) <= 1e-5 * abs(best)]
            assert same(got[end], best) and got[f"at_{end}"] in rows, (got, best, rows)


def walkthrough(charts, p) -> None:
    """Every panel named, each in its own units: the scores by query row and key position
    (cells the causal mask forbids named so), the tiles still to come and those skipped,
    the output so far and the exact output by query row and output column (not key
    position); with the running stats, each started row's m and l and the final ranges."""
    [(spec, words)] = charts
    t = walk_truth(p)
    T, b = t["T"], t["b"]
    s = Sentences(words)
    if t["current"] is None:
        s.take("title", title=f"Step 0 of {t['n']}: no tile processed yet")
    else:
        qi, ki = t["current"]
        r1, c1 = min((qi + 1) * b, T), min((ki + 1) * b, T)
        s.take("title", title=f"Step {t['step']} of {t['n']}: query rows {qi * b}–{r1 - 1} meet "
                              f"keys {ki * b}–{c1 - 1}")  # fmt: skip
    s.take("title", title="Left, the scores q·k/√d_k under the tiles", following=True)
    check_grid(s, t["scores"], down="query row", across="key position",
               blank="forbidden" if t["causal"] else None)  # fmt: skip
    s.take("tiles.veil", todo=t["todo"], skipped=t["skipped"], following=True)
    s.take("title", title="Beside them, the output, one row per query", following=True)
    # issue 51 fix: the output panels' cells were named by "key position", m and l were read
    # against the key axis, rows not started were dropped silently
    got = s.take("panels", down="query row", across="output column", following=True)
    assert got["n"] == 2
    check_grid(s, t["out"], down="query row", across="output column", blank="pending",
               panel="output so far (acc / l)")  # fmt: skip
    check_grid(s, t["exact"], down="query row", across="output column", panel="exact output")
    if p["stats"] in (True, "true"):
        row_stat(s, "running max m", t["m"])
        row_stat(s, "running sum l", t["l"])
        waiting = int(np.isnan(t["m"]).sum())
        if 0 < waiting < T:
            s.take("title", title=f"{waiting} of {T} rows have no tile yet")
        for name in ("m", "l"):
            got = s.take("final.stat", name=name)
            final = t[f"{name}_final"]
            assert same(got["lo"], final.min()) and same(got["hi"], final.max()), (got, final)
    s.done()
    assert y_down(spec)  # query row 0 at the top, as "down" says


CHECKS = {
    "Compute": compute,
    "Parallel": nothing,
    "Memory": memory,
    "KV cache": kv,
    "Sweep": nothing,
    "Walkthrough": walkthrough,
}


def test_every_step_is_checked():
    assert tuple(CASES) == tuple(CHECKS) == page_steps(PAGE)


@pytest.mark.parametrize(
    "step,params",
    [(step, p) for step, ps in CASES.items() for p in ps],
    ids=[
        f"{step}-{'-'.join(f'{k}={v}' for k, v in p.items()) or 'defaults'}"
        for step, ps in CASES.items()
        for p in ps
    ],
)
def test_every_chart_says_what_the_lesson_computes(step, params):
    at = run_page(PAGE, reveal=True, step=step, **params)
    no_exception(at)
    assert not at.warning, [w.value for w in at.warning]  # every setting taken as asked
    CHECKS[step](chart_words(at), {**MODEL, **WALK, **params})


# ------------------------------------------------------------------- the measured charts


@pytest.fixture
def fresh_timings():
    jobs.reset()
    yield
    jobs.reset()


def test_the_parallel_timing_says_what_was_measured(fresh_timings):
    at = run_page(PAGE, reveal=True, step="Parallel", width="16")
    next(b for b in at.button if b.label == "Time both").click().run()
    no_exception(at)
    [(spec, words)] = chart_words(at)
    [rows] = at.session_state["_cost_parallel"].values()  # what the page measured
    Ts = [r["T"] for r in rows]
    s = Sentences(words)
    s.take("title", title=spec["layout"]["title"]["text"])
    assert spec["layout"]["title"]["text"].endswith("(width d = 16)")
    across = "sequence length T (log scale)"
    axes(s, spec, across, "milliseconds per call (log)")
    for path, (*_, name) in PARALLEL_STYLE.items():
        check_line(s, name, Ts, [r[f"{path}_s"] * 1e3 for r in rows], across)
    s.done()


@pytest.fixture
def tiny_sweep(monkeypatch):
    """A two-point sweep (T = 256, 512), as tests/cost/test_page.py runs it."""
    real = core.plan_sweep

    def small(T_top, **kw):
        return real(min(T_top, 512), **dict(kw, min_top=512))

    monkeypatch.setattr(core, "plan_sweep", small)


def slope(Ts, ys) -> float:
    """Least squares of log y on log T over the largest three points, written out."""
    x, y = np.log(np.asarray(Ts, float))[-3:], np.log(np.asarray(ys, float))[-3:]
    return float(np.polyfit(x, y, 1)[0])


def test_the_sweep_says_what_was_measured(tiny_sweep, fresh_timings):
    at = run_page(PAGE, reveal=True, step="Sweep", d_model="64", heads="1")
    next(b for b in at.button if b.label == "Run the sweep").click().run()
    no_exception(at)
    (mem_spec, mem), (time_spec, took) = chart_words(at)
    rows = at.session_state["_cost_sweep"]["rows"]  # what the page measured
    across = "sequence length T (log scale)"
    for spec, words, key, y_title, scale in (
        (mem_spec, mem, "peak_bytes", "peak memory in bytes, incl. q, k, v (log)", 1),  # fix: unit
        (time_spec, took, "seconds", "milliseconds per call (log)", 1e3),
    ):
        s = Sentences(words)
        s.take("title", title=spec["layout"]["title"]["text"])
        axes(s, spec, across, y_title)
        for method in core.METHODS:
            mine = [r for r in rows if r["method"] == method]
            Ts, ys = [r["T"] for r in mine], [r[key] for r in mine]
            name = re.compile(re.escape(f"{METHOD_LABEL[method]}: slope ") + f"(?P<slope>{NUM})")
            got = check_line(s, name, Ts, [y * scale for y in ys], across)
            assert abs(got["slope"] - slope(Ts, ys)) <= 0.0051, (method, got, slope(Ts, ys))
        s.done()
