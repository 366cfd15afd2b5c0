"""Pictures for /positions: order blindness, added codes, RoPE's rotations, ALiBi's spans,
the extrapolation table and a real model's position vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from .describe import Said, Values, num
from .parts import BLUE, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILION, hline, sci
from .style import NUM_FMT, OKABE_ITO, Chart, heatmap, line_layout, to_numpy

FLOOR = 1e-9  # a move of exactly 0 is drawn here on the log axis
ROUNDING = 1e-5  # a move up to this is float32 rounding (outputs of size ~1; measured ≤ 1e-6)
KIND_NAMES = {
    "none": "no position",
    "learned": "learned, added to x",
    "sinusoidal": "sinusoidal, added to x",
    "rope": "RoPE (rotated q, k)",
    "alibi": "ALiBi (score bias)",
}
KIND_COLORS = {"none": GREY, "learned": ORANGE, "sinusoidal": GREEN, "rope": BLUE, "alibi": PURPLE}


def shuffle_chart(moves: Mapping[str, np.ndarray]) -> Chart:
    """Per token: how far its output moved once the shuffle is undone, one line per setting."""
    fig = go.Figure()
    for i, (name, move) in enumerate(moves.items()):
        m = to_numpy(move)
        fig.add_trace(
            go.Scatter(
                x=np.arange(len(m), dtype=np.float32), y=np.maximum(m, FLOOR),
                mode="lines+markers", name=name, customdata=m,
                line=dict(color=OKABE_ITO[i % len(OKABE_ITO)], width=3),
                hovertemplate=f"{name}<br>token %{{x}}<br>moved %{{customdata:{NUM_FMT}}}"
                "<extra></extra>",
            )
        )  # fmt: skip
    layout = line_layout(
        "How far each token's output moves when the input is shuffled",
        "token (its place before the shuffle)", "max |change| of its output (log)", height=400,
    )  # fmt: skip
    layout["legend"] = dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left")
    layout["margin"] = dict(l=10, r=10, t=50, b=90)
    fig.update_layout(**layout)
    fig.update_yaxes(type="log", exponentformat="power")
    # in words, the moves themselves: a move of exactly 0 is drawn at FLOOR, and said as 0
    across = "token (its place before the shuffle)"
    words = [Said("axes", x=across, y="max |change| of its output (log axis)", up="up")]
    for name, move in moves.items():
        m = to_numpy(move).astype(float)
        lo, hi = int(np.argmin(m)), int(np.argmax(m))
        said = dict(lo=num(m[lo]), at_lo=lo, hi=num(m[hi]), at_hi=hi, last=num(m[-1]))
        words.append(Said("line", name=name, n=m.size, x=across, x0=0, x1=m.size - 1, **said))
    return Chart(fig, _shuffle_caption(moves), words=tuple(words))


def _shuffle_caption(moves: Mapping[str, np.ndarray]) -> str:
    """The shuffle chart's caption: the first line is the no-position one; a line or a point
    at most ROUNDING moved by float32 rounding only."""
    (_, first), *rest = moves.items()
    still = [name for name, m in rest if float(np.max(m)) <= ROUNDING]
    moved = np.concatenate([to_numpy(m) for name, m in rest if name not in still] or [[]])
    caption = (
        f"Without a mask or positions every token gets back its own output: the largest move "
        f"is {sci(float(np.max(first)))}, float32 rounding (points at {sci(FLOOR, 1)} moved "
        "exactly 0). A causal mask or a position code makes the output depend on where a token "
        "sits"
    )
    big = moved[moved > ROUNDING]
    if big.size:
        caption += (
            f": on the lines that moved, {big.size} of {moved.size} points moved more than "
            f"rounding ({sci(ROUNDING, 1)}), the least of them by {float(big.min()):.2g}."
        )
    else:
        caption += "."
    if still:
        why = "swapping two tokens leaves |m − n| as it was" if len(first) == 2 else "by chance"
        caption += f" {' and '.join(still)} moved by float rounding only here: {why}."
    return caption


def code_heatmap(pe: np.ndarray) -> Chart:
    """The sinusoidal code of every position: one column per dimension."""
    T, d = pe.shape
    fig = heatmap(
        pe, title=f"Sinusoidal position codes (T = {T}, d = {d})", x_title="dimension",
        y_title="position", diverging=True, zmin=-1, zmax=1, colorbar_title="value",
        show_values=False, height=380,
    )  # fmt: skip
    fig.update_traces(xgap=0, ygap=0)
    last = float(np.abs(pe[:, -1] - pe[0, -1]).max())  # the slowest column's whole change
    caption = (
        "Each pair of columns is a sine and a cosine at its own frequency: the first pair "
        "turns once every 2π ≈ 6.3 positions, the last column changes by at most "
        f"{last:.2g} over these {T} positions. Together they give every position its own code."
    )
    return Chart(fig, caption)


def repeated_scores_chart(s: np.ndarray, kind: str, deviation: float) -> Chart:
    """Scores when one token sits at every position: only position varies."""
    T = s.shape[0]
    fig = heatmap(
        s, title=f"One token at all {T} positions: scores, {KIND_NAMES[kind]}",
        x_title="key position n", y_title="query position m", diverging=True,
        colorbar_title="q·k/√d", show_values=False, height=400,
    )  # fmt: skip
    toeplitz = deviation <= 1e-6 * max(1.0, float(np.abs(s).max()))
    shape = (
        "every diagonal holds one value (a Toeplitz matrix): the score depends on m − n only"
        if toeplitz
        else "the diagonals are not constant: the score depends on where the pair sits, "
        "not only on m − n"
    )
    caption = f"Largest distance of a score from its diagonal's mean: {sci(deviation)}; {shape}."
    return Chart(fig, caption)


def code_dot_chart(pe: np.ndarray, starts: Sequence[int]) -> Chart:
    """p_m · p_{m+Δ} against Δ, for a few starting positions m."""
    T = pe.shape[0]
    fig = go.Figure()
    colors = (BLUE, ORANGE, GREEN, VERMILION)
    for c, m in zip(colors, starts, strict=False):
        dots = pe[m + np.arange(T - m)] @ pe[m]
        fig.add_trace(
            go.Scatter(
                x=np.arange(T - m, dtype=np.float32), y=to_numpy(dots), name=f"from m = {m}",
                mode="lines", line=dict(color=c, width=6 if m == starts[0] else 2.5),
                hovertemplate=f"m = {m}<br>Δ = %{{x}}<br>p_m·p_(m+Δ) %{{y:{NUM_FMT}}}"
                "<extra></extra>",
            )
        )  # fmt: skip
    layout = line_layout(
        "Dot product of two sinusoidal codes against their distance",
        "distance Δ = n − m (positions)", "p_m · p_(m+Δ)", height=360,
    )  # fmt: skip
    fig.update_layout(**layout)
    dots = pe[starts[0] + np.arange(T - starts[0])] @ pe[starts[0]]
    spread = max(
        float(np.abs(pe[m + np.arange(T - m)] @ pe[m] - dots[: T - m]).max()) for m in starts
    )
    caption = (
        f"The lines lie on top of each other (they differ by at most {sci(spread)}): the "
        "product of two codes depends on their distance, not on where they start — it is a "
        f"sum of cos(Δ·ω_i), {dots[0]:.3g} at Δ = 0 and {dots[1:].min():.3g} at its lowest "
        f"here. It never says which of the two comes first: Δ and −Δ give the same."
    )
    return Chart(fig, caption)


def rope_pair_chart(xy: np.ndarray, pair: int, omega: float) -> Chart:
    """One pair of q's coordinates, rotated at positions 0…T−1: arrows from the origin."""
    T = xy.shape[0]
    fig = go.Figure()
    xs, ys = [], []
    for x, y in xy:
        xs += [0.0, float(x), None]
        ys += [0.0, float(y), None]
    fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=SKY, width=2),
                             hoverinfo="skip", showlegend=False))  # fmt: skip
    fig.add_trace(
        go.Scatter(
            x=to_numpy(xy[:, 0]), y=to_numpy(xy[:, 1]), mode="markers+text",
            text=[str(i) for i in range(T)], textposition="top center",
            marker=dict(size=10, color=BLUE), showlegend=False,
            hovertemplate="position %{text}<br>(%{x:.3f}, %{y:.3f})<extra></extra>",
        )
    )  # fmt: skip
    layout = line_layout(
        f"Pair {pair} of q at positions 0–{T - 1}: turned {omega:.3g} rad per position",
        "coordinate 2i", "coordinate 2i+1", height=420,
    )  # fmt: skip
    fig.update_layout(**layout)
    lim = 1.25 * float(np.abs(xy).max() or 1.0)
    fig.update_xaxes(range=[-lim, lim], zeroline=True)
    fig.update_yaxes(range=[-lim, lim], zeroline=True, scaleanchor="x", scaleratio=1)
    turns = omega * (T - 1) / (2 * np.pi)
    caption = (
        f"The same vector, rotated by position × {omega:.3g} rad: its length never changes. "
        f"Over {T} positions this pair turns {turns:.3g} times around; a higher pair index "
        "turns more slowly."
    )
    r = np.hypot(xy[:, 0], xy[:, 1]).astype(float)  # each arrow's length
    angle = np.degrees(np.arctan2(xy[:, 1], xy[:, 0])).astype(float)
    length = (
        num(r[0])
        if np.ptp(r) < 1e-6 * max(float(r.max()), 1.0)
        else f"{num(r.min())}–{num(r.max())}"
    )
    words = (
        Said("rope.pair", n=T, length=length, step=num(np.degrees(omega)), turns=num(turns)),
        Values("position → angle in degrees", range(T), angle),
    )
    return Chart(fig, caption, words=words)


