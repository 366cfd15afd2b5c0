"""A real model: attention inside a pretrained transformer, on the student's own sentence,
with the earlier lessons' knobs applied to it."""

from __future__ import annotations

import gc
import hashlib
import re
from dataclasses import replace

import numpy as np
import streamlit as st

import ui
from attn_core.lessons import model as core
from figures import model as fig

FILE = "pages/model.py"
W = ui.Words("model")
CLEAR = 0.1  # a head "tracks" a relation when it beats its strongest simple guess by this share
ALPHA = 0.05  # … and a sign test on the pairs they disagree on gives less than this
DROP = 0.05  # the pruning exercise's drop: heads_before_drop's default
NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
PRONOUN, DETERMINER = "pronoun → antecedent", "determiner → noun"
_PICKED = "_model_picked"  # session_state: ((model, text, text_b), (layer, head)) last picked
KNOB_LABELS = {
    "top": "largest weight in a row (mean)",
    "entropy": "spread: entropy / log T",
    "saturated": "rows with a weight ≥ 0.99",
    "auc": "pair-ranking score",
    "triples": "triples ordered right",
}


@ui.frozen
class Knobs:
    """The lesson's knobs, hashable, as run_model takes them."""

    scaled: bool = True
    temperature: float = 1.0
    ablate: tuple[tuple[int, int], ...] = ()
    causal: bool = False

    def kwargs(self) -> dict:
        return dict(
            scaled=self.scaled, temperature=self.temperature, ablate=self.ablate, causal=self.causal
        )


@ui.frozen
class Settings:
    """The sidebar's controls, read by every step."""

    model: str
    text: str
    text_b: str
    layer: int
    head: int
    knobs: Knobs
    own: Knobs  # the same model with every knob at its own setting

    @property
    def changed(self) -> bool:
        return self.knobs != self.own


# ------------------------------------------------------------------------------ loaders


@ui.cache_resource(max_entries=1, show_spinner="Loading the model (a few seconds, once)…")
def loaded(name: str) -> core.LoadedModel:
    """One model per server, shared by every session (run_model never changes it).

    transformers' import leaves ~80,000 long-lived objects that every full garbage
    collection would scan again on every rerun of every page (ui/_warm.py): freeze them,
    as the server did with torch and plotly at start."""
    m = core.load_model(name, device=ui.device())
    gc.collect()
    gc.freeze()
    return m


def available() -> list[str]:
    return core.available_models()  # cheap: the Hub is asked once per process


@ui.cache_resource(max_entries=16, show_spinner=False)
def trace(name: str, text: str, text_b: str, knobs: Knobs) -> core.ModelTrace:
    """One pass over the sentence (pair) with the knobs; read-only once made."""
    return core.run_model(loaded(name), text, text_b or None, **knobs.kwargs())


@ui.cache_resource(max_entries=16, show_spinner=False)
def roles(name: str, text: str, text_b: str, knobs: Knobs) -> dict[str, np.ndarray]:
    return {
        k: v.float().numpy() for k, v in core.head_roles(trace(name, text, text_b, knobs)).items()
    }


@ui.cache_resource(max_entries=2, show_spinner="Scoring every head on 60 annotated sentences…")
def relations(name: str) -> dict[str, core.RelationScore]:
    return core.relation_scores(loaded(name))


@ui.cache_resource(max_entries=1, show_spinner=False)
def marked_words() -> dict[str, frozenset[str]]:
    return core.marked_words()


@ui.cache_resource(max_entries=16, show_spinner="Embedding the 144 shipped sentences…")
def similarity(name: str, knobs: Knobs) -> core.Similarity:
    """The task score at these knobs: shipped for the settings every visitor is shown
    (assets/model_knobs.json), else computed (~0.7 s of CPU for MiniLM)."""
    shipped = core.shipped_similarity(name, **knobs.kwargs())
    return shipped if shipped is not None else core.similarity(loaded(name), **knobs.kwargs())


