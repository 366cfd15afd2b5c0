"""Cost and FlashAttention: compute and memory against T, KV caches, a live measurement,
and the tiled online softmax step by step."""

import dataclasses
import math
import time

import streamlit as st

import ui
from attn_core import attention, causal_mask, device_label, random_qkv, tile_grid, trace_state
from attn_core import cost as model
from attn_core.lessons import cost as core
from attn_core.tiled import scores_computed, tiled_attention
from figures import cost as fig
from figures.cost import duration, versus

FILE = "pages/cost.py"
W = ui.Words("cost")
STEPS = ui.lesson("cost").steps
HEADS = [1, 2, 4, 8, 12, 16, 32, 64]
GPUS = [8, 12, 16, 24, 32, 40, 48, 80, 96, 141, 192]
WALK_D_K, WALK_D_V = 8, 4
SWEEP = "_cost_sweep"  # session_state: the last sweep's results (small, plain Python)
SLOW_S = 1.5  # seconds: a method whose call takes longer stops climbing in T
WIDTHS = [16, 32, 64, 128, 256, 512]  # the parallel step's d: a whole table stays under ~2 s
PARALLEL = "_cost_parallel"  # session_state: {(width, device): rows} timed in this session
WIDE_D, SHORT_T = 4096, 256  # the compute step's "Try this" settings
SWEEP_TRY_HEADS = 64  # the sweep's "Try this" sends the reader to this many heads


@ui.frozen
class Settings:
    """The sidebar: one model and one GPU, shared by the calculators and the sweep."""

    T: int
    d_model: int
    heads: int
    kv_heads: int
    batch: int
    layers: int
    dtype: str
    gpu_gb: int

    @property
    def d_head(self) -> int:
        return self.d_model // self.heads


@ui.frozen
class Walk:
    """The walkthrough's tiling, set by its own controls."""

    T: int
    block: int
    causal: bool


@ui.frozen
class Probe:
    """How the sweep measures one point: its shape, precision, device and tile size."""

    heads: int
    d_k: int
    dtype: str
    device: str
    block: int


@ui.frozen
class SweepJob:
    """One whole sweep: its points and how each is measured (shared between sessions)."""

    points: tuple[tuple[str, int], ...]
    probe: Probe


# Charts are cached as resources (shared, only ever read) keyed by the controls they use:
# a rerun whose values they do not depend on builds nothing.
charts = ui.cache_resource(max_entries=64, show_spinner=False)
flops_chart = charts(fig.flops_chart)
probs_memory_chart = charts(fig.probs_memory_chart)
kv_cache_chart = charts(fig.kv_cache_chart)


@ui.cache_resource(max_entries=16, show_spinner=False)
def walk_trace(w: Walk):
    """Scores, exact output and tiled trace for the walkthrough (T <= 64: the CPU is fastest)."""
    q, k, v = random_qkv(w.T, WALK_D_K, d_v=WALK_D_V, seed=3)
    mask = causal_mask(w.T) if w.causal else None
    exact = attention(q, k, v, mask)
    out, steps = tiled_attention(
        q, k, v, block_q=w.block, block_k=w.block, causal=w.causal, trace=True
    )
    full = trace_state(steps, len(steps), w.T)
    return dict(
        steps=steps,
        scores=exact.scores.numpy(),
        exact=exact.output.numpy(),
        m_final=full.m.numpy(),
        l_final=full.l.numpy(),
        max_diff=float((out - exact.output).abs().max()),
        tiles=tile_grid(w.T, w.T, w.block, w.block, w.causal),
        work=scores_computed(steps),
    )


@ui.cache_data(max_entries=256, show_spinner=False)
def walk_state(w: Walk, step: int) -> dict:
    s = trace_state(walk_trace(w)["steps"], step, w.T)
    cur = s.current
    return dict(
        m=s.m.numpy(), l=s.l.numpy(), out=s.out.numpy(), cur=(cur.rows, cur.cols) if cur else None
    )


