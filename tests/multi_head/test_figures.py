"""figures.multi_head: right traces, titles, axis titles, shapes and captions."""

import numpy as np
import pytest

from attn_core import (
    V_CAT,
    V_TIRED,
    count_parameters,
    format_bytes,
    head_diversity,
    kv_table,
    mean_focus,
    pruning_curve,
    random_tokens,
    reshape_walkthrough,
    run_heads,
    seeded_mha,
    tired_cat_one_head,
    tired_cat_two_heads,
)
from attn_core.lessons.multi_head import value_width_walkthrough
from figures import multi_head as fg
from ui.content import choices


def _run(d_model=32, h=4, T=6):
    return run_heads(random_tokens(T, d_model, 0), seeded_mha(d_model, h, h, 0))


def _axis_titles(fig):
    lay = fig.layout.to_plotly_json()
    return {
        k: v.get("title", {}).get("text") for k, v in lay.items() if k[:5] in ("xaxis", "yaxis")
    }


def _panels(fig, T: int) -> list[np.ndarray]:
    """Each drawn head's (T, T) block of the mosaic, found from its title's position."""
    z = np.asarray(fig.data[0].z)
    out = []
    for a in fig.layout.annotations[:-1]:  # the last title is the average's
        r0, c0 = round(a.y + 0.5), round(a.x - (T - 1) / 2)
        out.append(z[r0 : r0 + T, c0 : c0 + T])
    return out


@pytest.mark.parametrize("h,T", [(1, 3), (4, 6), (8, 10), (64, 20), (16, 64)])
def test_heads_grid_is_one_mosaic_on_one_colour_axis(h, T):
    r = _run(d_model=64 if h < 16 else 1024, h=h, T=T)
    chart = fg.heads_grid(r.weights, [f"t{i}" for i in range(T)], focus=mean_focus(r.weights))
    fig = chart.fig
    shown = min(h, fg.MAX_PANELS)
    # one heatmap with every head tiled, then the average: two traces on one pair of axes
    assert [t.type for t in fig.data] == ["heatmap", "heatmap"]
    assert all(t.coloraxis == "coloraxis" and t.texttemplate is None for t in fig.data)
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == 1
    assert not [k for k in fig.layout.to_plotly_json() if k[:5] in ("xaxis", "yaxis") and k[5:]]
    heads, avg = (np.asarray(t.z) for t in fig.data)
    assert heads.dtype == np.float32 and avg.dtype == np.float32 and avg.shape == (T, T)
    assert np.isnan(heads).any()  # blank cells between the panels and in the average's slot
    assert np.nansum(heads) == pytest.approx(shown * T, rel=1e-4)  # every row of every panel
    for j, block in enumerate(_panels(fig, T)):
        np.testing.assert_allclose(block, r.weights[j].numpy(), rtol=1e-6)
    np.testing.assert_allclose(avg, r.weights.mean(0).numpy(), rtol=1e-6)
    titles = [a.text for a in fig.layout.annotations]
    assert len(titles) == shown + 1 and "average" in titles[-1]
    assert titles[0].startswith("head 1 · focus ")  # (a phone: "head 1 · 0.51")
    assert fig.layout.title.text.startswith(f"Every head's attention weights ({shown} of {h}")
    assert "average" in chart.caption
    assert set(_axis_titles(fig).values()) == {"key (attended to)", "query (attending)"}
    if h > fg.MAX_PANELS:
        assert f"Heads {fg.MAX_PANELS + 1}–{h}" in chart.caption
    # hover: (head, query, key) per cell on small maps, the head alone on large ones
    cells = np.asarray(fig.data[0].customdata)
    assert cells.shape == ((*heads.shape, 3) if T <= 24 else heads.shape)
    assert "head %{customdata" in fig.data[0].hovertemplate


