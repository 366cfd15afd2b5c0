"""The cost page's figure builders, called directly: traces, titles, axes, shapes, captions."""

import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attn_core import attention, tile_grid, tiled_attention, trace_state
from attn_core.lessons.cost import largest_fitting_T
from figures import Chart
from figures import cost as fig


def axis_titles(f, *names):
    return [f.layout[n].title.text for n in names]


def test_flops_chart_marks_crossover_and_current_T():
    c = fig.flops_chart(512, 4096)
    assert isinstance(c, Chart)
    f = c.fig
    assert "d_model = 512" in f.layout.title.text
    assert all(axis_titles(f, "xaxis", "yaxis"))
    assert f.layout.xaxis.type == "log" and f.layout.yaxis.type == "log"
    proj, attn, mark = f.data
    assert [t.type for t in f.data] == ["scatter"] * 3
    # the lines are the lesson's formulas; they meet at T = 2d = 1024
    Ts = np.asarray(proj.x)
    np.testing.assert_allclose(proj.y, 4 * Ts * 512**2)
    np.testing.assert_allclose(attn.y, 2 * Ts**2 * 512)
    assert f.layout.shapes[0].x0 == 1024
    assert "1,024" in f.layout.annotations[0].text
    assert list(mark.x) == [4096, 4096]
    assert "attention's T² term dominates" in c.caption and "80%" in c.caption
    assert "projections dominate" in fig.flops_chart(512, 64).caption
    assert "exactly equal" in fig.flops_chart(512, 1024).caption


def test_probs_memory_chart_reproduces_the_lesson_and_draws_the_gpu_line():
    c = fig.probs_memory_chart(32, 8, "float16", 12, 24, 1024)
    f = c.fig
    assert "batch 32 × 8 heads" in f.layout.title.text and "2 bytes" in f.layout.title.text
    assert all(axis_titles(f, "xaxis", "yaxis"))
    total, per, _mark = f.data
    i = list(per.x).index(1024)
    assert per.y[i] == 512 * 2**20 and total.y[i] == 6 * 2**30
    gpu_line = next(s for s in f.layout.shapes if s.type == "line")
    assert gpu_line.y0 == 24 * 2**30
    assert "512 MiB" in c.caption and "6 GiB" in c.caption
    # T = 2048 (24 GiB for 12 layers) is the largest that fits a 24 GiB card
    assert largest_fitting_T(32, 8, "float16", 12, 24) == 2048
    assert "T = 2,048" in c.caption
    assert f.layout.yaxis.type == "log" and "GiB" in " ".join(f.layout.yaxis.ticktext)


def test_probs_memory_chart_extreme_settings_stay_finite():
    c = fig.probs_memory_chart(1024, 64, "float32", 128, 8, 131072)
    ys = np.concatenate([np.asarray(t.y, float) for t in c.fig.data])
    assert np.isfinite(ys).all()
    assert "PiB" in c.caption
    assert (
        "Not even T = 1 fits" not in c.caption
        or largest_fitting_T(1024, 64, "float32", 128, 8) == 0
    )


def test_kv_cache_chart_shows_the_factor_h():
    c = fig.kv_cache_chart(32, 1024, 12, 8, 2, 64, "float16", 24)
    (bar,) = c.fig.data
    assert bar.type == "bar" and len(bar.x) == 3
    mha, gqa, mqa = bar.y
    assert mha / mqa == pytest.approx(8) and mha / gqa == pytest.approx(4)
    assert c.fig.layout.title.text.startswith("KV cache")
    assert all(axis_titles(c.fig, "xaxis", "yaxis"))
    assert "h = 8" in c.caption and "768 MiB" in bar.text[0]


def test_gpu_line_only_when_comparable():
    small = fig.kv_cache_chart(1, 16, 1, 8, 2, 64, "float16", 192)
    assert not small.fig.layout.shapes and "All three fit" in small.caption
    big = fig.kv_cache_chart(1024, 131072, 128, 64, 8, 128, "float32", 8)
    assert big.fig.layout.shapes and "None of them fits" in big.caption