@ui.cache_resource(max_entries=16, show_spinner=False)
def pair_cosine(name: str, text: str, text_b: str, knobs: Knobs) -> float:
    a, b = core.embed_many(loaded(name), [text, text_b], **knobs.kwargs())
    return float(a @ b)


@ui.cache_resource(max_entries=1, show_spinner=False)
def pruning() -> dict:
    return core.shipped_pruning()


@ui.cache_resource(max_entries=1, show_spinner=False)
def pruning_checks() -> dict:
    return core.shipped_checks()


def special_positions(name: str, tokens: list[str]) -> list[int]:
    specials = set(loaded(name).tokenizer.all_special_tokens)
    return [i for i, t in enumerate(tokens) if t in specials]


charts = ui.cache_resource(max_entries=4, show_spinner=False)


@charts
def mosaic_chart(s: Settings, per_row: int | None = None):
    tr = trace(s.model, s.text, s.text_b, s.knobs)
    return fig.head_mosaic(tr.weights, (s.layer, s.head), s.model, per_row, tr.tokens)


@charts
def head_chart(s: Settings):
    tr = trace(s.model, s.text, s.text_b, s.knobs)
    return fig.head_map(
        tr.weights[s.layer, s.head],
        tr.tokens,
        s.layer,
        s.head,
        special_positions(s.model, tr.tokens),
    )


@charts
def contribution_chart(s: Settings):
    tr = trace(s.model, s.text, s.text_b, s.knobs)
    return fig.weights_and_contributions(
        tr.weights[s.layer, s.head],
        core.contributions(tr, s.layer, s.head),
        tr.tokens,
        fig.head_name(s.layer, s.head),
        special_positions(s.model, tr.tokens),
    )


# ------------------------------------------------------------------------------ the page


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls()
    if s is None:
        return
    input_header(s)
    ui.steps(
        {
            "Every head": heads_step,
            "Roles": roles_step,
            "Contribution": contribution_step,
            "Knobs": knobs_step,
            "Pruning": pruning_step,
        },
        s,
    )
    ui.prev_next(FILE)


def choose_model() -> str:
    """The model select box: the shipped encoder, and the Hub's decoders when reachable."""
    names = available()
    name = ui.selectbox("model", W("label.model"), names, core.MINILM, help=W("help.model"))
    if missing := [n for n in core.MODELS if n not in names]:
        st.caption(W("offline", names=", ".join(missing)))
    return name


def _clamp(key: str, hi: int) -> None:
    """A layer or head past a newly chosen model's last one moves to its last one."""
    v = st.session_state.get(key)
    if isinstance(v, int) and v > hi:
        st.session_state[key] = hi


def use_preset(text: str, text_b: str, layer: int, head: int) -> None:
    st.session_state.update(text=text, text_b=text_b, layer=layer, head=head)


def presets(name: str) -> None:
    """Buttons that load an example chosen to show a known pattern, with its head."""
    for key, (text, text_b, p) in preset_list(name).items():
        st.button(
            W(f"preset.{key}"),
            key=f"preset-{key}",
            on_click=use_preset,
            args=(text, text_b, p.layer, p.head),
            width="stretch",
        )


def preset_list(name: str) -> dict[str, tuple[str, str, Pick]]:
    """Each example with the head picked for it, as for any sentence (pick_head)."""
    out = {}
    for key in ("coref", "det", "pair"):
        text, text_b = W(f"example.{key}.a"), W(f"example.{key}.b").strip("-").strip()
        out[key] = (text, text_b, pick_head(name, text, text_b))
    return out


@ui.frozen
class Pick:
    """The head the page highlights for an input, and why: "coref" / "det" (the sentence
    has `word`, which the shipped marks name as a pronoun / a determiner; `value`: the
    head's score on that relation), "cross" (`value`: the share of the first sentence's
    weight on the second) or "previous" (`value`: its weight on the token before)."""

    layer: int
    head: int
    why: str
    word: str = ""
    value: float = 0.0