@charts
def walk_chart(w: Walk, step: int, stats: bool):
    t, s = walk_trace(w), walk_state(w, step)
    return fig.walkthrough_chart(
        t["scores"], t["tiles"], s["out"], t["exact"], s["m"], s["l"], t["m_final"],
        t["l_final"], block_q=w.block, block_k=w.block, step=step, current=s["cur"],
        stats=stats,
    )  # fmt: skip


@ui.cache_data(max_entries=96, show_spinner=False)
def measured(probe: Probe, method: str, T: int) -> dict:
    point = ui.jobs.call(  # in a worker process (ui.jobs.call), like every heavy job
        core.measure_point, method, T, heads=probe.heads, d_k=probe.d_k, dtype=probe.dtype,
        device=probe.device, block=probe.block,
    )  # fmt: skip
    return dataclasses.asdict(point)


@ui.cache_data(max_entries=8, show_spinner=False)
def backend(probe: Probe) -> str:
    return core.sdpa_backend(*core.qkv(1, probe.heads, 256, probe.d_k, probe.dtype, probe.device))


def parallel_timings(width: int, device: str, show) -> list[dict]:
    """The recurrence against one matmul at every T of PARALLEL_TS, timed once per server
    in a heavy-job slot (ui.jobs): a timing on a busy server measures the other jobs."""

    def work(_job) -> list[dict]:  # a second or two: no point to stop at inside it
        rows = ui.jobs.call(core.time_parallel_vs_recurrent, core.PARALLEL_TS, width, device=device)
        return [dataclasses.asdict(r) for r in rows]

    rows, _ = ui.jobs.shared(
        ui.jobs.results("cost-parallel", 6), (width, device), work, kind="timing",
        what=f"parallel vs recurrent at d {width}", show=show,
    )  # fmt: skip
    return rows


# ----------------------------------------------------------------------------- the controls
def fit_choice(asked: int, divides: int, name: str, why: str) -> int:
    """The largest head count <= asked that divides `divides`; a note when it had to change."""
    ok = max(h for h in HEADS if h <= min(asked, divides) and divides % h == 0)
    if ok != asked:
        key = "note.fit.more" if asked > divides else "note.fit.divide"
        ui.note(W(key, name=name, asked=asked, why=why, ok=ok))
    return ok


def controls() -> Settings:
    """The sidebar: one model and one GPU; its notes show above the steps (four read it)."""
    dev = ui.device()
    here = core.device_memory_gib(dev)
    gpus = sorted(set(GPUS) | ({round(here)} if here else set()))
    with ui.controls_area():
        st.markdown("### Model and hardware")
        ui.used_by("step", STEPS, ("Compute", "Memory", "KV cache", "Sweep"))
        T = ui.pow2_slider("T", "Sequence length T", 16, 131072, 1024)
        d_model = ui.select_slider(
            "d_model", "d_model", [64, 128, 256, 512, 768, 1024, 2048, 4096, 8192], 512
        )
        heads = ui.select_slider("heads", "Heads h", HEADS, 8)
        kv_heads = ui.select_slider("kv_heads", "K/V heads for GQA", HEADS, 2)
        batch = ui.pow2_slider("batch", "Batch size", 1, 1024, 32)
        layers = ui.slider("layers", "Layers", 1, 128, 12)
        dtype = ui.radio("dtype", "Precision", ["float32", "float16", "bfloat16"], "float16")
        gpu_gb = ui.selectbox(
            "gpu_gb", "GPU memory to compare against (GiB)", gpus, 24,
            fmt=lambda g: f"{g} (this GPU)" if here and g == round(here) else str(g),
        )  # fmt: skip
        heads = fit_choice(heads, d_model, "heads", W("note.fit.d_model", d_model=d_model))
        kv_heads = fit_choice(kv_heads, heads, "kv_heads", W("note.fit.heads", heads=heads))
    return Settings(T, d_model, heads, kv_heads, batch, layers, dtype, gpu_gb)


