"""The real-model figures: valid plotly, titled and labelled, captions from the numbers drawn,
user tokens escaped."""

import base64
import io

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attn_core.lessons import model as M
from figures import model as fig

RNG = np.random.default_rng(0)
TOKENS = ["[CLS]", "my", "sister", "lost", "her", "<b>keys</b>", "[SEP]"]


def _rows(*shape) -> np.ndarray:
    x = RNG.random(shape).astype(np.float32) ** 4
    return x / x.sum(-1, keepdims=True)


def _valid(chart) -> go.Figure:
    f = go.Figure(chart.fig.to_dict())  # built unvalidated (fast_figure): every property checked
    assert f.layout.title.text and chart.caption
    return f


def _axis_titles(f: go.Figure) -> list[str]:
    layout = f.to_dict()["layout"]
    return [v["title"]["text"] for k, v in layout.items() if k.startswith(("xaxis", "yaxis"))]


def test_the_mosaic_places_every_head_s_map_in_its_tile():
    w = _rows(3, 4, 5, 5)
    chart = fig.head_mosaic(w, (2, 1), "tiny")
    f = _valid(chart)
    z = np.asarray(chart.table.data[0].z, dtype=np.float32)  # the numbers, for the CSV
    span = 5 + 1  # a one-cell gap at T = 5
    for l in range(3):
        for h in range(4):
            np.testing.assert_array_equal(
                z[l * span : l * span + 5, h * span : h * span + 5], w[l, h]
            )
    assert np.isnan(z[5]).all() and np.isnan(z[:, 5]).all()  # the gaps are blank
    rect = f.layout.shapes[0]
    assert rect.x0 < 1 * span < rect.x1 and rect.y0 < 2 * span < rect.y1  # L2H1 outlined
    assert _axis_titles(f) == ["head", "layer"]
    assert [t.type for t in f.data] == ["image"]  # one picture for every head


def test_on_a_phone_the_mosaic_wraps_each_layer_onto_rows_of_four_heads():
    w = _rows(3, 12, 5, 5)
    chart = fig.head_mosaic(w, (2, 6), "tiny", per_row=4)
    f = _valid(chart)
    z = np.asarray(chart.table.data[0].z, dtype=np.float32)
    span = 5 + 1
    assert z.shape == (3 * 3 * span - 1, 4 * span - 1)  # 9 tile rows of 4 columns
    for l in range(3):
        for h in range(12):
            r, c = l * 3 + h // 4, h % 4
            np.testing.assert_array_equal(
                z[r * span : r * span + 5, c * span : c * span + 5], w[l, h]
            )
    rect = f.layout.shapes[0]  # L2H6: layer 2's second row, column +2
    assert rect.x0 < 2 * span < rect.x1 and rect.y0 < 7 * span < rect.y1
    assert list(f.layout.yaxis.ticktext)[7] == "L2 H4–7"
    assert list(f.layout.xaxis.ticktext) == ["+0", "+1", "+2", "+3"]
    assert f.layout.height > fig.head_mosaic(w).fig.layout.height


def test_the_mosaic_picture_is_the_weights_in_the_colour_scale():
    from PIL import Image

    w = np.zeros((1, 2, 3, 3), np.float32)
    w[0, 1] = 1.0
    chart = fig.head_mosaic(w)
    png = base64.b64decode(chart.fig.data[0].source.split(",", 1)[1])
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    assert rgb.shape == (3, 7, 3)  # 2 tiles of 3 with a one-cell gap
    lo, hi = fig._lut()[0], fig._lut()[255]
    assert (rgb[:, :3] == lo).all() and (rgb[:, 4:] == hi).all() and (rgb[:, 3] == 255).all()
    assert tuple(lo) == (68, 1, 84) and tuple(hi) == (253, 231, 37)  # Viridis' ends
    from ui.share import figure_csv

    csv = figure_csv(chart.table)
    assert csv.count("\n") == 1 + 1 + 3 and ",1,1,1" in csv


def test_head_map_escapes_tokens_and_names_its_strongest_links():
    w = np.full((7, 7), 0.01, np.float32)
    w[4, 2] = 0.9  # her -> sister
    w[:, 0] += 0.2
    chart = fig.head_map(w, TOKENS, 1, 3, special=[0, 6])
    f = _valid(chart)
    assert "<b>" not in str(f.to_dict()) and "&lt;b&gt;keys" in str(f.layout.xaxis.ticktext)
    assert "her → sister 0.90" in chart.caption
    share = float(w[:, [0, 6]].sum(-1).mean())
    assert f"{share:.0%} of its weight on the special tokens" in chart.caption
    assert f.layout.title.text.startswith("L1H3")