def pick_head(name: str, text: str, text_b: str) -> Pick:
    """The head to show first: for a sentence pair, the one that looks most across; for a
    sentence with a word the shipped marks name as a pronoun (else a determiner), the head
    that finds that relation most often; else the sentence's strongest previous-token head.
    Measured at the model's own knobs, so turning a knob never moves it."""
    encoder = loaded(name).kind == "encoder"
    if encoder and text_b and (cross := cross_head(name, text, text_b)) is not None:
        (layer, head), share = cross
        return Pick(layer, head, "cross", value=share)
    if encoder:
        words = re.findall(r"[a-z]+", text.lower())
        for r, why in ((PRONOUN, "coref"), (DETERMINER, "det")):
            if word := next((w for w in words if w in marked_words()[r]), ""):
                score = relations(name)[r]
                return Pick(*score.best, why, word, score.best_accuracy)
    prev = core.head_roles(trace(name, text, "", own_knobs(name)))["previous"]
    layer, head = divmod(int(prev.argmax()), prev.shape[1])
    return Pick(layer, head, "previous", value=float(prev[layer, head]))


def follow_pick(now: tuple[str, str, str], pick: Pick) -> None:
    """A new input moves the Layer and Head sliders to its own pick, unless the student
    had moved them away from the last input's pick (a chosen head stays chosen)."""
    was = st.session_state.get(_PICKED)
    at = (st.session_state.get("layer"), st.session_state.get("head"))
    if was is not None and "layer" in st.session_state and was[0] != now and at == was[1]:
        st.session_state.update(layer=pick.layer, head=pick.head)
    st.session_state[_PICKED] = (now, (pick.layer, pick.head))


def cross_head(name: str, text: str, text_b: str) -> tuple[tuple[int, int], float] | None:
    """The head whose tokens of the first sentence look most at the second one's, and the
    share of their weight they put there (None when either sentence has no token)."""
    tr = trace(name, text, text_b, own_knobs(name))
    sep = [i for i, t in enumerate(tr.tokens) if t in loaded(name).tokenizer.all_special_tokens]
    if len(sep) < 3 or sep[1] == 1 or sep[2] == sep[1] + 1:
        return None
    a, b = slice(1, sep[1]), slice(sep[1] + 1, sep[2])
    share = tr.weights[:, :, a, b].sum(-1).mean(-1)  # (L, H)
    at = divmod(int(share.argmax()), share.shape[1])
    return at, float(share[at])


def own_knobs(name: str) -> Knobs:
    return Knobs(causal=loaded(name).kind == "decoder")


def controls() -> Settings | None:
    with ui.controls_area():
        st.markdown(W("label.controls"))
        name = choose_model()
        try:
            m = loaded(name)
        except core.ModelError as e:
            st.error(W("error.load", why=ui.escape(str(e), 400)))
            return None
        presets(name)
        text = ui.text(
            "text",
            W("label.text"),
            W("example.coref.a"),
            max_chars=500,
            help=W(
                "help.text", cap=core.MAX_TOKENS, model=name, model_cap=core.model_max_tokens(m)
            ),
        )
        text_b = ui.text("text_b", W("label.text_b"), "", max_chars=500, help=W("help.text_b"))
        _clamp("layer", m.n_layers - 1)
        _clamp("head", m.n_heads - 1)
        pick = pick_head(name, text, text_b)
        follow_pick((name, text, text_b), pick)
        layer = ui.slider("layer", W("label.layer"), 0, m.n_layers - 1, pick.layer)
        head = ui.slider("head", W("label.head"), 0, m.n_heads - 1, pick.head)
        knobs = knob_controls(m)
    s = Settings(name, text, text_b, layer, head, knobs, own_knobs(name))
    input_notes(s)
    ui.show_notes()
    return s


