"""Home: what attention computes, a first live picture, and the path through the lesson."""

import streamlit as st

import ui
from attn_core import attention, random_qkv
from figures.common import weights_heatmap

FILE = "pages/home.py"
W = ui.Words("home")
WORDS = ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"]
T = len(WORDS)
ONE_HOT = 0.99  # a row counts as one-hot when its largest weight exceeds this
D_KS = tuple(2**i for i in range(11))  # the d_k slider's stops, 1 … 1024
TRY_D_K = 512  # the head size the "Try this" box sends the reader to


@ui.frozen
class Settings:
    """The first look's controls."""

    d_k: int
    scaled: bool
    seed: int


@ui.cache_data(max_entries=64, show_spinner=False)
def demo_weights(s: Settings):
    """One sentence's attention weights for random unit-variance q and k.

    Returns the (T, T) weights the heatmap draws, the median row's largest
    weight, the logits' spread and how many rows are one-hot (largest weight
    above ONE_HOT), all from those same weights.
    """
    q, k, v = random_qkv(T, s.d_k, seed=s.seed, device=ui.device())
    r = attention(q, k, v, scale=None if s.scaled else 1.0)  # (T, T)
    w = r.weights.float().cpu()  # (T, T)
    top = w.amax(-1)  # (T,) each row's largest weight
    return w.numpy(), float(top.median()), float(r.scores.float().std()), int((top > ONE_HOT).sum())


@ui.cache_data(max_entries=16, show_spinner=False)
def try_numbers(seed: int) -> dict:
    """What the "Try this" box promises, measured at this seed with the demo's own function."""
    off = demo_weights(Settings(TRY_D_K, False, seed))
    on = demo_weights(Settings(TRY_D_K, True, seed))
    scaled_counts = [demo_weights(Settings(d, True, seed))[3] for d in D_KS]  # one-hot rows
    return dict(off=off[3], on=on[3], scaled_most=max(scaled_counts))


def one_hot_text(n: int) -> str:
    return W("one_hot", n=n, T=T, limit=ONE_HOT)


def back_on(scaled_most: int, unscaled: int) -> str:
    """What scaling does at every d_k, from the most one-hot rows any scaled d_k shows."""
    span = dict(lo=D_KS[0], hi=D_KS[-1])
    if scaled_most == 0:
        return W("back_on.none", **span)
    key = "back_on.fewer" if scaled_most < unscaled else "back_on.peaked"
    return W(key, most=scaled_most, T=T, **span)


def try_this(seed: int) -> list[tuple[str, str]]:
    c = try_numbers(seed)
    return W.pairs(
        "try",
        d_k=TRY_D_K,
        one_hot=one_hot_text(c["off"]),
        on=c["on"],
        back_on=back_on(c["scaled_most"], c["off"]),
    )


def run() -> None:
    ui.page_header(FILE, W("intro"))
    st.latex(
        r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"
    )

    ui.join_box()  # a student who has a class's code types it here

    first_look()

    st.header("The lesson, one question per page")
    # counted as the footer counts them: this page is lesson 1
    for i, lesson in enumerate(ui.available()[1:], start=2):
        st.page_link(
            lesson.file, label=f"{i}. {lesson.title} — {lesson.question}", icon=lesson.icon
        )
    ui.prev_next(FILE)


def controls(left) -> Settings:
    """The first look's controls, in its left column; their link notes under both columns."""
    with ui.noting(), left:
        d_k = ui.pow2_slider(
            "d_k", "d_k — width of each query and key", 1, 1024, 64,
            help="Number of components in each query and key vector.",
        )  # fmt: skip
        scaled = ui.toggle("scaled", "Divide the scores by √d_k", True)
        seed = ui.number("seed", "Random seed", 0, 10_000, 0)
    return Settings(d_k, scaled, seed)


@st.fragment
def first_look() -> None:
    """The live demo; a fragment, so moving its controls reruns only this part."""
    st.header("A first look")
    left, right = st.columns([1, 2], gap="large")
    s = controls(left)
    w, typical_max, logit_sd, n_hot = demo_weights(s)
    with left:
        st.metric(
            "Largest weight in a typical row",
            f"{typical_max:.3f}",
            help=W("metric.typical.help", T=T),
        )
        st.metric("Spread (std) of the logits softmax sees", f"{logit_sd:.3g}")
        st.metric(f"One-hot rows (largest weight > {ONE_HOT:g})", f"{n_hot} of {T}")
    with right:
        if n_hot:
            verdict = W("verdict.hot", one_hot=one_hot_text(n_hot))
        else:
            verdict = W("verdict.none", limit=ONE_HOT, top=w.max())
        ui.show(
            weights_heatmap(
                w,
                WORDS,
                title=f"Who attends to whom — d_k = {s.d_k}, "
                f"{'scaled' if s.scaled else 'unscaled'}",
                caption=W("caption", verdict=verdict),
            )
        )
    ui.try_this(try_this(s.seed))  # inside the fragment: its numbers follow the seed


run()
