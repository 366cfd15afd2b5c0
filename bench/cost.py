"""Peak memory (and time) of attention vs tiled_attention vs fused_attention on this device.

    python -m bench.cost            # T = 512 … 4096, one head of d_k = 64, float32
    python -m bench.cost --heads 8

Prints one row per T with each method's peak memory (q, k, v included) and the ratios
to the materialised path. The acceptance check of the cost page is the last row:
tiled_attention's peak at T = 4096 must be at most 1/8 of attention's. Exit status 1
if it is not. How memory is measured on this device is printed with the table.

A second table times what the page's Parallel step times: a recurrence of T dependent
steps (a Python loop and torch.nn.RNN) against all T² scores in one matmul and the whole
attention, at width --width (no pass/fail: it reports what this device does).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script or via run.py
from attn_core import device_label, format_bytes, measure_point, memory_source, pick_device
from attn_core.lessons.cost import METHODS, PARALLEL_TS, time_parallel_vs_recurrent
from ui.content import words

TS = (512, 1024, 2048, 4096)
LIMIT = 1 / 8  # tiled / attention at the largest T


def table(
    Ts=TS, *, heads: int = 1, d_k: int = 64, dtype: str = "float32", block: int = 128, device=None
) -> list:
    """[(T, {method: Measurement})] measured on `device` (default: the picked one)."""
    device = pick_device() if device is None else torch.device(device)
    kw = dict(heads=heads, d_k=d_k, dtype=dtype, device=device, block=block)
    return [(T, {m: measure_point(m, T, **kw) for m in METHODS}) for T in Ts]


def parallel_table(width: int, device) -> None:
    """Print the recurrence against one matmul, as the page's Parallel step measures it."""
    rows = time_parallel_vs_recurrent(PARALLEL_TS, width, device=device)
    print(f"\nT dependent steps against one matmul on {device_label(device)}, width d = {width}, "
          "batch 1, float32 (fastest of up to 5 calls)")  # fmt: skip
    head = f"{'T':>6} | {'loop ms':>9} | {'nn.RNN ms':>9} | {'scores ms':>9} | {'attn ms':>9} | "
    head += f"{'loop/attn':>9} | {'steps':>6} | {'MACs attn/rnn':>13}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r.T:>6} | {r.loop_s * 1e3:>9.3f} | {r.rnn_s * 1e3:>9.3f} | "
            f"{r.scores_s * 1e3:>9.3f} | {r.attention_s * 1e3:>9.3f} | "
            f"{r.loop_s / r.attention_s:>9.3g} | {r.sequential_steps:>6} | "
            f"{r.attention_macs / r.recurrent_macs:>13.3g}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--d_k", type=int, default=64)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--block", type=int, default=128, help="tiled_attention's block size")
    ap.add_argument("--T", type=int, nargs="*", default=list(TS))
    ap.add_argument("--width", type=int, default=64, help="d of the parallel-vs-recurrent table")
    ap.add_argument(
        "--threads", type=int, default=1,
        help="CPU threads (default 1: the many small tile operations of tiled_attention "
        "slow down badly when two threads must keep meeting on a busy machine)",
    )  # fmt: skip
    args = ap.parse_args([] if argv is None else argv)  # bench/run.py calls main() bare
    device = pick_device()
    threads = torch.get_num_threads()
    if device.type == "cpu" and args.threads > 0:
        torch.set_num_threads(args.threads)
    rows = table(
        args.T, heads=args.heads, d_k=args.d_k, dtype=args.dtype, block=args.block, device=device
    )
    print(f"Attention peak memory on {device_label(device)}: batch 1, {args.heads} head(s), "
          f"d_k = {args.d_k}, {args.dtype}, tiles {args.block}×{args.block}")  # fmt: skip
    how = words("cost", f"measure.how.{memory_source(device)}")
    print(f"Measured with {how}; q, k and v included.\n")
    head = f"{'T':>6} | {'attention':>11} | {'tiled':>11} | {'fused':>11} | "
    head += f"{'tiled/attn':>10} | {'fused/attn':>10} | {'ms attn':>8} {'tiled':>8} {'fused':>8}"
    print(head)
    print("-" * len(head))
    for T, r in rows:
        a, t, f = (r[m] for m in METHODS)
        print(
            f"{T:>6} | {format_bytes(a.peak_bytes):>11} | {format_bytes(t.peak_bytes):>11} | "
            f"{format_bytes(f.peak_bytes):>11} | {t.peak_bytes / a.peak_bytes:>10.4f} | "
            f"{f.peak_bytes / a.peak_bytes:>10.4f} | {a.seconds * 1e3:>8.1f} "
            f"{t.seconds * 1e3:>8.1f} {f.seconds * 1e3:>8.1f}"
        )
    parallel_table(args.width, device)
    torch.set_num_threads(threads)  # leave the caller (bench/run.py) as it was
    T, r = rows[-1]
    ratio = r["tiled_attention"].peak_bytes / r["attention"].peak_bytes
    ok = ratio <= LIMIT
    print(
        f"\ntiled/attention peak at T = {T}: {ratio:.4f} (1/{1 / ratio:.0f}); "
        f"required ≤ 1/8 → {'OK' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
