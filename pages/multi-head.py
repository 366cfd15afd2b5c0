"""Multi-head: why run attention h times in parallel, what the reshape does, what heads cost."""

import math
import zlib

import streamlit as st
import torch

import ui
from attn_core import (
    MAX_SENTENCE_TOKENS,
    V_CAT,
    V_TIRED,
    count_parameters,
    embed_words_fixed,
    format_bytes,
    head_diversity,
    head_kind,
    kv_head_choices,
    kv_table,
    mean_focus,
    nearest_choices,
    nearest_valid_heads,
    output_change,
    pruned_forward,
    pruning_curve,
    random_tokens,
    reshape_walkthrough,
    run_heads,
    seeded_mha,
    sentence_tokens,
    tired_cat_one_head,
    tired_cat_two_heads,
    valid_head_counts,
)
from attn_core.lessons.multi_head import distinct_maps, heads_to_prune, value_width_walkthrough
from figures import multi_head as fg

FILE = "pages/multi-head.py"
SENTENCE = "The tired cat sat on the warm mat"
INPUTS = ["random", "sentence"]  # URL values, shown as they are so links stay readable
STEPS = ("Heads", "Outputs", "Reshape", "Cost", "Tired cat", "Diversity")  # ?step= values
KV_ASSUMED = dict(context=8192, layers=32, batch=1, dtype="float16")  # the KV table's setting

# Results are cached as resources (shared, never copied) and only ever read: the figures in
# them go straight to st.plotly_chart, so a plain rerun does no compute and no figure building.


@st.cache_resource(max_entries=6, show_spinner="Running the heads…")
def lab(d_model: int, heads: int, kv_heads: int, words: tuple[str, ...], T: int, seed: int):
    """The layer and its run on the input; words=() means T random vectors."""
    dev = ui.device()
    x = embed_words_fixed(list(words), d_model) if words else random_tokens(T, d_model, seed)
    x = x.to(dev)  # (T, d_model)
    m = seeded_mha(d_model, heads, kv_heads, seed, device=dev)
    ticks = list(words) if words else [f"t{i + 1}" for i in range(T)]
    return dict(x=x, m=m, run=run_heads(x, m), ticks=ticks)


# Each step's figures are cached on their own, so a step builds only what it shows.


@st.cache_resource(max_entries=8, show_spinner=False)
def heads_view(key: tuple) -> tuple:
    L = lab(*key)
    w = L["run"].weights  # (h, T, T)
    focus = mean_focus(w)  # (h,)
    return (
        fg.heads_grid(w, list(key[3]) or None, focus=focus),  # t1, t2… would label nothing
        fg.focus_bars(focus, float(mean_focus(w.mean(0))), key[4]),
    )


@st.cache_resource(max_entries=16, show_spinner=False)
def outputs_view(key: tuple, head: int) -> tuple:
    L = lab(*key)
    return (
        fg.head_output_heatmap(L["run"].head_outputs[head - 1], L["ticks"], head),
        fg.concat_heatmap(L["run"].concat, L["ticks"], key[1], head),
    )


@st.cache_resource(max_entries=8, show_spinner=False)
def diversity_view(key: tuple) -> tuple:
    """(diversity chart, pruning curve): the curve prunes heads one by one, so it waits here."""
    run = lab(*key)["run"]
    return fg.diversity_heatmap(head_diversity(run.weights.cpu())), pruning_curve(run)[1]


@st.cache_resource(max_entries=16, show_spinner=False)
def pruning_view(key: tuple, pruned: tuple[int, ...]) -> tuple:
    L = lab(*key)
    y = pruned_forward(L["x"], L["m"], [j - 1 for j in pruned])  # (T, d_model), via head_mask
    rel, cos = output_change(L["run"].output, y)
    return rel, cos, fg.pruning_chart(diversity_view(key)[1], key[1], len(pruned), rel)