# ----------------------------------------------------------------------------- Compute
def macs_exercise(s: Settings, p: int, a: int, cross: int) -> bool:
    choices = W.choices("exercise.macs.choices")
    correct = choices["projections" if p > a else "attention" if a > p else "same"]
    return ui.predict_choice(
        f"cost-macs-{s.T}-{s.d_model}",
        W("exercise.macs.q", T=s.T, d_model=s.d_model),
        list(choices.values()),
        correct,
        W("exercise.macs.why", ratio=s.T / (2 * s.d_model), cross=cross),
        truth=W("exercise.macs.truth", p=fig.si(p), a=fig.si(a)),
        secret=[fig.si(p), fig.si(a)],
    )


def try_compute(d_model: int) -> list[tuple[str, str]]:
    """The compute step's experiments, their outcomes counted for this d_model."""
    ratio = model.projection_macs(SHORT_T, d_model) / model.attention_macs(SHORT_T, d_model)
    return W.pairs(
        "try.compute", wide=WIDE_D, cross=model.crossover_T(WIDE_D), short=SHORT_T,
        d_model=d_model, ratio=ratio, two_d_over_T=2 * d_model / SHORT_T,
    )  # fmt: skip


def compute_step(s: Settings) -> None:
    st.header("Compute: where the multiply–adds go")
    p, a = model.projection_macs(s.T, s.d_model), model.attention_macs(s.T, s.d_model)
    cross = model.crossover_T(s.d_model)
    if not macs_exercise(s, p, a, cross):  # the counts and the chart answer it
        ui.until_reveal(W("compute.hidden"))
        return
    c = st.columns(3)
    c[0].metric("Projections, 4·T·d² (MACs)", fig.si(p))
    c[1].metric("Attention, 2·T²·d (MACs)", fig.si(a))
    c[2].metric("Crossover T = 2·d", f"{cross:,}")
    ui.show(flops_chart(s.d_model, s.T))
    ui.try_this(try_compute(s.d_model))
    ui.explain("Where 4·T·d² and 2·T²·d come from", W("explain.cost"))


# ----------------------------------------------------------------------------- Parallel
def parallel_summary(rows: list[dict], device: str) -> str:
    """What the table says, in words; every number read from the rows."""
    last = rows[-1]
    T = last["T"]
    text = W(
        "parallel.summary", device=device, T=T, d=last["d"], loop=duration(last["loop_s"]),
        steps=last["sequential_steps"], rnn=duration(last["rnn_s"]), scores=T * T,
        matmul=duration(last["scores_s"]), attention=duration(last["attention_s"]),
        versus=versus(last["loop_s"], last["attention_s"]),
        macs=last["attention_macs"] / last["recurrent_macs"],
    )  # fmt: skip
    won = [f"{r['T']:,}" for r in rows if r["attention_s"] <= r["loop_s"]]
    lost = [f"{r['T']:,}" for r in rows if r["attention_s"] > r["loop_s"]]
    span = dict(first=rows[0]["T"], last=T)
    if not lost:
        return text + " " + W("parallel.won_all", **span)
    if not won:
        return text + " " + W("parallel.lost_all", **span)
    return text + " " + W("parallel.mixed", won=", ".join(won), lost=", ".join(lost))


def parallel_table(rows: list[dict]) -> str:
    """The measurements as a markdown table: one row per T."""
    out = [W("parallel.table")]
    for r in rows:
        out.append(
            f"| {r['T']:,} | {r['sequential_steps']:,} / 1 | {duration(r['loop_s'])} | "
            f"{duration(r['rnn_s'])} | {duration(r['scores_s'])} | "
            f"{duration(r['attention_s'])} | {versus(r['loop_s'], r['attention_s'])} | "
            f"{r['attention_macs'] / r['recurrent_macs']:.3g}× |"
        )
    return "\n".join(out)


def time_both(done: dict, width: int, dev: str) -> None:
    box = st.empty()
    try:
        with st.spinner(f"Timing T = {core.PARALLEL_TS[0]:,} … {core.PARALLEL_TS[-1]:,} …"):
            show = lambda s: box.info(s, icon=":material/hourglass:")  # noqa: E731
            done[(width, dev)] = parallel_timings(width, dev, show)
        box.empty()
    except ui.jobs.GaveUpError as e:
        box.warning(str(e), icon=":material/hourglass_disabled:")


