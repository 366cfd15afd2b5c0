"""Cost and FlashAttention: compute and memory against T, KV caches, a live measurement,
and the tiled online softmax step by step."""

import dataclasses
import time

import streamlit as st

import ui
from attn_core import (
    attention,
    attention_macs,
    attention_probs_bytes,
    causal_mask,
    crossover_T,
    device_label,
    device_memory_gib,
    fit_slope,
    format_bytes,
    kv_cache_bytes,
    measure_point,
    memory_how,
    plan_sweep,
    projection_macs,
    random_qkv,
    sdpa_backend,
    tile_grid,
    tiled_attention,
    trace_state,
)
from attn_core.lessons.cost import METHODS, PARALLEL_TS, qkv, time_parallel_vs_recurrent
from attn_core.tiled import scores_computed
from figures import cost as fig

FILE = "pages/cost.py"
STEPS = ("Compute", "Parallel", "Memory", "KV cache", "Sweep", "Walkthrough")
MODEL_KEYS = ("T", "d_model", "heads", "kv_heads", "batch", "layers", "dtype", "gpu_gb")
WALK_KEYS = ("walk_T", "block", "causal", "tiles", "stats")  # ?tiles= was ?step= before the tabs
HEADS = [1, 2, 4, 8, 12, 16, 32, 64]
GPUS = [8, 12, 16, 24, 32, 40, 48, 80, 96, 141, 192]
WALK_D_K, WALK_D_V = 8, 4
SWEEP = "_cost_sweep"  # session_state: the last sweep's results (small, plain Python)
SLOW_S = 1.5  # seconds: a method whose call takes longer stops climbing in T
WIDTHS = [16, 32, 64, 128, 256, 512]  # the parallel step's d: a whole table stays under ~2 s
PARALLEL = "_cost_parallel"  # session_state: {(width, device): rows} timed in this session


def fit_choice(asked: int, divides: int, name: str, why: str) -> int:
    """The largest head count <= asked that divides `divides`; a note when it had to change."""
    ok = max(h for h in HEADS if h <= min(asked, divides) and divides % h == 0)
    if ok != asked:
        reason = f"is more than {why}" if asked > divides else f"does not divide {why} evenly"
        ui.note(f"`{name}={asked}` {reason}; using **{ok}** instead.")
    return ok


# Charts are cached as resources (shared, only ever read) keyed by the controls they use:
# a rerun whose values they do not depend on builds nothing.
charts = st.cache_resource(max_entries=64, show_spinner=False)
flops_chart = charts(fig.flops_chart)
probs_memory_chart = charts(fig.probs_memory_chart)
kv_cache_chart = charts(fig.kv_cache_chart)


@st.cache_resource(max_entries=16, show_spinner=False)
def walk_trace(walk_T: int, block: int, causal: bool):
    """Scores, exact output and tiled trace for the walkthrough (T <= 64: the CPU is fastest)."""
    q, k, v = random_qkv(walk_T, WALK_D_K, d_v=WALK_D_V, seed=3)
    mask = causal_mask(walk_T) if causal else None
    exact = attention(q, k, v, mask)
    out, steps = tiled_attention(q, k, v, block_q=block, block_k=block, causal=causal, trace=True)
    full = trace_state(steps, len(steps), walk_T)
    return dict(
        steps=steps,
        scores=exact.scores.numpy(),
        exact=exact.output.numpy(),
        m_final=full.m.numpy(),
        l_final=full.l.numpy(),
        max_diff=float((out - exact.output).abs().max()),
        tiles=tile_grid(walk_T, walk_T, block, block, causal),
        work=scores_computed(steps),
    )


@st.cache_data(max_entries=256, show_spinner=False)
def walk_state(walk_T: int, block: int, causal: bool, step: int) -> dict:
    s = trace_state(walk_trace(walk_T, block, causal)["steps"], step, walk_T)
    cur = s.current
    return dict(
        m=s.m.numpy(), l=s.l.numpy(), out=s.out.numpy(), cur=(cur.rows, cur.cols) if cur else None
    )


@charts
def walk_chart(walk_T: int, block: int, causal: bool, step: int, stats: bool):
    w, s = walk_trace(walk_T, block, causal), walk_state(walk_T, block, causal, step)
    return fig.walkthrough_chart(
        w["scores"], w["tiles"], s["out"], w["exact"], s["m"], s["l"], w["m_final"],
        w["l_final"], block_q=block, block_k=block, step=step, current=s["cur"], stats=stats,
    )  # fmt: skip