def knob_controls(m: core.LoadedModel) -> Knobs:
    st.markdown(W("label.knobs"))
    scaled = ui.toggle("scaled", W("label.scaled"), True, help=W("help.scaled", d_k=m.d_k))
    temperature = ui.log_slider(
        "temperature", W("label.temperature"), 0.1, 10.0, 1.0, help=W("help.temperature")
    )
    causal = ui.toggle("causal", W("label.causal"), m.kind == "decoder", help=W("help.causal"))
    names = [fig.head_name(l, h) for l in range(m.n_layers) for h in range(m.n_heads)]
    off = ui.multiselect("ablate", W("label.ablate"), names, [], help=W("help.ablate"), exact=True)
    ablate = tuple(sorted(divmod(names.index(n), m.n_heads) for n in off))
    return Knobs(scaled, float(temperature), ablate, causal)


def input_notes(s: Settings) -> None:
    tr = trace(s.model, s.text, s.text_b, s.knobs)
    if tr.capped:
        m = loaded(s.model)
        cap = dict(cap=core.MAX_TOKENS, model=s.model, model_cap=core.model_max_tokens(m))
        ui.note(W("note.capped", total=tr.capped, **cap))
    if s.text_b and loaded(s.model).kind == "decoder":
        ui.note(W("note.decoder_pair"))


def input_header(s: Settings) -> None:
    """The tokens the model reads, as text, and where it ran."""
    tr = trace(s.model, s.text, s.text_b, s.knobs)
    m = loaded(s.model)
    heading = W("input", model=s.model, n=len(tr.tokens), L=m.n_layers, H=m.n_heads)
    ui.tokens(st, heading, " ".join(ui.safe_text(t, 16) for t in tr.tokens))
    if s.changed:
        st.info(W("info.knobs"), icon=":material/tune:")


# ------------------------------------------------------------------------------ step 1


def heads_step(s: Settings) -> None:
    st.header(W("heads.title"))
    ui.show(mosaic_chart(s, 4 if ui.phone() else None))  # a phone: 4 heads a row
    ui.show(head_chart(s))
    pick = pick_head(s.model, s.text, s.text_b)
    if (s.layer, s.head) == (pick.layer, pick.head):
        st.caption(pick_words(s.model, pick))
    r = roles(s.model, s.text, s.text_b, s.knobs)
    at = (s.layer, s.head)
    cols = st.columns(len(fig.ROLE_NAMES))
    for col, (k, label) in zip(cols, fig.ROLE_NAMES.items(), strict=True):
        col.metric(label, f"{r[k][at]:.2f}", help=W(f"role.{k}"))
    ui.try_this(heads_tries(s, r))


def heads_tries(s: Settings, r: dict[str, np.ndarray]) -> list[tuple[str, str]]:
    """The experiments of step 1, with this model's heads and this sentence's numbers."""
    prev = r["previous"]
    l, h = map(int, np.unravel_index(prev.argmax(), prev.shape))
    first = r["first"]
    items = W.pairs(
        "try.heads",
        prev_head=fig.head_name(l, h),
        prev_layer=l,
        prev=prev[l, h],
        first0=float(first[0].mean()),
        first_rest=float(first[1:].mean()),
        last=len(first) - 1,
    )
    if loaded(s.model).kind != "encoder":
        return items
    text, _, p = preset_list(s.model)["coref"]
    ex = trace(s.model, text, "", s.own)
    w, at = ex.weights[p.layer, p.head], ex.tokens.index
    her, she = (float(w[at(x), at("sister")]) for x in ("her", "she"))
    head = heads_words(relations(s.model)[PRONOUN])
    return W.pairs("try.heads.coref", coref_head=head, her=her, she=she) + items


def tie(score: core.RelationScore) -> str:
    """The heads that tie the best one, in words ("" when none does)."""
    others = [fig.head_name(*x) for x in score.best_heads[1:]]
    return W("word.tied", others=", ".join(others)) if others else ""


def pick_words(name: str, p: Pick) -> str:
    """Why the highlighted head is the one shown (content: pick.*)."""
    head = fig.head_name(p.layer, p.head)
    if p.why in ("coref", "det"):
        score = relations(name)[PRONOUN if p.why == "coref" else DETERMINER]
        word = ui.escape(p.word, 20)
        return W(f"pick.{p.why}", head=head, word=word, acc=p.value, best=heads_words(score))
    return W(f"pick.{p.why}", head=head, value=p.value)


