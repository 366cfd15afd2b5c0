"""Home: what attention computes, a first live picture, and the path through the lesson."""

import streamlit as st

import ui
from attn_core import attention, random_qkv
from figures.common import weights_heatmap

FILE = "pages/home.py"
WORDS = ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"]


@st.cache_data(max_entries=64, show_spinner=False)
def demo_weights(d_k: int, scaled: bool, seed: int):
    """One sentence's attention weights for random unit-variance q and k."""
    q, k, v = random_qkv(len(WORDS), d_k, seed=seed, device=ui.device())
    r = attention(q, k, v, scale=None if scaled else 1.0)  # (T, T)
    w = r.weights.float().cpu()
    return w.numpy(), float(w.amax(-1).median()), float(r.scores.float().std())


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
    ui.try_this(
        [
            ("Set d_k to 512 and switch the scaling off", "almost every row turns one-hot."),
            (
                "Switch it back on",
                "the rows soften again whatever d_k is: that is what √d_k is for.",
            ),
            ("Set d_k to 1 with scaling off", "scaling changes nothing, since √1 = 1."),
        ]
    )

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
    w, typical_max, logit_sd = demo_weights(d_k, scaled, seed)
    with left:
        st.metric("Largest weight in a typical row", f"{typical_max:.3f}")
        st.metric("Spread (std) of the logits softmax sees", f"{logit_sd:.3g}")
    with right:
        verdict = (
            "Nearly every row is close to one-hot: each word has locked onto one other word."
            if typical_max > 0.9
            else "Weights are spread over several words: softmax is in its responsive range."
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


run()
