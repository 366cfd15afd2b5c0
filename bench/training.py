"""Training lab benchmark: wall time of both runs at the page's defaults, and the final losses.

    python bench/training.py

Prints one table. The wall time is measured with torch's thread count as it is
(no tuning), the way the page trains. The losses are each run's mean over its
last 50 steps, for SGD and Adam, scaled against unscaled, at d_k = 64.
Ratios only matter here: tests never assert on wall-clock time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from attn_core import DEFAULT_LR, train_pair

D_K = 64
STEPS = 400


def measure(optimizer: str) -> dict:
    t0 = time.perf_counter()
    scaled, unscaled = train_pair(D_K, steps=STEPS, optimizer=optimizer)
    wall = time.perf_counter() - t0
    return dict(
        optimizer=optimizer,
        lr=DEFAULT_LR[optimizer],
        wall=wall,
        scaled=scaled.tail_loss(50),
        unscaled=unscaled.tail_loss(50),
        at50=(scaled.loss[49], unscaled.loss[49]),
    )


def main() -> list[dict]:
    train_pair(8, steps=5)  # warm-up: first-call allocations and thread start-up are not training
    rows = [measure("sgd"), measure("adam")]
    print(
        f"Training lab — both runs (scaled + unscaled), d_k = {D_K}, {STEPS} steps, "
        f"torch {torch.__version__.split('+')[0]}, {torch.get_num_threads()} threads"
    )
    head = (
        f"{'optimizer':<9} {'lr':>6} {'wall s':>7} {'final-50 scaled':>16} "
        f"{'final-50 unscaled':>18} {'ratio u/s':>10} {'loss@50 s / u':>15}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        print(
            f"{r['optimizer']:<9} {r['lr']:>6g} {r['wall']:>7.2f} {r['scaled']:>16.4f} "
            f"{r['unscaled']:>18.4f} {r['unscaled'] / r['scaled']:>10.1f} "
            f"{r['at50'][0]:>7.3f} / {r['at50'][1]:.3f}"
        )
    print("target: both runs at defaults (SGD row) under 10 s on a 2-core CPU;")
    print("        SGD: scaled final-50 loss under a quarter of the unscaled one")
    return rows


if __name__ == "__main__":
    main()
