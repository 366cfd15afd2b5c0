"""AppTest: the cost page opened as a shared link — its steps, the lesson's numbers, bad and
extreme URL values, the walkthrough's Step/Back, and the measured sweep (made tiny)."""

import math
import re

import pytest
from streamlit.testing.v1 import AppTest

import attn_core
from attn_core import cost as model
from attn_core.lessons import cost as core
from figures import cost as fig
from figures.cost import duration, versus
from tests.cost.test_figures import parallel_rows
from tests.support.apptest import (
    ROOT,
    _registry,
    all_specs,
    no_exception,
    plotly_specs,
    run_page,
    run_steps,
    warnings,
)
from tests.support.apptest import chart_titles as titles
from ui import Words
from ui.lesson import lesson

COST = "pages/cost.py"
KEY = "step"  # the tabs' URL key
STEPS = list(lesson("cost").steps)
W = Words("cost")
TITLES = {  # what each step draws before the sweep (or the timing) is run (title prefixes)
    "Compute": ["Compute per layer against sequence length (d_model = 512)"],
    "Parallel": [],
    "Memory": ["Stored attention probabilities: batch 32 × 8 heads"],
    "KV cache": ["KV cache while generating"],
    "Sweep": [],
    "Walkthrough": ["Step 1 of 16"],
}
SIDEBAR = ["T", "batch", "d_model", "dtype", "gpu_gb", "heads", "kv_heads", "layers"]
WALK = ["block", "causal", "stats", "tiles", "walk_T"]
OWN = {"Walkthrough": WALK, "Parallel": ["width"]}  # controls that only their step shows


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def step(label: str, **params):
    return run_page(COST, reveal=True, **{KEY: label}, **params)


def controls(at) -> list[str]:
    kinds = (at.select_slider, at.slider, at.radio, at.selectbox, at.toggle)
    keys = {w.key for kind in kinds for w in kind if w.key}
    return sorted(k for k in keys if not k.startswith(("pick-", "guess-")))


def test_each_step_draws_only_its_own_charts():
    runs = run_steps(COST, STEPS, key=KEY, reveal=True)
    for label, at in zip(STEPS, runs, strict=True):
        no_exception(at)
        assert not warnings(at), (label, warnings(at))
        assert at.title[0].value == "Cost and FlashAttention"
        shown = titles(at)
        assert len(shown) == len(TITLES[label]), (label, shown)
        for want, got in zip(TITLES[label], shown, strict=True):
            assert got.startswith(want), (want, got)
        # the sidebar is always there; a step's own controls only in that step
        assert controls(at) == sorted(SIDEBAR + OWN.get(label, [])), label
        for spec in plotly_specs(at):  # every chart has axis titles
            assert spec["layout"]["xaxis"]["title"]["text"]
            assert spec["layout"]["yaxis"]["title"]["text"]
    assert len(all_specs(runs)) == 4  # compute, probabilities, KV cache, walkthrough
    assert any("Run the sweep" in i.value for i in runs[4].info)  # nothing measured until asked
    assert any("Time both" in i.value for i in runs[1].info)
    for at in runs:
        assert "Try this" in " ".join(md.value for md in at.markdown)


def test_defaults_reproduce_the_lesson():
    at = run_page(COST, reveal=True)  # the first step: compute
    no_exception(at)
    assert not warnings(at)
    assert [t[:26] for t in titles(at)] == ["Compute per layer against "]
    m = metrics(at)
    assert m["Crossover T = 2·d"] == "1,024"
    assert m["Projections, 4·T·d² (MACs)"] == m["Attention, 2·T²·d (MACs)"]  # T = 2d
    m = metrics(step("Memory"))
    assert m["Probabilities, one layer"] == "512 MiB"
    assert m["All 12 layers"] == "6 GiB"
    assert m["Of a 24 GiB GPU"] == "25%"
    m = metrics(step("KV cache"))
    assert m["MHA cache"] == "768 MiB" and m["GQA cache (2 K/V heads)"] == "192 MiB"
    assert m["MQA saves a factor"].startswith("8×")