@st.cache_resource(max_entries=16, show_spinner=False)
def cost_view(d_model: int, heads: int, kv_heads: int, T: int) -> tuple:
    counts = [(h, count_parameters(d_model, h)) for h in sorted({1, heads})]
    rows = kv_table(d_model, heads, kv_heads, **KV_ASSUMED)
    kv = fg.kv_table_md(rows, heads, kv_heads, format_bytes)
    return fg.params_table_md(d_model, counts), kv, reshape_walkthrough(1, T, d_model, heads)


@st.cache_data(max_entries=16, show_spinner=False)
def value_width_view(d_model: int, heads: int, T: int, d_v: int):
    return value_width_walkthrough(1, T, d_model, heads, d_v)


# ----------------------------------------------------------------------------- predict, then reveal
# Each truth is computed by attn_core for the instance the controls pick; the exercise key
# holds every value that defines it, so a new instance starts unrevealed.


def instance_id(key: tuple) -> str:
    d_model, heads, kv_heads, words, T, seed = key
    return f"{d_model}-{heads}-{kv_heads}-{T}-{seed}-{zlib.crc32(' '.join(words).encode())}"


def split_heads(d_model: int, heads: int) -> int:
    """The h an exercise asks about: the page's own, or 8-ish when the page shows one head."""
    return heads if heads > 1 else nearest_valid_heads(8, d_model)


@st.cache_data(max_entries=16, show_spinner=False)
def params_truth(d_model: int, h: int) -> tuple[int, int]:
    return count_parameters(d_model, 1)["total"], count_parameters(d_model, h)["total"]


@st.cache_data(max_entries=16, show_spinner=False)
def mqa_truth(d_model: int, h: int, words: tuple[str, ...], T: int, seed: int) -> tuple:
    """(distinct maps, smallest JS between two heads) for an MQA layer on the page's input."""
    x = embed_words_fixed(list(words), d_model) if words else random_tokens(T, d_model, seed)
    w = run_heads(x, seeded_mha(d_model, h, 1, seed)).weights  # (h, T, T)
    js = head_diversity(w)  # (h, h)
    off = js[~torch.eye(h, dtype=torch.bool)]
    return distinct_maps(w), float(off.min()) if h > 1 else 0.0


@st.cache_data(max_entries=16, show_spinner=False)
def prune_truth(key: tuple, pruned: tuple[int, ...]) -> float:
    """Relative output change, in %, with the given heads (0-based) pruned."""
    L = lab(*key)
    return 100 * output_change(L["run"].output, pruned_forward(L["x"], L["m"], list(pruned)))[0]


