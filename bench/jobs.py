"""Every heavy button's cost: wall time, CPU time and peak memory above an idle process.

    python bench/jobs.py                    # every job at its heaviest settings
    python bench/jobs.py --only cost-long alt-scores
    python bench/jobs.py --budget 30        # stop each job the way the server's budget does

Each job runs in a fresh Python process that first imports what the server imports (torch,
numpy, plotly, attn_core, figures) with one torch thread, as ui/_warm.py sets it. Then the
process reads its resident memory (VmRSS: the idle baseline), resets its peak (writing 5 to
/proc/self/clear_refs resets VmHWM), runs the job the way its page does, and reads VmHWM.
"Peak above idle" is VmHWM − baseline: what one press adds to the server at its worst.

The jobs, at the settings that cost the most:

- training     /training "Run both", d_k = 512, 2000 steps, lr = 0.0001 (SGD)
- heads        /heads "Train from scratch" (1,500 steps)
- cost-default /cost "Run the sweep" at the page's defaults (T = 1024, 8 heads, d_model 512)
- cost-wide    the same at T = 131072, d_model 2048, 32 heads (the largest explicit-path peak)
- cost-long    the same at T = 131072, d_model 512, 2 heads (the sweep reaches T = 4096)
- alt-scores   /alternatives "Time dot product vs additive", T up to 4096 (capped by the page)
- alt-linear   /alternatives "Time softmax vs linear attention", T up to 4096
- head-sweep   /training › Heads "Train the 4 head counts" at d_model 128 (400 steps each)
- story        /training "Measure the story": its six pairs of 400-step runs
- parallel     /cost › Parallel "Time both" at width 512
- masks-cost   /masks "Measure both" (causal flag vs mask) at T = 2048

The issue's target: every job ≤ 600 MB above idle. Nothing here asserts on time.

    python bench/jobs.py --queue            # the line's order: a student's wait behind a hog

`--queue` runs no job: it drives ui.jobs.Limiter with a hand-driven clock and jobs of a
fixed length (the 30 s budget) and prints how long a student waits behind one person who
holds N tabs that press again whenever their job ends, and how long the last of a class
behind one router waits. "first come" gives no press an address (every press is its own
client: the order before presses took turns); "turns" gives each its address.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOBS = (
    "training", "heads", "cost-default", "cost-wide", "cost-long", "alt-scores", "alt-linear",
    "head-sweep", "story", "parallel", "masks-cost",
)  # fmt: skip
COST = {  # T asked for, d_model, heads: the default, and the two largest sweeps found
    "cost-default": (1024, 512, 8),
    "cost-wide": (131072, 2048, 32),  # attention at T = 1024 with 32 heads
    "cost-long": (131072, 512, 2),  # every method up to T = 4096
}
LIMIT_MB = 600


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_job(name: str, budget: float | None) -> dict:
    """Run one job in this process; return its figures (called in the child)."""
    sys.path.insert(0, str(ROOT))
    import numpy  # noqa: F401
    import plotly.graph_objects  # noqa: F401
    import torch

    import attn_core
    import figures  # noqa: F401

    torch.set_num_threads(1)
    base = _status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    t0, c0 = time.perf_counter(), time.process_time()
    deadline = math.inf if budget is None else time.monotonic() + budget

    def should_stop(*_) -> bool:
        return time.monotonic() >= deadline

    stop = {} if budget is None else {"should_stop": should_stop}

    if name == "training":
        a, _ = attn_core.train_pair(
            512, steps=2000, lr=1e-4, optimizer="sgd", init_std=1.0, seed=0, on_step=should_stop
        )
        what = f"{a.done} of {a.steps} steps" + (" (stopped)" if a.stopped else "")
    elif name == "heads":
        from attn_core.lessons import heads as ind

        _, run = ind.train_induction(steps=ind.PRETRAINED_STEPS, seed=1, on_step=should_stop)
        what = f"{run.done} of {run.steps} steps" + (" (stopped)" if run.stopped else "")
    elif name in COST:
        T, d_model, heads = COST[name]
        what = sweep(T, heads, d_model // heads, should_stop)
    elif name == "alt-scores":
        from attn_core.lessons.alternatives import SPEED_D

        Ts = tuple(t for t in _pow2(128, 4096) if t <= attn_core.additive_T_cap(SPEED_D))
        rows = attn_core.time_dot_vs_additive(Ts, device="cpu", **stop)
        what = f"T = {Ts[0]} … {rows[-1].T if rows else '-'} of {Ts[-1]}"
    elif name == "alt-linear":
        Ts = _pow2(128, 4096)
        rows = attn_core.time_softmax_vs_linear(Ts, device="cpu", **stop)
        what = f"T = {Ts[0]} … {rows[-1].T if rows else '-'} of {Ts[-1]}"
    elif name == "head-sweep":
        from attn_core.lessons.training import head_sweep

        runs = head_sweep(
            128, (8, 16, 32, 64), steps=400, lr=0.5, optimizer="sgd", init_std=1.0, seed=0,
            on_step=lambda *_: should_stop(),
        )  # fmt: skip
        what = f"{sum(r.done for r in runs)} of {4 * 400} steps"
    elif name == "story":  # pages/training.py REFS: six pairs of the default run, varied
        ref = dict(optimizer="sgd", lr=0.5, steps=400, init_std=1.0, seed=0)
        story = [
            dict(ref, d_k=64), dict(ref, d_k=8), dict(ref, d_k=8, lr=0.1),
            dict(ref, d_k=64, init_std=3.0), dict(ref, d_k=64, init_std=0.1),
            dict(ref, d_k=64, optimizer="adam", lr=0.01),
        ]  # fmt: skip
        done = 0
        for kw in story:
            attn_core.train_pair(kw.pop("d_k"), on_step=lambda *_: should_stop(), **kw)
            done += 1
            if should_stop():
                break
        what = f"{done} of {len(story)} pairs"
    elif name == "parallel":
        from attn_core.lessons.cost import PARALLEL_TS, time_parallel_vs_recurrent

        rows = time_parallel_vs_recurrent(PARALLEL_TS, 512, device="cpu")
        what = f"T = {rows[0].T} … {rows[-1].T}, width 512"
    elif name == "masks-cost":
        from attn_core.lessons.masks import causal_cost

        causal_cost(2048, device="cpu")
        what = "T = 2048, 8 heads × d_k 64"
    else:
        raise ValueError(f"unknown job {name!r}; valid: {', '.join(JOBS)}")
    return dict(
        job=name,
        what=what,
        wall_s=time.perf_counter() - t0,
        cpu_s=time.process_time() - c0,
        idle_mb=base,
        peak_above_mb=_status("VmHWM") - base,
    )


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**i for i in range(int(math.log2(lo)), int(math.log2(hi)) + 1))


def sweep(T: int, heads: int, d_k: int, should_stop) -> str:
    """What /cost's "Run the sweep" does on a CPU: plan, then measure point by point."""
    from attn_core import measure_point, plan_sweep

    slow_s = 1.5  # pages/cost.py SLOW_S: a method this slow stops climbing in T
    plan = plan_sweep(T, batch=1, heads=heads, d_k=d_k, dtype="float32", device="cpu")
    done, slow = 0, set()
    for method, t in plan.points:
        if should_stop():
            break
        if method in slow:
            continue
        m = measure_point(method, t, heads=heads, d_k=d_k, device="cpu", block=plan.block)
        done += 1
        if m.seconds > slow_s and t < plan.Ts[-1]:
            slow.add(method)
    return f"{done} of {len(plan.points)} points, T ≤ {plan.Ts[-1]}, {heads}×{d_k}"