# ------------------------------------------------------------------------------ step 2


def roles_step(s: Settings) -> None:
    st.header(W("roles.title"))
    ui.show(fig.role_maps(roles(s.model, s.text, s.text_b, s.knobs)))
    if loaded(s.model).kind != "encoder":
        st.info(W("roles.decoder"))
        return
    rel = relations(s.model)
    if not relation_exercise(rel):
        ui.until_reveal(W("roles.hidden"))
        return
    ui.show(fig.relation_bars(rel))
    st.markdown(verdict(rel))
    ui.explain(
        W("roles.explain.title"), W("roles.explain", sentences=len(core.relation_sentences()))
    )


def _lift(score: core.RelationScore) -> float:
    """How far the best head is above the relation's strongest simple guess."""
    return score.best_accuracy - score.strongest.accuracy


def heads_words(score: core.RelationScore) -> str:
    """The best head, with any that tie it."""
    t = tie(score)
    return f"{fig.head_name(*score.best)} ({t})" if t else fig.head_name(*score.best)


def relation_exercise(rel: dict[str, core.RelationScore]) -> bool:
    names = list(rel)
    best = max(names, key=lambda r: _lift(rel[r]))
    choices = [*names, W("roles.exercise.none", margin=CLEAR)]
    answer = best if _lift(rel[best]) >= CLEAR else choices[-1]
    b, pr = rel[best], rel[PRONOUN]
    guesses = "; ".join(
        W("roles.guess_item", rel=r, guess=fig.guess_name(x.strongest), base=x.strongest.accuracy)
        for r, x in rel.items()
    )
    return ui.predict_choice(
        "model-relations",
        W(
            "roles.exercise.q",
            n=sum(x.n for x in rel.values()),
            sentences=len(core.relation_sentences()),
            heads=next(iter(rel.values())).accuracy.numel(),
        ),
        choices,
        answer,
        W(
            "roles.exercise.why",
            guesses=guesses,
            pr_offset=pr.baseline,
            pr_vs_offset=pr.best_accuracy - pr.baseline,
            pr_guess=fig.guess_name(pr.strongest),
            pr_lift=_lift(pr),
        ),
        truth=W(
            "roles.exercise.truth",
            rel=best,
            head=heads_words(b),
            acc=b.best_accuracy,
            guess=fig.guess_name(b.strongest),
            base=b.strongest.accuracy,
            lead=_lift(b),
            k=NUMBER_WORDS.get(len(names), str(len(names))),
            shown=shown_words(b),
        ),
        secret=[f"{fig.heads_label(b.best_heads)} {b.best_accuracy:.2f}"],
    )


def tested(score: core.RelationScore) -> list[tuple[tuple[int, int], int, int, float]]:
    """Every head tied at the best accuracy against the relation's strongest simple guess:
    (head, pairs only it finds, pairs only the guess finds, the sign test's p)."""
    out = []
    for head in score.best_heads:
        wins, losses = score.against(score.strongest, head)
        out.append((head, wins, losses, core.sign_test(wins, losses)))
    return out


def verdict_kind(score: core.RelationScore) -> str:
    """none (no lead over 2 %), unsure (no tied head's split below ALPHA), clear (and a lead
    of CLEAR or more) or slight: the verdict's word and the exercise's."""
    if _lift(score) <= 0.02:
        return "none"
    if min(p for *_, p in tested(score)) >= ALPHA:
        return "unsure"
    return "clear" if _lift(score) >= CLEAR else "slight"


def _p(p: float) -> str:
    return f"{p:.1%}" if p < 0.1 else f"{p:.0%}"


def p_words(score: core.RelationScore) -> str:
    """The sign test's p of the best head, or of each tied head with its name."""
    t = tested(score)
    if len(t) == 1:
        return _p(t[0][3])
    ps = [W("verdict.p_of", p=_p(p), head=fig.head_name(*h)) for h, _, _, p in t]
    return ", ".join(ps[:-1]) + " and " + ps[-1]