def test_a_step_follows_the_link_and_a_bad_one_falls_back_with_a_note():
    at = step("Walkthrough", walk_T="12", block="8", tiles="3", causal="true")
    no_exception(at)
    assert not warnings(at)
    assert [t[:12] for t in titles(at)] == ["Step 3 of 3:"]  # 2 row blocks: 1 + 2 tiles
    at = step("Nowhere")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{KEY}=Nowhere`" in notes[0], notes
    assert "Compute" in notes[0]
    assert [t[:26] for t in titles(at)] == ["Compute per layer against "]
    at = step("5")  # an old walkthrough link: the tile counter is ?tiles= now
    assert len(warnings(at)) == 1 and "`step=5`" in warnings(at)[0]
    # the sidebar keeps its values from step to step
    at = step("Memory")
    at.select_slider(key="T").set_value(2048).run()
    assert metrics(at)["Probabilities, one layer"] == "2 GiB"
    at.query_params[KEY] = at.session_state[KEY] = "KV cache"  # what clicking the tab does
    at.run()
    no_exception(at)
    assert at.select_slider(key="T").value == 2048
    assert metrics(at)["MHA cache"] == "1.5 GiB"


def test_T_2048_quadruples_the_probabilities():
    at = step("Memory", T="2048")
    no_exception(at)
    m = metrics(at)
    assert m["Probabilities, one layer"] == "2 GiB" and m["All 12 layers"] == "24 GiB"
    assert m["Of a 24 GiB GPU"] == "100%"
    assert not warnings(at)


def test_bad_url_values_fall_back_with_visible_notes():
    sidebar = {
        "T": "abc",
        "d_model": "100",
        "heads": "<script>alert(1)</script>",
        "kv_heads": "nan",
        "batch": "-1",
        "layers": "1e999",
        "dtype": "int8",
        "gpu_gb": "7",
    }
    walk = {"walk_T": "5", "block": "3", "causal": "maybe", "tiles": "99"}
    at = step("Memory", **sidebar)
    no_exception(at)
    notes = warnings(at)
    for key in sidebar:
        assert sum(f"`{key}=" in n for n in notes) == 1, (key, notes)
    assert all("<script>" not in n.replace("`heads=<script>", "") for n in notes)
    m = metrics(at)  # everything is back at its default
    assert m["Probabilities, one layer"] == "512 MiB" and m["All 12 layers"] == "6 GiB"
    assert at.select_slider(key="T").value == 1024
    at = step("Walkthrough", **sidebar, **walk)  # the sidebar's notes show in every step
    no_exception(at)
    notes = warnings(at)
    for key in [*sidebar, *walk]:
        assert sum(f"`{key}=" in n for n in notes) == 1, (key, notes)
    assert at.slider(key="tiles").value == 1
    assert [t[:12] for t in titles(at)] == ["Step 1 of 16"]


def test_heads_that_do_not_divide_are_fixed_with_a_note():
    at = step("KV cache", heads="12", kv_heads="16")
    no_exception(at)
    notes = warnings(at)
    assert any("`heads=12`" in n and "d_model = 512" in n and "**8**" in n for n in notes)
    assert any("`kv_heads=16`" in n and "more than" in n for n in notes)
    m = metrics(at)
    assert m["GQA cache (8 K/V heads)"] == m["MHA cache"]  # kv_heads became 8


def test_extreme_settings_stay_finite_and_cap_the_sweep():
    extreme = dict(
        T="131072", batch="1024", layers="128", heads="64", d_model="8192", dtype="float32",
        gpu_gb="8",
    )  # fmt: skip
    runs = run_steps(
        COST, ["Compute", "Memory", "KV cache", "Sweep"], key=KEY, reveal=True, **extreme
    )
    for at in runs:
        no_exception(at)
    m = metrics(runs[1])
    assert m["All 128 layers"].endswith("PiB")
    assert m["Of a 8 GiB GPU"].endswith("×")
    for spec in all_specs(runs):
        for trace in spec["data"]:
            ys = trace.get("y")
            if isinstance(ys, list):
                assert all(y is None or math.isfinite(y) for y in ys if not isinstance(y, str))
    assert any("131,072" in n and "sweep stops" in n for n in warnings(runs[3]))


