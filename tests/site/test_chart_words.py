"""Every chart has a text alternative computed from its data, and colours every viewer
tells apart (issue 42).

figures.describe reads a figure's own traces; the tests build figures of each kind with
known numbers and check the sentences say them, then open every step of every page and
check that each drawn chart has its "Chart in words" box, whose text is the description of
that very chart's data (read back from the JSON the browser gets), and whose accessible
name starts with the chart's title. The same runs check each chart's colours under
simulated protanopia and deuteranopia (tests/support/colours.py states the thresholds):
neighbouring steps of a colour scale, and every two series of one chart, stay apart; a
grid of signed values uses a diverging scale centred at 0.
"""

from __future__ import annotations

import itertools
import json
import re
from functools import partial

import numpy as np
import plotly.graph_objects as go
import pytest

from figures.describe import MAX_BARS, MAX_ROWS, array, describe
from tests.support.apptest import no_exception, page_steps, run_page
from tests.support.colours import SCALE_DE, SERIES_DE, VISION, delta_e, scale_steps, seen
from tests.support.words import numbers
from ui import content
from ui.lesson import available

say = partial(content.words, "charts")


def test_a_grid_is_read_out_with_its_peak_and_each_row_s_largest_value():
    rng = np.random.default_rng(0)
    z = rng.random((5, 7)).astype(np.float32)
    z[3, 2] = 1.5
    z[0, 6] = np.nan  # a masked cell
    cols = [f"k{i}" for i in range(7)]
    rows = [f"q{i}" for i in range(5)]
    fig = go.Figure(
        go.Heatmap(z=z, x=cols, y=rows),
        layout=dict(title="Weights <b>now</b>", xaxis_title="key", yaxis_title="query"),
    )
    text = describe(fig, say)
    assert text.startswith("Weights now.")
    assert "5 rows by 7 columns" in text
    assert "The largest, 1.5, is at query q3, key k2." in text
    assert "1 of 35 cells are blank" in text
    for i in range(5):
        j = int(np.nanargmax(z[i]))
        assert f"q{i} → k{j} (" in text
    lo = float(np.nanmin(z))
    assert f"from {lo:.3g} to 1.5" in text


def test_a_grid_names_its_cells_by_the_axis_tick_labels():
    fig = go.Figure(
        go.Heatmap(z=np.eye(3, dtype=np.float32) * 0.5 + 0.25),
        layout=dict(xaxis=dict(tickvals=[0, 1, 2], ticktext=["the", "cat", "sat"])),
    )
    text = describe(fig, say)
    assert "0 → the (0.75)" in text and "2 → sat (0.75)" in text


def test_a_tall_grid_gives_only_its_peak_not_every_row():
    z = np.zeros((MAX_ROWS + 1, 4), np.float32)
    z[7, 1] = 2
    text = describe(go.Figure(go.Heatmap(z=z)), say)
    assert "is at row 7, column 1" in text and "Row by row" not in text


def test_a_line_gives_its_span_extremes_and_end():
    y = np.array([3.0, 1.0, 4.0, 0.5, 5.9, 2.0])
    x = np.arange(10, 16)
    fig = go.Figure(
        [go.Scatter(x=x, y=y, name="loss"), go.Scatter(x=x, y=[None] * 6, name="gap")],
        layout=dict(title="Training", xaxis_title="step", yaxis_title="loss"),
    )
    text = describe(fig, say)
    assert "Across: step; up: loss." in text
    assert "loss: 6 points, step 10 to 15; lowest 0.5 at step 13, highest 5.9 at step 14" in text
    assert "ending at 2." in text
    assert "gap" not in text  # nothing to read out


def test_bars_are_read_one_by_one_or_by_their_extremes():
    few = go.Figure(go.Bar(x=["a", "b", "c"], y=[2, 7, 1], name="votes"))
    assert "votes, 3 bars: a 2; b 7; c 1." in describe(few, say)
    n = MAX_BARS + 3
    values = np.arange(n, dtype=float)
    values[4] = 99
    many = go.Figure(go.Bar(y=[f"h{i}" for i in range(n)], x=values, orientation="h"))
    text = describe(many, say)
    assert f"{n} bars: the tallest, 99, at h4; the lowest, 0, at h0" in text