def test_sweep_chart_memory_and_time():
    series = {
        "attention": ([256, 512, 1024], [1e6, 4e6, 1.6e7]),
        "tiled_attention": ([256, 512, 1024], [2e5, 4e5, 8e5]),
        "fused_attention": ([], []),
    }
    slopes = {"attention": 2.0, "tiled_attention": 1.0, "fused_attention": math.nan}
    mem = fig.sweep_chart(series, slopes, what="memory", device="CPU · 2 threads")
    assert [t.type for t in mem.fig.data] == ["scatter", "scatter"]  # empty series skipped
    assert "slope 2.00" in mem.fig.data[0].name and "slope 1.00" in mem.fig.data[1].name
    assert "CPU" in mem.fig.layout.title.text
    assert all(axis_titles(mem.fig, "xaxis", "yaxis"))
    assert mem.fig.layout.xaxis.type == "log" and mem.fig.layout.yaxis.type == "log"
    assert "Measured here: `attention` 2.00, `tiled_attention` 1.00." in mem.caption
    tm = fig.sweep_chart(series, slopes, what="time", device="CPU")
    assert "Time" in tm.fig.layout.title.text and "slope" in tm.caption
    assert "Fastest at T = 1,024: `tiled_attention`" in tm.caption  # the smaller y there
    with pytest.raises(ValueError):
        fig.sweep_chart(series, slopes, what="flops", device="CPU")


@pytest.fixture
def walk():
    T, block = 16, 4
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(T, d, generator=g) for d in (8, 8, 4))
    out, steps = tiled_attention(q, k, v, block_q=block, block_k=block, trace=True)
    ref = attention(q, k, v)
    return T, block, steps, ref, out


def _stats(steps, step, T):
    """(m, l, m_final, l_final) after `step` tiles, as the page passes them."""
    now, final = trace_state(steps, step, T), trace_state(steps, len(steps), T)
    return now.m.numpy(), now.l.numpy(), final.m.numpy(), final.l.numpy()


def test_walkthrough_chart_highlights_the_current_tile_and_rows(walk):
    T, block, steps, ref, out = walk
    tiles = tile_grid(T, T, block, block)
    now = trace_state(steps, 5, T)
    c = fig.walkthrough_chart(
        ref.scores.numpy(), tiles, now.out.numpy(), out.numpy(), *_stats(steps, 5, T),
        block_q=block, block_k=block, step=5, current=(steps[4].rows, steps[4].cols),
    )  # fmt: skip
    f = c.fig
    assert [t.type for t in f.data] == [
        "heatmap", "heatmap", "scatter", "heatmap", "heatmap", "bar", "scatter", "bar", "scatter"
    ]  # fmt: skip
    assert np.asarray(f.data[0].z).shape == (T, T)
    veil = np.asarray(f.data[1].z, float)
    assert np.isnan(veil).sum() == 5 * block * block  # five tiles done, clear
    so_far, exact = (np.asarray(f.data[i].z, float) for i in (3, 4))
    assert so_far.shape == exact.shape == (T, 4)
    assert np.isnan(so_far[8:]).all() and not np.isnan(so_far[:8]).any()
    assert f.data[3].zmin == f.data[4].zmin == -f.data[4].zmax  # one symmetric scale
    assert "Step 5 of 16" in f.layout.title.text and "rows 4–7" in f.layout.title.text
    tile_frame, rows_frame = f.layout.shapes
    assert (tile_frame.x0, tile_frame.x1, tile_frame.y0, tile_frame.y1) == (-0.5, 3.5, 3.5, 7.5)
    assert rows_frame.xref == "x2" and (rows_frame.y0, rows_frame.y1) == (3.5, 7.5)
    assert f.layout.xaxis.title.text and f.layout.yaxis.title.text
    assert f.layout.xaxis2.title.text and f.layout.xaxis3.title.text
    # running max m and running sum l: horizontal bars on the query rows, the final ◇ beside
    m_bar, m_final, l_bar, l_final = f.data[5:]
    assert (m_bar.orientation, m_bar.xaxis, l_bar.xaxis) == ("h", "x4", "x5")
    assert all(t.yaxis in (None, "y") for t in f.data)  # every panel shares the query rows
    np.testing.assert_allclose(np.asarray(m_bar.x, float)[:8], now.m.numpy()[:8])
    assert np.isnan(np.asarray(l_bar.x, float)[8:]).all()  # rows not started: no bar
    assert list(m_bar.marker.color[4:8]) == [fig.ORANGE] * 4  # the current tile's rows
    assert list(m_bar.marker.color[:4]) == [fig.BLUE] * 4
    assert m_final.marker.symbol == l_final.marker.symbol == "diamond-open"
    assert f.layout.xaxis4.title.text == "m" and f.layout.xaxis5.title.text == "l"
    assert "exp(m_old − m_new)" in c.caption
    start = fig.walkthrough_chart(
        ref.scores.numpy(), tiles, trace_state(steps, 0, T).out.numpy(), out.numpy(),
        *_stats(steps, 0, T), block_q=block, block_k=block, step=0, current=None,
    )  # fmt: skip
    assert "Step 0 of 16" in start.fig.layout.title.text and not start.fig.layout.shapes