@st.cache_data(max_entries=96, show_spinner=False)
def measured(method: str, T: int, heads: int, d_k: int, dtype: str, device: str, block: int):
    point = ui.jobs.call(  # in a worker process (ui.jobs.call), like every heavy job
        measure_point, method, T, heads=heads, d_k=d_k, dtype=dtype, device=device, block=block
    )
    return dataclasses.asdict(point)


@st.cache_data(max_entries=8, show_spinner=False)
def backend(heads: int, d_k: int, dtype: str, device: str) -> str:
    return sdpa_backend(*qkv(1, heads, 256, d_k, dtype, device))


def parallel_timings(width: int, device: str, show) -> list[dict]:
    """The recurrence against one matmul at every T of PARALLEL_TS, timed once per server
    in a heavy-job slot (ui.jobs): a timing on a busy server measures the other jobs."""

    def work(_job) -> list[dict]:  # a second or two: no point to stop at inside it
        rows = ui.jobs.call(time_parallel_vs_recurrent, PARALLEL_TS, width, device=device)
        return [dataclasses.asdict(r) for r in rows]

    rows, _ = ui.jobs.shared(
        ui.jobs.results("cost-parallel", 6), (width, device), work, kind="timing",
        what=f"parallel vs recurrent at d {width}", show=show,
    )  # fmt: skip
    return rows


MACS_CHOICES = (
    "the Q, K, V and output projections",
    "the attention itself (scores and weighted sum)",
    "both exactly the same",
)


def macs_exercise(T: int, d_model: int, p: int, a: int, cross: int) -> bool:
    correct = MACS_CHOICES[0 if p > a else 1 if a > p else 2]
    return ui.predict_choice(
        f"cost-macs-{T}-{d_model}",
        f"One attention layer with T = **{T:,}** tokens and d_model = **{d_model}**. Which "
        "part does more multiply–adds?",
        MACS_CHOICES, correct,
        "The four projections each multiply a T × d matrix by a d × d one: 4·T·d², "
        "growing *linearly* with T. The attention compares every query with every key and "
        "then mixes the values: 2·T²·d, growing with T². Their ratio is "
        f"2·T²·d / 4·T·d² = T / 2d = {T / (2 * d_model):.3g} here, so the quadratic part only "
        f"takes over past T = 2·d_model = {cross:,}. For short inputs and wide models the "
        "ordinary matrix products cost more than the famous T² term; the T² part decides the "
        "bill only once the context is long.",
        truth=f"Projections {fig.si(p)} MACs, attention {fig.si(a)} MACs.",
        secret=[fig.si(p), fig.si(a)],
    )  # fmt: skip


def compute_section(T: int, d_model: int) -> None:
    st.subheader("Compute: where the multiply–adds go")
    p, a, cross = projection_macs(T, d_model), attention_macs(T, d_model), crossover_T(d_model)
    if not macs_exercise(T, d_model, p, a, cross):  # the counts and the chart answer it
        ui.until_reveal("The two counts and the chart of where they cross")
        return
    c = st.columns(3)
    c[0].metric("Projections, 4·T·d² (MACs)", fig.si(p))
    c[1].metric("Attention, 2·T²·d (MACs)", fig.si(a))
    c[2].metric("Crossover T = 2·d", f"{cross:,}")
    ui.show(flops_chart(d_model, T))
    ui.try_this(fig.try_compute(d_model))
    ui.explain(*fig.EXPLAIN_COST)


@st.fragment
def parallel_section() -> None:
    st.subheader("Every score at once: attention against a recurrence")
    st.markdown(fig.PARALLEL_INTRO)
    with st.columns([2, 3])[0]:
        width = ui.select_slider("width", "Width d (vectors and recurrent state)", WIDTHS, 64)
    ui.show_notes(keys=("width",))
    dev = ui.device()
    done = st.session_state.setdefault(PARALLEL, {})
    if st.button("Time both", icon=":material/play_arrow:", type="primary"):
        box = st.empty()
        try:
            with st.spinner(f"Timing T = {PARALLEL_TS[0]:,} … {PARALLEL_TS[-1]:,} …"):
                show = lambda s: box.info(s, icon=":material/hourglass:")  # noqa: E731
                done[(width, str(dev))] = parallel_timings(width, str(dev), show)
            box.empty()
        except ui.jobs.GaveUpError as e:
            box.warning(str(e), icon=":material/hourglass_disabled:")
    rows = done.get((width, str(dev)))
    if rows is None:
        st.info(f"Press **Time both** to time them here at width d = {width} (a second or two).")
    else:
        label = device_label(dev)
        st.markdown(fig.parallel_summary(rows, label))
        st.markdown(fig.parallel_table_md(rows))
        ui.show(fig.parallel_chart(rows, label))
    ui.try_this(fig.TRY_PARALLEL)