def test_a_histogram_gives_its_range_and_fullest_bin():
    v = np.array([1.0, 2, 2, 2, 2, 3, 9])
    text = describe(go.Figure(go.Histogram(x=v, name="guesses")), say)
    counts, _ = np.histogram(v, bins=7)
    k = int(np.argmax(counts))
    assert "guesses: 7 values from 1 to 9; the fullest bin" in text
    assert f"holds {counts[k]} of them" in text


def test_an_empty_figure_says_so():
    assert describe(go.Figure(), say) == say("nothing")


def _plain(markdown: str) -> str:
    """Markdown escaped by ui.escape back to its text."""
    return re.sub(r"\\(.)", r"\1", markdown).replace("\u200b", "")


CASES = [(lesson.file, step) for lesson in available() for step in page_steps(lesson.file) or [""]]


def _scale(tr: dict, layout: dict):
    scale = tr.get("colorscale")
    if scale is None and tr.get("coloraxis"):
        scale = layout.get(tr["coloraxis"], {}).get("colorscale")
    return scale


def _categorical(scale) -> bool:
    """A step function ([[0, a], [0.5, a], [0.5, b], [1, b]]): categories, not a range."""
    return isinstance(scale, list) and len({float(s) for s, _ in scale}) < len(scale)


def _check_scale(scale, where) -> None:
    if isinstance(scale, list) and len({c for _, c in scale}) == 1:
        return  # one colour: a layer drawn over the grid, not a scale
    if _categorical(scale):  # each category its own colour, like series
        colours, least = list(dict.fromkeys(c for _, c in scale)), SERIES_DE
        pairs = [(a, b) for i, a in enumerate(colours) for b in colours[i + 1 :]]
    else:
        pairs, least = list(itertools.pairwise(scale_steps(scale))), SCALE_DE
    for vision in VISION:
        for a, b in pairs:
            assert delta_e(a, b, vision) >= least, (where, vision, a, b)


