"""figures.heads: right traces, titles, axis titles and shapes, called directly (no server);
at the end, the page's numeric sentences against the shipped model (AppTest)."""

import math

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from attn_core.lessons import heads as ind
from figures import heads as fh
from figures.style import Chart
from tests.support.apptest import no_exception, run_page
from ui.content import Words

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
    assert "prev-token" in notes[0] and "induction" in notes[5] and "L1H1" in notes[5]
    assert "n/a" in hm[5].hovertemplate and not any("nan" in t.hovertemplate for t in hm)
    assert max(len(n.split("<br>")[-1]) for n in notes) <= 12  # fits a phone's narrow map
    assert c.fig.layout.yaxis.scaleanchor == "x"  # square maps
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
    assert fh.plot_label("<script>x", 8) == "&lt;script…"
    assert fh.plot_label("") == "·" and fh.plot_label("\x00") == "·"


# --- every numeric sentence against the shipped model and its logged curves

PAGE = "pages/heads.py"
W = Words("heads")


@pytest.fixture(scope="module")
def shipped():
    model, run = ind.load_pretrained()
    return model, run, ind.eval_batch(model.config)


def running_mean(xs, w=25):
    """Mean of every w consecutive steps (cumulative sums), and each window's centre step."""
    c = np.concatenate([[0.0], np.cumsum(np.asarray(xs, np.float64))])
    m = (c[w:] - c[:-w]) / w
    return m, np.arange(1, m.size + 1) + w // 2


def curve_numbers(run):
    first, centre = running_mean(run.loss_first)
    rep, _ = running_mean(run.loss_repeated)
    k = int(first.argmax())
    drop = (
        int(centre[np.flatnonzero(rep < 0.75 * run.chance)[0]]),
        int(centre[np.flatnonzero(rep < 0.25 * run.chance)[0]]),
    )

    def halfway(score):
        s = np.asarray(score)
        return run.score_steps[int(np.flatnonzero(s >= (s[0] + s[-1]) / 2)[0])]

    return dict(
        start=float(np.mean(run.loss_first[:25])),
        peak=float(first[k]),
        at=int(centre[k]),
        end=float(np.mean(run.loss_first[-50:])),
        drop=drop,
        prev=halfway([max(p[0]) for p in run.previous_token]),
        ind=halfway([max(p[-1]) for p in run.induction]),
    )


def test_training_caption_says_the_first_occurrence_loss_rises_during_the_phase_change(shipped):
    """Issue 16, item 9: the first-occurrence loss does not stay put; it rises above the
    blind guess while the repeated-token loss collapses, then settles again."""
    _, run, _ = shipped
    n = curve_numbers(run)
    assert n["peak"] > run.chance > n["end"] and n["peak"] > n["start"] + 0.3
    assert n["drop"][0] <= n["at"] <= n["drop"][1]  # the peak is inside the drop
    cap = fh.run_curves(run, "t").caption
    assert "stays put" not in cap
    assert f"ln(vocab) = {run.chance:.2f}" in cap
    assert (
        f"It starts at {n['start']:.2f} (25-step mean) and climbs to {n['peak']:.2f} around "
        f"step {n['at']}, then settles at {n['end']:.2f} over the last 50 steps, "
        f"{run.chance - n['end']:.2f} below the blind guess." in cap
    )
    assert f"Between steps {n['drop'][0]} and {n['drop'][1]}" in cap
    assert "the blue peak falls inside it" in cap
    assert f"by steps {n['prev']} and {n['ind']}" in cap


def test_caption_of_a_short_or_flat_run_claims_no_phase_change():
    steps = 30
    cap = fh.training_curves([4.2] * steps, [4.2] * steps, [0, 25], [0.1, 0.1], [0.1, 0.1], 4.16)
    assert f"Only {steps} steps so far" in cap.caption and "phase change" not in cap.caption
    flat = fh.training_curves([4.0] * 200, [4.3] * 200, [0, 100], [0.1, 0.1], [0.1, 0.1], 4.16)
    assert "has not collapsed yet" in flat.caption and "peak falls" not in flat.caption


def seen_mass(model, tokens):
    """At first occurrences: (probability put on tokens already in the context, share of
    those positions whose next token is in fact one already seen)."""
    with torch.no_grad():
        p = model(tokens).softmax(-1)  # (B, T, V)
    V = p.shape[-1]
    # seen[b, i, v]: token v occurs in tokens[b, :i+1]
    hot = torch.nn.functional.one_hot(tokens, V).bool()  # (B, T, V)
    seen = hot.cumsum(1) > 0
    first = ~ind.repeated_positions(tokens)  # (B, T-1)
    mass = (p * seen)[:, :-1].sum(-1)  # (B, T-1)
    nxt = seen[:, :-1].gather(2, tokens[:, 1:, None])[..., 0]  # (B, T-1)
    return float(mass[first].mean()), float(nxt[first].float().mean())


