"""Every numeric sentence of the softmax page, recomputed here with plain torch and
compared with what the page shows (AppTest). The numbers are never copied from the page.
"""

import math

import pytest
import torch

from attn_core import SOFTMAX_EXAMPLES, STABILITY_SCORES
from tests.support.apptest import no_exception, run_page

PAGE = "pages/softmax.py"
F64 = torch.float64


@pytest.fixture(scope="module")
def steps():
    """The steps whose sentences are checked here, each at its defaults."""
    out = {}
    for step in ("Example", "Shift", "Stability", "Temperature"):
        out[step] = run_page(PAGE, step=step)
        no_exception(out[step])
    return out


def tries(at, first_words: str) -> str:
    """The Try-this list whose first item starts with `first_words`."""
    return next(m.value for m in at.markdown if m.value.startswith(f"- **{first_words}"))


def naive(scores, dtype) -> torch.Tensor:
    x = torch.tensor(scores, dtype=F64).to(dtype)
    return (torch.exp(x) / torch.exp(x).sum()).double()


def exp_edge(dt, zero: bool) -> float:
    """Where torch.exp in dt turns 0 (zero=True) or inf: between two adjacent stored values."""
    x, toward = torch.tensor(0.0, dtype=dt), torch.tensor(-math.inf if zero else math.inf, dtype=dt)
    while True:
        nxt = torch.nextafter(x, toward)
        e = float(torch.exp(nxt))
        if (e == 0.0) if zero else math.isinf(e):
            return (float(x) + float(nxt)) / 2
        x = nxt


def softmax_weights(q, k) -> torch.Tensor:
    s = torch.tensor(k, dtype=F64) @ torch.tensor(q, dtype=F64) / math.sqrt(len(q))
    return torch.softmax(s, -1)


def entropy(w) -> float:
    return float(-(w * w.log()).sum())


def test_stability_tries_offsets_and_edges(steps):
    text = tries(steps["Stability"], "float32, offset")
    ok = [c for c in range(-40, 1) if torch.isfinite(naive([s + c for s in STABILITY_SCORES],
                                                            torch.float32)).all()]  # fmt: skip
    hi = max(ok)
    assert f"float32, offset {hi} and then {hi + 1}" in text
    at_hi = naive([s + hi for s in STABILITY_SCORES], torch.float32)  # "both agree" there
    assert torch.allclose(at_hi, torch.softmax(torch.tensor(STABILITY_SCORES, dtype=F64), -1))
    broken = naive([s + hi + 1 for s in STABILITY_SCORES], torch.float32).tolist()
    shown = ", ".join("NaN" if math.isnan(w) else f"{w:.3g}" for w in broken)
    assert f"turn into [{shown}]" in text and "NaN" in shown
    # float16: the band, a fine offset and one where every e^s is 0
    lo16, hi16 = exp_edge(torch.float16, True), exp_edge(torch.float16, False)
    assert f"between about {lo16:.2f} and {hi16:.2f}" in text
    all_zero = [
        c
        for c in range(-200, 0)
        if (torch.exp(torch.tensor([s + c for s in STABILITY_SCORES]).half()) == 0).all()
    ]
    fine = -round(max(STABILITY_SCORES))
    w = naive([s + fine for s in STABILITY_SCORES], torch.float16)
    assert torch.allclose(
        w, torch.softmax(torch.tensor(STABILITY_SCORES, dtype=F64), -1), atol=1e-2
    )
    assert f"try offset {fine} (scores up to 0: fine) and {max(all_zero)} (every e^s" in text
    # bfloat16 at 700: 8 significant bits cannot tell 800, 801, 802 apart
    stored = torch.tensor([s + 700 for s in STABILITY_SCORES]).bfloat16().double().tolist()
    assert len(set(stored)) < 3
    assert f"[{', '.join(f'{x:.3g}' for x in stored)}]" in text
    bits = 1 - round(math.log2(torch.finfo(torch.bfloat16).eps))
    assert f"only {bits} significant bits" in text