def params_exercise(d_model: int, heads: int) -> bool:
    """The parameter question; True once revealed (the count table waits for it)."""
    h = split_heads(d_model, heads)
    p1, ph = params_truth(d_model, h)
    options = {f"{h}× as many: {p1 * h:,}": p1 * h, f"The same: {p1:,}": p1,
               f"{h}× fewer: about {p1 // h:,}": p1 // h}  # fmt: skip
    correct = min(options, key=lambda c: abs(options[c] - ph))  # the one that matches the count
    return ui.predict_choice(
        f"mh-params-{d_model}-{h}",
        fg.EX_PARAMS_Q.format(d_model=d_model, p1=p1, h=h),
        list(options),
        correct,
        fg.EX_PARAMS_WHY.format(d_model=d_model, h=h, d_k=d_model // h),
        truth=f"Counted on a real {h}-head layer: {ph:,} parameters.",
        secret=[f"{ph:,}"],  # the table's h-head row
    )


def mqa_exercise(key: tuple) -> None:
    d_model, heads, _, words, T, seed = key
    h = split_heads(d_model, heads)
    n, js = mqa_truth(d_model, h, words, T, seed)
    one, every, between = (
        "1 — with one shared K and V they must all attend alike",
        f"{h} — every query head still has its own map",
        "Somewhere in between: heads collapse into groups",
    )
    ui.predict_choice(
        f"mh-mqa-{h}-{instance_id(key)}",
        fg.EX_MQA_Q.format(h=h, seed=seed, T=T),
        [one, every, between],
        one if n == 1 else every if n == h else between,
        fg.EX_MQA_WHY.format(h=h),
        truth=fg.EX_MQA_TRUTH.format(n=n, js=js),
    )


def prune_exercise(key: tuple) -> None:
    d_model, heads, _, _, _, seed = key
    pruned = heads_to_prune(heads, seed)  # 0-based
    k = len(pruned)
    names = ("heads " if k > 1 else "head ") + ", ".join(str(j + 1) for j in pruned)
    truth = prune_truth(key, tuple(pruned))
    ui.predict_number(
        f"mh-prune-{instance_id(key)}",
        fg.EX_PRUNE_Q.format(seed=seed, h=heads, heads=names, k=k),
        truth,
        fg.EX_PRUNE_WHY.format(k=k, h=heads, share=k / heads, d_model=d_model,
                               root=math.sqrt(k / heads),
                               verdict=fg.prune_verdict(k, heads, truth)),
        rel_tol=0.12,
        abs_tol=6.0,
        fmt="{:.0f} %",
        lo=0.0,
    )  # fmt: skip


def heads_control(d_model: int) -> int:
    options = valid_head_counts(d_model)
    asked = st.session_state.get("heads")  # the value from before d_model moved
    if asked is not None and asked not in options:
        st.session_state["heads"] = nearest_valid_heads(asked, d_model)
        near = " or ".join(map(str, nearest_choices(asked, options)))
        ui.note(
            f"{asked} heads do not divide d_model = {d_model} evenly (d_k would not be a "
            f"whole number). Nearest valid choices: {near}; now using "
            f"{st.session_state['heads']}."
        )
    return ui.select_slider(
        "heads",
        "heads h (divisors of d_model only)",
        options,
        8 if 8 in options else nearest_valid_heads(8, d_model),  # off-step links: d_model=100
        expected=f"heads must divide d_model = {d_model}; valid: {', '.join(map(str, options))}",
    )


def kv_control(heads: int) -> int:
    options = kv_head_choices(heads)
    asked, before = st.session_state.get("kv_heads"), st.session_state.get("_mh_heads")
    if asked is not None and before not in (None, heads) and asked == before:
        st.session_state["kv_heads"] = heads  # was plain multi-head: stay plain multi-head
    elif asked is not None and asked not in options:
        st.session_state["kv_heads"] = max(g for g in options if g <= asked)
        valid = ", ".join(map(str, options))
        ui.note(
            f"kv_heads = {asked} does not divide heads = {heads}; now using "
            f"{st.session_state['kv_heads']} (choices: {valid})."
        )
    st.session_state["_mh_heads"] = heads
    return ui.selectbox(
        "kv_heads",
        "key/value heads (h = MHA, 1 = MQA, between = GQA)",
        options,
        heads,
        help="Query heads share K and V in groups.",
    )


@st.cache_resource(max_entries=8, show_spinner=False)
def cat_plane(a: float):
    return fg.tired_cat_plane(tired_cat_one_head(a), a, V_CAT, V_TIRED)


@st.cache_resource(max_entries=8, show_spinner=False)
def cat_concat(a1: float, a2: float):
    apart = tired_cat_two_heads(1.0, 0.0)  # head 1 all on cat, head 2 all on tired
    return fg.tired_cat_concat(tired_cat_two_heads(a1, a2), a1, a2, apart)


@st.fragment
def tired_cat() -> None:
    st.subheader("Why not one head? “The tired cat sat”")
    st.markdown(fg.cat_intro(V_CAT, V_TIRED))
    one, two = st.columns(2, gap="large")
    with one:
        a = ui.slider("split", "One head: weight on cat", 0.0, 1.0, 0.5, step=0.05)
        ui.show(cat_plane(a))  # cached: moving one slider rebuilds only its own chart
    with two:
        c1, c2 = st.columns(2)
        with c1:
            a1 = ui.slider("split1", "Head 1: weight on cat", 0.0, 1.0, 1.0, step=0.05)
        with c2:
            a2 = ui.slider("split2", "Head 2: weight on cat", 0.0, 1.0, 0.0, step=0.05)
        ui.show(cat_concat(a1, a2))
    ui.try_this(fg.try_cat(tired_cat_one_head(0.5), tired_cat_two_heads(1.0, 1.0)))


@st.fragment
def outputs_section(key: tuple, heads: int) -> None:
    st.subheader("What each head hands back, and the concatenation")
    if st.session_state.get("head", 1) > heads:
        st.session_state["head"] = heads
    with st.columns([1, 3])[0]:
        head = ui.selectbox("head", "Head to inspect", list(range(1, heads + 1)), 1)
    one, glued = outputs_view(key, head)
    left, right = st.columns([1, 2], gap="medium")
    with left:
        ui.show(one)
    with right:
        ui.show(glued)


@st.fragment
def pruning_section(key: tuple, heads: int) -> None:
    chosen = st.session_state.get("pruned") or []
    if any(j > heads for j in chosen):
        st.session_state["pruned"] = [j for j in chosen if j <= heads]
        st.caption(f"Heads above {heads} were dropped from the pruned list.")
    pruned = ui.multiselect("pruned", "Heads to prune (zeroed before W_o)", range(1, heads + 1))
    rel, cos, chart = pruning_view(key, tuple(sorted(pruned)))
    c1, c2, c3 = st.columns(3)
    c1.metric("Heads pruned", f"{len(pruned)} of {heads}")
    c2.metric("Output moved by", f"{rel:.1%}", help="‖y_pruned − y‖ / ‖y‖ over all tokens")
    c3.metric("Cosine similarity to the full output", f"{cos:.3f}")
    if len(pruned) == heads:
        st.info(
            "Every head is pruned: the concatenation is all zeros, so each token's output is "
            "W_o's bias alone — the same vector whatever the input."
        )
    ui.show(chart)


def reshape_section(walk) -> None:
    st.subheader("The reshape, with live shapes")
    st.markdown(fg.reshape_table_md(walk.steps))
    # the table's row that merges the heads back (the one `.view` alone cannot do)
    merge_step = next(i for i, s in enumerate(walk.steps, 1) if ".contiguous()" in s.code)
    if walk.view_error:
        st.markdown(
            f"Leave out `.contiguous()` in step {merge_step} and PyTorch refuses — caught live, "
            "on these very shapes:"
        )
        st.code(f"RuntimeError: {walk.view_error}", language=None, wrap_lines=True)
    else:
        st.markdown(
            "With h = 1 the transpose only moves an axis of length 1, so `.view` works "
            "even without `.contiguous()`. Pick h > 1 to see the error."
        )
    yes = {True: "yes", False: "no"}
    st.markdown(
        f"`.reshape` instead: same numbers as `.contiguous().view` — "
        f"**{yes[walk.reshape_matches]}**; made a copy — **{yes[walk.reshape_copies]}**. "
        "It hides the copy; it does not avoid it."
    )
    ui.explain("Why does `.view` fail after a transpose?", fg.WHY_VIEW_FAILS)


def value_width_section(d_model: int, heads: int, T: int) -> None:
    st.markdown("##### Values can have their own width: d_v")
    with st.columns([2, 3])[0]:
        d_v = ui.slider("d_v", "d_v — width of each head's values", 1, 128, 32)
    walk = value_width_view(d_model, heads, T, d_v)
    st.markdown(fg.value_width_md(walk))
    st.markdown(fg.shape_table_md(walk.rows))
    st.markdown("Give k any width other than q's and `attention` refuses — caught live:")
    st.code(f"ValueError: {walk.mismatch_error}", language=None, wrap_lines=True)


def read_controls() -> tuple:
    with ui.controls_area():
        st.markdown("**Multi-head settings**")
        d_model = ui.slider("d_model", "d_model — width of a token vector", 16, 1024, 512, step=8)
        heads = heads_control(d_model)
        kv_heads = kv_control(heads)
        source = ui.radio("input", "Input: random vectors or a sentence", INPUTS, "random")
        T = ui.slider("tokens", "tokens T (for random vectors)", 2, MAX_SENTENCE_TOKENS, 10)
        sentence = ui.text("sentence", "Sentence (for input = sentence)", SENTENCE)
        seed = ui.number("seed", "Random seed (weights and random vectors)", 0, 10_000, 0)
    words: tuple[str, ...] = ()
    if source == "sentence":
        found, dropped = sentence_tokens(sentence)
        if len(found) < 2:
            ui.note(f"The sentence needs at least two words; showing “{SENTENCE}” instead.")
            found, dropped = sentence_tokens(SENTENCE)
        if dropped:
            ui.note(f"Only the first {len(found)} tokens are used; {dropped} more were left out.")
        words, T = tuple(found), len(found)
    if d_model // heads < 32:
        ui.note(
            f"d_k = {d_model} / {heads} = {d_model // heads}: the lesson warns that below about "
            "32 each head has little room for its own notion of similarity. The training lab "
            "measures what a narrow head costs on a small task: "
            "[Training › Heads](/training?step=Heads)."
        )
    return d_model, heads, kv_heads, words, T, seed


def heads_step(key: tuple) -> None:
    st.subheader("Every head at once")
    grid, focus = heads_view(key)
    ui.show(grid)
    ui.show(focus)
    ui.try_this(fg.try_heads(MAX_SENTENCE_TOKENS))


def cost_step(d_model: int, heads: int, kv_heads: int, T: int) -> None:
    st.subheader("What heads cost")
    params_md, kv_md, _ = cost_view(d_model, heads, kv_heads, T)
    if params_exercise(d_model, heads):
        st.markdown(params_md)
        st.caption(fg.PARAMS_NOTE)
    else:
        ui.until_reveal("The parameter count of every head split")
    st.markdown(kv_md)
    st.caption(fg.kv_note(**KV_ASSUMED))


def diversity_step(key: tuple, heads: int) -> None:
    st.subheader("Are the heads different? Diversity and pruning")
    ui.show(diversity_view(key)[0])
    mqa_exercise(key)
    pruning_section(key, heads)
    prune_exercise(key)
    curve = diversity_view(key)[1]  # output change as heads go, least useful first
    ui.try_this(fg.try_prune(curve))
    ui.explain("Untrained heads versus trained heads", fg.untrained_vs_trained(curve))


def run() -> None:
    ui.page_header(FILE, fg.INTRO)
    key = read_controls()  # (d_model, heads, kv_heads, words, T, seed)
    notes = st.container()  # filled at the end, so controls inside the open step can report
    d_model, heads, kv_heads, words, T, _ = key
    m = st.columns(4)
    m[0].metric(f"d_k = d_model / h = {d_model} / {heads}", d_model // heads)
    m[1].metric("tokens T", T)
    m[2].metric(
        "attention kind",
        head_kind(heads, kv_heads),
        help="MHA: own K/V per head · GQA: K/V shared in groups · MQA: one K/V for all",
    )
    m[3].metric("distributions per token", heads)
    if words:
        st.caption("Tokens: " + " · ".join(ui.escape(w) for w in words))

    # Only the open step runs: a sidebar control then redraws that step's charts alone.
    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            heads_step(key)
    with tabs[1]:
        if tabs[1].open:
            outputs_section(key, heads)
    with tabs[2]:
        if tabs[2].open:
            reshape_section(cost_view(d_model, heads, kv_heads, T)[2])
            value_width_section(d_model, heads, T)
    with tabs[3]:
        if tabs[3].open:
            cost_step(d_model, heads, kv_heads, T)
    with tabs[4]:
        if tabs[4].open:
            tired_cat()
    with tabs[5]:
        if tabs[5].open:
            diversity_step(key, heads)
    with notes:
        ui.show_notes()
    ui.prev_next(FILE)


run()