@st.fragment
def parallel_step(_: Settings) -> None:
    st.header("Every score at once: attention against a recurrence")
    st.markdown(W("parallel.intro", first=core.PARALLEL_TS[0], last=core.PARALLEL_TS[-1]))
    with ui.noting(), st.columns([2, 3])[0]:  # its note below the columns, as before
        width = ui.select_slider("width", "Width d (vectors and recurrent state)", WIDTHS, 64)
    dev = ui.device()
    done = st.session_state.setdefault(PARALLEL, {})
    if st.button("Time both", icon=":material/play_arrow:", type="primary"):
        time_both(done, width, str(dev))
    rows = done.get((width, str(dev)))
    if rows is None:
        st.info(W("parallel.press", width=width))
    else:
        label = device_label(dev)
        st.markdown(parallel_summary(rows, label))
        st.markdown(parallel_table(rows))
        ui.show(fig.parallel_chart(rows, label))
    ui.try_this(W.pairs("try.parallel"))


# ----------------------------------------------------------------------------- Memory
def try_memory(s: Settings) -> list[tuple[str, str]]:
    """The memory step's experiments, their outcomes computed for these settings."""
    longer = min(2 * s.T, core.T_MAX)
    per = model.attention_probs_bytes(s.batch, s.heads, longer, s.dtype)
    other = "float32" if s.dtype != "float32" else "float16"
    swapped = model.attention_probs_bytes(s.batch, s.heads, s.T, other, s.layers)
    return W.pairs(
        "try.memory", longer=longer, per=model.format_bytes(per),
        total=model.format_bytes(per * s.layers), layers=s.layers,
        share=fig.gpu_share(per * s.layers, s.gpu_gb), gpu_gb=s.gpu_gb, other=other,
        other_b=model.attention_probs_bytes(1, 1, 1, other),
        now_b=model.attention_probs_bytes(1, 1, 1, s.dtype), T=s.T,
        swapped=model.format_bytes(swapped),
    )  # fmt: skip


def memory_step(s: Settings) -> None:
    st.header("Memory: the T×T wall")
    fmt = model.format_bytes
    per, total = (model.attention_probs_bytes(s.batch, s.heads, s.T, s.dtype, n)
                  for n in (1, s.layers))  # fmt: skip
    grow = model.attention_probs_bytes(s.batch, s.heads, 2 * s.T, s.dtype) // per  # computed
    shown = ui.predict_choice(
        "double_T", W("exercise.double.q"), ["×2", "×4", "×8"], f"×{grow}",
        W("exercise.double.why"),
        truth=W("exercise.double.truth", per=fmt(per), grown=fmt(per * grow)),
        secret=[fmt(per * grow)],  # the size at 2T: the chart's curve has it
    )  # fmt: skip
    c = st.columns(3)
    c[0].metric("Probabilities, one layer", fmt(per))
    c[1].metric(f"All {s.layers} layers", fmt(total))
    c[2].metric(f"Of a {s.gpu_gb:g} GiB GPU", fig.gpu_share(total, s.gpu_gb))
    if not shown:  # the curve over T is the answer
        ui.until_reveal(W("memory.hidden"))
        return
    ui.show(probs_memory_chart(s.batch, s.heads, s.dtype, s.layers, s.gpu_gb, s.T))
    ui.try_this(try_memory(s))


# ----------------------------------------------------------------------------- KV cache
def try_kv(s: Settings) -> list[tuple[str, str]]:
    """The KV-cache step's experiments, their outcomes computed for these settings."""
    mha, gqa = (model.kv_cache_bytes(s.batch, core.T_MAX, s.layers, n, s.d_head, s.dtype)
                for n in (s.heads, s.kv_heads))  # fmt: skip
    cards = math.ceil(mha / (s.gpu_gb * core.GIB))
    fits = W("try.kv.one_card") if cards == 1 else W("try.kv.cards", cards=cards)
    return W.pairs(
        "try.kv", heads=s.heads, T_max=core.T_MAX, mha=model.format_bytes(mha),
        gpu_gb=s.gpu_gb, fits=fits, kv_heads=s.kv_heads, gqa=model.format_bytes(gqa),
    )  # fmt: skip