def test_the_likely_reason_holds_for_the_shipped_run(shipped):
    """The caption's reason, measured: retrained to the peak (the run is deterministic per
    seed), the model bets more on already-seen tokens at first occurrences than at the
    start or the end, although those are usually followed by an unseen token."""
    model, run, batch = shipped
    at = curve_numbers(run)["at"]
    early, _ = ind.train_induction(steps=1, seed=run.seed)
    peak, again = ind.train_induction(steps=at, seed=run.seed)
    assert again.loss_first == pytest.approx(run.loss_first[:at], abs=1e-4)  # same run
    m0, rate = seen_mass(early, batch)
    m_peak, _ = seen_mass(peak, batch)
    m_end, _ = seen_mass(model, batch)
    assert rate < 0.5  # "usually followed by one not seen yet"
    assert m_peak > 1.5 * m0 and m_peak > 1.5 * m_end


def test_heads_page_sentences_follow_the_shipped_model(shipped):
    model, run, batch = shipped
    names = model.config.head_names()
    single = ind.single_head_ablation(model, batch).flatten().tolist()
    full = ind.evaluate(model, batch)[0]
    loss = dict(zip(names, single, strict=True))
    at = run_page(PAGE, reveal=True, step="Train")
    no_exception(at)
    body = next(
        m.value for e in at.expander for m in e.markdown if m.value.startswith(W("caveat.intro"))
    )
    assert "each covers part of the positions" not in body
    prev = ("L0H0", "L0H2")  # the previous-token heads of the shipped model
    for h in prev:
        assert W("caveat.each", loss=loss[h], head=h) in body
        assert loss[h] > full + 0.05 * run.chance  # each alone is needed
    each = W("list.and", rest=W("caveat.each", loss=loss[prev[0]], head=prev[0]),
             last=W("caveat.each", loss=loss[prev[1]], head=prev[1]))  # fmt: skip
    heads = W("list.and", rest=prev[0], last=prev[1])
    assert W("caveat.prev.needed", heads=heads, full=full, each=each) in body
    copy = [n for n in names if n.startswith("L1")]
    worst = max(loss[h] for h in copy)
    assert worst < full + 0.05 * run.chance  # any one induction head can go
    heads = W("list.and", rest=", ".join(copy[:-1]), last=copy[-1])
    assert W("caveat.copy.cheap", heads=heads, worst=worst, chance=run.chance) in body
    # Switch off: every induction head off at once
    at = run_page(PAGE, reveal=True, step="Switch off")
    no_exception(at)
    off = ind.evaluate(model, batch, ind.ablation_mask(model.config, copy))[0]
    idle = [n for n in names if n not in (*prev, *copy)]
    do, see = W.pairs(
        "try.switch_off", ind_heads=", ".join(copy), full=full, all_off=off,
        side=W("word.above"), chance=run.chance, one_ind=copy[0], one_prev=prev[0],
        idle=", ".join(idle),
    )[0]  # fmt: skip
    text = next(m.value for m in at.markdown if m.value.startswith(f"- **{do}**"))
    assert f"- **{do}** — {see}" in text
    assert off > run.chance


def seed0_sequence(model):
    """The page's default sequence (seed 0): (tokens (1, T), its trace, scores, job grid)."""
    tokens, _ = ind.repeated_sequences(1, model.config, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        tr = model.trace(tokens[0])
    s = ind.scores_from_weights(tr.weights, tokens)
    base = ind.scores_from_weights(ind.uniform_weights(tokens.shape[1])[None], tokens[:1])
    return tokens, tr, s, s.jobs(base)


def test_scores_and_loss_captions_count_from_the_sequence_shown(shipped):
    model, run, _ = shipped
    tokens, tr, _, grid = seed0_sequence(model)
    jobs = [j for row in grid for j in row]
    at = run_page(PAGE, reveal=True, step="Scores")
    no_exception(at)
    cap = next(c.value for c in at.caption if c.value.startswith("Blue: the mean weight"))
    assert "most heads have none" not in cap
    assert f"{sum(map(bool, jobs))} of the {len(jobs)} heads have one" in cap
    loss = ind.per_position_loss(tr.logits, tokens[0])[0]
    rep = ind.repeated_positions(tokens[0])
    new, old = loss[~rep], loss[rep]
    at = run_page(PAGE, reveal=True, step="Loss")
    no_exception(at)
    cap = next(c.value for c in at.caption if c.value.startswith("Blue circles"))
    assert (
        f"average {float(new.mean()):.2f} nats ({float(new.min()):.2f} to "
        f"{float(new.max()):.2f}), against a blind guess of {run.chance:.2f}" in cap
    )
    assert f"here they average {float(old.mean()):.2g} nats" in cap


def test_head_maps_caption_counts_where_the_previous_token_line_is_bright(shipped):
    model, _, _ = shipped
    tokens, tr, s, jobs = seed0_sequence(model)
    w = tr.weights[0]  # (L, h, T, T)
    T = w.shape[-1]
    c = fh.head_maps(w.numpy(), [str(t) for t in tokens[0].tolist()], s.previous_token.numpy(),
                     s.induction.numpy(), jobs)  # fmt: skip
    prev = [
        (l, h) for l, row in enumerate(jobs) for h, j in enumerate(row) if j == "previous-token"
    ]
    assert prev
    for l, h in prev:
        lit = sum(float(w[l, h, i, i - 1]) >= 0.5 for i in range(1, T))
        assert f"L{l}H{h}: weight ≥ 0.5 at {lit} of the {T - 1} queries" in c.caption