def split_words(score: core.RelationScore) -> str:
    """The pairs on which the head (each tied head) and the guess disagree, and their p."""
    t = tested(score)
    if len(t) == 1:
        _, wins, losses, p = t[0]
        return W("verdict.split.one", wins=wins, losses=losses, p=_p(p))
    items = [W("verdict.split.item", head=fig.head_name(*h), wins=w, losses=lo)
             for h, w, lo, _ in t]  # fmt: skip
    return W("verdict.split.tied", items=", ".join(items), ps=p_words(score))


def shown_words(score: core.RelationScore) -> str:
    """The exercise's answer in the verdict's terms: is the widest lead more than chance?"""
    kind = verdict_kind(score)
    if kind == "none":
        return W("roles.exercise.no_lead")
    if kind == "unsure":
        return W("roles.exercise.unshown", n=score.n, ps=p_words(score))
    return W("roles.exercise.shown", ps=p_words(score))


def verdict(rel: dict[str, core.RelationScore]) -> str:
    """One sentence per relation, from the best head (each tied head) against its strongest
    simple guess: how far above it, and how often chance alone splits the pairs they
    disagree on so."""
    out = []
    for r, x in rel.items():
        g = x.strongest
        said = dict(rel=r, head=heads_words(x), acc=x.best_accuracy, n=x.n,
                    guess=fig.guess_name(g), base=g.accuracy)  # fmt: skip
        kind = verdict_kind(x)
        if kind != "none":
            said.update(split=split_words(x))
        out.append(W(f"verdict.{kind}", **said))
    return "\n".join(f"- {line}" for line in out)


# ------------------------------------------------------------------------------ step 3


def contribution_step(s: Settings) -> None:
    st.header(W("contribution.title"))
    ui.show(contribution_chart(s))
    fewer = sink_heads(s)
    ui.explain(
        W("contribution.explain.title"),
        W("contribution.explain", fewer=fewer, heads=n_heads(s.model)),
        expanded=True,
    )
    st.page_link("pages/alternatives.py", label=W("contribution.link"), icon=":material/alt_route:")


@ui.cache_resource(max_entries=16, show_spinner=False)
def sink_heads(s: Settings) -> int:
    """How many heads give the special tokens less of what they add than of their weight."""
    tr = trace(s.model, s.text, s.text_b, s.knobs)
    sp = special_positions(s.model, tr.tokens)
    if not sp:
        return 0
    out = 0
    for layer in range(tr.weights.shape[0]):
        for head in range(tr.weights.shape[1]):
            c = core.contributions(tr, layer, head)
            c = c / c.sum(-1, keepdim=True).clamp_min(1e-30)
            out += int(c[:, sp].sum(-1).mean() < tr.weights[layer, head][:, sp].sum(-1).mean())
    return out


def n_heads(name: str) -> int:
    return loaded(name).n_layers * loaded(name).n_heads


# ------------------------------------------------------------------------------ step 4


def knob_measures(s: Settings, knobs: Knobs) -> dict[str, float]:
    out = core.attention_stats(trace(s.model, s.text, s.text_b, knobs).weights)
    if loaded(s.model).kind == "encoder":
        sim = similarity(s.model, knobs)
        out.update(auc=sim.auc, triples=sim.triples)
    return out


def knobs_step(s: Settings) -> None:
    st.header(W("knobs.title"))
    if not s.changed and not scale_exercise(s):
        ui.until_reveal(W("knobs.hidden"))
        return
    st.caption(ui.where(W("knobs.where")))
    labels = {k: v for k, v in KNOB_LABELS.items() if k in knob_measures(s, s.own)}
    ui.show(fig.knob_bars(knob_measures(s, s.own), knob_measures(s, s.knobs), labels))
    m = loaded(s.model)
    if m.kind == "encoder":
        st.caption(score_words())
    if m.kind == "encoder" and s.text_b:
        own, now = (pair_cosine(s.model, s.text, s.text_b, k) for k in (s.own, s.knobs))
        st.metric(W("knobs.cosine"), f"{now:.3f}", f"{now - own:+.3f}" if s.changed else None)
    elif m.kind == "encoder":
        st.caption(W("knobs.no_pair"))
    else:
        ui.show(fig.next_token_bars(trace(s.model, s.text, "", s.knobs).next_tokens))
    ui.try_this(knobs_tries(s))


