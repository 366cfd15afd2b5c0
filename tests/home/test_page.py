"""AppTest: the home page and the shell (navigation, badge, URL fallbacks)."""

import base64

import numpy as np
import pytest

from tests.support.apptest import no_exception, plotly_specs, run_page, warnings
from ui.content import Words

HOME = "pages/home.py"
W = Words("home")


def one_hot(n: int) -> str:
    """The page's sentence for n one-hot rows of the 8-word demo."""
    return W("one_hot", n=n, T=8, limit=0.99)


def test_defaults_show_formula_badge_chart_and_lesson_path():
    at = run_page(HOME)
    no_exception(at)
    assert at.title[0].value == "Attention Explorer"
    assert any("softmax" in el.value for el in at.latex)
    assert any("Computed live by PyTorch" in c.value and "CPU" in c.value for c in at.caption)
    specs = plotly_specs(at)
    assert len(specs) == 1
    fig = specs[0]
    assert fig["data"][0]["type"] == "heatmap"
    assert "d_k = 64" in fig["layout"]["title"]["text"]
    assert fig["layout"]["xaxis"]["title"]["text"] and fig["layout"]["yaxis"]["title"]["text"]
    assert not warnings(at)
    typical = float(at.metric[0].value)
    assert 0.1 < typical < 0.9  # scaled: a spread-out row


def test_unscaled_large_d_k_saturates():
    at = run_page(HOME, d_k="1024", scaled="false")
    no_exception(at)
    assert at.select_slider[0].value == 1024 and at.toggle[0].value is False
    assert float(at.metric[0].value) > 0.95
    assert not warnings(at)


def test_d_k_one_scaling_changes_nothing():
    a = run_page(HOME, d_k="1", scaled="true")
    b = run_page(HOME, d_k="1", scaled="false")
    assert a.metric[0].value == b.metric[0].value


@pytest.mark.parametrize(
    "params,bad",
    [
        ({"d_k": "-3"}, "d_k"),
        ({"d_k": "abc"}, "d_k"),
        ({"d_k": "100"}, "d_k"),
        ({"d_k": ""}, "d_k"),
        ({"scaled": "maybe"}, "scaled"),
        ({"seed": "1e99"}, "seed"),
        ({"seed": "nan"}, "seed"),
        ({"d_k": "<script>alert(1)</script>"}, "d_k"),
        ({"d_k": "`![x](http://example.com/x.png)`"}, "d_k"),
    ],
)
def test_bad_url_values_fall_back_with_a_visible_note(params, bad):
    at = run_page(HOME, **params)
    no_exception(at)
    notes = warnings(at)
    assert len(notes) == 1 and f"`{bad}=" in notes[0], notes
    assert at.select_slider[0].value == 64 or bad != "d_k"
    # hostile text is quoted inside a code span, never rendered as HTML or an image
    assert "http" not in notes[0] or "`d_k=" in notes[0]
    assert "<script>" not in notes[0].replace("`d_k=<script>", "")


def test_note_disappears_when_the_user_moves_the_control():
    at = run_page(HOME, d_k="abc")
    assert warnings(at)
    at.select_slider[0].set_value(128).run()
    no_exception(at)
    assert not warnings(at)


def test_navigation_lists_available_pages_in_lesson_order():
    from ui.lesson import LESSONS, available

    files = [lesson.file for lesson in available()]
    assert files[0] == HOME
    order = [lesson.file for lesson in LESSONS]
    assert files == sorted(files, key=order.index)


def one_hot_rows(d_k: int, scaled: bool, seed: int) -> int:
    """Rows of the demo sentence whose largest weight passes 0.99, computed here from attn_core."""
    from attn_core import attention, pick_device, random_qkv

    q, k, v = random_qkv(8, d_k, seed=seed, device=pick_device())
    w = attention(q, k, v, scale=None if scaled else 1.0).weights.float()  # (8, 8)
    return int((w.amax(-1) > 0.99).sum())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_one_hot_count_is_computed_from_the_heatmaps_weights(seed):
    at = run_page(HOME, d_k="512", scaled="false", seed=str(seed))
    no_exception(at)
    n = one_hot_rows(512, False, seed)
    metric = {m.label: m.value for m in at.metric}["One-hot rows (largest weight > 0.99)"]
    assert metric == f"{n} of 8"
    z = plotly_specs(at)[0]["data"][0]["z"]  # the heatmap's own cells, plotly's binary form
    cells = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"])
    assert int((cells.reshape(8, 8).max(-1) > 0.99).sum()) == n  # the same weights it draws
    captions = " ".join(c.value for c in at.caption)
    assert one_hot(n) in captions
    assert one_hot(n).startswith(f"{n} of 8 rows are one-hot")
    # the Try-this box promises exactly what the unscaled d_k = 512 sentence shows here
    scaled = [one_hot_rows(2**i, True, seed) for i in range(11)]
    tips = " ".join(md.value for md in at.markdown)
    assert f"at this seed {one_hot(n)}, against {one_hot_rows(512, True, seed)} with the" in tips
    if max(scaled) == 0:
        assert W("back_on.none", lo=1, hi=1024) in tips
        assert "no row is one-hot at any d_k from 1 to 1024" in tips
    else:
        assert f"{max(scaled)} of 8 rows are one-hot" in tips
    assert "almost every row" not in tips


def test_no_one_hot_row_says_so_with_the_largest_weight():
    at = run_page(HOME)
    no_exception(at)
    assert {m.label: m.value for m in at.metric}["One-hot rows (largest weight > 0.99)"] == "0 of 8"
    from attn_core import attention, pick_device, random_qkv

    q, k, v = random_qkv(8, 64, seed=0, device=pick_device())
    top = float(attention(q, k, v).weights.float().max())
    captions = " ".join(c.value for c in at.caption)
    assert W("verdict.none", limit=0.99, top=top) in captions
    assert f"the largest weight in any row is {top:.3f}" in captions