def memory_section(T, heads, batch, layers, dtype, gpu_gb) -> None:
    st.subheader("Memory: the T×T wall")
    per, total = (attention_probs_bytes(batch, heads, T, dtype, n) for n in (1, layers))
    grow = attention_probs_bytes(batch, heads, 2 * T, dtype) // per  # computed, not typed in
    shown = ui.predict_choice(
        "double_T", "You double the sequence length T. The stored probabilities grow by…",
        ["×2", "×4", "×8"], f"×{grow}",
        "Every head stores one weight per (query, key) pair: T² of them. Twice the queries "
        "times twice the keys is four times the memory, which is why long context hits the "
        "memory wall first.",
        truth=f"{format_bytes(per)} → {format_bytes(per * grow)} per layer.",
        secret=[format_bytes(per * grow)],  # the size at 2T: the chart's curve has it
    )  # fmt: skip
    c = st.columns(3)
    c[0].metric("Probabilities, one layer", format_bytes(per))
    c[1].metric(f"All {layers} layers", format_bytes(total))
    c[2].metric(f"Of a {gpu_gb:g} GiB GPU", fig.gpu_share(total, gpu_gb))
    if not shown:  # the curve over T is the answer
        ui.until_reveal("The chart of memory against T")
        return
    ui.show(probs_memory_chart(batch, heads, dtype, layers, gpu_gb, T))
    ui.try_this(fig.try_memory(batch, heads, layers, dtype, gpu_gb, T))


def kv_section(T, d_model, heads, kv_heads, batch, layers, dtype, gpu_gb) -> None:
    st.subheader("The KV cache at inference: MHA, GQA, MQA")
    d_head = d_model // heads
    mha, gqa, mqa = (
        kv_cache_bytes(batch, T, layers, n, d_head, dtype) for n in (heads, kv_heads, 1)
    )
    c = st.columns(3)
    c[0].metric("MHA cache", format_bytes(mha))
    c[1].metric(f"GQA cache ({kv_heads} K/V heads)", format_bytes(gqa))
    c[2].metric("MQA saves a factor", f"{mha // mqa}× (= h)")
    ui.show(kv_cache_chart(batch, T, layers, heads, kv_heads, d_head, dtype, gpu_gb))
    ui.try_this(fig.try_kv_cache(batch, layers, heads, kv_heads, d_head, dtype, gpu_gb))


@st.fragment
def sweep_section(T: int, heads: int, d_k: int, dtype: str) -> None:
    st.subheader("Measured on this device")
    dev = ui.device()
    sweep_dtype = dtype if dev.type == "cuda" else "float32"
    plan = plan_sweep(T, batch=1, heads=heads, d_k=d_k, dtype=sweep_dtype, device=dev)
    st.markdown(
        f"One sequence, {heads} heads of d_k = {d_k}, {sweep_dtype}, T = {plan.Ts[0]} … "
        f"{plan.Ts[-1]:,}: {len(plan.points)} measurements of `attention`, `tiled_attention` "
        f"and `fused_attention`."
        + ("" if dev.type == "cuda" else " (On a CPU the sweep always runs in float32.)")
    )
    for n in plan.notes:
        st.warning(n, icon=":material/speed:")
    took = ui.jobs.limiter().typical_s("sweep", 0.0)  # this server's recent sweeps, if any
    go = st.button(
        "Run the sweep" + (f" (about {took:.0f} s here last time)" if took >= 0.5 else ""),
        icon=":material/play_arrow:", type="primary",
    )  # fmt: skip
    status, shown = st.empty(), st.empty()  # progress above the result
    if go:
        if (old := st.session_state.get(SWEEP)) is not None:
            with shown.container():  # the previous sweep stays until the new one is ready
                sweep_result(old, plan, tag="previous")
        bar = status.progress(0.0, text="Starting…")
        t0 = time.monotonic()

        def work(job) -> dict:  # runs once a heavy-job slot is free (ui.jobs)
            rows, notes, slow = [], list(plan.notes), set()
            for i, (method, t) in enumerate(plan.points):
                if method in slow:
                    continue
                if job.should_stop():  # the server's per-job budget is spent
                    notes.append(job.stopped_text(len(rows), len(plan.points), "measurements"))
                    break
                bar.progress(
                    i / len(plan.points),
                    text=f"Measurement {i + 1} of {len(plan.points)}: `{method}` at T = {t:,} · "
                    f"{time.monotonic() - t0:.0f} s",
                )
                rows.append(measured(method, t, heads, d_k, sweep_dtype, str(dev), plan.block))
                if rows[-1]["seconds"] > SLOW_S and t < plan.Ts[-1]:  # busy machine: say so
                    slow.add(method)
                    notes.append(
                        f"`{method}` stopped after T = {t:,}: one call took over {SLOW_S} s."
                    )
            return dict(
                rows=rows, notes=notes, device=device_label(dev), how=memory_how(dev),
                backend=backend(heads, d_k, sweep_dtype, str(dev)),
                what=f"{heads} heads × d_k = {d_k}, {sweep_dtype}",
            )  # fmt: skip

        try:  # a finished sweep of this plan is shared; else queue for a slot and measure
            key = (tuple(plan.points), heads, d_k, sweep_dtype, str(dev), plan.block)
            st.session_state[SWEEP], _ = ui.jobs.shared(
                ui.jobs.results("cost-sweep", 16), key, work, kind="sweep",
                what=f"{heads}×{d_k} to T {plan.Ts[-1]}", show=lambda s: bar.progress(0.0, s),
            )  # fmt: skip
            bar.empty()
        except ui.jobs.GaveUpError as e:
            bar.warning(str(e), icon=":material/hourglass_disabled:")
    with shown.container():
        sweep_result(st.session_state.get(SWEEP), plan)


