"""Every number /training says in a sentence, recomputed here and looked for on the page.

Each test trains or measures with attn_core directly (the page's answer is never read back
as the expected value), formats the figure the way the sentence does, and checks the page
shows it. Where a sentence's wording depends on a measured outcome ("level", "hurts"), the
test decides the wording from its own numbers.
"""

import math

import pytest
import torch

from attn_core import train_pair
from attn_core.lessons.training import head_sweep
from figures.parts import sci
from tests.support.apptest import no_exception, plotly_specs, run_page, warnings

PAGE = "pages/training.py"
DEFAULTS = dict(d_k=64, optimizer="sgd", lr=0.5, steps=400, init_std=1.0, seed=0)


def text(at) -> str:
    """All markdown and captions of the page, whitespace collapsed (sentences wrap anywhere)."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    return " ".join(" ".join(parts).split())


def two_key(gap: float) -> float:
    """α(1 − α) for two keys `gap` apart, written without 1 − α."""
    e = math.exp(-abs(gap))
    return e / (1 + e) ** 2


def jacobian_norms(w: torch.Tensor) -> torch.Tensor:
    """‖diag(w) − w wᵀ‖_F per row, by hand."""
    w = w.double()
    J = torch.diag_embed(w) - w[..., :, None] * w[..., None, :]
    return J.flatten(-2).norm(dim=-1)


def lead(ratio: float) -> str:
    """The page's words for an unscaled/scaled loss ratio."""
    if ratio >= 1.5:
        r = f"{float(f'{ratio:.3g}'):,.0f}" if ratio >= 1000 else f"{ratio:.3g}"
        return f"{r} times the scaled run's"
    if ratio <= 1 / 1.5:
        return f"{ratio:.2g} times the scaled run's: lower"
    return "level with the scaled run's"


def first(xs, at_least, steps=None):
    """The first step whose value reaches `at_least`, in the page's words."""
    i = next((i for i, x in enumerate(xs) if x >= at_least), None)
    return f"step {i}" if i is not None else f"never within {steps or len(xs)} steps"


@pytest.fixture
def no_budget(monkeypatch):
    """A loaded test machine must not run into the server's per-job time budget (ui.jobs),
    nor starve the page's jobs: at the server's nice 10 they got a sliver of a core beside
    the other test worker (one measuring run took 797 s at load average 6-9)."""
    monkeypatch.setenv("ATTN_JOB_BUDGET_S", "3600")
    monkeypatch.setenv("ATTN_JOB_NICE", "0")


def test_the_header_quotes_the_task_it_trains():
    a, _ = train_pair(8, steps=1)
    at = run_page(PAGE, step="Predict")
    no_exception(at)
    t = text(at)
    assert f"lists {a.n_pairs} key→value pairs of symbols (out of {a.n_symbols})" in t
    assert f"guessing, ln {a.n_symbols} ≈ {math.log(a.n_symbols):.3g}" in t
    assert f"ln {a.n_symbols} ≈ {a.chance:.3g}" in t


