"""/positions' extrapolation table, measured: `python bench/positions_extrapolation.py`.

Trains the copy-the-token-k-back model once per way of giving it position (none, learned,
sinusoidal, RoPE, ALiBi) at one length on the CPU, measures it at that length, 2× and 4×,
prints the table and writes assets/positions_extrapolation.json, which the page shows
before anyone trains on the server. tests/positions/test_extrapolation.py trains again
and checks the file.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from attn_core.lessons.positions import KINDS, CopyTask, train_copy  # noqa: E402

OUT = ROOT / "assets" / "positions_extrapolation.json"


def measure(task: CopyTask | None = None) -> dict:
    task = task or CopyTask()
    torch.set_num_threads(1)  # as the page's job workers train
    out: dict = {"torch": torch.__version__.split("+")[0], "device": "cpu",
                 "task": dataclasses.asdict(task), "runs": {}}  # fmt: skip
    for kind in KINDS:
        t0 = time.perf_counter()
        r = train_copy(kind, task)
        out["runs"][kind] = {"accuracy": {str(T): a for T, a in r.accuracy.items()},
                             "final_loss": r.final_loss,
                             "seconds": round(time.perf_counter() - t0, 2)}  # fmt: skip
    return out


def main() -> None:
    res = measure()
    lengths = res["task"]["lengths"]
    print(f"{'position':<12}" + "".join(f"{'T = ' + str(T):>10}" for T in lengths)
          + f"{'loss':>9}{'train s':>9}")  # fmt: skip
    for kind, r in res["runs"].items():
        accs = "".join(f"{r['accuracy'][str(T)]:>10.1%}" for T in lengths)
        print(f"{kind:<12}{accs}{r['final_loss']:>9.3g}{r['seconds']:>9.2f}")
    OUT.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