def score_words() -> str:
    """What the pair-ranking score and "triples ordered right" measure."""
    n = len(core.similarity_triples())
    return W("score.defined", triples=n, combos=n * n)


def knobs_tries(s: Settings) -> list[tuple[str, str]]:
    """Three knobs turned one at a time from the model's own settings, measured."""
    turned = {
        "own": s.own,
        "off": replace(s.own, scaled=False),
        "t3": replace(s.own, temperature=3.0),
        "flip": replace(s.own, causal=not s.own.causal),
    }
    m = {k: knob_measures(s, kn) for k, kn in turned.items()}
    if loaded(s.model).kind == "encoder":
        return W.pairs(
            "try.knobs",
            top=m["own"]["top"],
            top_off=m["off"]["top"],
            sat_off=m["off"]["saturated"],
            auc=m["own"]["auc"],
            auc_off=m["off"]["auc"],
            ent_t3=m["t3"]["entropy"],
            auc_t3=m["t3"]["auc"],
            auc_causal=m["flip"]["auc"],
        )
    guess = {k: trace(s.model, s.text, "", kn).next_tokens[0] for k, kn in turned.items()}
    return W.pairs(
        "try.knobs.decoder",
        top=m["own"]["top"],
        top_off=m["off"]["top"],
        tok=ui.safe_text(guess["own"][0], 14),
        p=guess["own"][1],
        tok_off=ui.safe_text(guess["off"][0], 14),
        p_off=guess["off"][1],
        tok_nc=ui.safe_text(guess["flip"][0], 14),
        p_nc=guess["flip"][1],
    )


def scale_exercise(s: Settings) -> bool:
    """Drop √d_k everywhere: how peaked do the rows get? (asked with every knob at its own)"""
    own = core.attention_stats(trace(s.model, s.text, s.text_b, s.own).weights)["top"]
    off = replace(s.own, scaled=False)
    truth = core.attention_stats(trace(s.model, s.text, s.text_b, off).weights)["top"]
    return ui.predict_number(
        "model-scale-" + hashlib.sha1(repr((s.model, s.text, s.text_b)).encode()).hexdigest()[:10],
        W("knobs.exercise.q", top=own, d_k=loaded(s.model).d_k, heads=n_heads(s.model)),
        truth,
        W("knobs.exercise.why", L=loaded(s.model).n_layers),
        abs_tol=0.05,
        rel_tol=0.0,
        fmt="{:.3f}",
        lo=0.0,
        hi=1.0,
    )


# ------------------------------------------------------------------------------ step 5


def pruning_step(s: Settings) -> None:
    st.header(W("pruning.title"))
    if s.model != core.MINILM:
        st.info(W("pruning.other", model=core.MINILM))
        return
    p = pruning()
    curve, order = p["curve"], [tuple(x) for x in p["order"]]
    can_go = core.heads_before_drop(curve)
    if not pruning_exercise(can_go, len(order)):
        ui.until_reveal(W("pruning.hidden"))
        return
    yours = None
    if s.knobs.ablate:
        yours = (
            len(s.knobs.ablate),
            similarity(s.model, replace(s.own, ablate=s.knobs.ablate)).auc,
        )
    ui.show(fig.pruning_chart(curve, can_go, order, yours))
    st.caption(score_words())
    best = int(np.argmax(curve))
    st.markdown(
        W(
            "pruning.after",
            full=curve[0],
            best=curve[best],
            k_best=best,
            none=curve[-1],
            n=len(order),
            triples=len(core.similarity_triples()),
        )
    )
    ui.try_this(pruning_tries(curve, order, loaded(s.model).n_heads))