def kv_step(s: Settings) -> None:
    st.header("The KV cache at inference: MHA, GQA, MQA")
    mha, gqa, mqa = (model.kv_cache_bytes(s.batch, s.T, s.layers, n, s.d_head, s.dtype)
                     for n in (s.heads, s.kv_heads, 1))  # fmt: skip
    c = st.columns(3)
    c[0].metric("MHA cache", model.format_bytes(mha))
    c[1].metric(f"GQA cache ({s.kv_heads} K/V heads)", model.format_bytes(gqa))
    c[2].metric("MQA saves a factor", f"{mha // mqa}× (= h)")
    ui.show(kv_cache_chart(
        s.batch, s.T, s.layers, s.heads, s.kv_heads, s.d_head, s.dtype, s.gpu_gb
    ))  # fmt: skip
    ui.try_this(try_kv(s))


# ----------------------------------------------------------------------------- Sweep
def sweep_dtype(s: Settings) -> str:
    """The sidebar's precision on a GPU; a CPU always sweeps in float32."""
    return s.dtype if ui.device().type == "cuda" else "float32"


def sweep_plan(s: Settings, heads: int, d_k: int):
    """The sweep's points on this device, up to the sidebar's T."""
    return core.plan_sweep(
        s.T, batch=1, heads=heads, d_k=d_k, dtype=sweep_dtype(s), device=ui.device()
    )


def stop_note(stop: core.SweepStop) -> str:
    """Why the sweep stops there, in words."""
    if stop.kind == "cap":
        return W(f"sweep.stop.cap.{stop.on}", asked=stop.asked, T=stop.T,
                 **({"d_model": stop.d_model} if stop.on == "cpu" else {}))  # fmt: skip
    if stop.kind == "tiles":
        return W("sweep.stop.tiles", method=stop.method, T=stop.T, tiles=stop.tiles,
                 block=stop.block, most=core.MAX_PROFILED_TILES)  # fmt: skip
    return W("sweep.stop.budget", method=stop.method, T=stop.T, need=stop.need_bytes / 2**20,
             budget=stop.budget_bytes / 2**20)  # fmt: skip


def plan_notes(plan) -> list[str]:
    return [stop_note(x) for x in plan.stops]


def measure_all(job, plan, probe: Probe, bar, dev, t0: float) -> dict:
    """Every point of the plan, in order; a method whose call is slow stops climbing."""
    rows, notes, slow = [], plan_notes(plan), set()
    for i, (method, t) in enumerate(plan.points):
        if method in slow:
            continue
        if job.should_stop():  # the server's per-job budget is spent
            notes.append(job.stopped_text(len(rows), len(plan.points), "measurements"))
            break
        bar.progress(i / len(plan.points), text=W(
            "sweep.progress", i=i + 1, n=len(plan.points), method=method, T=t,
            seconds=time.monotonic() - t0,
        ))  # fmt: skip
        rows.append(measured(probe, method, t))
        if rows[-1]["seconds"] > SLOW_S and t < plan.Ts[-1]:  # busy machine: say so
            slow.add(method)
            notes.append(W("sweep.slow", method=method, T=t, limit=SLOW_S))
    how = W(f"measure.how.{core.memory_source(dev)}")
    return dict(
        rows=rows, notes=notes, device=device_label(dev), how=how,
        backend=backend(probe), what=f"{probe.heads} heads × d_k = {probe.d_k}, {probe.dtype}",
    )  # fmt: skip


