"""Where is position? Attention is blind to order until position enters: added codes,
RoPE's rotations of q and k, ALiBi's penalty on the scores, and how each one copes with
sequences longer than it was trained on."""

import json
from pathlib import Path

import numpy as np
import streamlit as st
import torch

import ui
from attn_core.lessons import positions as core
from figures import positions as fig
from figures.parts import sci
from ui.exercises import figures as figures_of

FILE = "pages/positions.py"
W = ui.Words("positions")
STEPS = ui.lesson("positions").steps
SHIPPED = Path(__file__).resolve().parent.parent / "assets" / "positions_extrapolation.json"
FAR = 64  # the distance the RoPE exercise asks about
T_MIN, T_MAX = 2, 48  # the T slider's range
H_MIN, H_MAX = 1, 16  # the ALiBi heads slider's range
SEEDS = range(100)  # the seed slider's range
DECAY_OFFSETS = np.unique(np.round(np.logspace(0, 4, 60))).astype(np.float64)  # Δ = 1 … 10⁴


@ui.frozen
class Settings:
    """The sidebar's controls, read by every step."""

    T: int
    d_k: int
    base: float
    h: int
    seed: int


# ----------------------------------------------------------------------------- computed, cached
@ui.cache_data(max_entries=32, show_spinner=False)
def moves(T: int, d: int, seed: int) -> dict[str, np.ndarray]:
    """Per token, how far its output moved under a shuffle, for each way of giving position."""
    runs = {
        "no mask, no position": dict(kind="none"),
        "causal mask": dict(kind="none", causal=True),
        "sinusoidal added": dict(kind="sinusoidal"),
        "RoPE": dict(kind="rope"),
        "ALiBi": dict(kind="alibi"),
    }
    return {name: core.shuffle_error(T, d, seed=seed, **kw)[1].numpy() for name, kw in runs.items()}


@ui.cache_data(max_entries=32, show_spinner=False)
def order_facts(T: int, d: int, seed: int) -> tuple[str, float, int]:
    """The Order exercise's computed answer (a choice's name), the causal ALiBi's largest
    move, and how many seeds' shuffles leave a token in place behind the same tokens at T_MAX."""
    answer = core.order_choice(core.relative_move(T, d, seed=seed))
    causal_alibi = float(core.shuffle_error(T, d, "alibi", causal=True, seed=seed)[1].max())
    kept = sum(bool(core.kept_in_place(core.shuffle_perm(T_MAX, d, s)).any()) for s in SEEDS)
    return answer, causal_alibi, kept


@ui.cache_data(max_entries=32, show_spinner=False)
def scores(T: int, d: int, kind: str, seed: int, base: float) -> tuple[np.ndarray, float]:
    s = core.repeated_token_scores(T, d, kind, seed=seed, base=base)
    return s.numpy(), core.toeplitz_deviation(s)


@ui.cache_data(max_entries=16, show_spinner=False)
def pair_path(T: int, d: int, pair: int, base: float) -> np.ndarray:
    """(T, 2): the unit vector of pair `pair`, rotated at every position."""
    x = torch.zeros(T, d, dtype=torch.float64)
    x[:, 2 * pair] = 1.0
    return core.rope(x, torch.arange(T), base)[:, 2 * pair : 2 * pair + 2].numpy()


@ui.cache_data(max_entries=16, show_spinner=False)
def decay(d: int, base: float) -> dict[float, np.ndarray]:
    bases = dict.fromkeys([base, *(b for b in (100.0, 500_000.0) if b != base)])
    off = torch.from_numpy(DECAY_OFFSETS)
    return {b: core.rope_expected_score(off, d, b).numpy() for b in bases}


@ui.cache_data(max_entries=1, show_spinner=False)
def shipped() -> dict:
    return json.loads(SHIPPED.read_text())


@ui.cache_resource(max_entries=1, show_spinner="Reading the model's position table…")
def model_map(P: int = 128) -> tuple[str, np.ndarray] | str:
    """The real model's position similarity, or why it cannot be shown here."""
    try:
        name, table = core.model_positions(P)
    except Exception as e:  # a missing or damaged package: the page says why
        return str(e)
    return name, core.cosine_matrix(table).numpy()


