"""Multi-head: why run attention h times in parallel, what the reshape does, what heads cost."""

import math
import zlib

import streamlit as st
import torch

import ui
from attn_core import format_bytes
from attn_core.lessons import multi_head as core
from figures import multi_head as fg
from ui.controls import open_step
from ui.exercises import figures as figures_of

FILE = "pages/multi-head.py"
W = ui.Words("multi_head")
SENTENCE = "The tired cat sat on the warm mat"
INPUTS = ["random", "sentence"]  # URL values, shown as they are so links stay readable
KV_ASSUMED = dict(context=8192, layers=32, batch=1, dtype="float16")  # the KV table's setting


@ui.frozen
class Settings:
    """The sidebar's controls: one layer and its input, read by every step (the cache key)."""

    d_model: int
    heads: int
    kv_heads: int
    words: tuple[str, ...]  # the sentence's tokens; () means T random vectors
    T: int
    seed: int

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads

    @property
    def instance(self) -> str:
        """Every value that defines an exercise's instance, so a new one starts unrevealed."""
        words = zlib.crc32(" ".join(self.words).encode())
        return f"{self.d_model}-{self.heads}-{self.kv_heads}-{self.T}-{self.seed}-{words}"


# Results are cached as resources (shared, never copied) and only ever read: the figures in
# them go straight to st.plotly_chart, so a plain rerun does no compute and no figure building.


def _input(d_model: int, words: tuple[str, ...], T: int, seed: int) -> torch.Tensor:
    """(T, d_model): the sentence's fixed embeddings, or T seeded random vectors."""
    if words:
        return core.embed_words_fixed(list(words), d_model)
    return core.random_tokens(T, d_model, seed)


@ui.cache_resource(max_entries=6, show_spinner="Running the heads…")
def lab(s: Settings):
    """The layer and its run on the input."""
    dev = ui.device()
    x = _input(s.d_model, s.words, s.T, s.seed).to(dev)  # (T, d_model)
    m = core.seeded_mha(s.d_model, s.heads, s.kv_heads, s.seed, device=dev)
    ticks = list(s.words) if s.words else [f"t{i + 1}" for i in range(s.T)]
    return dict(x=x, m=m, run=core.run_heads(x, m), ticks=ticks)


# Each step's figures are cached on their own, so a step builds only what it shows.


@ui.cache_resource(max_entries=8, show_spinner=False)
def heads_view(s: Settings, columns: int | None = None) -> tuple:
    w = lab(s)["run"].weights  # (h, T, T)
    focus = core.mean_focus(w)  # (h,)
    return (
        # t1, t2… would label nothing; a phone gets two panels a row
        fg.heads_grid(w, list(s.words) or None, focus=focus, columns=columns),
        fg.focus_bars(focus, float(core.mean_focus(w.mean(0))), s.T),
    )


@ui.cache_resource(max_entries=16, show_spinner=False)
def outputs_view(s: Settings, head: int) -> tuple:
    L = lab(s)
    return (
        fg.head_output_heatmap(L["run"].head_outputs[head - 1], L["ticks"], head),
        fg.concat_heatmap(L["run"].concat, L["ticks"], s.heads, head),
    )


@ui.cache_resource(max_entries=8, show_spinner=False)
def diversity_view(s: Settings) -> tuple:
    """(diversity chart, pruning curve): the curve prunes heads one by one, so it waits here."""
    run = lab(s)["run"]
    return fg.diversity_heatmap(core.head_diversity(run.weights.cpu())), core.pruning_curve(run)[1]


@ui.cache_resource(max_entries=16, show_spinner=False)
def pruning_view(s: Settings, pruned: tuple[int, ...]) -> tuple:
    L = lab(s)
    y = core.pruned_forward(L["x"], L["m"], [j - 1 for j in pruned])  # (T, d_model), head_mask
    rel, cos = core.output_change(L["run"].output, y)
    return rel, cos, fg.pruning_chart(diversity_view(s)[1], s.heads, len(pruned), rel)


@ui.cache_resource(max_entries=16, show_spinner=False)
def cost_view(d_model: int, heads: int, kv_heads: int, T: int) -> tuple:
    counts = [(h, core.count_parameters(d_model, h)) for h in sorted({1, heads})]
    rows = core.kv_table(d_model, heads, kv_heads, **KV_ASSUMED)
    kv = fg.kv_table_md(rows, heads, kv_heads, format_bytes)
    return fg.params_table_md(d_model, counts), kv, core.reshape_walkthrough(1, T, d_model, heads)