def run_sweep(plan, probe: Probe, status, shown) -> None:
    """Measure the plan: a finished sweep of it is shared, else queue for a slot (ui.jobs)."""
    if (old := st.session_state.get(SWEEP)) is not None:
        with shown.container():  # the previous sweep stays until the new one is ready
            sweep_result(old, plan, tag="previous")
    bar = status.progress(0.0, text="Starting…")
    dev, t0 = ui.device(), time.monotonic()
    try:
        st.session_state[SWEEP], _ = ui.jobs.shared(
            ui.jobs.results("cost-sweep", 16), SweepJob(tuple(plan.points), probe),
            lambda job: measure_all(job, plan, probe, bar, dev, t0), kind="sweep",
            what=f"{probe.heads}×{probe.d_k} to T {plan.Ts[-1]}",
            show=lambda s: bar.progress(0.0, s),
        )  # fmt: skip
        bar.empty()
    except ui.jobs.GaveUpError as e:
        bar.warning(str(e), icon=":material/hourglass_disabled:")


@st.fragment
def sweep_section(s: Settings) -> None:
    st.header("Measured on this device")
    plan = sweep_plan(s, s.heads, s.d_head)
    probe = Probe(s.heads, s.d_head, sweep_dtype(s), str(ui.device()), plan.block)
    what = W("sweep.what", heads=s.heads, d_k=s.d_head, dtype=probe.dtype, first=plan.Ts[0],
             last=plan.Ts[-1], n=len(plan.points))  # fmt: skip
    st.markdown(what + ("" if ui.device().type == "cuda" else " " + W("sweep.cpu")))
    for n in plan_notes(plan):
        st.warning(n, icon=":material/speed:")
    took = ui.jobs.limiter().typical_s("sweep", 0.0)  # this server's recent sweeps, if any
    go = st.button(
        "Run the sweep" + (f" (about {took:.0f} s here last time)" if took >= 0.5 else ""),
        icon=":material/play_arrow:", type="primary",
    )  # fmt: skip
    status, shown = st.empty(), st.empty()  # progress above the result
    if go:
        run_sweep(plan, probe, status, shown)
    with shown.container():
        sweep_result(st.session_state.get(SWEEP), plan)


def sweep_result(res: dict | None, plan, tag: str = "") -> None:
    """The last sweep: its notes, slopes and the memory and time charts (`tag` keys them:
    a run that draws the previous sweep while measuring may draw it again at the end)."""
    if res is None:
        st.info(W("sweep.press"))
        return
    for n in res["notes"]:
        if n not in plan_notes(plan):  # notes of the sweep shown, not already shown above
            st.warning(n, icon=":material/speed:")
    if not res["rows"]:  # stopped by the server's per-job budget before the first point
        return
    by = {m: [r for r in res["rows"] if r["method"] == m] for m in core.METHODS}
    series = {m: ([r["T"] for r in by[m]], [r["peak_bytes"] for r in by[m]]) for m in by}
    times = {m: ([r["T"] for r in by[m]], [r["seconds"] for r in by[m]]) for m in by}
    slopes = {m: core.fit_slope(*series[m]) for m in core.METHODS}
    for col, m in zip(st.columns(3), core.METHODS, strict=True):
        col.metric(f"Memory slope, {m}", f"{slopes[m]:.2f}")
    key = f"sweep-{tag}" if tag else None
    ui.show(
        fig.sweep_chart(series, slopes, what="memory", device=res["device"]), key=key and key + "m"
    )
    t_slopes = {m: core.fit_slope(*times[m]) for m in core.METHODS}
    ui.show(
        fig.sweep_chart(times, t_slopes, what="time", device=res["device"]), key=key and key + "t"
    )
    st.caption(W("sweep.caption", what=res["what"], device=res["device"], backend=res["backend"],
                 how=res["how"]))  # fmt: skip