@pytest.mark.parametrize(
    "d_k,init_std,seed",
    [(64, 1.0, 0), (512, 4.0, 0), (4, 0.1, 3), (64, 3.0, 0)],
)
def test_the_two_key_box_quotes_this_settings_probe_rows(d_k, init_std, seed):
    """Item 4: the lead of the best score over the runner-up, and the dead rows, measured."""
    a, b = train_pair(d_k, steps=1, init_std=init_std, seed=seed)
    raw = a.probe_scores_start.double()  # (256, n_pairs): q·k before any division
    srt = raw.sort(-1, descending=True).values
    gaps = srt[:, 0] - srt[:, 1]
    med = float(gaps.median())
    big = float((gaps >= 10).double().mean())
    j_s, j_u = jacobian_norms(a.probe_start), jacobian_norms(b.probe_start)
    eps = torch.finfo(torch.float32).eps
    at = run_page(PAGE, step="Rows", d_k=d_k, init_std=f"{init_std:g}", seed=seed)
    no_exception(at)
    assert not warnings(at)
    t = text(at)
    assert f"At a gap of 3 it is {sci(two_key(3))}; at a gap of 24 it is {sci(two_key(24))}" in t
    assert f"(its epsilon is {sci(eps)})" in t
    spread = math.sqrt(d_k) * init_std**2
    assert f"√d_k · {init_std:g}² = {spread:.3g} (measured over the 256 probe rows: " in t
    assert f"rows: {float(raw.std()):.3g})" in t
    assert f"leads the runner-up by {med:.3g} in the median row" in t
    still = "still" if two_key(med) >= 0.01 else "only"
    assert f"two-key gradient is {still} {sci(two_key(med))};" in t
    assert f"(gradient {sci(two_key(10))} or less) in {big:.1%} of the rows" in t
    assert f"the largest lead of all is {float(gaps.max()):.3g}" in t
    assert f"Jacobian norm is {sci(float(j_s.median()))} scaled and {sci(float(j_u.median()))}" in t
    dead_u, dead_s = float((j_u <= 1e-6).double().mean()), float((j_s <= 1e-6).double().mean())
    assert f"{dead_u:.0%} of the unscaled rows (scaled: {dead_s:.0%}) start at or below 10⁻⁶" in t
    assert f"back to {init_std:g}² = {init_std**2:.3g}" in t
    steep = "still steep" in t
    assert steep == (init_std**2 <= 1)


def test_before_measuring_the_story_quotes_first_batch_numbers_only(fresh_server):
    """Items 5 and 11 before any training: step-0 figures, and a button for the rest."""
    at = run_page(PAGE)
    no_exception(at)
    t = text(at)
    assert [b for b in at.button if b.label == "Measure the story"]
    assert "7 of their 7 pairs of runs are not on this server yet" in t
    assert "(5600 training steps in all)" in t
    _, b8 = train_pair(8, steps=1)
    _, b256 = train_pair(256, steps=1)
    assert f"at 8, {b8.saturated[0]:.0%} of the unscaled rows start above 0.99; at 256, " in t
    assert f"at 256, {b256.saturated[0]:.0%} do" in t
    a0, b0 = train_pair(64, steps=1)
    assert f"mean largest weight {b0.max_weight[0]:.2f} against {a0.max_weight[0]:.2f}" in t
    assert f"and {b0.saturated[0]:.0%} of them are already above 0.99" in t
    assert f"{1 - b0.saturated[0]:.0%} of the unscaled rows start below 0.99" in t
    g_u, g_s = b0.qk_grad_norm[0], a0.qk_grad_norm[0]
    assert f"is {g_u / g_s:.3g} times the scaled run's ({g_u:.2g} against {g_s:.2g})" in t
    _, h0 = train_pair(64, steps=1, init_std=3.0)
    j = jacobian_norms(h0.probe_start)  # in float64: exactly 0 only for an exactly one-hot row
    dead, zero = float((j <= 1e-6).double().mean()), float((j == 0).double().mean())
    whole = float((h0.probe_start.double().max(-1).values == 1).double().mean())
    assert f"initial std to 3 and {dead:.0%} of the unscaled probe rows start with a" in t
    j32 = h0.probe_jacobian_start  # the norm as computed from the float32 weights
    zero32 = float((j32 == 0).double().mean())
    assert f"the norm computed from the float32 weights is exactly 0 in {zero32:.0%}" in t
    assert f"the largest weight rounds to exactly 1 in {whole:.0%}" in t
    assert f"and only {zero:.0%} are exactly one-hot" in t
    assert dead > zero32 >= zero  # "rarer", "only": fewer exact zeros than dead rows
    a_c, b_c = train_pair(64, steps=1, init_std=0.1)
    assert f"averages {b_c.max_weight[0]:.2f} unscaled and {a_c.max_weight[0]:.2f} scaled" in t
    assert t.count("**Measure the story** (above) adds how the runs end.") == 7  # 3 + 3 + 1
    # the old typed figures are gone
    for old in ("about two thirds", "about 0.84", "about 2.8 against 0.36", "often leads"):
        assert old not in t


