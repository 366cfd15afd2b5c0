"""figures.positions: every builder returns a titled, labelled, valid figure with a caption
that quotes its own numbers."""

import numpy as np
import plotly.graph_objects as go
import torch

from attn_core.lessons import positions as core
from figures import Chart
from figures import positions as fp


def titled(chart: Chart) -> go.Figure:
    assert isinstance(chart, Chart) and chart.caption
    fig = go.Figure(chart.fig.to_dict())  # re-validated: a typo in a property fails here
    assert fig.layout.title.text
    assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    return fig


def test_shuffle_chart_draws_one_line_per_setting_on_a_log_axis():
    moves = {
        "no mask, no position": core.shuffle_error(8, 16)[1].numpy(),
        "causal mask": core.shuffle_error(8, 16, causal=True)[1].numpy(),
    }
    chart = fp.shuffle_chart(moves)
    fig = titled(chart)
    assert len(fig.data) == 2 and fig.layout.yaxis.type == "log"
    assert min(chart.fig.data[0].y) >= fp.FLOOR  # zeros drawn at the floor
    causal = moves["causal mask"]
    big = causal[causal > fp.ROUNDING]
    assert f"{big.size} of {causal.size} points" in chart.caption
    assert f"the least of them by {big.min():.2g}" in chart.caption


def test_shuffle_chart_names_a_line_that_did_not_move():
    moves = {"no mask, no position": np.zeros(2), "ALiBi": np.full(2, 2e-7), "RoPE": np.ones(2)}
    caption = fp.shuffle_chart(moves).caption
    assert "ALiBi moved by float rounding only here" in caption
    assert "2 of 2 points" in caption  # RoPE's: ALiBi's rounding is not counted as moving


def test_repeated_scores_chart_says_toeplitz_only_when_it_is():
    s = core.repeated_token_scores(10, 16, "rope")
    rope = fp.repeated_scores_chart(s.numpy(), "rope", core.toeplitz_deviation(s))
    assert "Toeplitz" in rope.caption and "not constant" not in rope.caption
    s = core.repeated_token_scores(10, 16, "learned")
    learned = fp.repeated_scores_chart(s.numpy(), "learned", core.toeplitz_deviation(s))
    assert "not constant" in learned.caption
    titled(learned)
    assert np.asarray(learned.fig.data[0].z).shape == (10, 10)


def test_code_charts_quote_their_measured_numbers():
    pe = core.sinusoidal_positions(16, 32).numpy()
    heat = fp.code_heatmap(pe)
    titled(heat)
    last = np.abs(pe[:, -1] - pe[0, -1]).max()
    assert f"{last:.2g}" in heat.caption
    dots = fp.code_dot_chart(pe, [0, 4, 8])
    fig = titled(dots)
    assert len(fig.data) == 3 and "32 at Δ = 0" not in dots.caption  # d = 32 → p·p = 16
    assert "16 at Δ = 0" in dots.caption


def test_rope_charts():
    x = torch.zeros(6, 8, dtype=torch.float64)
    x[:, 2] = 1.0
    xy = core.rope(x, torch.arange(6))[:, 2:4].numpy()
    w = core.rope_frequencies(8).numpy()
    pair = titled(fp.rope_pair_chart(xy, 1, float(w[1])))
    assert pair.layout.yaxis.scaleanchor == "x"
    np.testing.assert_allclose(np.hypot(xy[:, 0], xy[:, 1]), 1.0)
    spec = fp.rope_spectrum_chart(w, 10_000.0, 6)
    assert titled(spec).layout.yaxis.type == "log" and "of the 4 pairs" in spec.caption
    off = np.array([1.0, 10.0, 100.0])
    curves = {b: core.rope_expected_score(torch.tensor(off), 8, b).numpy() for b in (1e4, 1e2)}
    decay = fp.rope_decay_chart(off, curves, 8)
    assert len(titled(decay).data) == 2 and f"{curves[1e4][0]:.3g}" in decay.caption


def test_alibi_and_extrapolation_and_model_charts():
    w, spans = core.alibi_reach(4, 20)
    alibi = fp.alibi_reach_chart(w.numpy(), core.alibi_slopes(4).numpy(), spans)
    assert len(titled(alibi).data) == 4 and f"nearest {spans[0]} keys" in alibi.caption
    table = {"rope": {16: 1.0, 32: 0.8}, "learned": {16: 1.0, 32: 0.4}}
    ex = fp.extrapolation_chart(table, 16, 1 / 16)
    assert len(titled(ex).data) == 2 and "6.2%" in ex.caption
    sim = core.cosine_matrix(torch.randn(12, 5)).numpy()
    titled(fp.model_positions_chart(sim, "m"))


def test_the_real_models_position_map_caption_matches_its_numbers():
    name, table = core.model_positions(128)
    sim = core.cosine_matrix(table).numpy()
    chart = fp.model_positions_chart(sim, name)
    near = np.mean(np.diagonal(sim, 1))
    assert f"cosine {near:.2f} on average" in chart.caption and near > 0.5
    assert "climbs back" in chart.caption  # MiniLM's learned table is wave-like
    assert chart.fig.data[0].xgap == 0