@ui.cache_data(max_entries=16, show_spinner=False)
def value_width_view(d_model: int, heads: int, T: int, d_v: int):
    return core.value_width_walkthrough(1, T, d_model, heads, d_v)


# ----------------------------------------------------------------------------- predict, then reveal
# Each truth is computed by attn_core for the instance the controls pick; the exercise key
# holds every value that defines it, so a new instance starts unrevealed.


def split_heads(d_model: int, heads: int) -> int:
    """The h an exercise asks about: the page's own, or 8-ish when the page shows one head."""
    return heads if heads > 1 else core.nearest_valid_heads(8, d_model)


@ui.cache_data(max_entries=16, show_spinner=False)
def params_truth(d_model: int, h: int) -> tuple[int, int]:
    return core.count_parameters(d_model, 1)["total"], core.count_parameters(d_model, h)["total"]


@ui.cache_data(max_entries=16, show_spinner=False)
def mqa_truth(d_model: int, h: int, words: tuple[str, ...], T: int, seed: int) -> tuple:
    """(distinct maps, smallest JS between two heads) for an MQA layer on the page's input."""
    x = _input(d_model, words, T, seed)
    w = core.run_heads(x, core.seeded_mha(d_model, h, 1, seed)).weights  # (h, T, T)
    js = core.head_diversity(w)  # (h, h)
    off = js[~torch.eye(h, dtype=torch.bool)]
    return core.distinct_maps(w), float(off.min()) if h > 1 else 0.0


@ui.cache_data(max_entries=16, show_spinner=False)
def prune_truth(s: Settings, pruned: tuple[int, ...]) -> float:
    """Relative output change, in %, with the given heads (0-based) pruned."""
    L = lab(s)
    y = core.pruned_forward(L["x"], L["m"], list(pruned))  # (T, d_model)
    return 100 * core.output_change(L["run"].output, y)[0]