def rope_spectrum_chart(omega: np.ndarray, base: float, T: int) -> Chart:
    """How fast each pair turns: ω_i on a log axis, with its wavelength on hover."""
    i = np.arange(len(omega), dtype=np.float32)
    wave = 2 * np.pi / omega
    fig = go.Figure(
        go.Scatter(
            x=i, y=to_numpy(omega), mode="lines+markers", line=dict(color=BLUE, width=3),
            customdata=to_numpy(wave), name="ω_i",
            hovertemplate="pair %{x}<br>ω %{y:.3~g} rad per position<br>one turn every "
            "%{customdata:.3~g} positions<extra></extra>",
        )
    )  # fmt: skip
    layout = line_layout(
        f"How fast each pair turns (base θ = {base:g})", "pair i",
        "radians per position, ω_i = θ^(−2i/d) (log)", height=360,
    )  # fmt: skip
    fig.update_layout(**layout)
    fig.update_yaxes(type="log", exponentformat="power")
    slow = int((wave > T).sum())
    caption = (
        f"A geometric sweep from 1 rad per position down to {omega[-1]:.3g}: the fast pairs tell "
        f"neighbours apart, the slow ones distant positions. {slow} of the {len(omega)} pairs "
        f"turn less than once over {T} positions."
    )
    return Chart(fig, caption)


