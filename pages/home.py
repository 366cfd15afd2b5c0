"""Home: what attention computes, a first live picture, and the path through the lesson."""

import streamlit as st

import ui
from attn_core import attention, random_qkv
from figures.common import weights_heatmap

FILE = "pages/home.py"
WORDS = ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"]
ONE_HOT = 0.99  # a row counts as one-hot when its largest weight exceeds this
D_KS = tuple(2**i for i in range(11))  # the d_k slider's stops, 1 … 1024
TRY_D_K = 512  # the head size the "Try this" box sends the reader to


@st.cache_data(max_entries=64, show_spinner=False)
def demo_weights(d_k: int, scaled: bool, seed: int):
    """One sentence's attention weights for random unit-variance q and k.

    Returns the (T, T) weights the heatmap draws, the median row's largest
    weight, the logits' spread and how many rows are one-hot (largest weight
    above ONE_HOT), all from those same weights.
    """
    q, k, v = random_qkv(len(WORDS), d_k, seed=seed, device=ui.device())
    r = attention(q, k, v, scale=None if scaled else 1.0)  # (T, T)
    w = r.weights.float().cpu()  # (T, T)
    top = w.amax(-1)  # (T,) each row's largest weight
    return w.numpy(), float(top.median()), float(r.scores.float().std()), int((top > ONE_HOT).sum())


@st.cache_data(max_entries=16, show_spinner=False)
def try_numbers(seed: int) -> dict:
    """What the "Try this" box promises, measured at this seed with the demo's own function."""
    off = demo_weights(TRY_D_K, False, seed)
    on = demo_weights(TRY_D_K, True, seed)
    scaled_counts = [demo_weights(d, True, seed)[3] for d in D_KS]  # one-hot rows per d_k
    return dict(off=off[3], on=on[3], scaled_most=max(scaled_counts))


def one_hot_text(n: int) -> str:
    return f"{n} of {len(WORDS)} rows are one-hot (largest weight above {ONE_HOT:g})"


def back_on(scaled_most: int, unscaled: int) -> str:
    """What scaling does at every d_k, from the most one-hot rows any scaled d_k shows."""
    span = f"any d_k from {D_KS[0]} to {D_KS[-1]}"
    if scaled_most == 0:
        return (
            f"the rows soften again whatever d_k is: at this seed, with the scaling, no row is "
            f"one-hot at {span}. That is what √d_k is for."
        )
    if scaled_most < unscaled:
        return (
            f"the rows soften again: at this seed, with the scaling, no more than {scaled_most} "
            f"of {len(WORDS)} rows are one-hot at {span}. That is what √d_k is for."
        )
    return (
        f"at this seed, even with the scaling, up to {scaled_most} of {len(WORDS)} rows are "
        f"one-hot at some d_k from {D_KS[0]} to {D_KS[-1]}: random draws can still be peaked."
    )


def try_this(seed: int) -> list[tuple[str, str]]:
    c = try_numbers(seed)
    return [
        (
            f"Set d_k to {TRY_D_K} and switch the scaling off",
            f"at this seed {one_hot_text(c['off'])}, against {c['on']} with the scaling on.",
        ),
        ("Switch it back on", back_on(c["scaled_most"], c["off"])),
        ("Set d_k to 1 with scaling off", "scaling changes nothing, since √1 = 1."),
    ]


def run() -> None:
    ui.page_header(
        FILE,
        "Attention lets each token build its new representation from the others, "
        "weighting them by relevance. Every token emits a **query** (what it looks for), "
        "a **key** (what it offers) and a **value** (what it hands over). A query is compared "
        "with every key by a dot product, softmax turns the scores into weights that sum to 1, "
        "and the output is the weighted average of the values — a soft dictionary lookup.",
    )
    st.latex(
        r"\mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{d_k}}\right)V"
    )

    first_look()

    st.subheader("The lesson, one question per page")
    for i, lesson in enumerate(ui.available()[1:], start=1):
        st.page_link(
            lesson.file, label=f"{i}. {lesson.title} — {lesson.question}", icon=lesson.icon
        )
    ui.prev_next(FILE)


@st.fragment
def first_look() -> None:
    """The live demo; a fragment, so moving its controls reruns only this part."""
    st.subheader("A first look")
    left, right = st.columns([1, 2], gap="large")
    with left:
        d_k = ui.pow2_slider(
            "d_k", "d_k — width of each query and key", 1, 1024, 64,
            help="Number of components in each query and key vector.",
        )  # fmt: skip
        scaled = ui.toggle("scaled", "Divide the scores by √d_k", True)
        seed = ui.number("seed", "Random seed", 0, 10_000, 0)
    ui.show_notes()
    w, typical_max, logit_sd, n_hot = demo_weights(d_k, scaled, seed)
    with left:
        st.metric(
            "Largest weight in a typical row",
            f"{typical_max:.3f}",
            help=f"Each row's largest weight, median over the {len(WORDS)} rows (the lower of "
            "the two middle values).",
        )
        st.metric("Spread (std) of the logits softmax sees", f"{logit_sd:.3g}")
        st.metric(f"One-hot rows (largest weight > {ONE_HOT:g})", f"{n_hot} of {len(WORDS)}")
    with right:
        verdict = (
            f"{one_hot_text(n_hot)}: each of those words has locked onto a single word."
            if n_hot
            else f"No row is one-hot (largest weight above {ONE_HOT:g}); the largest weight in "
            f"any row is {w.max():.3f}."
        )
        ui.show(
            weights_heatmap(
                w,
                WORDS,
                title=f"Who attends to whom — d_k = {d_k}, {'scaled' if scaled else 'unscaled'}",
                caption=f"Queries and keys are random unit-variance vectors. {verdict} "
                "Switch the scaling off and raise d_k to watch the rows harden.",
            )
        )
    ui.try_this(try_this(seed))  # inside the fragment: its numbers follow the seed


run()
