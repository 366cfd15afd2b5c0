"""What one rerun costs the server with every control at its largest accepted value.

`python bench/bounded.py [page ...]` (e.g. `multi-head masks`): for each page, each step
and view, one AppTest run with every control drawn there at its largest (and each
unordered choice's options in turn; tests/support/bounds.py builds the links), its server
CPU seconds and peak memory growth, against the rule of ~2 s and ~100 MB per rerun.
tests/site/test_bounded_inputs.py asserts the rule; this prints the figures.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tests.support.bounds import largest_views, measure  # noqa: E402
from ui.lesson import available  # noqa: E402


def main() -> None:
    torch.set_num_threads(1)  # as the server runs (ui/_warm.py)
    wanted = set(sys.argv[1:])
    print(f"{'page':<14} {'link':<58} {'CPU s':>6} {'+MB':>6}")
    worst = (0.0, 0.0)
    for lesson in available():
        if wanted and (lesson.url_path or "home") not in wanted:
            continue
        for params in largest_views(lesson.file):
            _, cpu, grew = measure(lesson.file, params)
            link = " ".join(f"{k}={v if len(v) < 12 else v[:8] + '…'}" for k, v in params.items())
            print(f"/{lesson.url_path:<13} {link[:58]:<58} {cpu:>6.2f} {grew:>6.0f}", flush=True)
            worst = (max(worst[0], cpu), max(worst[1], grew))
    print(f"worst: {worst[0]:.2f} s of CPU (rule ~2 s), +{worst[1]:.0f} MB (rule ~100 MB)")


if __name__ == "__main__":
    main()