charts = ui.cache_resource(max_entries=8, show_spinner=False)


@charts
def shuffle_chart(T: int, d: int, seed: int):
    return fig.shuffle_chart(moves(T, d, seed))


@charts
def scores_chart(T: int, d: int, kind: str, seed: int, base: float):
    s, dev = scores(T, d, kind, seed, base)
    return fig.repeated_scores_chart(s, kind, dev)


@charts
def code_charts(T: int, d: int):
    pe = core.sinusoidal_positions(T, d).numpy()
    starts = sorted({0, T // 4, T // 2})
    return fig.code_heatmap(pe), fig.code_dot_chart(pe, starts)


@charts
def rope_charts(T: int, d: int, pair: int, base: float):
    omega = core.rope_frequencies(d, base).numpy()
    return (
        fig.rope_pair_chart(pair_path(T, d, pair, base), pair, float(omega[pair])),
        fig.rope_spectrum_chart(omega, base, T),
    )


@charts
def alibi_chart(h: int, T: int):
    w, spans = core.alibi_reach(h, T)
    return fig.alibi_reach_chart(w.numpy(), core.alibi_slopes(h).numpy(), spans)


# ----------------------------------------------------------------------------- the controls
def controls() -> Settings:
    with ui.controls_area():
        st.header("Tokens and heads")
        T = ui.slider("T", "Tokens T", T_MIN, T_MAX, 16)
        d_k = ui.pow2_slider("d_k", "d_k — width of q and k", 8, 128, 64)
        base = ui.log_slider("base", "RoPE base θ", 100.0, 1_000_000.0, 10_000.0)
        h = ui.slider("h", "ALiBi heads h", H_MIN, H_MAX, 8)
        seed = ui.slider("seed", "Random seed", SEEDS[0], SEEDS[-1], 0)
    return Settings(T, d_k, base, h, seed)


# ----------------------------------------------------------------------------- the steps
def order_step(s: Settings) -> None:
    st.header("Can attention alone see order?")
    st.markdown(W("order.body", T=s.T, d=s.d_k))
    m = moves(s.T, s.d_k, s.seed)
    none, causal, rope = (
        float(m[k].max()) for k in ("no mask, no position", "causal mask", "RoPE")
    )
    answer, causal_alibi, kept = order_facts(s.T, s.d_k, s.seed)
    shown = order_exercise(s, answer, none, causal)
    if shown:  # the moves are the answer: shown after the reveal
        a, b, c = st.columns(3)
        a.metric(W("order.metrics.none"), sci(none) if none else "0")
        b.metric(W("order.metrics.causal"), f"{causal:.3g}")
        c.metric(W("order.metrics.rope"), f"{rope:.3g}")
        ui.show(shuffle_chart(s.T, s.d_k, s.seed))
        st.markdown(W("order.alibi", causal_alibi=causal_alibi))
        st.markdown(W("order.counting"))  # (a causal mask breaks the symmetry: a hint)
    else:
        ui.until_reveal(W("order.hidden"))
    if shown:  # its second experiment says what the no-position line does: the answer
        seeds = f"{SEEDS[0]}–{SEEDS[-1]}"
        ui.try_this(W.pairs("try.order", T_min=T_MIN, T_max=T_MAX, kept=kept, seeds=seeds))


def order_exercise(s: Settings, answer: str, none: float, causal: float) -> bool:
    choices = W.choices("order.exercise.choices")
    truth = W("order.exercise.truth", move=sci(none) if none else "0", causal=f"{causal:.3g}")
    return ui.predict_choice(
        f"positions-order-{s.T}-{s.d_k}-{s.seed}",
        W("order.exercise.q", T=s.T),
        list(choices.values()),
        choices[answer],  # core.order_choice of the measured move
        W("order.exercise.why"),
        truth=truth,
        # the measured moves, the answer's own words, and how the page words that answer
        secret=[*figures_of(truth), choices[answer], W.choices("order.exercise.giveaway")[answer]],
    )


def added_step(s: Settings) -> None:
    st.header("Added codes: position mixed into the token")
    st.markdown(W("added.body"))
    kinds = W.choices("added.kinds")
    with ui.noting():
        kind = ui.radio("code", W("added.kind"), list(kinds), "sinusoidal", fmt=kinds.get)
    left, right = st.columns(2)
    with left:
        ui.show(scores_chart(s.T, s.d_k, kind, s.seed, s.base))
    heat, dots = code_charts(s.T, s.d_k)
    with right:
        ui.show(heat)
    ui.show(dots)
    ui.try_this(W.pairs("try.added"))
    ui.explain("Why an added code is not relative", W("explain.added"))


@st.fragment
def rope_step(s: Settings) -> None:
    """Its own fragment: the pair shown reruns this step only."""
    st.header("RoPE: rotate q and k, and the score sees only the distance")
    st.markdown(W("rope.body"))
    rope_s, dev = scores(s.T, s.d_k, "rope", s.seed, s.base)
    added_dev = scores(s.T, s.d_k, "sinusoidal", s.seed, s.base)[1]
    st.markdown(
        W(
            "rope.toeplitz",
            dev=sci(dev) if dev else "0",
            size=f"{np.abs(rope_s).max():.3g}",
            added=sci(added_dev),
        )
    )
    with ui.noting():
        pair = ui.slider("pair", W("rope.pair"), 0, s.d_k // 2 - 1, 0)
    left, right = st.columns(2)
    turn, spectrum = rope_charts(s.T, s.d_k, pair, s.base)
    with left:
        ui.show(scores_chart(s.T, s.d_k, "rope", s.seed, s.base))
    with right:
        ui.show(turn)
    ui.show(spectrum)
    if rope_exercise(s):
        ui.show(fig.rope_decay_chart(DECAY_OFFSETS, decay(s.d_k, s.base), s.d_k))
    else:
        ui.until_reveal(W("rope.hidden"))
    slow = lambda b: f"{core.rope_frequencies(s.d_k, b)[-1]:.3g}"  # noqa: E731
    ui.try_this(W.pairs("try.rope", slow=slow(s.base), slow100=slow(100.0)))


def rope_exercise(s: Settings) -> bool:
    value = float(core.rope_expected_score(torch.tensor([FAR]), s.d_k, s.base)[0])
    return ui.predict_number(
        f"positions-decay-{s.d_k}-{s.base:g}",
        W("rope.exercise.q", d=s.d_k, base=f"{s.base:g}", far=FAR),
        value,
        W("rope.exercise.why"),
        abs_tol=0.1,
        rel_tol=0.0,
        fmt="{:.2f}",
        lo=-1.0,
        hi=1.0,
        secret=[f"{value:.2f}"],  # and the decay chart, which waits for the reveal
    )


def alibi_step(s: Settings) -> None:
    st.header("ALiBi: a penalty for distance, one slope per head")
    slopes = core.alibi_slopes(s.h).tolist()
    st.markdown(W("alibi.body", rule=alibi_rule(s.h, slopes)))
    listed = ", ".join(_slope(x) for x in slopes)
    st.markdown(W("alibi.slopes" if s.h > 1 else "alibi.slopes.one", h=s.h, slopes=listed))
    ui.show(alibi_chart(s.h, s.T))
    one = _slope(float(core.alibi_slopes(1)[0]))
    ui.try_this(W.pairs("try.alibi", one=one) + span_try(s.h, slopes[0]))


@ui.cache_data(max_entries=1, show_spinner=False)
def head0_spans() -> dict[int, list[int]]:
    """Head 0's 90 % span at every T of the slider (T_MIN … T_MAX), for every h of its slider."""
    Ts = range(T_MIN, T_MAX + 1)
    return {h: [core.alibi_reach(h, T)[1][0] for T in Ts] for h in range(H_MIN, H_MAX + 1)}


def span_stop(spans: list[int]) -> int | None:
    """The T from which head 0's span stays at its value at T_MAX, when that holds over at
    least the upper half of the slider's lengths; None when it is still growing there."""
    stop = T_MAX
    while stop > T_MIN and spans[stop - 1 - T_MIN] == spans[-1]:
        stop -= 1
    return stop if stop <= T_MAX // 2 else None


def span_try(h: int, slope: float) -> list[tuple[str, str]]:
    """The Try-this item on head 0's span as T grows, worded from what the page measures."""
    spans = head0_spans()
    if (stop := span_stop(spans[h])) is not None:
        return W.pairs("try.alibi.local", T_max=T_MAX, span=spans[h][-1], stop=stop)
    h0 = min(k for k in spans if span_stop(spans[k]) is not None)  # steep enough from here on
    return W.pairs(
        "try.alibi.grows", T_max=T_MAX, h=h, slope=_slope(slope), span=spans[h][-1],
        h_local=h0, span_local=spans[h0][-1], stop_local=span_stop(spans[h0]),
    )  # fmt: skip


def alibi_rule(h: int, slopes: list[float]) -> str:
    """How the paper builds these h slopes, worded with the slopes themselves."""
    n, extra = core.alibi_rule(h)
    listed = lambda xs: ", ".join(_slope(x) for x in xs)  # noqa: E731
    if h == 1:
        return W("alibi.rule.one", last=_slope(slopes[0]))
    if not extra:
        return W("alibi.rule.power", h=h, first=_slope(slopes[0]), last=_slope(slopes[-1]))
    return W(
        "alibi.rule.mixed", h=h, n=n, n2=2 * n, extra=extra,
        low=listed(slopes[:n]), high=listed(slopes[n:]),
    )  # fmt: skip


def _slope(x: float) -> str:
    """1/2, 1/4 … for a power of two; else 3 significant digits."""
    inv = 1.0 / x
    return f"1/{inv:.0f}" if abs(inv - round(inv)) < 1e-9 else f"{x:.3g}"


@st.fragment
def longer_step(_: Settings) -> None:
    """Its own fragment: Train here reruns this step only."""
    st.header("Beyond the training length")
    data = shipped()
    task = core.CopyTask(**{k: tuple(v) if k == "lengths" else v for k, v in data["task"].items()})
    st.markdown(
        W(
            "longer.body",
            offset=task.offset,
            h=task.h,
            d_k=task.d // task.h,
            steps=task.steps,
            T_train=task.T_train,
            beyond=_and([n for n in task.lengths if n > task.T_train]),
        )
    )
    table = {k: {int(T): a for T, a in r["accuracy"].items()} for k, r in data["runs"].items()}
    where = W("longer.where.shipped", torch=data["torch"],
              seconds=sum(r["seconds"] for r in data["runs"].values()))  # fmt: skip
    if st.button(W("longer.train"), icon=":material/model_training:"):
        here = train_here(task)
        if here is not None:
            table, where = {k: r.accuracy for k, r in here.items()}, W("longer.where.here")
    st.caption(where)
    ui.show(fig.extrapolation_chart(table, task.T_train, task.chance))
    st.markdown(verdict(table, task))
    ui.try_this(W.pairs("try.longer"))


def train_here(task: core.CopyTask) -> dict | None:
    box = st.empty()
    say = lambda m: box.info(m, icon=":material/hourglass:")  # noqa: E731
    try:
        with st.spinner("Training five small models on this server…"):
            result, _ = ui.jobs.shared(
                ui.jobs.results("positions-longer", 2), task,
                lambda _job: ui.jobs.call(core.train_all, task), kind="training",
                what="the extrapolation table", show=say,
            )  # fmt: skip
        box.empty()
        return result
    except ui.jobs.GaveUpError as e:
        box.warning(str(e), icon=":material/hourglass_disabled:")
        return None


def _and(xs: list) -> str:
    """ "a, b and c" """
    parts = [str(x) for x in xs]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else "".join(parts)


def _listed(table: dict, kinds: list[str], T: int) -> str:
    """ "a (x%), b (y%) and c (z%)" in the content file's short names."""
    names = W.choices("longer.names")
    return _and([f"{names[k]} ({table[k][T]:.0%})" for k in kinds])


NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five"}
NOISE_SE = 2.0  # two accuracies closer than this many standard errors are "about as many"


def same_within_noise(a: float, b: float, n: int) -> bool:
    """Two shares right, each over n answers, closer than NOISE_SE standard errors."""
    se = np.sqrt((a * (1 - a) + b * (1 - b)) / n)
    return abs(a - b) < NOISE_SE * max(float(se), 1 / n)


def ranking(table: dict[str, dict[int, float]], fit: list[str], T4: int) -> str:
    """Beyond the training length, the ones that learned the task ranked among themselves
    (all of them when none did), and the others' shares named as not ranked."""
    names = W.choices("longer.names")
    ranked = fit or list(table)  # only the ones that learned are ranked beyond the length
    best = max(ranked, key=lambda k: table[k][T4])
    worst = min(ranked, key=lambda k: table[k][T4])
    said = dict(T_4x=T4, best=names[best], best_acc=table[best][T4])
    if not fit:
        return W("longer.rank.none", **said, worst=names[worst], worst_acc=table[worst][T4])
    if len(fit) == 1:
        out = W("longer.rank.one", **said)
    else:
        n = NUMBER_WORDS.get(len(fit), str(len(fit)))
        out = W("longer.rank.learned", **said, n=n, worst=names[worst], worst_acc=table[worst][T4])
    if others := [k for k in table if k not in fit]:
        listed = _and([W("longer.at", name=names[k], acc=table[k][T4]) for k in others])
        out += " " + W("longer.unranked." + ("one" if len(others) == 1 else "many"), others=listed)
    return out


def alibi_note(table: dict[str, dict[int, float]], task: core.CopyTask) -> str:
    """ALiBi did not learn the task: what it got at the training length, against no position."""
    T0 = task.T_train
    alibi, none, n = table["alibi"][T0], table["none"][T0], core.copy_answers(task, T0)
    kind = "same" if same_within_noise(alibi, none, n) else "more" if alibi > none else "fewer"
    against = W(f"longer.against.{kind}", none_acc=none, **({"n": n} if kind == "same" else {}))
    return W("longer.alibi_note", alibi_acc=alibi, against=against, offset=task.offset)


def verdict(table: dict[str, dict[int, float]], task: core.CopyTask) -> str:
    """The measured verdict, worded from the table."""
    T0, T4 = task.T_train, max(task.lengths)
    fit = [k for k in table if table[k][T0] >= 0.9]
    unfit = [k for k in table if k not in fit]
    notes = []
    if "none" in table and table["none"][T0] > 1.5 * task.chance:
        notes.append(W("longer.none_note", none_acc=table["none"][T0], chance=task.chance))
    if "alibi" in unfit and "none" in table:
        notes.append(alibi_note(table, task))
    return W(
        "longer.verdict",
        fit=_listed(table, fit, T0) or "none of them", unfit=_listed(table, unfit, T0) or "none",
        ranking=ranking(table, fit, T4), notes=" ".join(notes),
    )  # fmt: skip


def model_step(_: Settings) -> None:
    st.header("In a real model: learned positions")
    got = model_map()
    if isinstance(got, str):
        st.info(W("model.missing", why=ui.safe_text(got, 200)), icon=":material/info:")
        return
    name, sim = got
    st.markdown(W("model.body", name=name))
    ui.show(fig.model_positions_chart(sim, name))
    ui.try_this(W.pairs("try.model"))


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls()
    ui.steps(
        {
            "Order": order_step,
            "Added": added_step,
            "RoPE": rope_step,
            "ALiBi": alibi_step,
            "Longer": longer_step,
            "In a model": model_step,
        },
        s,
    )
    ui.prev_next(FILE)


run()