def rope_decay_chart(offsets: np.ndarray, curves: Mapping[float, np.ndarray], d: int) -> Chart:
    """Expected score of a perfectly matching q and k against their distance, per base."""
    fig = go.Figure()
    for c, (base, y) in zip((BLUE, ORANGE, GREEN), curves.items(), strict=False):
        fig.add_trace(
            go.Scatter(
                x=to_numpy(offsets), y=to_numpy(y), mode="lines", name=f"θ = {base:g}",
                line=dict(color=c, width=3),
                hovertemplate=f"θ = {base:g}<br>Δ = %{{x}}<br>%{{y:.3f}} of the score"
                "<extra></extra>",
            )
        )  # fmt: skip
    layout = line_layout(
        f"What RoPE leaves of a perfect match's score at distance Δ (d_k = {d})",
        "distance Δ (positions, log)", "E[q·R_Δ q] / E[q·q]", height=380,
    )  # fmt: skip
    layout["shapes"] = [hline(0.0)]
    fig.update_layout(**layout)
    fig.update_xaxes(type="log")
    first = next(iter(curves.values()))
    caption = (
        f"The average over random q of (2/d)·Σ cos(Δ·ω_i): {first[0]:.3g} at Δ = "
        f"{offsets[0]:g}, {first[-1]:.2g} at Δ = {offsets[-1]:g} for the first base. Far "
        "keys get a smaller share of the score on average; a larger base keeps it longer."
    )
    return Chart(fig, caption)