def params_exercise(d_model: int, heads: int) -> bool:
    """The parameter question; True once revealed (the count table waits for it)."""
    h = split_heads(d_model, heads)
    p1, ph = params_truth(d_model, h)
    values = dict(many=p1 * h, same=p1, fewer=p1 // h)
    choices = W.choices("exercise.params.choices", h=h)  # no figures: one would be the question's
    correct = min(values, key=lambda c: abs(values[c] - ph))  # the one that matches the count
    return ui.predict_choice(
        f"mh-params-{d_model}-{h}",
        W("exercise.params.q", d_model=d_model, p1=p1, h=h),
        list(choices.values()),
        choices[correct],
        W("exercise.params.why", d_model=d_model, h=h, d_k=d_model // h),
        truth=W("exercise.params.truth", h=h, ph=ph),
        # the table's h-head row, and the K+V projections' half of it (the KV-cache
        # table's MHA row), from which "the same" follows (the review of issue 50)
        secret=[f"{ph:,}", f"{ph // 2:,}"],
    )


def mqa_key(s: Settings) -> str:
    return f"mh-mqa-{split_heads(s.d_model, s.heads)}-{s.instance}"


def mqa_exercise(s: Settings) -> bool:
    """The MQA question; True once revealed (the Try-this item on MQA waits for it)."""
    h = split_heads(s.d_model, s.heads)
    n, js = mqa_truth(s.d_model, h, s.words, s.T, s.seed)
    choices = W.choices("exercise.mqa.choices", h=h)
    correct = choices["one" if n == 1 else "every" if n == h else "between"]
    truth = W("exercise.mqa.truth", n=n, js=js)
    return ui.predict_choice(
        mqa_key(s),
        W("exercise.mqa.q", h=h, seed=s.seed, T=s.T),
        list(choices.values()),
        correct,
        W("exercise.mqa.why", h=h),
        truth=truth,
        secret=[*figures_of(truth), correct, W("exercise.mqa.secret", n=n)],
    )


def prune_key(s: Settings) -> str:
    return f"mh-prune-{s.instance}"


def asks_every_head(s: Settings) -> bool:
    """Whether the pruning question prunes every head (one head): the pruning curve, its
    caption and the Try-this item on pruning every head then give its answer."""
    return len(core.heads_to_prune(s.heads, s.seed)) == s.heads


def prune_exercise(s: Settings) -> bool:
    """The pruning question; True once revealed."""
    pruned = core.heads_to_prune(s.heads, s.seed)  # 0-based
    k, h = len(pruned), s.heads
    listed = ", ".join(str(j + 1) for j in pruned)
    names = W("exercise.prune.heads.many" if k > 1 else "exercise.prune.heads.one", heads=listed)
    truth = prune_truth(s, tuple(pruned))
    kind = core.prune_verdict(k, h, truth)
    guess = {} if kind == "one_head" else dict(share=100 * k / h)
    verdict = W(f"exercise.prune.verdict.{kind}", measured=truth, **guess)
    why = W(
        "exercise.prune.why",
        k=k,
        h=h,
        share=k / h,
        d_model=s.d_model,
        root=math.sqrt(k / h),
        verdict=verdict,
    )
    return ui.predict_number(
        prune_key(s),
        W("exercise.prune.q", seed=s.seed, h=h, heads=names, k=k),
        truth,
        why,
        rel_tol=0.12,
        abs_tol=6.0,
        fmt="{:.0f} %",
        lo=0.0,
    )


# ----------------------------------------------------------------------------- the controls


def heads_control(d_model: int) -> int:
    options = core.valid_head_counts(d_model)
    asked = st.session_state.get("heads")  # the value from before d_model moved
    if asked is not None and asked not in options:
        st.session_state["heads"] = core.nearest_valid_heads(asked, d_model)
        near = " or ".join(map(str, core.nearest_choices(asked, options)))
        now = st.session_state["heads"]
        ui.note(W("note.heads", asked=asked, d_model=d_model, near=near, now=now))
    return ui.select_slider(
        "heads",
        "heads h (divisors of d_model only)",
        options,
        8 if 8 in options else core.nearest_valid_heads(8, d_model),  # off-step: d_model=100
        expected=W("note.heads.expected", d_model=d_model, valid=", ".join(map(str, options))),
    )


def kv_control(heads: int) -> int:
    options = core.kv_head_choices(heads)
    asked, before = st.session_state.get("kv_heads"), st.session_state.get("_mh_heads")
    if asked is not None and before not in (None, heads) and asked == before:
        st.session_state["kv_heads"] = heads  # was plain multi-head: stay plain multi-head
    elif asked is not None and asked not in options:
        st.session_state["kv_heads"] = max(g for g in options if g <= asked)
        valid = ", ".join(map(str, options))
        now = st.session_state["kv_heads"]
        ui.note(W("note.kv_heads", asked=asked, heads=heads, now=now, valid=valid))
    st.session_state["_mh_heads"] = heads
    return ui.selectbox(
        "kv_heads",
        "key/value heads (h = MHA, 1 = MQA, between = GQA)",
        options,
        heads,
        help="Query heads share K and V in groups.",
    )


def sentence_words(sentence: str) -> tuple[str, ...]:
    """The sentence's tokens (at least two, at most MAX_SENTENCE_TOKENS), noting any fallback."""
    found, dropped = core.sentence_tokens(sentence)
    if len(found) < 2:
        ui.note(W("note.sentence.short", sentence=SENTENCE))
        found, dropped = core.sentence_tokens(SENTENCE)
    if dropped:
        ui.note(W("note.sentence.long", n=len(found), dropped=dropped))
    return tuple(found)


def controls() -> Settings:
    with ui.controls_area():
        st.markdown("**Multi-head settings**")
        d_model = ui.slider("d_model", "d_model — width of a token vector", 16, 1024, 512, step=8)
        heads = heads_control(d_model)
        kv_heads = kv_control(heads)
        source = ui.radio("input", "Input: random vectors or a sentence", INPUTS, "random")
        T = ui.slider("tokens", "tokens T (for random vectors)", 2, core.MAX_SENTENCE_TOKENS, 10)
        sentence = ui.text("sentence", "Sentence (for input = sentence)", SENTENCE)
        seed = ui.number("seed", "Random seed (weights and random vectors)", 0, 10_000, 0)
    words = sentence_words(sentence) if source == "sentence" else ()
    s = Settings(d_model, heads, kv_heads, words, len(words) if words else T, seed)
    if s.d_k < 32:
        ui.note(W("note.narrow", d_model=d_model, heads=heads, d_k=s.d_k))
    return s


def metrics(s: Settings, *, held: bool = False) -> None:
    """The layer in four numbers, above the steps; `held`: the distributions per token wait
    for the MQA question's reveal (on the Diversity step they would answer it)."""
    m = st.columns(4)
    m[0].metric(f"d_k = d_model / h = {s.d_model} / {s.heads}", s.d_k)
    m[1].metric("tokens T", s.T)
    m[2].metric(
        "attention kind",
        core.head_kind(s.heads, s.kv_heads),
        help="MHA: own K/V per head · GQA: K/V shared in groups · MQA: one K/V for all",
    )
    if held:
        with m[3]:
            ui.until_reveal(W("metric.distributions.hidden"))
    else:
        m[3].metric("distributions per token", s.heads)
    if s.words:
        st.caption("Tokens: " + " · ".join(ui.escape(w) for w in s.words))


# ----------------------------------------------------------------------------- the steps


def heads_step(s: Settings) -> None:
    st.header("Every head at once")
    grid, focus = heads_view(s, 2 if ui.phone() else None)
    ui.show(grid)
    ui.show(focus)
    T = core.MAX_SENTENCE_TOKENS
    ui.try_this(W.pairs("try.heads", T=T, uniform=1 / T))


@st.fragment
def outputs_step(s: Settings) -> None:
    st.header("What each head hands back, and the concatenation")
    if st.session_state.get("head", 1) > s.heads:
        st.session_state["head"] = s.heads
    with st.columns([1, 3])[0]:
        head = ui.selectbox("head", "Head to inspect", list(range(1, s.heads + 1)), 1)
    one, glued = outputs_view(s, head)
    left, right = st.columns([1, 2], gap="medium")
    with left:
        ui.show(one)
    with right:
        ui.show(glued)


def reshape_section(walk) -> None:
    st.header("The reshape, with live shapes")
    st.markdown(fg.reshape_table_md(walk.steps, W.choices("reshape.steps")))
    # the table's row that merges the heads back (the one `.view` alone cannot do)
    merge_step = next(i for i, s in enumerate(walk.steps, 1) if s.key == "merge")
    if walk.view_error:
        st.markdown(W("reshape.view_fails", step=merge_step))
        st.code(f"RuntimeError: {walk.view_error}", language=None, wrap_lines=True)
    else:
        st.markdown(W("reshape.view_works"))
    yes = {True: W("word.yes"), False: W("word.no")}
    st.markdown(
        W("reshape.reshape", matches=yes[walk.reshape_matches], copies=yes[walk.reshape_copies])
    )
    ui.explain("Why does `.view` fail after a transpose?", W("explain.view"))


def value_width_text(walk) -> str:
    """What the d_v ≠ d_k walk shows, every number read from its tensors' shapes."""
    text = W(
        "value_width",
        d_k=walk.d_k,
        d_v=walk.d_v,
        head_output=fg.shape_text(walk.head_output),
        h=walk.head_output[1],  # (B, h, T, d_v)
        merged=walk.merged[-1],
        W_o=fg.shape_text(walk.W_o),
        d_model=walk.output[-1],
        diff=walk.sdpa_max_diff,
    )
    return text + " " + W("value_width.same") if walk.d_v == walk.d_k else text


def value_width_section(s: Settings) -> None:
    st.markdown("### Values can have their own width: d_v")
    with st.columns([2, 3])[0]:
        d_v = ui.slider("d_v", "d_v — width of each head's values", 1, 128, 32)
    walk = value_width_view(s.d_model, s.heads, s.T, d_v)
    st.markdown(value_width_text(walk))
    st.markdown(fg.shape_table_md(walk.rows, W.choices("value_width.rows")))
    st.markdown(W("value_width.mismatch"))
    st.code(f"ValueError: {walk.mismatch_error}", language=None, wrap_lines=True)


def reshape_step(s: Settings) -> None:
    reshape_section(cost_view(s.d_model, s.heads, s.kv_heads, s.T)[2])
    value_width_section(s)


def cost_step(s: Settings) -> None:
    st.header("What heads cost")
    params_md, kv_md, _ = cost_view(s.d_model, s.heads, s.kv_heads, s.T)
    if params_exercise(s.d_model, s.heads):
        st.markdown(params_md)
        st.caption(W("cost.params_note"))
        st.markdown(kv_md)
        st.caption(W("cost.kv_note", **KV_ASSUMED))
    else:  # the KV-cache table counts the K and V projections: half the answer
        ui.until_reveal("The parameter count of every head split and the KV-cache table")


@ui.cache_resource(max_entries=8, show_spinner=False)
def cat_plane(a: float):
    return fg.tired_cat_plane(core.tired_cat_one_head(a), a, core.V_CAT, core.V_TIRED)


@ui.cache_resource(max_entries=8, show_spinner=False)
def cat_concat(a1: float, a2: float):
    apart = core.tired_cat_two_heads(1.0, 0.0)  # head 1 all on cat, head 2 all on tired
    return fg.tired_cat_concat(core.tired_cat_two_heads(a1, a2), a1, a2, apart)


@st.fragment
def tired_cat() -> None:
    st.header("Why not one head? “The tired cat sat”")
    st.markdown(W("cat.intro", v_cat=fg.vec(core.V_CAT), v_tired=fg.vec(core.V_TIRED)))
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
    half, both = core.tired_cat_one_head(0.5), core.tired_cat_two_heads(1.0, 1.0)
    ui.try_this(W.pairs("try.cat", mid=fg.vec(half), both=fg.vec(both)))


def cat_step(s: Settings) -> None:
    tired_cat()  # the lesson's own two tokens: the sidebar's layer plays no part


@st.fragment
def pruning_section(s: Settings) -> None:
    chosen = st.session_state.get("pruned") or []
    if any(j > s.heads for j in chosen):
        st.session_state["pruned"] = [j for j in chosen if j <= s.heads]
        st.caption(W("pruning.dropped", heads=s.heads))
    pruned = ui.multiselect("pruned", "Heads to prune (zeroed before W_o)", range(1, s.heads + 1))
    rel, cos, chart = pruning_view(s, tuple(sorted(pruned)))
    c1, c2, c3 = st.columns(3)
    c1.metric("Heads pruned", f"{len(pruned)} of {s.heads}")
    c2.metric("Output moved by", f"{rel:.1%}", help="‖y_pruned − y‖ / ‖y‖ over all tokens")
    c3.metric("Cosine similarity to the full output", f"{cos:.3f}")
    if len(pruned) == s.heads:
        st.info(W("pruning.all"))
    if asks_every_head(s) and not ui.revealed(prune_key(s)):
        ui.until_reveal(W("pruning.hidden"))  # with one head the curve is the question's answer
    else:
        ui.show(chart)


def trained_text(curve) -> str:
    """Pruning on random weights (half the heads, from `curve`) against trained models."""
    half = core.half_pruned(curve)
    if half.k:
        closer = "√(k/h)" if half.closer_to_root else "k/h"
        numbers = dict(k=half.k, h=half.h, moved=half.moved, share=half.share, root=half.root)
        cost = W("explain.trained.cost", closer=closer, **numbers)
    else:
        cost = W("explain.trained.one")
    return W("explain.trained", cost=cost)


def diversity_step(s: Settings) -> None:
    st.header("Are the heads different? Diversity and pruning")
    chart = st.container()  # drawn once the MQA question is known to be revealed
    mqa = mqa_exercise(s)
    with chart:
        if mqa or s.kv_heads > 1 or s.heads == 1:
            ui.show(diversity_view(s)[0])
        else:  # this layer is the MQA layer the question asks about: its map is the answer
            ui.until_reveal(W("diversity.hidden", h=s.heads))
    lab_box = st.container()  # the pruning lab, drawn once the question's state is known
    pruned = prune_exercise(s)
    with lab_box:
        pruning_section(s)
    curve = diversity_view(s)[1]  # output change as heads go, least useful first
    ui.try_this(diversity_try(s, curve, mqa, pruned))
    ui.explain("Untrained heads versus trained heads", trained_text(curve))


def diversity_try(s: Settings, curve, mqa: bool, pruned: bool) -> list[tuple[str, str]]:
    """The Diversity step's experiments; those that answer a question wait for its reveal."""
    items = W.pairs("try.prune")
    if pruned or not asks_every_head(s):
        items += W.pairs("try.prune.all", end=100 * float(curve[-1]))
    else:  # the question prunes every head: where the curve ends is its answer
        items += W.pairs("try.prune.all.hidden")
    if not mqa:
        return items + W.pairs("try.mqa.hidden")
    h = split_heads(s.d_model, s.heads)
    n, js = mqa_truth(s.d_model, h, s.words, s.T, s.seed)
    return items + W.pairs("try.mqa", h=h, n=n, js=js)


def run() -> None:
    ui.page_header(FILE, W("intro"))
    notes = st.container()  # every control's note, the open step's too (filled at the end)
    with notes:
        s = controls()
    strip = st.container()  # the four numbers, drawn once the open step's reveals are known
    # Only the open step runs: a sidebar control then redraws that step's charts alone.
    ui.steps(
        {
            "Heads": heads_step,
            "Outputs": outputs_step,
            "Reshape": reshape_step,
            "Cost": cost_step,
            "Tired cat": cat_step,
            "Diversity": diversity_step,
        },
        s,
    )
    with strip:
        opened = (open_step() or ("", (), ""))[2]
        metrics(s, held=opened == "Diversity" and not ui.revealed(mqa_key(s)))
    with notes:
        ui.show_notes()
    ui.prev_next(FILE)


run()
