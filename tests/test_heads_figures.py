"""figures.heads: right traces, titles, axis titles and shapes, called directly (no server)."""

import math

import numpy as np
import plotly.graph_objects as go

from attn_core import induction as ind
from figures import heads as fh
from figures.style import Chart

NAMES = [f"L{l}H{h}" for l in range(2) for h in range(4)]
JOBS = [["previous-token", "", "", ""], ["", "induction", "", ""]]


def _maps(T=10):
    w = np.broadcast_to(ind.uniform_weights(T).numpy()[0, 0], (2, 4, T, T)).copy()
    return w


def _titles(fig: go.Figure):
    return fig.layout.title.text, fig.layout.xaxis.title.text, fig.layout.yaxis.title.text


def test_head_maps_mosaic_of_heatmaps_on_one_pair_of_axes_with_scores_and_jobs():
    T = 10
    labels = ["<b>a</b>"] + [f"t{i}" for i in range(1, T)]
    prev = np.full((2, 4), 0.1)
    score = np.full((2, 4), 0.05)
    score[1, 1] = math.nan  # missing induction score shows as n/a, never "nan"
    c = fh.head_maps(_maps(T), labels, prev, score, JOBS)
    assert isinstance(c, Chart) and c.caption
    hm = [t for t in c.fig.data if isinstance(t, go.Heatmap)]
    assert len(hm) == 8 and all(np.asarray(t.z).shape == (T, T) for t in hm)
    # one subplot: every head on the same axes, shifted to its own place in the mosaic
    assert {(t.xaxis or "x", t.yaxis or "y") for t in hm} == {("x", "y")}
    assert not any(k.startswith(("xaxis2", "yaxis2")) for k in c.fig.layout.to_plotly_json())
    corners = {(t.x0, t.y0) for t in hm}
    assert len(corners) == 8 and sorted({x for x, _ in corners})[1] > T  # no overlap
    assert np.isnan(np.asarray(hm[0].z)[0, 1])  # the future is blank, not zero
    assert all(t.coloraxis == "coloraxis" for t in hm)
    assert c.fig.layout.coloraxis.cmin == 0 and c.fig.layout.coloraxis.cmax == 1
    assert "texttemplate" not in hm[0].to_plotly_json()  # no per-cell text
    # hover names the head and the positions inside its own map
    cd = np.asarray(hm[5].customdata)
    assert cd.shape == (T, T, 2) and tuple(cd[3, 1]) == (3, 1)
    assert hm[5].hovertemplate.startswith("L1H1 · induction head")
    assert "attention map" in c.fig.layout.title.text
    notes = [a.text for a in c.fig.layout.annotations]
    assert "previous-token head" in notes[0] and "induction head" in notes[5]
    assert "n/a" in notes[5] and not any("nan" in n for n in notes)
    assert c.fig.layout.xaxis.title.text and c.fig.layout.yaxis.title.text
    assert c.fig.layout.yaxis.range[0] > c.fig.layout.yaxis.range[1]  # row 0 at the top
    assert "&lt;b&gt;" in c.fig.layout.yaxis.ticktext[0]  # user text never becomes markup
    assert len(c.fig.layout.xaxis.tickvals) == 4 * T  # short text: every token, every panel
    assert "L0H0" in c.caption and "L1H1" in c.caption
    plain = fh.head_maps(_maps(48), [str(i) for i in range(48)], prev, score, JOBS,
                         token_ticks=False)  # fmt: skip
    assert plain.fig.layout.xaxis.showticklabels is False  # random ids: no tick labels
    assert plain.fig.layout.xaxis.title.text == "key position"


def test_head_score_bars():
    c = fh.head_score_bars(NAMES, np.linspace(0, 0.5, 8), np.linspace(0.5, 0, 8), 0.07, 0.04)
    bars = [t for t in c.fig.data if isinstance(t, go.Bar)]
    lines = [t for t in c.fig.data if isinstance(t, go.Scatter)]
    assert len(bars) == 2 and list(bars[0].x) == NAMES and len(bars[0].y) == 8
    assert len(lines) == 2 and "uniform" in lines[0].name
    assert all(_titles(c.fig))


def test_position_loss_with_and_without_ablation():
    T = 8
    loss = np.linspace(4, 0, T - 1)
    rep = np.array([False] * 3 + [True] * 4)
    labels = list("abcdabcd")
    c = fh.position_loss(loss, rep, labels, math.log(64))
    names = [t.name for t in c.fig.data]
    assert any("first occurrence" in (n or "") for n in names)
    assert any("repeated" in (n or "") for n in names)
    assert all(_titles(c.fig)[::2]) and c.fig.layout.xaxis.title.text
    assert list(c.fig.layout.xaxis.ticktext) == labels[: T - 1]
    c2 = fh.position_loss(loss, rep, labels, math.log(64), ablated=loss + 1, ablated_name="L1H0")
    assert any("L1H0 switched off" in (t.name or "") for t in c2.fig.data)
    assert len(c2.fig.data) == len(c.fig.data) + 1


def test_ablation_bars_mark_the_selection():
    c = fh.ablation_bars(NAMES, np.arange(8) / 10, 0.01, 4.16, selected=["L0H2"], selected_loss=2.0)
    bar = next(t for t in c.fig.data if isinstance(t, go.Bar))
    assert list(bar.x) == NAMES and len(bar.y) == 8
    assert bar.marker.line.color[2] == "#000000" and bar.marker.line.color[0] != "#000000"
    assert any("your selection" in (t.name or "") for t in c.fig.data)
    assert all(_titles(c.fig))


def test_contribution_scatter_one_trace_per_head_one_dot_per_key_log_axes():
    T = 6
    w = _maps(T)  # uniform causal weights: key k gets 1 / (k + 1) at most, from query k
    c = fh.contribution_scatter(w, w * 3, NAMES)
    assert len(c.fig.data) == 8 and [t.name for t in c.fig.data] == NAMES
    assert c.fig.layout.xaxis.type == "log" and c.fig.layout.yaxis.type == "log"
    assert all(_titles(c.fig))
    dots = c.fig.data[0]
    assert len(dots.x) == T  # one dot per key above 0.01
    assert np.allclose(dots.x, 1 / np.arange(1, T + 1)) and np.allclose(dots.y, 3 * dots.x)
    assert [tuple(r) for r in np.asarray(dots.customdata)] == [(k, k) for k in range(T)]
    tiny = w.copy()
    tiny[0, 0] = np.tril(np.full((T, T), 0.005))  # all below 0.01: left out
    assert len(fh.contribution_scatter(tiny, tiny, NAMES).fig.data[0].x) == 0


def test_training_curves_from_a_run():
    _, run = ind.train_induction(steps=4, seed=0)
    c = fh.run_curves(run, "Training curves — test")
    assert c.fig.layout.title.text == "Training curves — test"
    assert len(c.fig.data) == 5  # two losses, two head scores, chance
    assert len(c.fig.data[0].y) == 4 and len(c.fig.data[2].x) == len(run.score_steps)
    assert c.fig.layout.yaxis.title.text and c.fig.layout.yaxis2.title.text
    assert c.fig.layout.xaxis2.title.text == "training step"
    c2 = fh.training_curves([4.0] * 30, [4.0] * 30, [0, 25], [0.1, 0.5], [0.1, 0.4], 4.16,
                            phase_step=12)  # fmt: skip
    assert any("phase change" in a.text for a in c2.fig.layout.annotations)


def test_plot_label_escapes_and_shortens():
    assert fh.plot_label("<script>x") == "&lt;script…"
    assert fh.plot_label("") == "·" and fh.plot_label("\x00") == "·"