def test_underflow_error_names_the_measured_edge(steps):
    at = steps["Stability"]
    at.radio(key="dtype").set_value("float16")
    at.slider(key="offset").set_value(-120).run()
    no_exception(at)
    err = next(e.value for e in at.error if "other way" in e.value)
    assert f"x below {exp_edge(torch.float16, True):.2f}" in err
    at.radio(key="dtype").set_value("float32")
    at.slider(key="offset").set_value(0).run()


def test_example_and_temperature_tries(steps):
    _, q, k, _ = SOFTMAX_EXAMPLES["lesson"]
    w = softmax_weights(q, k)
    k_low = [list(r) for r in k]
    k_low[1][1] = -3.0
    w_low = softmax_weights(q, k_low)
    text = tries(steps["Example"], "Type -3 into k 2")
    assert f"collapses from {float(w[1]):.3f} to {float(w_low[1]):.2g}" in text
    _, qn, kn, _ = SOFTMAX_EXAMPLES["negative"]
    raw = torch.tensor(kn, dtype=F64) @ torch.tensor(qn, dtype=F64)
    assert f"t1 gets weight {float(raw[0] / raw.sum()):.3g}" in text
    # temperature
    s = torch.tensor(k, dtype=F64) @ torch.tensor(q, dtype=F64) / math.sqrt(3)
    cold, hot = torch.softmax(s / 0.05, -1), torch.softmax(s / 20.0, -1)
    text = tries(steps["Temperature"], "Drag τ down")
    assert f"all but {1 - float(cold.max()):.1e} of the weight" in text
    assert f"falls to {entropy(cold):.1e} nats" in text
    assert f"reaches {entropy(hot):.3f} nats, near ln 3 = {math.log(3):.3f}" in text
    k_tie = [list(r) for r in k]
    k_tie[2][0] = 1.7
    s_tie = torch.tensor(k_tie, dtype=F64) @ torch.tensor(q, dtype=F64) / math.sqrt(3)
    h_tie = entropy(torch.softmax(s_tie / 0.05, -1))
    assert f"entropy stops at {h_tie:.3f} nats" in text
    assert f"{h_tie:.3f}" == f"{math.log(2):.3f}"


def test_plain_mean_and_shift_caption(steps):
    at = steps["Example"]
    _, _, _, v = SOFTMAX_EXAMPLES["lesson"]
    mean = torch.tensor(v, dtype=F64).mean(0).tolist()
    body = "\n".join(m.value for e in at.expander for m in e.markdown)
    assert f"plain mean [{mean[0]:.4g}, {mean[1]:.4g}]" in body
    _, q, k, _ = SOFTMAX_EXAMPLES["lesson"]
    s = torch.tensor(k, dtype=F64) @ torch.tensor(q, dtype=F64) / math.sqrt(3)
    change = float((torch.softmax(s + 5.0, -1) - torch.softmax(s, -1)).abs().max())
    eps = torch.finfo(F64).eps
    caption = steps["Shift"].caption
    assert any(f"that is {change / eps:.2g} × float64's eps" in c.value for c in caption)


def test_finite_but_wrong_naive_weights_are_not_called_agreement():
    """float16, offset -119: e^-19 and e^-18 round to 0 and e^-17 is a subnormal, so the
    naive weights are finite yet far from the stable ones; the page must not say 'agree'."""
    at = run_page(PAGE, step="Stability", dtype="float16", offset="-119")
    no_exception(at)
    scores = [s - 119 for s in STABILITY_SCORES]
    w = naive(scores, torch.float16)
    stable = torch.softmax(torch.tensor(scores, dtype=F64).half().double(), -1)
    assert torch.isfinite(w).all() and float((w - stable).abs().max()) > 0.01
    assert not any("agree" in s.value for s in at.success)
    warn = next(w.value for w in at.warning if "finite weights, but wrong ones" in w.value)
    tiny = torch.finfo(torch.float16).smallest_normal
    assert f"below {tiny:.3g}" in warn
    shown = ", ".join(f"{x:.3g}" for x in w.tolist())
    assert f"[{shown}] against the stable" in warn
    at.slider(key="offset").set_value(-102).run()  # float16 again: here the shortcut is fine
    ok = naive([s - 102 for s in STABILITY_SCORES], torch.float16)
    assert torch.allclose(ok, stable, atol=0.01)
    assert any("agree" in s.value for s in at.success) and not at.warning