def _check_signed(tr: dict, scale, where) -> None:
    z = np.asarray(array(tr.get("z")), dtype=float)
    lo = tr.get("zmin", np.nanmin(z) if z.size and np.isfinite(z).any() else 0)
    hi = tr.get("zmax", np.nanmax(z) if z.size and np.isfinite(z).any() else 0)
    if lo is None or hi is None or not (lo < 0 < hi) or _categorical(scale):
        return
    assert tr.get("zmid") == 0 or np.isclose(-lo, hi), (
        where,
        "signed values, scale not centred",
        lo,
        hi,
    )
    ends = scale_steps(scale)
    mid = seen(ends[len(ends) // 2], "normal")[0]
    assert mid > max(seen(ends[0], "normal")[0], seen(ends[-1], "normal")[0]), (
        where,
        "not diverging",
    )


def _series_colours(spec: dict) -> list[str]:
    """The colours of a chart's lines, markers and bars, in the order they are drawn."""
    way = spec["layout"].get("colorway") or []
    out = []
    for i, tr in enumerate(spec["data"]):
        if tr.get("type") not in ("scatter", "bar", "histogram") or tr.get("showlegend") is False:
            continue
        c = (tr.get("line") or {}).get("color") or (tr.get("marker") or {}).get("color")
        if c is None and way:
            c = way[i % len(way)]
        if isinstance(c, str) and not c.startswith("rgba"):
            out.append(c)
    return list(dict.fromkeys(out))


def _check_colours(spec: dict, where) -> None:
    layout = spec["layout"]
    for tr in spec["data"]:
        scale = _scale(tr, layout)
        if tr.get("type") == "heatmap" and scale is not None:
            _check_scale(scale, where)
            _check_signed(tr, scale, where)
    colours = _series_colours(spec)
    for vision in VISION:
        for i, a in enumerate(colours):
            for b in colours[i + 1 :]:
                assert delta_e(a, b, vision) >= SERIES_DE, (where, vision, a, b)


@pytest.mark.parametrize("file,step", CASES, ids=[f"{f[6:-3]}-{s}" for f, s in CASES])
def test_every_drawn_chart_has_its_data_in_words(file, step):
    at = run_page(file, **({"step": step} if step else {}))
    no_exception(at)
    charts = at.main.get("plotly_chart") + at.sidebar.get("plotly_chart")
    boxes = [ex for ex in at.expander if ex.label == say("expander")]
    assert len(boxes) == len(charts), (file, step)
    for el, box in zip(charts, boxes, strict=True):
        spec = json.loads(el.proto.spec)
        text = _plain(box.markdown[0].value)
        title = spec["layout"].get("title", {}).get("text", "")
        _check_colours(spec, (file, step, title))
        assert el.proto.alt and text.startswith(el.proto.alt.rstrip(".")), el.proto.alt
        if (spec["layout"].get("meta") or {}).get("words") == "declared":
            continue  # words its builder made from the lesson's tensors (test_words_declared)
        assert not any(tr.get("type") == "image" for tr in spec["data"]), title  # no words
        assert text == describe(go.Figure(spec), say), (file, step, title)
        untied = _untied(text, spec)
        assert not untied, (file, step, title, untied)


def _drawn(spec: dict) -> np.ndarray:
    """Every number a figure draws or names: its arrays (a floating bar's ends too), the
    numbers in its title, axis titles, tick labels, trace names and annotations, and the
    edges of the bins a histogram is read by."""
    pool: list[float] = []
    texts = [json.dumps(spec["layout"].get("title", ""))]
    for name, axis in spec["layout"].items():
        if name.startswith(("xaxis", "yaxis")):
            texts += [json.dumps(axis.get("title", "")), json.dumps(axis.get("ticktext", []))]
            pool += [float(v) for v in axis.get("tickvals", []) or [] if _is_num(v)]
    for tr in spec["data"]:
        texts.append(str(tr.get("name", "")))
        for k in ("x", "y", "z", "customdata", "base"):
            if tr.get(k) is None:
                continue
            a = np.asarray(array(tr[k]), dtype=object).ravel()
            nums = np.array([float(v) for v in a if _is_num(v)], float)
            pool += nums.tolist()
            texts += [str(v) for v in a if isinstance(v, str)]
        if tr.get("base") is not None and tr.get("x") is not None:
            pool += (
                np.asarray(array(tr["base"]), float) + np.asarray(array(tr["x"]), float)
            ).tolist()
        if tr.get("type") == "histogram":
            v = np.asarray(array(tr.get("x") if tr.get("x") is not None else tr["y"]), float)
            v = v[np.isfinite(v)]
            if v.size:
                bins = min(20, max(5, v.size)) if v.min() < v.max() else 1
                pool += np.histogram(v, bins=bins)[1].tolist()
    for t in texts:
        pool += numbers(t)
    return np.array([p for p in pool if np.isfinite(p)], float)


def _is_num(v) -> bool:
    return isinstance(v, int | float | np.number) and not isinstance(v, bool)


def _untied(text: str, spec: dict) -> list[float]:
    """The numbers of a chart's words that are neither counts (whole numbers: sizes, how
    many cells or points) nor any number the chart draws, to the words' 3 digits."""
    pool = _drawn(spec)
    out = []
    for v in numbers(text):
        if v == int(v) and abs(v) <= 10**7:
            continue  # a count or a position (positions are checked against the core)
        if not np.isclose(pool, v, rtol=6e-3, atol=0).any():
            out.append(v)
    return out


def test_a_yes_no_grid_counts_its_ones_row_by_row():
    keep = np.tril(np.ones((4, 4), np.float32))  # a causal mask
    fig = go.Figure(go.Heatmap(z=keep), layout=dict(yaxis_title="query"))
    text = describe(fig, say)
    assert "10 of 16 are 1" in text
    assert "The 1s in each query: 0: 1; 1: 2; 2: 3; 3: 4." in text


def test_points_in_a_plane_are_read_one_by_one():
    fig = go.Figure(go.Scatter(x=[2, 0, 1, 2], y=[0, 4, 1, 0], name="hull", mode="lines"))
    text = describe(fig, say)
    assert "hull: 4 points at (across, up) (2, 0), (0, 4), (1, 1), (2, 0)." in text
    curve = go.Figure(go.Scatter(x=[1, 2, 3], y=[5, 1, 2], name="curve"))
    assert "lowest 1 at" in describe(curve, say)  # x only rising: still a curve over x


# ---------------------------------------------------------------- what a chart means (issue 51)

from figures.describe import MAX_PANELS, MAX_TRACES, Grid, Said, Values  # noqa: E402
from figures.style import Chart  # noqa: E402


def test_a_signed_grid_names_its_strongest_value_by_size_with_its_sign():
    z = np.array([[0.5, -2.56, 1.0], [1.89, 0.1, -0.3]], np.float32)
    text = describe(go.Figure(go.Heatmap(z=z)), say)
    assert "the strongest (largest in size), -2.56, is at row 0, column 1" in text
    assert "The largest" not in text
    assert "0 → 1 (-2.56)" in text and "1 → 0 (1.89)" in text


def test_a_yes_no_grid_has_counts_and_no_largest_cell():
    text = describe(go.Figure(go.Heatmap(z=np.tril(np.ones((6, 6), np.float32)))), say)
    assert "21 of 36 are 1" in text
    assert "largest" not in text.lower()


def test_a_reversed_y_axis_is_read_downwards():
    up = go.Figure(go.Scatter(x=[0, 1, 2], y=[3, 1, 2]))
    down = go.Figure(up.data, layout=dict(yaxis=dict(autorange="reversed")))
    assert "; up:" in describe(up, say)
    assert "; down (the first at the top):" in describe(down, say)
    ranged = go.Figure(up.data, layout=dict(yaxis=dict(range=[5, -0.5])))
    assert "; down" in describe(ranged, say)


def test_a_flat_line_is_a_level_and_a_vertical_line_a_mark():
    fig = go.Figure(
        [
            go.Bar(x=[1, 2, 3], y=[0.5, 0.6, 0.4], name="heads"),
            go.Scatter(x=[0.5, 3.5], y=[0.208, 0.208], name="the averaged map"),
            go.Scatter(x=[64, 64], y=[0, 1], name="your setting"),
        ],
        layout=dict(xaxis_title="head"),
    )
    text = describe(fig, say)
    points = go.Scatter(x=[1, 2, 4, 8], y=[0, 0, 0, 0], name="measured", mode="lines+markers")
    flat = describe(go.Figure(points), say)
    assert "measured: 4 points, x 1 to 8, every one at 0." in flat  # data, not a reference
    assert "the averaged map: a level line at 0.208." in text
    assert "your setting: a vertical line at head 64." in text
    assert "lowest 0.208" not in text and "at head 0.5" not in text


def test_overlays_and_marks_are_named_for_what_they_are_not_read_as_data():
    z = np.array([[0.3, np.nan], [0.2, 0.4]], np.float32)
    grey = np.where(np.isnan(z), 1.0, np.nan).astype(np.float32)
    fig = go.Figure(
        [
            go.Heatmap(z=z, meta=dict(blank="forbidden")),
            go.Heatmap(z=grey, colorscale=[[0, "#999"], [1, "#999"]], name="forbidden cells"),
            go.Scatter(
                x=[1], y=[0], mode="markers", meta=dict(say="marks.forbidden", numbers=dict(n=1))
            ),
            go.Scatter(x=[0, 1], y=[0, 1], meta=dict(words="skip")),  # a click layer
        ]
    )
    text = describe(fig, say)
    assert "1 of 4 cells are forbidden by the mask" in text
    assert "forbidden cells: 1 of 4 cells are marked." in text
    assert "An × marks each of the 1 forbidden cells" in text
    assert "values run from 1 to 1" not in text and "Across" not in text


def test_floating_bars_span_from_their_base():
    fig = go.Figure(go.Bar(y=["float16"], x=[28.4], base=[-17.3], orientation="h"))
    assert "float16 from -17.3 to 11.1" in describe(fig, say)


def test_a_cloud_of_points_is_not_read_as_a_curve():
    rng = np.random.default_rng(1)
    x, y = rng.random(40), rng.random(40)
    text = describe(go.Figure(go.Scatter(x=x, y=y, name="L0H0", mode="markers")), say)
    assert "40 points scattered across" in text and "lowest" not in text
    assert f"the highest at across {x[np.argmax(y)]:.3g}" in text


def test_every_series_past_the_ones_read_is_named():
    fig = go.Figure([go.Scatter(x=[0, 1], y=[i, i + 1], name=f"head {i}") for i in range(8)])
    text = describe(fig, say)
    assert f"{8 - MAX_TRACES} more, in brief (every number in the CSV): " in text
    assert "head 6 from 6 to 7, lowest 6, highest 7; head 7 from 7 to 8" in text


def test_declared_grids_name_every_panel_and_read_values_not_their_log():
    rng = np.random.default_rng(2)
    J = rng.random((4, 4)) ** 6  # values over several decades
    log = np.log10(J)
    chart = Chart(
        go.Figure(go.Heatmap(z=log), layout=dict(title="|J|")),
        "caption",
        words=(Grid(J, "weight i", "logit j"),),
    )
    text = chart.in_words(say)
    lo, hi = numbers(text.split("values run from ")[1].split(". ")[0])
    assert lo == pytest.approx(J.min(), rel=5e-3) and hi == pytest.approx(J.max(), rel=5e-3)
    assert min(numbers(text)) >= 0  # no log10 (all of them negative) reaches the words
    panels = [
        Grid(rng.random((3, 3)), "query", "key", name=f"L{i // 4}H{i % 4}") for i in range(12)
    ]
    text = describe(go.Figure(), say, panels)
    for i in range(12):
        assert f"L{i // 4}H{i % 4}" in text  # every panel named, none dropped
    assert f"The other {12 - MAX_PANELS}" in text


def test_declared_values_and_sentences_are_read_in_order():
    parts = (
        Said("dots", down="query", first="query 0", across="value (0 … 1)"),
        Values("largest weight, by query", range(3), [0.2, 0.9, 0.4]),
    )
    text = describe(go.Figure(), say, parts)
    assert text.index("One dot per query, query 0 at the top") < text.index("1 0.9")


def test_a_number_the_chart_does_not_draw_is_caught():
    spec = go.Figure(go.Bar(x=["a", "b"], y=[0.25, 0.75], name="votes")).to_plotly_json()
    assert _untied("votes, 2 bars: a 0.25; b 0.75.", spec) == []
    assert _untied("votes, 2 bars: a 0.25; b 0.76.", spec) == [0.76]


def test_a_phone_s_mosaic_says_the_same_words_as_a_desk_s():
    """The phone lays the heads out in other rows (two panels a row on /multi-head, four
    heads a row on /model); the words name each head and cell the same way."""
    import torch

    from figures.model import head_mosaic
    from figures.multi_head import heads_grid

    w = torch.softmax(torch.randn(8, 6, 6, generator=torch.Generator().manual_seed(3)), -1)
    tokens = ["the", "cat", "sat", "on", "a", "mat"]
    desk, phone = heads_grid(w, tokens), heads_grid(w, tokens, columns=2)
    assert desk.in_words(say) == phone.in_words(say)
    for i in range(8):
        head = w[i].numpy()
        q, k = np.unravel_index(np.argmax(head), head.shape)
        assert f"head {i + 1}: 6 × 6" in desk.in_words(say)
        assert (
            f"is at query (attending) {tokens[q]}, key (attended to) {tokens[k]}"
            in (desk.in_words(say).split(f"head {i + 1}: ")[1])
        )
    maps = torch.softmax(torch.randn(2, 12, 6, 6, generator=torch.Generator().manual_seed(4)), -1)
    desk, phone = head_mosaic(maps, (1, 5), tokens=tokens), head_mosaic(maps, (1, 5), per_row=4,
                                                                        tokens=tokens)  # fmt: skip
    assert desk.in_words(say) == phone.in_words(say)
    assert "L1H11" in desk.in_words(say)  # every head named, the last one too