def pruning_tries(curve: list[float], order: list[tuple[int, int]], H: int):
    """Six heads off by importance, and one whole layer off (assets/model_pruning_checks)."""
    k = 6
    first = ", ".join(fig.head_name(*x) for x in order[:k])
    way = W("word.up") if curve[k] > curve[0] else W("word.down")
    layers = pruning_checks()["layers"]
    n = len(core.similarity_triples())
    up = [(i, x) for i, x in enumerate(layers) if x > curve[0]]
    raised = ", ".join(f"L{i} {x:.3f}" for i, x in up)
    more = _and([f"{comparisons(x - curve[0], n * n):g}" for _, x in up])
    raise_ = W("pruning.layer_raises", full=curve[0], raised=raised, more=more, combos=n * n)
    return W.pairs(
        "try.pruning",
        k=k,
        first=first,
        way=way,
        full=curve[0],
        at_k=curve[k],
        H=H,
        at_H=curve[H],
        triples=n,
        lo=min(layers),
        hi=max(layers),
        raise_=raise_ if up else "",
    )


def comparisons(delta: float, combos: int) -> float:
    """A change of the pair-ranking score as comparisons ordered right (a tie counts half)."""
    return round(2 * delta * combos) / 2


def _and(xs: list[str]) -> str:
    return ", ".join(xs[:-1]) + " and " + xs[-1] if len(xs) > 1 else "".join(xs)


def close_calls(halves: list[dict]) -> list[dict]:
    """The held-out counts that hang on less than one comparison: the half ("first",
    "second"), the order, the count, the score there, its margin above the 5 % floor, the
    half's comparisons and its all-heads score."""
    out = []
    for i, half in enumerate(halves):
        N = half["triples"] ** 2
        for order in ("own", "other"):
            curve = half[order]
            k = core.heads_before_drop(curve, DROP)
            margin = curve[k] - curve[0] * (1 - DROP)
            if k < len(curve) - 1 and margin < 1 / N:  # all heads off is no near thing
                out.append(dict(which=i, order=order, k=k, at=curve[k], margin=margin, N=N,
                                full=curve[0]))  # fmt: skip
    return out


def held_out_words() -> str:
    """The exercise's why, with the held-out test: each half of the triples scored with
    its own pruning order and with the other half's."""
    a, b = pruning_checks()["halves"]
    own, other = (a["k_own"], b["k_own"]), (a["k_other"], b["k_other"])
    sooner = [o < i for o, i in zip(other, own, strict=True)]
    kind = "sooner" if all(sooner) else "not_sooner" if not any(sooner) else "mixed"
    said = [W(f"pruning.heldout.{kind}")]
    for c in close_calls([a, b]):
        said.append(
            W("pruning.heldout.close", which=W(("word.first", "word.second")[c["which"]]),
              k=c["k"], order=W(f"word.{c['order']}_order"), at=c["at"], margin=c["margin"],
              full=c["full"], N=c["N"], one=1 / c["N"])
        )  # fmt: skip
    return W(
        "pruning.exercise.why",
        triples=len(core.similarity_triples()),
        half=a["triples"],
        other_a=other[0],
        other_b=other[1],
        own_a=own[0],
        own_b=own[1],
        verdict=" ".join(said),
    )


def pruning_exercise(can_go: int, n: int) -> bool:
    bins = [(0, 9), (10, 29), (30, 49), (50, n)]
    choices = [W("pruning.exercise.bin", lo=a, hi=b) for a, b in bins]
    answer = next(c for c, (a, b) in zip(choices, bins, strict=True) if a <= can_go <= b)
    return ui.predict_choice(
        "model-pruning",
        W("pruning.exercise.q", n=n),
        choices,
        answer,
        held_out_words(),
        truth=W("pruning.exercise.truth", k=can_go, n=n),
        secret=[f"{can_go} heads", f"{can_go} of the {n}"],
    )


run()