def alibi_reach_chart(w: np.ndarray, slopes: np.ndarray, spans: Sequence[int]) -> Chart:
    """Weight on the key Δ back, per head, when only ALiBi's bias differs between keys."""
    h, T = w.shape
    fig = go.Figure()
    for i in range(h):
        fig.add_trace(
            go.Scatter(
                x=np.arange(T, dtype=np.float32), y=to_numpy(w[i]), mode="lines",
                name=f"head {i} (slope {slopes[i]:.3g})",
                line=dict(color=OKABE_ITO[i % len(OKABE_ITO)], width=3,
                          dash="solid" if i < len(OKABE_ITO) else "dash"),
                hovertemplate=f"head {i}<br>Δ = %{{x}}<br>weight %{{y:{NUM_FMT}}}<extra></extra>",
            )
        )  # fmt: skip
    layout = line_layout(
        f"ALiBi alone: the last query's weight on the key Δ back "
        f"({h} head{'s' if h != 1 else ''}, T = {T})",
        "distance Δ (positions)", "attention weight", height=420,
    )  # fmt: skip
    layout["legend"] = dict(orientation="v", y=1, yanchor="top", x=1.02, xanchor="left")
    layout["margin"] = dict(l=10, r=10, t=50, b=10)
    fig.update_layout(**layout)
    steep, gentle = int(np.argmax(slopes)), int(np.argmin(slopes))  # not head 0 and h − 1
    if h == 1:
        spread = f"The nearest {spans[0]} keys (its own included) hold 90 % of the weight."
    elif spans[steep] < spans[gentle]:
        spread = (
            f"The steepest head, head {steep} (slope {slopes[steep]:.3g}), needs its nearest "
            f"{spans[steep]} keys (its own included) to hold 90 % of the weight; the gentlest, "
            f"head {gentle} (slope {slopes[gentle]:.3g}), its nearest {spans[gentle]}: steep "
            "heads read the last few tokens, gentle ones far back."
        )
    else:  # a row too short for any slope to narrow: every head needs as many keys
        spread = (
            f"Every head, from the steepest (head {steep}, slope {slopes[steep]:.3g}) to the "
            f"gentlest (head {gentle}, slope {slopes[gentle]:.3g}), needs its nearest "
            f"{spans[steep]} keys (its own included) to hold 90 % of the weight: at T = {T} "
            "no slope here narrows the row more than another."
        )
    caption = f"Every content score equal: the penalty −slope·Δ alone shapes the row. {spread}"
    return Chart(fig, caption)


def extrapolation_chart(
    table: Mapping[str, Mapping[int, float]], T_train: int, chance: float
) -> Chart:
    """Accuracy on the copy task at the training length and beyond, one line per method."""
    fig = go.Figure()
    for kind, acc in table.items():
        Ts = sorted(acc)
        fig.add_trace(
            go.Scatter(
                x=np.array(Ts, dtype=np.float32), y=np.array([acc[T] for T in Ts], np.float32),
                mode="lines+markers", name=KIND_NAMES[kind],
                line=dict(color=KIND_COLORS[kind], width=3), marker=dict(size=10),
                hovertemplate=f"{KIND_NAMES[kind]}<br>length %{{x}}<br>%{{y:.1%}} right"
                "<extra></extra>",
            )
        )  # fmt: skip
    layout = line_layout(
        f"Trained at length {T_train}, tested longer: share of answers right",
        "sequence length (log)", "share right", height=420,
    )  # fmt: skip
    layout["shapes"] = [hline(chance)]
    layout["legend"] = dict(orientation="h", y=-0.25, yanchor="top", x=0, xanchor="left")
    layout["margin"] = dict(l=10, r=10, t=50, b=100)
    fig.update_layout(**layout)
    fig.update_xaxes(type="log", tickvals=sorted(next(iter(table.values()))))
    fig.update_yaxes(range=[0, 1.05], tickformat=".0%")
    caption = (
        f"The dotted line is guessing ({chance:.1%}). Everything right of length {T_train} "
        "was never seen in training."
    )
    return Chart(fig, caption)


def model_positions_chart(sim: np.ndarray, name: str) -> Chart:
    """Cosine similarity between a real model's learned position vectors."""
    P = sim.shape[0]
    fig = heatmap(
        sim, title=f"{name}: cosine similarity of its first {P} position vectors",
        x_title="position", y_title="position", diverging=True, zmin=-1, zmax=1,
        colorbar_title="cosine", show_values=False, height=440,
    )  # fmt: skip
    fig.update_traces(xgap=0, ygap=0)  # 128 × 128 cells: gaps would hatch the picture
    by_offset = np.array([np.mean(np.diagonal(sim, k)) for k in range(P // 2 + 1)])
    low = 1 + int(np.argmin(by_offset[1 : P // 4 + 1]))  # the least similar distance to P/4
    high = low + int(np.argmax(by_offset[low:]))  # the most similar one beyond it, to P/2
    shape = (
        f"It is not a steady fall: the average drops to {by_offset[low]:.2f} at distance {low} "
        f"and climbs back to {by_offset[high]:.2f} at distance {high}, the stripes parallel "
        "to the diagonal — as a sum of waves would give."
        if by_offset[high] > by_offset[low] + 0.1
        else "It does not climb back at larger distances."
    )
    caption = (
        f"Learned in training, yet ordered: neighbouring positions have cosine "
        f"{by_offset[1]:.2f} on average, positions {P // 2} apart {by_offset[P // 2]:.2f}. " + shape
    )
    return Chart(fig, caption)