def test_walkthrough_chart_causal_greys_skipped_tiles():
    T, block = 10, 4
    tiles = tile_grid(T, T, block, block, causal=True)
    scores = np.where(np.tril(np.ones((T, T))) > 0, 1.0, -np.inf)
    out, stat = np.zeros((T, 2)), np.full(T, np.nan)
    c = fig.walkthrough_chart(
        scores, tiles, out, out + 1, stat, stat, stat, stat, block_q=block, block_k=block,
        step=6, current=None,
    )  # fmt: skip
    veil = np.asarray(c.fig.data[1].z, float)
    assert (veil == 1).sum() == 3 * block * block - 2 * 2 * block  # 3 skipped (one short)
    assert "grey tiles" in c.caption
    saved = int((veil == 1).sum())  # the greyed cells are the scores never computed
    assert f"saves {saved:,} of the {T * T:,} scores ({saved / T**2:.0%})" in c.caption
    assert np.isnan(np.asarray(c.fig.data[0].z, float)).any()  # -inf scores left blank


def test_formatters():
    assert fig.si(1.07e9) == "1.07 G" and fig.si(512) == "512"
    assert fig.gpu_share(6 * 2**30, 24) == "25%"
    assert fig.gpu_share(2**50, 8) == "131,072×"


def test_every_builder_output_passes_plotly_validation(walk):
    """The builders skip plotly's validation for speed; here every figure is validated."""
    import plotly.graph_objects as go

    T, block, steps, ref, out = walk
    now = trace_state(steps, 3, T)
    charts = [
        fig.flops_chart(512, 1024),
        fig.probs_memory_chart(32, 8, "float16", 12, 24, 1024),
        fig.kv_cache_chart(1024, 131072, 128, 64, 8, 128, "float32", 8),
        fig.sweep_chart(
            {"attention": ([256, 512], [1e6, 4e6])}, {"attention": 2.0}, what="memory", device="x"
        ),
        fig.sweep_chart(
            {"attention": ([256, 512], [0.1, 0.4])}, {"attention": 2.0}, what="time", device="x"
        ),
        fig.walkthrough_chart(
            ref.scores.numpy(), tile_grid(T, T, block, block), now.out.numpy(), out.numpy(),
            *_stats(steps, 3, T), block_q=block, block_k=block, step=3,
            current=(steps[2].rows, steps[2].cols),
        ),
    ]  # fmt: skip
    for c in charts:
        go.Figure(c.fig.to_dict())  # raises ValueError on any invalid property
        assert c.caption and c.alt
        # light to redraw in the browser: margins that need not grow (else plotly lays the
        # figure out twice per update) and no quadratic tick-label overflow check
        layout = c.fig.to_dict()["layout"]
        assert layout["margin"]["l"] >= 80 and layout["margin"]["b"] >= 80
        axes = [k for k in layout if k.startswith(("xaxis", "yaxis"))]
        assert axes and all(layout[k]["ticklabeloverflow"] == "allow" for k in axes)


# ------------------------------------------------------------------------ parallel vs recurrent


def parallel_rows(loop, attention, Ts=(64, 128, 256), d=32):
    """Rows shaped like the page's: loop(T) and attention(T) give the seconds."""
    return [
        dict(T=T, d=d, loop_s=loop(T), rnn_s=loop(T) / 2, scores_s=attention(T) / 3,
             attention_s=attention(T), sequential_steps=T, recurrent_macs=2 * T * d * d,
             attention_macs=2 * T * T * d)
        for T in Ts
    ]  # fmt: skip


def test_parallel_chart_draws_four_paths_and_reports_their_slopes():
    rows = parallel_rows(lambda T: 1e-5 * T, lambda T: 1e-8 * T**2)
    c = fig.parallel_chart(rows, "CPU · 1 thread")
    f = go.Figure(c.fig.to_dict())  # validates every property
    assert "CPU · 1 thread" in f.layout.title.text and "width d = 32" in f.layout.title.text
    assert all(axis_titles(f, "xaxis", "yaxis"))
    assert f.layout.xaxis.type == "log" and f.layout.yaxis.type == "log"
    assert [t.type for t in f.data] == ["scatter"] * 4
    assert len({t.line.dash for t in f.data}) == 4  # told apart without colour
    np.testing.assert_allclose(f.data[0].y, [r["loop_s"] * 1e3 for r in rows])
    assert "recurrence 1.00" in c.caption and "attention 2.00" in c.caption


def test_duration_and_versus():
    assert fig.duration(2.5) == "2.5 s"
    assert fig.duration(0.0123) == "12.3 ms"
    assert fig.duration(9.1e-6) == "9.1 µs"
    assert fig.versus(3.0, 1.0) == "3× faster" and fig.versus(1.0, 1.5) == "1.5× slower"