def test_walkthrough_step_back_and_finish():
    at = step("Walkthrough")
    labels = [b.label for b in at.button]
    assert "Step" in labels and "Back" in labels
    nxt = next(b for b in at.button if b.label == "Step")
    nxt.click().run()
    no_exception(at)
    assert any(x.startswith("Step 2 of 16") for x in titles(at))
    back = next(b for b in at.button if b.label == "Back")
    back.click().run()
    back = next(b for b in at.button if b.label == "Back")
    back.click().run()
    assert any(x.startswith("Step 0 of 16") for x in titles(at))
    at.slider(key="tiles").set_value(16).run()
    no_exception(at)
    done = [s.value for s in at.success]
    assert done and "All 16 tiles done" in done[0]
    diff = float(re.search(r"\*\*([0-9.e+-]+)\*\*", done[0]).group(1))
    assert diff < 1e-5
    assert len(plotly_specs(at)) == 1  # tiles, outputs, m and l in one figure


def test_causal_clamps_the_step_to_the_smaller_grid():
    at = step("Walkthrough", tiles="16")  # the last of 16 tiles
    assert any(x.startswith("Step 16 of 16") for x in titles(at))
    at.toggle(key="causal").set_value(True).run()
    no_exception(at)
    assert any(x.startswith("Step 10 of 10") for x in titles(at))  # 6 future tiles skipped
    assert any("grey tiles" in c.value for c in at.caption)
    assert not warnings(at)


@pytest.fixture
def tiny_sweep(monkeypatch):
    """A two-point sweep (T = 256, 512) so the button's whole path runs in a few seconds."""
    real = core.plan_sweep

    def small(T_top, **kw):
        return real(min(T_top, 512), **dict(kw, min_top=512))

    monkeypatch.setattr(core, "plan_sweep", small)  # where the page reads it


def test_sweep_runs_on_the_button_and_reports_slopes_and_backend(tiny_sweep):
    at = step("Sweep", d_model="64", heads="1")
    no_exception(at)
    assert not titles(at)
    run = next(b for b in at.button if b.label == "Run the sweep")
    run.click().run()
    no_exception(at)
    t = titles(at)
    assert any(x.startswith("Peak memory, measured on CPU") for x in t)
    assert any(x.startswith("Time per call, measured on CPU") for x in t)
    m = metrics(at)
    slope_att = float(m["Memory slope, attention"])
    slope_fused = float(m["Memory slope, fused_attention"])
    assert slope_att > slope_fused  # T² against T, even over two points
    cap = " ".join(c.value for c in at.caption)
    assert "profiler" in cap and any(
        name in cap for name in attn_core.lessons.cost.SDPA_BACKENDS.values()
    )
    # the result stays on later reruns without measuring again
    at.select_slider(key="T").set_value(2048).run()
    assert any(x.startswith("Peak memory") for x in titles(at))


def test_predict_then_reveal_doubling_T():
    at = step("Memory")
    at.radio(key="pick-double_T").set_value("×4")
    at.button(key="FormSubmitter:form-double_T-Reveal").click().run()
    no_exception(at)
    assert any("Right: **×4**" in s.value and "512 MiB → 2 GiB" in s.value for s in at.success)


def test_presenter_mode_keeps_the_controls_on_the_page():
    at = step("Memory", present="1", T="2048")
    no_exception(at)
    assert at.select_slider(key="T").value == 2048
    assert metrics(at)["Probabilities, one layer"] == "2 GiB"


# ------------------------------------------------------------------------ parallel vs recurrent


def table_rows(md: str) -> list[list[str]]:
    """The body rows of the first markdown table in md, cells stripped."""
    lines = [ln for ln in md.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]