def try_sweep(s: Settings) -> list[tuple[str, str]]:
    """The sweep's experiments, with where its plan stops `attention` at 64 heads."""
    plan = sweep_plan(s, SWEEP_TRY_HEADS, max(1, s.d_model // SWEEP_TRY_HEADS))
    reach = {m: max((t for mm, t in plan.points if mm == m), default=0) for m in core.METHODS}
    attention_top, top = reach["attention"], max(reach.values())
    budget = (
        W("try.sweep.stops", attention_top=attention_top, top=top)
        if attention_top < top
        else W("try.sweep.reaches", top=top)
    )
    return W.pairs("try.sweep", heads=SWEEP_TRY_HEADS, budget=budget)


def sweep_step(s: Settings) -> None:
    sweep_section(s)
    ui.try_this(try_sweep(s))


# ----------------------------------------------------------------------------- Walkthrough
def work_exercise(w: Walk, work: int) -> None:
    full = w.T * w.T
    ui.predict_number(
        f"cost-work-{w.T}-{w.block}-{w.causal}",
        W("exercise.work.q", T=w.T, block=w.block, causal="on" if w.causal else "off", full=full),
        100 * work / full,
        W("exercise.work.why", work=work, full=full),
        rel_tol=0.0, abs_tol=4.0, fmt="{:.3g} %", lo=0.0, hi=100.0,
    )  # fmt: skip


def walkthrough_step(_: Settings) -> None:
    st.header("FlashAttention, one tile at a time")
    walkthrough()  # a fragment: the walkthrough's controls rerun only it
    ui.try_this(W.pairs("try.walkthrough"))
    ui.explain("The online softmax in three lines", W("explain.online"), expanded=True)
    ui.explain("Why FlashAttention is faster although it does more arithmetic", W("explain.faster"))
    ui.explain("What it cannot give you: the weights", W("explain.weights"))


def tile_controls(top, bottom, exercise) -> tuple[Walk, int, bool]:
    """The walkthrough's five controls (its exercise drawn between the two rows)."""
    with top[0]:
        walk_T = ui.select_slider("walk_T", "Walkthrough length T", [8, 12, 16, 24, 32, 48, 64], 16)
    with top[1]:
        block = ui.select_slider(
            "block", "Block size (rows and columns per tile)", [2, 4, 8, 16], 4
        )
    with top[2]:
        causal = ui.toggle("causal", "Causal mask", False)
    w = Walk(walk_T, block, causal)
    with exercise:
        work_exercise(w, walk_trace(w)["work"])
    n = len(walk_trace(w)["steps"])
    if st.session_state.get("tiles", 0) > n:
        st.session_state["tiles"] = n  # a smaller grid has fewer tiles

    def nudge(delta: int) -> None:
        st.session_state["tiles"] = min(max(st.session_state.get("tiles", 1) + delta, 0), n)

    bottom[0].button("Back", icon=":material/skip_previous:", on_click=nudge, args=(-1,))
    bottom[1].button("Step", icon=":material/skip_next:", on_click=nudge, args=(1,))
    with bottom[2]:
        step = ui.slider("tiles", "Tiles processed", 0, n, 1)  # ?tiles= was ?step= before tabs
    with bottom[3]:
        stats = ui.toggle(
            "stats", "Show the running max m and sum l", False,
            help="Each row's running maximum and running sum: how the online softmax rescales "
            "what it has summed when a bigger score arrives.",
        )  # fmt: skip
    return w, step, stats


@st.fragment
def walkthrough() -> None:
    top = st.columns([2, 2, 1.2])
    notes = st.container()  # the five controls' link notes, above the exercise
    exercise = st.container()
    bottom = st.columns([1, 1, 2, 1.4], vertical_alignment="bottom")
    with notes, ui.noting():
        w, step, stats = tile_controls(top, bottom, exercise)
    ui.show(walk_chart(w, step, stats))
    n = len(walk_trace(w)["steps"])
    if step == n:
        st.success(
            W("walk.done", n=n, diff=walk_trace(w)["max_diff"]), icon=":material/check_circle:"
        )
    else:
        st.caption(W("walk.pending", n=n))


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls()
    ui.steps(
        {
            "Compute": compute_step,
            "Parallel": parallel_step,
            "Memory": memory_step,
            "KV cache": kv_step,
            "Sweep": sweep_step,
            "Walkthrough": walkthrough_step,
        },
        s,
    )
    ui.prev_next(FILE)


run()