def test_captions_show_the_user_s_tokens_as_text_not_markdown():
    """Backticks, asterisks and underscores from the sentence stay literal in a caption
    (st.caption reads markdown): each goes through the one escaping function."""
    from ui import escape

    toks = ["[CLS]", "`code`", "**bold**", "_it_", "[SEP]"]
    w = np.full((5, 5), 0.01, np.float32)
    w[1, 2], w[3, 1] = 0.9, 0.8
    cap = fig.head_map(w, toks, 0, 0, special=[0, 4]).caption
    assert f"{escape('`code`', 10)} → {escape('**bold**', 10)} 0.90" in cap
    live = cap.replace("\\`", "").replace("\\*", "").replace("\\_", "")
    assert not any(c in live for c in "`*_"), cap
    top = fig.next_token_bars([("`x`", 0.4), ("y", 0.1)]).caption
    assert escape("`x`", 14) in top and "`x`" not in top


def test_role_maps_lay_out_six_grids_and_name_the_best_heads():
    roles = {k: torch.tensor(RNG.random((2, 3))) for k in fig.ROLE_NAMES}
    roles["previous"][1, 2] = 2.0  # the clear winner
    chart = fig.role_maps(roles)
    f = _valid(chart)
    z = np.asarray(chart.fig.data[0].z, dtype=float)
    assert z.shape == (2, 6 * 4 - 1) and z[1, 2] == pytest.approx(2.0)
    assert "previous token: L1H2 (2.00)" in chart.caption
    assert list(f.layout.xaxis.ticktext) == list(fig.ROLE_NAMES.values())


def test_relation_bars_pair_the_best_heads_with_the_strongest_guess():
    # four pairs; heads L0H1 and L1H0 tie at 3 of 4
    hits = torch.zeros(4, 2, 2, dtype=torch.bool)
    hits[:3, 0, 1] = hits[1:, 1, 0] = True
    guesses = (
        M.Guess("offset", -2, torch.tensor([True, False, False, False])),
        M.Guess("position", 1, torch.tensor([True, True, False, False])),
        M.Guess("first_subject", None, torch.tensor([False, True, True, False])),
    )  # position and first subject tie at 2 of 4: the earlier in GUESSES is named
    scores = {"pronoun → antecedent": M.RelationScore(hits.double().mean(0), 4, hits, guesses)}
    chart = fig.relation_bars(scores)
    f = _valid(chart)
    assert list(f.data[0].y) == [pytest.approx(0.75)] and list(f.data[1].y) == [0.5]
    assert "L0H1 = L1H0 0.75 against always the 2nd word 0.50 (4 pairs)" in chart.caption


@pytest.mark.parametrize(
    ("name", "at", "words"),
    [("offset", 1, "the next word"), ("offset", -1, "the word before"),
     ("offset", -3, "the word 3 back"), ("position", 0, "always the 1st word"),
     ("position", 10, "always the 11th word"), ("nearest_noun", None, "the nearest noun")],
)  # fmt: skip
def test_each_guess_has_a_name(name, at, words):
    assert fig.guess_name(M.Guess(name, at, torch.ones(1, dtype=torch.bool))) == words


def test_weights_and_contributions_share_one_colour_axis_and_say_what_the_sinks_add():
    w = _rows(5, 5)
    c = np.ones((5, 5), np.float32)
    c[:, 0] = 0.01  # the sink adds little
    chart = fig.weights_and_contributions(w, c, TOKENS[:5], "L0H0", special=[0])
    f = _valid(chart)
    assert [t.xaxis for t in f.data] == ["x", "x2"]
    right = np.asarray(chart.fig.data[1].z)
    np.testing.assert_allclose(right.sum(-1), 1, atol=1e-6)  # shares of each row
    assert f"{float(w[:, 0].mean()):.0%} of the weight but" in chart.caption


def test_knob_bars_name_only_what_moved():
    labels = {"top": "largest", "auc": "score"}
    same = fig.knob_bars({"top": 0.5, "auc": 0.9}, {"top": 0.5, "auc": 0.9}, labels)
    assert "Nothing moved" in same.caption
    moved = fig.knob_bars({"top": 0.5, "auc": 0.9}, {"top": 0.91, "auc": 0.9}, labels)
    _valid(moved)
    assert "largest 0.500 → 0.910" in moved.caption and "score" not in moved.caption.split(":")[-1]


def test_next_tokens_and_pruning_charts():
    nt = fig.next_token_bars([("Ġthe", 0.4), ("<b>", 0.1)])
    f = _valid(nt)
    assert list(f.data[0].y) == ["␣the", "&lt;b&gt;"] and "0.400" in nt.caption
    curve = [0.9, 0.95, 0.93, 0.8, 0.5]
    pc = fig.pruning_chart(curve, 2, [(0, 0), (0, 1), (1, 0), (1, 1)], yours=(1, 0.95))
    f = _valid(pc)
    assert len(f.data) == 2 and "2 can go" in pc.caption and "0.500" in pc.caption