def test_parallel_step_times_on_the_button_and_its_sentence_matches_its_table():
    at = step("Parallel", width="16")
    no_exception(at)
    assert not warnings(at) and not titles(at)  # nothing timed until asked
    assert any("Time both" in i.value and "d = 16" in i.value for i in at.info)
    next(b for b in at.button if b.label == "Time both").click().run()
    no_exception(at)
    md = [m.value for m in at.markdown]
    table = next(m for m in md if m.startswith("| T | dependent steps"))
    summary = next(m for m in md if "dependent steps**" in m)
    rows = table_rows(table)
    Ts = [int(r[0].replace(",", "")) for r in rows]
    assert Ts == list(attn_core.lessons.cost.PARALLEL_TS)
    for T, r in zip(Ts, rows, strict=True):
        assert r[1] == f"{T:,} / 1"  # T dependent steps against one matmul
    T, steps, loop, rnn, scores, attn, verdict, macs = rows[-1]
    assert f"at T = {T} (width d = 16)" in summary
    assert f"**{loop}** for its **{steps.split(' / ')[0]} dependent steps**" in summary
    assert f"same steps in compiled code: {rnn})" in summary
    assert f"scores in **1 matmul** ({scores})" in summary
    assert f"whole layer in **{attn}**: **{verdict}** than the loop" in summary
    assert f"doing {macs} as many multiply–adds" in summary
    won = [r[0] for r in rows if r[6].endswith("faster")]
    lost = [r[0] for r in rows if r[6].endswith("slower")]
    if not lost:
        assert "Attention beat the loop at every T measured" in summary
    elif not won:
        assert "the loop beat attention at every T measured" in summary
    else:
        assert f"Attention beat the loop at T = {', '.join(won)}; the loop won at " in summary
        assert f"the loop won at T = {', '.join(lost)}." in summary
    device = attn_core.device_label(attn_core.pick_device())
    assert summary.startswith(f"On {device} at T")
    assert [t[:36] for t in titles(at)] == ["T dependent steps against one matmul"]
    assert device in titles(at)[0]
    at.select_slider(key="T").set_value(2048).run()  # a sidebar rerun keeps the result
    no_exception(at)
    assert titles(at)[0].startswith("T dependent steps")


def test_parallel_width_from_a_bad_link_falls_back_with_a_note():
    at = step("Parallel", width="7")
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and "`width=7`" in notes[0], notes
    assert at.select_slider(key="width").value == 64


def try_lines(at) -> str:
    return "\n".join(m.value for m in at.markdown if m.value.startswith("- **"))


def test_try_this_counts_for_the_settings_in_the_sidebar():
    at = step("Sweep", d_model="512")
    plan = attn_core.plan_sweep(1024, batch=1, heads=64, d_k=8, dtype="float32", device="cpu")
    reach = max(t for m, t in plan.points if m == "attention")
    top = max(t for _, t in plan.points)
    want = f"all three paths still reach T = {top:,}"
    if reach < top:
        want = f"stops after T = {reach:,}"
    assert want in try_lines(at)
    assert "**Set heads to 64 in the sidebar and run it again** — " in try_lines(at)


@pytest.mark.parametrize("d_model", [64, 512, 8192])
def test_try_compute_counts_for_this_d_model(d_model):
    at = step("Compute", d_model=str(d_model))
    no_exception(at)
    lines = try_lines(at)
    r = model.projection_macs(256, d_model) / model.attention_macs(256, d_model)
    assert (
        f"**Raise d_model to 4,096** — the crossover moves to T = 2·d = {model.crossover_T(4096):,}"
        in lines
    )
    assert (
        f"**Set T = 256** — at d_model = {d_model} the projections cost {r:.3g}× as much" in lines
    )
    assert f"2d / T = {2 * d_model / 256:.3g}." in lines


@pytest.mark.parametrize(
    "batch,heads,layers,dtype,gpu,T",
    [
        (32, 8, 12, "float16", 24, 1024),
        (1, 1, 1, "float32", 8, 16),
        (1024, 64, 128, "bfloat16", 192, 131072),
    ],
)
def test_try_memory_counts_for_these_settings(batch, heads, layers, dtype, gpu, T):
    at = step(
        "Memory", batch=str(batch), heads=str(heads), layers=str(layers), dtype=dtype,
        gpu_gb=str(gpu), T=str(T), kv_heads="1",
    )  # fmt: skip
    no_exception(at)
    assert not warnings(at)
    lines = try_lines(at)
    T2 = min(2 * T, fig.T_MAX)
    per = model.attention_probs_bytes(batch, heads, T2, dtype)
    assert f"**Set T = {T2:,}** — " in lines
    assert (
        f"{model.format_bytes(per)} per layer, {model.format_bytes(per * layers)} for {layers}"
        in lines
    )
    assert fig.gpu_share(per * layers, gpu) in lines
    other = "float16" if dtype == "float32" else "float32"
    assert f"**Switch the precision to {other}** — " in lines
    assert model.format_bytes(model.attention_probs_bytes(batch, heads, T, other, layers)) in lines


