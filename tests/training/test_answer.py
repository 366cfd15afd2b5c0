"""The Training lab's up-front answer (assets/training_answer.json): the claims the page makes
from it, on the file and on fresh runs over seeds, on whatever CPU runs this.

The unscaled runs are chaotic: another seed, CPU or thread count rounds differently and their
digits move (seed 0's unscaled default run ended at loss 0.091 on the CPU that wrote the file,
0.298 on an AMD EPYC). So no test here holds an unscaled run to the file's digits. Instead:
(a) the file's deterministic parts: settings, seeds, steps, chance, step-0 saturation, and
    the scaled default run, which ends the same way on every seed;
(b) every run in the file satisfies the page's claims (so the page cannot quote a file its own
    claims contradict);
(c) fresh runs on this CPU, seeds FRESH, satisfy them too.
The bounds sit well inside what bench/training_answer.py measured over seeds 0-7 (in
parentheses), so a CPU that rounds differently still passes where the claims hold.
"""

import json
import math
from pathlib import Path

import pytest
import torch

from attn_core import train_pair
from attn_core.lessons.training import ANSWER_SETTINGS, N_SYMBOLS

FRESH = (0, 1, 2, 3)  # ~17 s a seed (both settings) on one idle core
# The claims' bounds; in parentheses what was measured over seeds 0-7 at 1 thread, and over
# seeds 0-3 at 2 threads (another float order, as another CPU gives) where that went lower.
LEARNS = 0.85  # "still learns": the unscaled default run's tail accuracy (0.91-0.99; 0.93)
HIGHER = 10.0  # "its loss is just higher": unscaled / scaled tail loss at the defaults (36-270)
SATURATED_START = 0.9  # "starts saturated": failure's unscaled rows above 0.99 at 0 (0.94-0.98)
# "far above": failure's unscaled / scaled tail loss (6.4-283; 3.6 at 2 threads, seed 2, whose
# scaled run ended at 94.5 % right: at this start the scaled run is chaotic too)
FAR = 2.0


def claims_broken(default: tuple[dict, dict], failure: tuple[dict, dict]) -> list[str]:
    """The page's claims that one seed's runs break: (scaled, unscaled) summaries per setting."""
    (s, u), (fs_, fu) = default, failure
    holds = {
        "the unscaled default run still learns": u["tail_accuracy"] >= LEARNS,
        "its loss is higher than the scaled run's": u["tail_loss"] >= HIGHER * s["tail_loss"],
        "the scaled default run answers a batch 99% right": s["first_99"] is not None,
        "the failure's unscaled rows start saturated": fu["saturated_start"] >= SATURATED_START,
        "the failure's scaled run answers a batch 99% right": fs_["first_99"] is not None,
        "the failure's unscaled run never does": fu["first_99"] is None,
        "its loss stays far above the scaled run's": fu["tail_loss"] >= FAR * fs_["tail_loss"],
        "a crawl, not a dead stop: it leaves chance": fu["left_chance"] is not None,
    }
    return [claim for claim, ok in holds.items() if not ok]


FILE = Path(__file__).resolve().parents[2] / "assets" / "training_answer.json"


@pytest.fixture(scope="module")
def shipped() -> dict:
    return json.loads(FILE.read_text())


@pytest.fixture(scope="module")
def fresh() -> dict[int, dict]:
    """{seed: {setting: (scaled, unscaled) summaries}} trained here, one thread as the page's
    job workers (and the bench) train."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return {
            seed: {
                n: tuple(r.summary() for r in train_pair(device="cpu", **dict(kw, seed=seed)))
                for n, kw in ANSWER_SETTINGS.items()
            }
            for seed in FRESH
        }
    finally:
        torch.set_num_threads(threads)


def by_seed(shipped: dict) -> dict[int, dict]:
    """The file's runs as {seed: {setting: (scaled, unscaled)}}."""
    out: dict[int, dict] = {}
    for name in ANSWER_SETTINGS:
        for r in shipped[name]["runs"]:
            out.setdefault(r["seed"], {})[name] = (r["scaled"], r["unscaled"])
    return out


def test_the_file_holds_the_settings_and_what_does_not_depend_on_rounding(shipped, fresh):
    """(a) Settings, seeds, steps and chance exactly; the step-0 saturation and the scaled
    default run (robust: 100 % right, loss 0.0024-0.0025, 99 % by step 32-40 over seeds 0-7,
    the same at 1 and 2 threads) close to fresh runs of the same seeds."""
    file_runs = by_seed(shipped)
    assert shipped["seeds"] == sorted(file_runs) and set(FRESH) <= set(file_runs)
    for name, kw in ANSWER_SETTINGS.items():
        assert shipped[name]["setting"] == kw
        for r in shipped[name]["runs"]:
            for run in ("scaled", "unscaled"):
                assert r[run]["steps"] == kw["steps"], (name, r["seed"], run)
                assert r[run]["chance"] == pytest.approx(math.log(N_SYMBOLS))
    for seed in FRESH:
        for name in ANSWER_SETTINGS:
            for got, want in zip(fresh[seed][name], file_runs[seed][name], strict=True):
                assert got["saturated_start"] == pytest.approx(want["saturated_start"], abs=0.01)
        got, want = fresh[seed]["default"][0], file_runs[seed]["default"][0]
        assert got["tail_accuracy"] == pytest.approx(want["tail_accuracy"], abs=0.005), seed
        assert math.log(got["tail_loss"]) == pytest.approx(math.log(want["tail_loss"]), abs=0.15)
        for k in ("first_99", "left_chance"):
            assert abs(got[k] - want[k]) <= 5, (seed, k)


def test_every_run_in_the_file_makes_the_pages_claims(shipped):
    """(b) The page quotes ranges over the file's seeds; each seed must bear its claims out."""
    broken = {
        seed: claims_broken(r["default"], r["failure"]) for seed, r in by_seed(shipped).items()
    }
    assert not any(broken.values()), broken


def test_the_pages_claims_hold_on_fresh_runs_over_seeds(fresh):
    """(c) This CPU, seeds FRESH: the claims, not the file's digits."""
    broken = {seed: claims_broken(r["default"], r["failure"]) for seed, r in fresh.items()}
    assert not any(broken.values()), broken
