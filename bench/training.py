"""Training lab benchmark: wall time of both runs at the page's defaults, and the final losses;
then the Heads step's sweep (d_k = 8 … 64 at a fixed d_model), timed, with its quality table.

    python bench/training.py            # both tables
    python bench/training.py --sweep    # the head-width sweep only

Prints two tables. The wall time is measured with one torch thread, as the app
runs (ui/_warm.py sets it). The losses are each run's mean over its last 50
steps: for the pair, SGD and Adam, scaled against unscaled, at d_k = 64; for the
sweep, the scaled model cut into h = d_model / d_k heads, at the page's defaults
(SGD at lr 0.5, 400 steps, seed 0). Tests never assert on wall-clock time.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from attn_core import DEFAULT_LR, train_pair
from attn_core.lessons.training import head_sweep

D_K = 64
STEPS = 400
SWEEP_D_KS = (8, 16, 32, 64)  # as pages/training.py's Heads step
SWEEP_D_MODELS = (64, 128)


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


def first_at(xs: list[float], at_least: float) -> str:
    i = next((i for i, x in enumerate(xs) if x >= at_least), None)
    return "never" if i is None else str(i)


def sweep() -> list[dict]:
    """The Heads step's sweep at each d_model: wall time, and each head width's quality."""
    out = []
    print(
        f"\nHead-width sweep — scaled model, SGD lr {DEFAULT_LR['sgd']:g}, {STEPS} steps, seed 0, "
        f"{torch.get_num_threads()} thread(s)"
    )
    head = (
        f"{'d_model':>7} {'d_k':>4} {'h':>3} {'final-50 loss':>14} {'final-50 acc':>13} "
        f"{'first step ≥ 90 %':>18} {'sweep wall s':>13}"
    )
    print(head)
    print("-" * len(head))
    for d_model in SWEEP_D_MODELS:
        t0 = time.perf_counter()
        runs = head_sweep(d_model, SWEEP_D_KS, steps=STEPS)
        wall = time.perf_counter() - t0
        for i, r in enumerate(runs):
            row = dict(
                d_model=d_model, d_k=r.d_k, heads=r.heads, loss=r.tail_loss(),
                acc=r.tail_accuracy(), first90=first_at(r.accuracy, 0.9), wall=wall,
            )  # fmt: skip
            out.append(row)
            print(
                f"{d_model:>7} {r.d_k:>4} {r.heads:>3} {row['loss']:>14.4g} {row['acc']:>13.1%} "
                f"{row['first90']:>18} {(f'{wall:.2f}' if i == 0 else ''):>13}"
            )
    print("target: the page's sweep (4 runs) near 10 s or less on a 2-core CPU")
    return out


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
    torch.set_num_threads(1)  # as the app: ui/_warm.py
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweep", action="store_true", help="only the head-width sweep")
    if not parser.parse_args().sweep:
        main()
    sweep()