@pytest.mark.parametrize("gpu", [8, 24, 192])
def test_try_kv_cache_counts_for_these_settings(gpu):
    at = step("KV cache", gpu_gb=str(gpu), d_model="512", heads="8", kv_heads="2")
    no_exception(at)
    lines = try_lines(at)
    assert "GQA turns into MQA and the KV cache shrinks by the factor h = 8." in lines
    mha = model.kv_cache_bytes(32, fig.T_MAX, 12, 8, 64, "float16")
    cards = math.ceil(mha / (gpu * 2**30))
    assert f"needs {model.format_bytes(mha)}" in lines
    assert (f"needs {cards:,} of them" if cards > 1 else "fits one card") in lines
    assert model.format_bytes(model.kv_cache_bytes(32, fig.T_MAX, 12, 2, 64, "float16")) in lines


def test_the_words_are_complete():
    for key in ("try.parallel", "try.walkthrough"):
        items = W.pairs(key)
        assert 2 <= len(items) <= 3 and all(do and see for do, see in items)
    for key in ("explain.cost", "explain.online", "explain.faster", "explain.weights"):
        assert len(W(key)) > 100


# ------------------------------------------------------------- the parallel step's sentence


def parallel_with(rows: list[dict]) -> AppTest:
    """The Parallel step at width 64 with these rows already timed in this session."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at._registered_pages = _registry(60)
    at.switch_page(COST)
    at.query_params[KEY] = "Parallel"
    at.session_state["_cost_parallel"] = {(64, str(attn_core.pick_device())): rows}
    at.run()
    no_exception(at)
    return at


@pytest.mark.parametrize(
    "loop,attention,expect",
    [
        (lambda T: 1e-3, lambda T: 1e-5, "Attention beat the loop at every T measured (64 … 256)"),
        (lambda T: 1e-5, lambda T: 1e-3, "the loop beat attention at every T measured (64 … 256)"),
        (lambda T: 1e-3, lambda T: 1e-3 * T / 100, "beat the loop at T = 64; the loop won at "
         "T = 128, 256"),
    ],
)  # fmt: skip
def test_parallel_summary_says_what_was_measured(loop, attention, expect):
    rows = parallel_rows(loop, attention)
    md = [m.value for m in parallel_with(rows).markdown]
    text = next(m for m in md if "dependent steps**" in m)
    assert expect in text
    last = rows[-1]
    assert "256 dependent steps" in text and "1 matmul" in text and "65,536 scores" in text
    assert versus(last["loop_s"], last["attention_s"]) in text
    assert duration(last["loop_s"]) in text and duration(last["attention_s"]) in text


def test_parallel_table_has_one_row_per_T_with_the_verdict():
    rows = parallel_rows(lambda T: 1e-3, lambda T: 1e-3 * T / 128)  # equal at T = 128
    md = [m.value for m in parallel_with(rows).markdown]
    md = next(m for m in md if m.startswith("| T | dependent steps")).splitlines()
    assert len(md) == 2 + len(rows)
    assert "| 64 | 64 / 1 |" in md[2] and "2× faster" in md[2]
    assert "1× faster" in md[3] and "2× slower" in md[4]
    assert md[4].endswith("| 8× |")  # 2·T²·d / 2·T·d² = T / d = 256 / 32


def test_try_sweep_says_where_attention_stops(monkeypatch):
    assert "`attention` stops after T = " in try_lines(step("Sweep"))  # the CPU's budget
    real = core.plan_sweep

    def roomy(T_top, **kw):  # a budget no T×T matrix of the sweep passes
        return real(T_top, **dict(kw, budget_bytes=1 << 50))

    monkeypatch.setattr(core, "plan_sweep", roomy)
    assert "all three paths still reach T = " in try_lines(step("Sweep"))
