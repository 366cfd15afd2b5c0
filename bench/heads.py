"""Trained heads: how long live training takes here, and what it learns.

`main()` trains the page's model from scratch (1,500 steps, the shipped seed) on this
machine and prints the wall time, the losses before and after the phase change, and
the head scores on 128 held-out sequences next to the shipped model's.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from attn_core import device_label, pick_device
from attn_core.lessons import heads as ind


def _scores(model) -> str:
    s = ind.head_scores(model, ind.eval_batch(model.config))
    rows = []
    for name, t in (("previous-token", s.previous_token), ("induction", s.induction)):
        rows.append(
            f"    {name:<15}" + " | ".join(" ".join(f"{x:.2f}" for x in r) for r in t.tolist())
        )
    return "\n".join(rows)


def main(steps: int = ind.PRETRAINED_STEPS, seed: int = ind.PRETRAINED_SEED) -> None:
    dev = pick_device()
    print(f"training {steps} steps, seed {seed}, on {device_label(dev)}, torch {torch.__version__}")
    t = time.perf_counter()
    model, run = ind.train_induction(steps=steps, seed=seed, device=dev)
    wall = time.perf_counter() - t
    first10 = sum(run.loss_repeated[:10]) / max(1, len(run.loss_repeated[:10]))
    print(f"  wall time {wall:.1f} s ({1e3 * wall / max(run.done, 1):.1f} ms/step)")
    print(f"  phase change at step ~{run.phase_change_step()}")
    print(f"  loss on repeated tokens: first 10 steps {first10:.3f}, last 50 steps "
          f"{run.tail('loss_repeated'):.3f}")  # fmt: skip
    print(f"  loss on first occurrences, last 50 steps {run.tail('loss_first'):.3f} "
          f"(ln vocab = {run.chance:.3f})")  # fmt: skip
    print("  head scores, layer 0 | layer 1 (held-out sequences):")
    print(_scores(model.cpu()))
    shipped, _ = ind.load_pretrained()
    print("  shipped model (assets/induction.pt):")
    print(_scores(shipped))
    batch = ind.eval_batch(shipped.config)
    rep, first = ind.evaluate(shipped, batch)
    single = ind.single_head_ablation(shipped, batch)
    names = shipped.config.head_names()
    print(f"  shipped: repeated {rep:.4f}, first {first:.3f}; one head off -> repeated loss:")
    print(
        "    "
        + ", ".join(f"{n} {x:.3f}" for n, x in zip(names, single.flatten().tolist(), strict=True))
    )


if __name__ == "__main__":
    main()