def sweep_result(res: dict | None, plan, tag: str = "") -> None:
    """The last sweep: its notes, slopes and the memory and time charts (`tag` keys them:
    a run that draws the previous sweep while measuring may draw it again at the end)."""
    if res is None:
        st.info(
            "Press **Run the sweep** to time the three paths here; the bar says what is being "
            "measured."
        )
        return
    if not res["rows"]:  # stopped by the server's per-job budget before the first point
        for n in res["notes"]:
            if n not in plan.notes:
                st.warning(n, icon=":material/speed:")
        return
    by = {m: [r for r in res["rows"] if r["method"] == m] for m in METHODS}
    series = {m: ([r["T"] for r in by[m]], [r["peak_bytes"] for r in by[m]]) for m in METHODS}
    times = {m: ([r["T"] for r in by[m]], [r["seconds"] for r in by[m]]) for m in METHODS}
    slopes = {m: fit_slope(*series[m]) for m in METHODS}
    for n in res["notes"]:
        if n not in plan.notes:  # notes of the sweep shown, not already shown above
            st.warning(n, icon=":material/speed:")
    c = st.columns(3)
    for col, m in zip(c, METHODS, strict=True):
        col.metric(f"Memory slope, {m}", f"{slopes[m]:.2f}")
    key = f"sweep-{tag}" if tag else None
    ui.show(
        fig.sweep_chart(series, slopes, what="memory", device=res["device"]), key=key and key + "m"
    )
    t_slopes = {m: fit_slope(*times[m]) for m in METHODS}
    ui.show(
        fig.sweep_chart(times, t_slopes, what="time", device=res["device"]), key=key and key + "t"
    )
    st.caption(
        f"Last sweep: {res['what']} on {res['device']}. `fused_attention` ran PyTorch's "
        f"**{res['backend']}** kernel, as the profiler reports it. Peak memory comes from "
        f"{res['how']}; it includes q, k and v."
    )


SWEEP_TRY_HEADS = 64  # the sweep's "Try this" sends the reader to this many heads


