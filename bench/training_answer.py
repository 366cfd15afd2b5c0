"""The Training lab's up-front answer, measured: `python bench/training_answer.py`.

Trains the page's two reference settings (its defaults, and the saturated start that shows
the lesson's failure) on the CPU, prints their figures as a table and writes them to
assets/training_answer.json, which /training quotes before anyone has pressed Run. Once a
session trains the same setting on the server, the page quotes that run instead.
tests/training/test_answer.py trains both again and checks the file against them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from attn_core import train_pair  # noqa: E402
from attn_core.lessons.training import ANSWER_SETTINGS  # noqa: E402

OUT = ROOT / "assets" / "training_answer.json"


def measure() -> dict:
    torch.set_num_threads(1)  # as the page's job workers train
    out: dict = {"torch": torch.__version__.split("+")[0], "device": "cpu"}
    for name, kw in ANSWER_SETTINGS.items():
        a, b = train_pair(device="cpu", **kw)
        out[name] = dict(setting=kw, scaled=a.summary(), unscaled=b.summary())
    return out


def main() -> None:
    res = measure()
    print(f"{'setting':<9} {'run':<9} {'acc (last 50)':>13} {'loss':>8} {'99 % at':>8} "
          f"{'left chance':>11} {'saturated at 0':>14}")  # fmt: skip
    for name in ANSWER_SETTINGS:
        for run in ("scaled", "unscaled"):
            r = res[name][run]
            print(f"{name:<9} {run:<9} {r['tail_accuracy']:>13.1%} {r['tail_loss']:>8.3g} "
                  f"{r['first_99']!s:>8} {r['left_chance']!s:>11} "
                  f"{r['saturated_start']:>14.0%}")  # fmt: skip
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
