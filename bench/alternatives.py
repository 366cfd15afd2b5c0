"""Beyond the dot product: measured cost of additive scores and of softmax vs linear attention.

`python bench/alternatives.py` (or bench/run.py --only pages) prints, on the current
device (and on the CPU as well when that device is a GPU):

- dot-product against additive scores at T ∈ {128, 256, 512, 1024}, d = 64: the
  measured ratio and the memory of additive's T×T×d intermediate;
- softmax attention against linear attention (elu + 1) at the same T and up to 4096.

Times are the fastest of interleaved rounds (noise only adds time); nothing asserts on them.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from attn_core import (  # noqa: E402
    SPEED_TS,
    additive_intermediate_bytes,
    device_label,
    format_bytes,
    growth_exponent,
    pick_device,
    time_dot_vs_additive,
    time_softmax_vs_linear,
)

D = 64
LINEAR_TS = (*SPEED_TS, 2048, 4096)


def report(device: torch.device, rounds: int = 7) -> None:
    print(f"\nalternatives on {device_label(device)}, torch {torch.__version__}, d = {D}")
    print(f"{'T':>6} | {'dot':>10} {'additive':>10} {'ratio':>7} | {'intermediate':>12}")
    print("-" * 56)
    for r in time_dot_vs_additive(SPEED_TS, D, rounds=rounds, device=device):
        mem = format_bytes(additive_intermediate_bytes(r.T, r.T, D))
        print(
            f"{r.T:>6} | {r.dot_s * 1e3:>8.4f}ms {r.additive_s * 1e3:>8.3f}ms "
            f"{r.ratio:>6.0f}× | {mem:>12}"
        )
    print(f"\n{'T':>6} | {'softmax':>10} {'linear':>10} {'ratio':>7}")
    print("-" * 42)
    rows = time_softmax_vs_linear(LINEAR_TS, D, rounds=rounds, device=device)
    for r in rows:
        print(f"{r.T:>6} | {r.softmax_s * 1e3:>8.4f}ms {r.linear_s * 1e3:>8.4f}ms {r.ratio:>6.2f}×")
    Ts = [r.T for r in rows]
    print(
        "growth over the last doubling: softmax T^"
        f"{growth_exponent(Ts, [r.softmax_s for r in rows]):.2f}, linear T^"
        f"{growth_exponent(Ts, [r.linear_s for r in rows]):.2f}"
    )


def main() -> None:
    dev = pick_device()
    report(dev)
    if dev.type != "cpu":
        report(torch.device("cpu"))


if __name__ == "__main__":
    main()