def test_measuring_the_story_fills_in_every_trained_figure(fresh_server, no_budget):
    """Item 5 (d_k = 8: far worse at lr 0.5, level at lr 0.1) and the rest, from real runs."""
    at = run_page(PAGE)
    next(b for b in at.button if b.label == "Measure the story").click().run(timeout=300)
    no_exception(at)
    t = text(at)
    assert "Measure the story" not in [b.label for b in at.button]
    assert "Measure the story** (above) adds" not in t
    ref = {
        "default": train_pair(64, steps=400),
        "small": train_pair(8, steps=400),
        "small_slow": train_pair(8, steps=400, lr=0.1),
        "hot": train_pair(64, steps=400, init_std=3.0),
        "cold": train_pair(64, steps=400, init_std=0.1),
        "adam": train_pair(64, steps=400, optimizer="adam", lr=0.01),
    }
    s, u = ref["default"]
    r = u.tail_loss() / s.tail_loss()
    assert f"The scaled run first answers 99 % of a batch right at {first(s.accuracy, 0.99)}" in t
    assert f"loss is {lead(r)} ({u.tail_loss():.2g} against {s.tail_loss():.2g})" in t
    assert f"{u.tail_accuracy():.1%} of its last 50 batches right, against " in t
    assert f"against {s.tail_accuracy():.1%}." in t
    assert f"({u.saturated[-1]:.0%} above 0.99 at the end)" in t
    u50, s50 = u.loss[-50:], s.loss[-50:]
    assert f"(from {min(u50):.2g} to {max(u50):.2g} over the last 50 steps, against " in t
    assert f"against {min(s50):.2g} to {max(s50):.2g} for the scaled run)" in t
    # item 5: the Q&A reader's "little difference at small d_k", measured at two learning rates
    (s8, u8), (s8s, u8s) = ref["small"], ref["small_slow"]
    r8, r8s = u8.tail_loss() / s8.tail_loss(), u8s.tail_loss() / s8s.tail_loss()
    assert (
        f"at d_k = 8 and lr 0.5 the unscaled run's final loss is still {lead(r8)} "
        f"({u8.tail_loss():.2g} against {s8.tail_loss():.2g}); at lr 0.1 it is {lead(r8s)} "
        f"({u8s.tail_loss():.2g} against {s8s.tail_loss():.2g})"
    ) in t
    assert f"At 8 and lr 0.5 the unscaled run's final loss is still {lead(r8)}" in t
    # item 11's second half: how the init-std-3 runs leave chance, and how they end
    s3, u3 = ref["hot"]
    chance = u3.chance

    def below(run):
        return first([-x / chance for x in run.loss], -0.9)

    assert f"drops below 90 % of chance at {below(u3)} (the scaled run's at {below(s3)}" in t
    assert f"start with standard deviation {3.0**2:g}), and over the last 50 steps it " in t
    assert f"it is {lead(u3.tail_loss() / s3.tail_loss())}." in t
    sa, ua = ref["adam"]
    assert f"the unscaled loss at step 50 is {ua.loss[49]:.2g}, when the scaled run's is " in t
    assert f"is {sa.loss[49]:.2g} (it answers {sa.accuracy[49]:.0%} of that batch right)" in t
    assert (
        f"the unscaled loss is {ua.tail_loss():.2g}, {lead(ua.tail_loss() / sa.tail_loss())}" in t
    )
    assert f"at step 50 the unscaled loss is still {ua.loss[49]:.2g} while the scaled run's" in t
    sc, uc = ref["cold"]
    assert f"final losses {uc.tail_loss():.2g} unscaled and {sc.tail_loss():.2g} scaled" in t
    assert f"at {first(uc.accuracy, 0.99)} unscaled and {first(sc.accuracy, 0.99)} scaled" in t
    # the runs are the server's: another session, and Run both at the defaults, reuse them
    again = run_page(PAGE)
    assert "Measure the story" not in [b.label for b in again.button]
    assert any("Training loss" in s["layout"]["title"]["text"] for s in plotly_specs(again))


SWEEP = (8, 16, 32, 64)