def simulate(groups, slots: int, job_s: float, turns: bool) -> dict[str, list[float]]:
    """Seconds each non-repeating press waits for a slot. `groups` are (name, sessions,
    repeats): `sessions` presses from one address, joined in order at time 0; a repeating
    group's sessions press again as soon as their job ends (a hog holding tabs)."""
    sys.path.insert(0, str(ROOT))
    from ui.jobs import Limiter

    now = [0.0]
    lim = Limiter(slots, clock=lambda: now[0])
    owner, ends, waits = {}, {}, {name: [] for name, _, repeats in groups if not repeats}

    def press(name: str, i: int) -> None:
        t = lim.join("job", session=f"{name}-{i}", client=name if turns else None)
        owner[t] = (name, i)

    for name, sessions, _ in groups:
        for i in range(sessions):
            press(name, i)
    repeating = {name for name, _, repeats in groups if repeats}
    total = sum(n for _, n, repeats in groups if not repeats)
    while True:
        for t in lim.order():
            t.seen = now[0]  # every queued press is polling
        while (line := lim.order()) and lim.acquire(line[0], timeout=0):
            ends[line[0]] = now[0] + job_s
            if owner[line[0]][0] in waits:
                waits[owner[line[0]][0]].append(now[0] - line[0].joined)
        if sum(len(w) for w in waits.values()) == total:
            break
        now[0] = min(ends.values())
        for t in [t for t, end in ends.items() if end <= now[0]]:
            del ends[t]
            lim.release(t)
            if owner[t][0] in repeating:
                press(*owner[t])
    return waits


def queue_table(job_s: float = 30.0) -> None:
    """The student's and the class's waits, first come versus turns (see the docstring)."""
    print(f"jobs of {job_s:g} s each; a press waits at most 600 s (ATTN_JOB_WAIT_S)\n")
    print("| slots | hog's tabs | who else presses | first come | turns |")
    print("|---:|---:|---|---:|---:|")
    for slots in (1, 2):
        for held in (4, 20):
            for others, label in (([("student", 1, False)], "one student, own address"),
                                  ([("class", 10, False)], "10 students behind one router"),
                                  ):  # fmt: skip
                groups = [("hog", held, True), *others]
                cells = []
                for turns in (False, True):
                    waits = simulate(groups, slots, job_s, turns)[others[0][0]]
                    cells.append(f"{max(waits):.0f} s")
                what = label if others[0][1] == 1 else f"{label} (the last of them)"
                print(f"| {slots} | {held} | {what} | {cells[0]} | {cells[1]} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--only", nargs="*", default=list(JOBS), choices=JOBS)
    ap.add_argument("--budget", type=float, default=None, help="seconds before a job is stopped")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--queue", action="store_true", help="the line's order (runs no job)")
    a = ap.parse_args(argv)
    if a.queue:
        queue_table()
        return 0
    if a.child:
        print(json.dumps(run_job(a.child, a.budget)))
        return 0
    rows = []
    for name in a.only:
        cmd = [sys.executable, __file__, "--child", name]
        cmd += [] if a.budget is None else ["--budget", str(a.budget)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(
            f"{r['job']:<13} wall {r['wall_s']:6.1f} s  cpu {r['cpu_s']:6.1f} s  "
            f"peak above idle {r['peak_above_mb']:6.0f} MB  (idle {r['idle_mb']:.0f} MB)  "
            f"{r['what']}",
            flush=True,
        )
    worst = max(r["peak_above_mb"] for r in rows)
    ok = worst <= LIMIT_MB
    print(f"\nlargest peak above idle: {worst:.0f} MB; target ≤ {LIMIT_MB} MB → "
          f"{'OK' if ok else 'FAIL'}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
