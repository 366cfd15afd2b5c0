"""Time and peak memory of the three attention paths, measured on this device.

- `attention`        the explicit path: builds raw scores, scaled scores and weights, each T×T.
- `tiled_attention`  the online softmax in plain torch: one block_q × block_k tile at a time.
- `fused_attention`  F.scaled_dot_product_attention: PyTorch's fused kernel.

How peak memory is measured
- CUDA: `torch.cuda.max_memory_allocated` after `reset_peak_memory_stats`, minus what was
  allocated before the call.
- CPU: PyTorch keeps no peak counter for the CPU, so the call runs once under
  `torch.profiler` with `profile_memory=True`, which records every allocation and free
  the CPU allocator makes (including a kernel's private scratch buffers). Replaying them
  in time order gives the highest running total. If that event tree is unavailable, the
  public per-operator memory figures are replayed instead (they miss buffers an operator
  frees before it returns).
Either way the reported peak is the bytes of q, k, v plus the most the call held on top
of them, so the numbers mean the same thing on both devices.
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from ..attention import attention, fused_attention
from ..cost import attention_macs, attention_probs_bytes, projection_macs
from ..device import dtype_bytes, parse_dtype
from ..tiled import tiled_attention

METHODS = ("attention", "tiled_attention", "fused_attention")

# What torch calls each fused backend in the profiler, and what we call it on the page.
SDPA_BACKENDS = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash attention (CPU kernel)",
    "aten::_scaled_dot_product_flash_attention": "flash attention",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient attention",
    "aten::_scaled_dot_product_cudnn_attention": "cuDNN attention",
    "aten::_scaled_dot_product_fused_attention_overrideable": "a device-specific fused kernel",
    "aten::_scaled_dot_product_attention_math": "math (unfused) attention",
}


@dataclass(frozen=True)
class Measurement:
    method: str
    T: int
    seconds: float  # median wall-clock time of one call
    peak_bytes: int  # bytes of q, k, v + the most the call held on top of them


@dataclass(frozen=True)
class SweepStop:
    """Why a sweep stops where it does; the page words it (content/cost.md `sweep.stop.*`).

    kind "cap": T = `asked` is past this device's ceiling `T` (`on` "gpu", or "cpu" for a
    model of width `d_model`); "tiles": `method` stops before `T`, where its `tiles` tiles of
    `block` × `block` would be more than a CPU sweep profiles; "budget": `method` stops
    before `T`, where it would need `need_bytes`, more than the sweep's `budget_bytes`.
    """

    kind: str
    T: int
    method: str = ""
    asked: int = 0
    on: str = ""
    d_model: int = 0
    tiles: int = 0
    block: int = 0
    need_bytes: int = 0
    budget_bytes: int = 0


@dataclass
class SweepPlan:
    """Which (method, T) points a sweep will measure, and why it stops where it does."""

    Ts: list[int]
    points: list[tuple[str, int]]
    stops: list[SweepStop] = field(default_factory=list)
    budget_bytes: int = 0
    block: int = 64


def memory_source(device: torch.device | str) -> str:
    """How peak memory is measured on `device`: "cuda" (the allocator's peak) or "cpu"
    (the profiler's allocations replayed); content/cost.md `measure.how.<source>` says it."""
    return "cuda" if torch.device(device).type == "cuda" else "cpu"


def make_call(method: str, q, k, v, *, block: int = 64) -> Callable[[], torch.Tensor]:
    """A no-argument function running one attention path on (q, k, v)."""
    if method == "attention":
        return lambda: attention(q, k, v).output  # the weights exist while the call runs
    if method == "tiled_attention":
        return lambda: tiled_attention(q, k, v, block_q=block, block_k=block)
    if method == "fused_attention":
        return lambda: fused_attention(q, k, v)
    raise ValueError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _replay_peak(deltas: list[tuple[float, int]]) -> int:
    cur = peak = 0
    for _, d in sorted(deltas, key=lambda e: e[0]):
        cur += d
        peak = max(peak, cur)
    return peak


def _profiled_peak(fn: Callable[[], torch.Tensor]) -> int:
    """Peak bytes the CPU allocator held during fn() on top of what existed before."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        r = fn()
        del r  # the output is part of the peak, then released
    try:  # every allocation and free, even those inside one operator
        from torch._C._profiler import _EventType

        deltas: list[tuple[float, int]] = []
        todo = list(prof.profiler.kineto_results.experimental_event_tree())
        while todo:
            node = todo.pop()
            if node.tag == _EventType.Allocation:
                deltas.append((node.start_time_ns, int(node.extra_fields.alloc_size)))
            todo.extend(node.children)
        if deltas:
            return _replay_peak(deltas)
    except (ImportError, AttributeError):  # pragma: no cover - older/newer torch
        pass
    # Fallback (public API): net memory per operator, in time order.
    deltas = []
    for e in prof.events():
        if e.name == "[memory]" or not e.cpu_children:
            deltas.append((e.time_range.start, int(e.cpu_memory_usage)))
    return _replay_peak(deltas)


def peak_memory_bytes(fn: Callable[[], torch.Tensor], device, inputs_bytes: int = 0) -> int:
    """Peak memory of one call of fn: inputs_bytes + the most it held on top of them."""
    device = torch.device(device)
    if device.type == "cuda":
        _sync(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        r = fn()
        _sync(device)
        del r
        extra = torch.cuda.max_memory_allocated(device) - before
    else:
        extra = _profiled_peak(fn)
    return inputs_bytes + max(int(extra), 0)


def _timed(fn: Callable[[], torch.Tensor], device: torch.device) -> float:
    """Seconds of one call of fn, the device's queue drained before and after."""
    _sync(device)
    t0 = time.perf_counter()
    r = fn()
    _sync(device)
    dt = time.perf_counter() - t0
    del r
    return dt


def time_call(
    fn: Callable[[], torch.Tensor], device, *, budget_s: float = 0.3, reps: int = 5, stat=None
):
    """Median seconds of fn(): one warm-up call, then up to `reps` timed calls within budget_s.

    `stat` replaces the median (e.g. `min`, the least disturbed run on a busy machine).

    A call slower than budget_s is timed once (its warm-up), which is accurate enough
    on a log axis and keeps a sweep short.
    """
    device = torch.device(device)
    first = _timed(fn, device)
    if first > budget_s:
        return first
    times: list[float] = []
    while len(times) < reps and sum(times) < budget_s:
        times.append(_timed(fn, device))
    return (stat or statistics.median)(times)


def sdpa_backend(q, k, v) -> str:
    """Which fused kernel F.scaled_dot_product_attention chose, as the profiler names it."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fused_attention(q, k, v)
        _sync(q.device)
    names = {e.name for e in prof.events()}
    for op, label in SDPA_BACKENDS.items():
        if op in names:
            return label
    return "not reported by this version of torch"


def qkv(batch: int, heads: int, T: int, d_k: int, dtype, device, seed: int = 0):
    """Random (batch, heads, T, d_k) q, k, v made directly on the device."""
    g = torch.Generator(device=device).manual_seed(seed)
    shape = (batch, heads, T, d_k)
    dt = parse_dtype(dtype)
    return tuple(torch.randn(shape, generator=g, device=device, dtype=dt) for _ in range(3))


def measure_point(
    method: str,
    T: int,
    *,
    batch: int = 1,
    heads: int = 1,
    d_k: int = 64,
    dtype="float32",
    device="cpu",
    block: int = 64,
    seed: int = 0,
) -> Measurement:
    """Time and peak memory of one path at one T."""
    device = torch.device(device)
    q, k, v = qkv(batch, heads, T, d_k, dtype, device, seed)
    fn = make_call(method, q, k, v, block=block)
    with torch.no_grad():
        seconds = time_call(fn, device)
        peak = peak_memory_bytes(fn, device, inputs_bytes=3 * q.numel() * q.element_size())
    return Measurement(method=method, T=T, seconds=seconds, peak_bytes=peak)


def predicted_peak_bytes(
    method: str, batch: int, heads: int, T: int, d_k: int, dtype, block: int = 64
) -> int:
    """A deliberately generous estimate of a call's peak, used to stop a sweep in time.

    attention holds raw scores, scaled scores and weights (three T×T per head) plus
    a temporary; the other two hold one output-sized buffer plus small tiles.
    """
    b = dtype_bytes(dtype)
    vecs = 4 * batch * heads * T * d_k * b  # q, k, v and the output
    if method == "attention":
        return vecs + 4 * batch * heads * T * T * b
    tile = 4 * batch * heads * block * block * 4
    return 2 * vecs + tile + (16 << 20)


# On a CPU the sweep runs inside the web server, next to every other session, and one
# press may add at most 600 MB to the server's memory. predicted_peak_bytes counts four
# T×T matrices for the explicit path; it really holds three plus q, k, v and the output,
# 0.76–0.83 of the prediction, and the process adds up to ~110 MB on top (measured with
# bench/jobs.py). 544 MiB of prediction keeps the worst press near 500 MB.
CPU_SWEEP_BUDGET = 544 << 20
# On a CPU, peak memory comes from the profiler, which keeps a record of every operation
# of every tile: 1024 tiles of tiled_attention cost the server ~150 MB of records, 4096
# tiles ~770 MB (more than the attention itself). So a CPU sweep profiles at most this many.
MAX_PROFILED_TILES = 1024


def memory_budget_bytes(device) -> int:
    """How much memory a sweep may use: half the free GPU memory; on a CPU
    CPU_SWEEP_BUDGET at most (a quarter of the free memory if that is less)."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free * 0.5)
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        avail = 4 << 30
    return int(min(CPU_SWEEP_BUDGET, avail // 4))


def max_sweep_T(device, d_model: int) -> int:
    """The largest T a sweep visits here (time on this device)."""
    device = torch.device(device)
    if device.type == "cuda":
        return 16384
    # Keep one call of the explicit path under roughly 2·10¹⁰ multiply-adds (≈ a second here).
    macs_cap = 2e10
    T = 256
    while T < 4096 and 2 * (2 * T) ** 2 * d_model <= macs_cap:
        T *= 2
    return T


def plan_sweep(
    T_top: int,
    *,
    batch: int,
    heads: int,
    d_k: int,
    dtype,
    device,
    budget_bytes: int | None = None,
    min_top: int = 2048,
) -> SweepPlan:
    """Powers of two from 256 up to T_top (at least `min_top`), capped for time and memory.

    The sweep reaches at least 2048 because below that a tile's fixed buffers still
    rival the O(T) inputs and output, and the memory slopes would not show their
    asymptotic values yet. A method drops out at the first T whose predicted peak
    passes the memory budget; the others go on, which is the point of the comparison.
    """
    device = torch.device(device)
    cap = max_sweep_T(device, heads * d_k)
    stops = []
    top = max(min_top, 2 ** int(math.log2(max(T_top, 1))))
    if top > cap:
        if T_top > cap:
            on = "gpu" if device.type == "cuda" else "cpu"
            stops.append(SweepStop("cap", cap, asked=T_top, on=on, d_model=heads * d_k))
        top = cap
    Ts = [2**i for i in range(8, int(math.log2(top)) + 1)]
    budget = memory_budget_bytes(device) if budget_bytes is None else budget_bytes
    block = 64 if device.type == "cpu" else 128
    points = []
    for method in METHODS:
        for T in Ts:
            tiles = math.ceil(T / block) ** 2
            if method == "tiled_attention" and device.type == "cpu" and tiles > MAX_PROFILED_TILES:
                stops.append(SweepStop("tiles", T, method=method, tiles=tiles, block=block))
                break
            need = predicted_peak_bytes(method, batch, heads, T, d_k, dtype, block)
            if need > budget:
                stops.append(
                    SweepStop("budget", T, method=method, need_bytes=need, budget_bytes=budget)
                )
                break
            points.append((method, T))
    return SweepPlan(Ts=Ts, points=points, stops=stops, budget_bytes=budget, block=block)


def fit_slope(Ts: list[int], ys: list[float], last: int = 3) -> float:
    """Least-squares slope of log y against log T over the largest `last` points.

    Fixed overheads (Python, scratch buffers) flatten the small-T end, so the
    asymptotic exponent shows best at the large-T end. NaN with fewer than 2 points.
    """
    pts = [(math.log(t), math.log(y)) for t, y in zip(Ts, ys, strict=True) if y > 0][-last:]
    if len(pts) < 2:
        return float("nan")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx


def device_memory_gib(device) -> float | None:
    """Total memory of a GPU in GiB (None on a CPU or MPS, where it is not one fixed number)."""
    device = torch.device(device)
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_properties(device).total_memory / 2**30


# ------------------------------------------------------------------------ the calculators
# The Compute and Memory steps draw their formulas over T = 16 … 131072 (powers of two).

T_MIN, T_MAX = 16, 131072
GIB = 2**30


def pow2_range(lo: int = T_MIN, hi: int = T_MAX) -> np.ndarray:
    """Every power of two from lo to hi, as float64 (a log axis's points)."""
    return 2 ** np.arange(int(math.log2(lo)), int(math.log2(hi)) + 1, dtype=np.float64)


def macs_against_T(d_model: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Ts, projection MACs 4·T·d², attention MACs 2·T²·d) per layer over T_MIN … T_MAX."""
    Ts = pow2_range()
    proj = np.array([projection_macs(int(t), d_model) for t in Ts], dtype=np.float64)
    attn = np.array([attention_macs(int(t), d_model) for t in Ts], dtype=np.float64)
    return Ts, proj, attn


def probs_bytes_against_T(
    batch: int, heads: int, dtype: str, layers: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Ts, bytes of one layer's stored probabilities b·h·T², of all layers) over T_MIN … T_MAX."""
    Ts = pow2_range()
    per = attention_probs_bytes(batch, heads, 1, dtype) * Ts**2  # one layer: b·h·T²·bytes
    return Ts, per, per * layers


def largest_fitting_T(batch: int, heads: int, dtype: str, layers: int, gpu_gb: float) -> int:
    """The largest power-of-two T whose stored probabilities (all layers) fit the GPU; 0 if none."""
    per_T2 = attention_probs_bytes(batch, heads, 1, dtype, layers)  # bytes per unit of T²
    fits = [int(t) for t in pow2_range(1, T_MAX * 8) if per_T2 * int(t) ** 2 <= gpu_gb * GIB]
    return max(fits, default=0)


# ------------------------------------------------------------------------ parallel vs recurrent
# Attention's T² scores do not depend on one another: q_i·k_j needs only row i of Q and
# row j of K, so one matmul computes them all at once. A recurrent network's state at step t
# needs the state at step t-1: T steps that cannot overlap, however many cores there are.

PARALLEL_TS = (64, 128, 256, 512, 1024, 2048)


def recurrence(x: torch.Tensor, W_hh: torch.Tensor, W_ih: torch.Tensor) -> torch.Tensor:
    """h_t = tanh(W_hh h_{t-1} + W_ih x_t) for t = 1…T, h_0 = 0: (B, T, d_in) -> (B, T, d).

    The same update as torch.nn.RNN(nonlinearity="tanh", bias=False) with
    weight_hh_l0 = W_hh (d, d) and weight_ih_l0 = W_ih (d, d_in).
    """
    B, T, _ = x.shape
    u = x @ W_ih.T  # (B, T, d): the input half needs no earlier state, so all T at once
    h = x.new_zeros(B, W_hh.shape[0])  # (B, d)
    states = []
    for t in range(T):  # the dependency chain: step t cannot start before step t-1 ends
        h = torch.tanh(u[:, t] + h @ W_hh.T)  # (B, d)
        states.append(h)
    return torch.stack(states, dim=1)  # (B, T, d)


@dataclass(frozen=True)
class ParallelTiming:
    """One T: the parallel paths against the recurrence, all of width d, on one device."""

    T: int
    d: int
    loop_s: float  # recurrence(): a Python loop of T dependent steps
    rnn_s: float  # torch.nn.RNN: the same T dependent steps in PyTorch's compiled loop
    scores_s: float  # q @ kᵀ: all T² scores in one matmul
    attention_s: float  # attention(q, k, v): scores, softmax and the weighted sum of v
    sequential_steps: int  # dependent steps of the recurrence: T (the scores: 1 matmul)
    recurrent_macs: int  # 2·T·d²: W_ih x_t and W_hh h_{t-1} at every step
    attention_macs: int  # 2·T²·d: q kᵀ and weights @ v


def recurrent_weights(d: int, *, seed: int = 0, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """(W_hh, W_ih), each (d, d) with N(0, 1/d) entries: tanh stays out of saturation."""
    g = torch.Generator().manual_seed(seed)
    W_hh, W_ih = (torch.randn(d, d, generator=g) / math.sqrt(d) for _ in range(2))
    return W_hh.to(device), W_ih.to(device)


def time_parallel_vs_recurrent(
    Ts=PARALLEL_TS, d: int = 64, *, device="cpu", budget_s: float = 0.1, reps: int = 5,
    seed: int = 0,
) -> list[ParallelTiming]:  # fmt: skip
    """The four paths at each T, one sequence of width d, float32: the fastest of `reps` calls.

    The calls are timed in rounds (every path at every T, then again), not `reps` in a row,
    so a burst of other work on a busy machine spoils one round rather than every repeat of
    one point; the fastest call is the one it disturbed least. A path whose calls at a T
    have already taken budget_s in total is not repeated. With the defaults a whole table
    takes a second or two on one CPU core.
    """
    device = torch.device(device)
    W_hh, W_ih = recurrent_weights(d, seed=seed, device=device)
    rnn = torch.nn.RNN(d, d, nonlinearity="tanh", bias=False, batch_first=True).to(device)
    with torch.no_grad():
        rnn.weight_hh_l0.copy_(W_hh)
        rnn.weight_ih_l0.copy_(W_ih)
    calls: dict[tuple[int, str], Callable[[], torch.Tensor]] = {}
    for T in Ts:
        g = torch.Generator(device=device).manual_seed(seed + T)
        x, q, k, v = torch.randn(4, 1, T, d, generator=g, device=device).unbind(0)  # (1, T, d)
        calls[T, "loop"] = lambda x=x: recurrence(x, W_hh, W_ih)
        calls[T, "rnn"] = lambda x=x: rnn(x)[0]
        calls[T, "scores"] = lambda q=q, k=k: q @ k.transpose(-2, -1)  # (1, T, T): one call
        calls[T, "attention"] = lambda q=q, k=k, v=v: attention(q, k, v).output
    times: dict[tuple[int, str], list[float]] = {key: [] for key in calls}
    with torch.no_grad():
        for fn in calls.values():
            fn()  # warm-up: first-call costs (allocations, kernel selection) are not timed
        for _ in range(reps):
            for key, fn in calls.items():
                if sum(times[key]) < budget_s:
                    times[key].append(_timed(fn, device))
    rows = []
    for T in Ts:
        s = {name: min(times[T, name]) for name in ("loop", "rnn", "scores", "attention")}
        row = ParallelTiming(
            T=T, d=d, loop_s=s["loop"], rnn_s=s["rnn"], scores_s=s["scores"],
            attention_s=s["attention"], sequential_steps=T,
            recurrent_macs=2 * T * d * d, attention_macs=2 * T * T * d,
        )  # fmt: skip
        rows.append(row)
    return rows
