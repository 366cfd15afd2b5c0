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


def test_head_maps_grid_of_heatmaps_with_scores_and_jobs():
    T = 10
    labels = ["<b>a</b>"] + [f"t{i}" for i in range(1, T)]
    prev = np.full((2, 4), 0.1)
    score = np.full((2, 4), 0.05)
    score[1, 1] = math.nan  # missing induction score shows as n/a, never "nan"
    c = fh.head_maps(_maps(T), labels, prev, score, JOBS)
    assert isinstance(c, Chart) and c.caption
    hm = [t for t in c.fig.data if isinstance(t, go.Heatmap)]
    assert len(hm) == 8 and all(np.asarray(t.z).shape == (T, T) for t in hm)
    assert np.isnan(np.asarray(hm[0].z)[0, 1])  # the future is blank, not zero
    assert c.fig.layout.coloraxis.cmin == 0 and c.fig.layout.coloraxis.cmax == 1
    assert "attention map" in c.fig.layout.title.text
    notes = [a.text for a in c.fig.layout.annotations]
    assert "previous-token head" in notes[0] and "induction head" in notes[5]
    assert "n/a" in notes[5] and not any("nan" in n for n in notes)
    assert c.fig.layout.xaxis5.title.text == "key" and c.fig.layout.yaxis.title.text == "query"
    assert "&lt;b&gt;" in c.fig.layout.yaxis.ticktext[0]  # user text never becomes markup
    assert "L0H0" in c.caption and "L1H1" in c.caption


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


def test_contribution_scatter_one_trace_per_head_log_axes():
    w = _maps(6)
    c = fh.contribution_scatter(w, w * 3, NAMES)
    assert len(c.fig.data) == 8 and [t.name for t in c.fig.data] == NAMES
    assert c.fig.layout.xaxis.type == "log" and c.fig.layout.yaxis.type == "log"
    assert all(_titles(c.fig))
    n_causal_kept = int((np.tril(w[0, 0]) > 0.01).sum())
    assert len(c.fig.data[0].x) == n_causal_kept


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