def sweep_expectations(d_model, **kw):
    """The sweep recomputed, with the verdict's wording decided from these numbers."""
    runs = head_sweep(d_model, SWEEP, **kw)
    rows = [
        f"| {r.d_k} | {r.heads} | {r.tail_loss():.3g} | {r.tail_accuracy():.1%} | "
        f"{first(r.accuracy, 0.9, r.steps)} |"
        for r in runs
    ]
    small = runs[0]
    best = min((r for r in runs if r.d_k >= 32), key=lambda r: r.tail_loss())
    k_small = next((i for i, a in enumerate(small.accuracy) if a >= 0.9), None)
    k_best = next((i for i, a in enumerate(best.accuracy) if a >= 0.9), None)
    if best.tail_accuracy() - small.tail_accuracy() > 0.02:
        verdict = "small d_k hurts the answer"
    elif (k_best is not None and (k_small is None or k_small >= 1.5 * k_best)) or (
        small.tail_loss() / best.tail_loss() >= 2
    ):
        verdict = "small d_k costs speed, not the answer"
    else:
        verdict = "small d_k does not hurt"
    figures = (
        f"d_k = {small.d_k} ends at {small.tail_accuracy():.1%} accuracy and loss "
        f"{small.tail_loss():.3g} over its last 50 steps, d_k = {best.d_k} (the best of "
        f"d_k ≥ 32) at {best.tail_accuracy():.1%} and {best.tail_loss():.3g}"
    )
    return rows, verdict, figures


def test_the_heads_step_waits_for_its_button_and_binds_d_model():
    at = run_page(PAGE, step="Heads")
    no_exception(at)
    assert not warnings(at)
    assert [h.value for h in at.header] == ["Head width: does d_k below 32 hurt?"]
    assert at.radio(key="d_model").value == 64
    assert "Train the 4 head counts" in [b.label for b in at.button]
    assert not plotly_specs(at)  # nothing trains before the press
    t = text(at)
    assert "d_k = 8, 16, 32, 64" in t and "each trains 400 steps." in t
    assert "(1600 training steps in all)" in " ".join(i.value for i in at.info)
    # d_model = 128 costs more per step: the step count is capped, and the page says so
    big = run_page(PAGE, step="Heads", d_model="128", steps="2000")
    no_exception(big)
    assert not warnings(big)
    assert "the step slider says 2000; the sweep stops at 400 at d_model = 128" in text(big)
    bad = run_page(PAGE, step="Heads", d_model="100")
    notes = warnings(bad)
    assert len(notes) == 1 and "`d_model=100`" in notes[0], notes
    assert bad.radio(key="d_model").value == 64


@pytest.mark.parametrize("steps", [100, 400])
def test_the_head_width_sweep_shows_measured_quality_and_an_honest_verdict(steps, no_budget):
    rows, verdict, figures = sweep_expectations(64, steps=steps)
    at = run_page(PAGE, step="Heads", steps=steps)
    at.button(key="sweep").click().run(timeout=120)
    no_exception(at)
    [chart] = plotly_specs(at)
    assert chart["layout"]["title"]["text"].startswith("Training loss by head width — d_model = 64")
    assert [d["name"] for d in chart["data"]] == [f"d_k = {d} (h = {64 // d})" for d in SWEEP]
    md = [m.value for m in at.markdown]
    table = next(m for m in md if m.startswith("| d_k |"))
    assert table.splitlines()[2:] == rows
    t = text(at)
    assert f"**At these settings {verdict}:** {figures}" in t
    assert "**What this measures.**" in t
    # a second visit finds the finished sweep: no button to press, the same table
    again = run_page(PAGE, step="Heads", steps=steps)
    assert next(m.value for m in again.markdown if m.value.startswith("| d_k |")) == table
    assert again.button(key="sweep").disabled


def test_a_diverging_sweep_gives_no_verdict(no_budget):
    at = run_page(PAGE, step="Heads", lr="10", steps="50")
    at.button(key="sweep").click().run(timeout=120)
    no_exception(at)
    runs = head_sweep(64, SWEEP, lr=10.0, steps=50)
    bad = [r.d_k for r in runs if r.stopped == "nan"]
    assert bad  # lr 10 blows up here, so the page must not draw a conclusion
    t = text(at)
    assert "**No verdict:**" in t and ", ".join(f"d_k = {d}" for d in bad) in t
    assert "At these settings" not in t