def sweep_try(T: int, d_model: int, dtype: str) -> list[tuple[str, str]]:
    """The sweep's experiments, with where its plan stops `attention` at 64 heads."""
    dev = ui.device()
    plan = plan_sweep(
        T, batch=1, heads=SWEEP_TRY_HEADS, d_k=max(1, d_model // SWEEP_TRY_HEADS),
        dtype=dtype if dev.type == "cuda" else "float32", device=dev,
    )  # fmt: skip
    reach = {m: max((t for mm, t in plan.points if mm == m), default=0) for m in METHODS}
    return fig.try_sweep(SWEEP_TRY_HEADS, reach["attention"], max(reach.values()))


def work_exercise(walk_T: int, block: int, causal: bool, work: int) -> None:
    full = walk_T * walk_T
    ui.predict_number(
        f"cost-work-{walk_T}-{block}-{causal}",
        f"T = **{walk_T}**, tiles of **{block} × {block}**, causal mask **"
        f"{'on' if causal else 'off'}**. Out of the T × T = {full} scores q·k, what percentage "
        "does the tiled loop actually compute? (Count every entry of every tile it visits.)",
        100 * work / full,
        "FlashAttention does not skip any arithmetic that full attention needs: without a "
        "mask it visits every tile and computes all T² scores, exactly like the naive path. "
        "What it saves is *memory* — each tile's scores live only while that tile is being "
        "folded in, never as a T × T matrix. A causal mask does save work, but only for "
        "tiles that lie wholly above the diagonal; tiles that the diagonal cuts through are "
        "computed in full and their future entries thrown away. That is why the share stays "
        "above one half and comes closer to it as the blocks get smaller relative to T. "
        f"(Here: {work} of {full} scores.)",
        rel_tol=0.0, abs_tol=4.0, fmt="{:.3g} %", lo=0.0, hi=100.0,
    )  # fmt: skip


def walkthrough_step() -> None:
    st.subheader("FlashAttention, one tile at a time")
    walkthrough()  # a fragment: the walkthrough's controls rerun only it
    ui.try_this(fig.TRY_WALKTHROUGH)
    ui.explain(*fig.EXPLAIN_ONLINE, expanded=True)
    ui.explain(*fig.EXPLAIN_FASTER)
    ui.explain(*fig.EXPLAIN_WEIGHTS)


@st.fragment
def walkthrough() -> None:
    c = st.columns([2, 2, 1.2])
    with c[0]:
        walk_T = ui.select_slider("walk_T", "Walkthrough length T", [8, 12, 16, 24, 32, 48, 64], 16)
    with c[1]:
        block = ui.select_slider(
            "block", "Block size (rows and columns per tile)", [2, 4, 8, 16], 4
        )
    with c[2]:
        causal = ui.toggle("causal", "Causal mask", False)
    w = walk_trace(walk_T, block, causal)
    notes = st.container()  # filled once the tile slider exists, so its note shows too
    work_exercise(walk_T, block, causal, w["work"])
    n = len(w["steps"])
    if st.session_state.get("tiles", 0) > n:
        st.session_state["tiles"] = n  # a smaller grid has fewer tiles
    c = st.columns([1, 1, 2, 1.4], vertical_alignment="bottom")

    def nudge(delta: int) -> None:
        st.session_state["tiles"] = min(max(st.session_state.get("tiles", 1) + delta, 0), n)

    c[0].button("Back", icon=":material/skip_previous:", on_click=nudge, args=(-1,))
    c[1].button("Step", icon=":material/skip_next:", on_click=nudge, args=(1,))
    with c[2]:
        step = ui.slider("tiles", "Tiles processed", 0, n, 1)
    with c[3]:
        stats = ui.toggle(
            "stats", "Show the running max m and sum l", False,
            help="Each row's running maximum and running sum: how the online softmax rescales "
            "what it has summed when a bigger score arrives.",
        )  # fmt: skip
    with notes:
        ui.show_notes(keys=WALK_KEYS)
    ui.show(walk_chart(walk_T, block, causal, step, stats))
    if step == n:
        st.success(
            f"All {n} tiles done. Largest difference from full softmax attention: "
            f"**{w['max_diff']:.2g}** — float32 rounding, not an approximation.",
            icon=":material/check_circle:",
        )
    else:
        st.caption(f"Step to {n} to compare the finished output with full softmax attention.")


def model_controls() -> tuple:
    """The sidebar: one model and one GPU, shared by the calculators and the sweep."""
    dev = ui.device()
    here = device_memory_gib(dev)
    gpus = sorted(set(GPUS) | ({round(here)} if here else set()))
    with ui.controls_area():
        st.markdown("#### Model and hardware")
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
    heads = fit_choice(heads, d_model, "heads", f"d_model = {d_model}")
    kv_heads = fit_choice(kv_heads, heads, "kv_heads", f"the {heads} query heads")
    ui.show_notes(keys=MODEL_KEYS)  # above the tabs: the sidebar feeds four of them
    return T, d_model, heads, kv_heads, batch, layers, dtype, gpu_gb


def run() -> None:
    ui.page_header(FILE, fig.INTRO)
    T, d_model, heads, kv_heads, batch, layers, dtype, gpu_gb = model_controls()
    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            compute_section(T, d_model)
    with tabs[1]:
        if tabs[1].open:
            parallel_section()
    with tabs[2]:
        if tabs[2].open:
            memory_section(T, heads, batch, layers, dtype, gpu_gb)
    with tabs[3]:
        if tabs[3].open:
            kv_section(T, d_model, heads, kv_heads, batch, layers, dtype, gpu_gb)
    with tabs[4]:
        if tabs[4].open:
            sweep_section(T, heads, d_model // heads, dtype)
            ui.try_this(sweep_try(T, d_model, dtype))
    with tabs[5]:
        if tabs[5].open:
            walkthrough_step()
    ui.prev_next(FILE)


run()