@pytest.mark.parametrize("h", [4, 8, 16])
def test_heads_grid_on_a_phone_has_two_panels_a_row_and_the_same_maps(h):
    T = 10
    r = _run(d_model=64, h=h, T=T)
    wide = fg.heads_grid(r.weights, None).fig
    fig = fg.heads_grid(r.weights, None, columns=2).fig
    xs = {round(a.x, 3) for a in fig.layout.annotations}
    assert len(xs) == 2  # two columns of panels (the average's too)
    rows = {round(a.y, 3) for a in fig.layout.annotations}
    assert len(rows) == -(-(h + 1) // 2)  # the rest go down, not off the side
    assert fig.layout.height > wide.layout.height
    for j, block in enumerate(_panels(fig, T)):  # every head still drawn, each its own map
        np.testing.assert_allclose(block, r.weights[j].numpy(), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(fig.data[1].z), r.weights.mean(0).numpy(), rtol=1e-6)


def test_heads_grid_labels_tokens_or_positions_and_draws_square_maps():
    r = _run(d_model=64, h=8, T=6)
    bare = fg.heads_grid(r.weights, None).fig  # random vectors: positions 1…T
    assert list(bare.layout.xaxis.ticktext) == [str(i) for i in range(1, 7)]
    assert bare.layout.yaxis.scaleanchor == "x"  # one cell is as tall as it is wide
    big = fg.heads_grid(_run(d_model=64, h=2, T=20).weights, None).fig
    assert big.layout.yaxis.showticklabels is False  # past 16 tokens: no labels to crowd
    named = fg.heads_grid(r.weights, list("abcdef")).fig
    assert list(named.layout.xaxis.ticktext) == list("abcdef")  # under the bottom-left panel
    assert list(named.layout.yaxis.ticktext) == list("abcdef") * 2  # left of both panel rows


def test_focus_bars():
    r = _run(h=4)
    f = mean_focus(r.weights)
    chart = fg.focus_bars(f, float(mean_focus(r.weights.mean(0))), 6)
    assert [t.type for t in chart.fig.data] == ["bar", "scatter", "scatter"]
    assert len(chart.fig.data[0].y) == 4
    assert chart.fig.layout.xaxis.title.text == "head" and chart.fig.layout.yaxis.title.text
    avg = float(mean_focus(r.weights.mean(0)))
    above = int((f > avg).sum())
    assert f"lower than {'only ' if above <= 2 else ''}{above} of the 4 heads" in chart.caption
    one = _run(h=1)
    f1 = mean_focus(one.weights)
    assert "the same as the one head" in fg.focus_bars(f1, float(f1[0]), 6).caption


def test_outputs_and_concatenation():
    r = _run(d_model=32, h=4, T=6)
    one = fg.head_output_heatmap(r.head_outputs[1], list("abcdef"), 2)
    assert np.asarray(one.fig.data[0].z).shape == (6, 8)
    assert "T × d_k = 6 × 8" in one.fig.layout.title.text
    glued = fg.concat_heatmap(r.concat, list("abcdef"), 4, 2)
    assert np.asarray(glued.fig.data[0].z).shape == (6, 32)
    assert glued.fig.data[0].texttemplate is None
    kinds = [s.type for s in glued.fig.layout.shapes]
    assert kinds.count("rect") == 1 and kinds.count("line") == 3  # 3 boundaries, 1 highlight
    for c in (one, glued):
        assert c.fig.layout.xaxis.title.text and c.fig.layout.yaxis.title.text and c.caption


def test_tired_cat_figures():
    plane = fg.tired_cat_plane(tired_cat_one_head(0.5), 0.5, V_CAT, V_TIRED)
    assert [t.type for t in plane.fig.data] == ["scatter"] * 3
    assert list(plane.fig.data[2].x) == [2.0] and list(plane.fig.data[2].y) == [2.0]
    assert "[2, 2]" in plane.caption
    apart = tired_cat_two_heads(1.0, 0.0)
    bars = fg.tired_cat_concat(tired_cat_two_heads(1.0, 0.0), 1.0, 0.0, apart)
    assert list(bars.fig.data[0].y) == [4.0, 0.0, 0.0, 4.0]
    assert "[4, 0 | 0, 4]" in bars.fig.layout.title.text
    assert f"the result is {fg.vec(apart.tolist())}" in bars.caption  # from the computation
    assert f"v_cat = {fg.vec(V_CAT)}" in plane.fig.data[1].text
    for c in (plane, bars):
        assert c.fig.layout.xaxis.title.text and c.fig.layout.yaxis.title.text


def test_diversity_and_pruning_charts():
    r = _run(d_model=64, h=8, T=6)
    div = fg.diversity_heatmap(head_diversity(r.weights))
    z = np.asarray(div.fig.data[0].z, dtype=float)
    assert z.shape == (8, 8) and np.isnan(np.diag(z)).all()
    assert div.fig.data[0].zmin == 0 and div.fig.data[0].zmax == 1
    assert "bits" in div.caption
    curve = pruning_curve(r)[1]
    pr = fg.pruning_chart(curve, 8, 2, 0.4)
    assert len(pr.fig.data[0].y) == 9 and list(pr.fig.data[1].x) == [2]
    assert pr.fig.data[1].y[0] == pytest.approx(40.0)
    assert pr.fig.layout.xaxis.title.text and pr.fig.layout.yaxis.title.text


def test_markdown_tables():
    walk = reshape_walkthrough(1, 5, 32, 4)
    md = fg.reshape_table_md(walk.steps, choices("multi_head", "reshape.steps"))
    assert md.count("\n") == 8 and "**no**" in md and "(1,\u00a04,\u00a05,\u00a08)" in md
    assert "| time first again — but memory is not in that order |" in md  # words by key
    params = fg.params_table_md(32, [(1, count_parameters(32, 1)), (4, count_parameters(32, 4))])
    assert params.count("4,224") == 4  # 4·32² + 4·32, twice in each row
    kv = fg.kv_table_md(kv_table(512, 8, 2), 8, 2, format_bytes)
    assert "← current" in kv and "MQA" in kv and "0.25×" in kv


@pytest.mark.parametrize("d_v", [8, 16])
def test_value_width_table_reads_the_walk(d_v):
    walk = value_width_walkthrough(1, 5, 64, 4, d_v)  # d_k = 16
    md = fg.shape_table_md(walk.rows, choices("multi_head", "value_width.rows"))
    assert md.count("\n") == len(walk.rows) + 1 and "| keys: as wide as the queries |" in md
    assert f"(1,\u00a04,\u00a05,\u00a0{d_v})" in md  # v and each head's output
    assert f"({4 * d_v},\u00a064)" in md  # W_o: h·d_v in, d_model out


@pytest.mark.parametrize("h,T", [(1, 6), (4, 6), (8, 20)])
def test_heads_grid_caption_compares_measured_focus(h, T):
    r = _run(d_model=64, h=h, T=T)
    c = fg.heads_grid(r.weights, None).caption
    if h == 1:
        assert "nothing is blurred" in c and "flatter" not in c
    else:
        avg, head = float(mean_focus(r.weights.mean(0))), float(mean_focus(r.weights).mean())
        assert f"put {avg:.2f} on their favourite token, against {head:.2f}" in c
        assert ("no flatter" in c) == (avg >= head)


def test_pruning_caption_reads_the_curve():
    r = _run(d_model=64, h=8, T=6)
    curve = pruning_curve(r)[1]
    end = 100 * float(curve[-1])
    assert f"{end:.0f} % with every head gone" in fg.pruning_chart(curve, 8, 2, 0.4).caption


def test_vectors_and_shapes_are_printed_as_the_lesson_writes_them():
    assert fg.vec([4.0, 0.0]) == "[4, 0]" and fg.vec([2.0, 2.0, 1.5, 0.25]) == "[2, 2, 1.5, 0.25]"
    assert fg.shape_text((1, 8, 10, 64)) == "(1,\u00a08,\u00a010,\u00a064)"
