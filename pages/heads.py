"""Trained heads: a two-layer attention-only model, trained here, whose heads took distinct jobs."""

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from threading import Lock

import numpy as np
import streamlit as st
import torch

import ui
from attn_core.lessons import heads as core
from figures import heads as fig

FILE = "pages/heads.py"
W = ui.Words("heads")
LIVE_SEEDS = 4  # live runs kept in memory (one per seed)


@ui.frozen
class Shipped:
    """The model trained by `python -m attn_core.lessons.heads`, with what the page reads
    off it once per server: its scores and single-head ablations on 128 held-out sequences."""

    model: core.InductionModel
    run: core.InductionRun
    batch: torch.Tensor  # (128, T) held-out repeated sequences
    full: float  # repeated-token loss, every head on
    single: np.ndarray  # (L, h) repeated-token loss with each head off on its own
    jobs: dict[str, list[str]]  # {"previous-token": [...], "induction": [...]}

    @property
    def names(self) -> list[str]:
        return self.model.config.head_names()

    @property
    def chance(self) -> float:
        return self.run.chance


@ui.frozen
class Settings:
    """The sidebar's controls and the sequence they pick, read by every step."""

    ids: tuple[int, ...]  # the model's input
    labels: tuple[str, ...]  # what each token is called on screen
    source: str  # where the sequence came from, for the Input line
    typed: bool  # the user typed it (the maps then get token ticks)
    seed: int  # the random sequence's, and a live run's
    ablate: tuple[str, ...]  # the heads switched off, sorted


@ui.cache_resource(max_entries=1, show_spinner="Loading the trained model…")
def shipped() -> Shipped:
    """The shipped model, loaded once per server, with its scores and ablations."""
    model, run = core.load_pretrained(device=ui.device())
    batch = core.eval_batch(model.config)
    with torch.no_grad():
        tr = model.trace(batch)
    base = core.scores_from_weights(core.uniform_weights(batch.shape[1])[None], batch[:1])
    jobs = core.named_jobs(core.scores_from_weights(tr.weights, batch).jobs(base))
    full = core.evaluate(model, batch)[0]
    single = core.single_head_ablation(model, batch).numpy()
    return Shipped(model, run, batch, full, single, jobs)


@ui.cache_data(max_entries=64, show_spinner=False)
def seeded_sequence(seed: int) -> tuple[list[int], int]:
    tokens, period = core.repeated_sequences(
        1, shipped().model.config, generator=torch.Generator().manual_seed(seed)
    )
    return tokens[0].tolist(), int(period[0])


@ui.cache_data(max_entries=32, show_spinner=False)
def analyse(ids: tuple[int, ...]) -> dict:
    """Everything the page draws about one sequence with every head on (numpy, plain Python)."""
    model = shipped().model
    tokens = torch.tensor(ids)
    with torch.no_grad():
        tr = model.trace(tokens)
    s = core.scores_from_weights(tr.weights, tokens[None])
    base = core.scores_from_weights(core.uniform_weights(len(ids))[None], tokens[None])
    loss = core.per_position_loss(tr.logits, tokens)  # (1, T-1)
    return dict(
        weights=tr.weights[0].float().cpu().numpy(),  # (L, h, T, T)
        contribution=tr.contribution[0].float().cpu().numpy(),
        prev=s.previous_token.numpy(),
        ind=s.induction.numpy(),
        n_ind=s.n_induction,
        base_prev=float(base.previous_token[0, 0]),
        base_ind=float(base.induction[0, 0]),
        jobs=s.jobs(base),
        loss=loss[0].float().cpu().numpy(),
        repeated=core.repeated_positions(tokens).numpy(),
        split=core.split_loss(loss, tokens),
    )


@ui.cache_data(max_entries=32, show_spinner=False)
def ablated_positions(ids: tuple[int, ...], ablate: tuple[str, ...]):
    """Per-position loss of this sequence with the `ablate` heads switched off: (T-1,)."""
    model, tokens = shipped().model, torch.tensor(ids)
    with torch.no_grad():
        off = model(tokens, core.ablation_mask(model.config, ablate))
    return core.per_position_loss(off, tokens)[0].float().cpu().numpy()


@ui.cache_data(max_entries=16, show_spinner=False)
def ablated_batch_loss(ablate: tuple[str, ...]) -> float:
    sh = shipped()
    return core.evaluate(sh.model, sh.batch, core.ablation_mask(sh.model.config, ablate))[0]


@ui.cache_data(max_entries=32, show_spinner=False)
def single_head_losses(ids: tuple[int, ...]) -> list[float]:
    """This sequence's repeated-token loss with each head switched off in turn (layer-major)."""
    model = shipped().model
    return core.single_head_ablation(model, torch.tensor(ids)[None]).flatten().tolist()


def instance(ids, *more) -> str:
    """A short name for one exercise instance: a new sequence or ablation starts unrevealed."""
    return "-".join([hashlib.sha1(repr(tuple(ids)).encode()).hexdigest()[:10], *more])


# Charts are built once per input and handed back as they are (st.cache_resource: plotly
# figures are slow to assemble and st.plotly_chart only reads them), one cache per step, so
# a seed press builds only the open step's charts; an unchanged chart reaches the browser
# with the same spec and is not redrawn there. Few entries: a figure is thousands of small
# Python objects, which Streamlit's full garbage collection after every rerun walks through.
charts = ui.cache_resource(max_entries=4, show_spinner=False)


@charts
def maps_chart(ids: tuple[int, ...], labels: tuple[str, ...], typed: bool, hidden=None):
    """Step 1: every head's map (token ticks only for typed text: a seed press stays cheap).
    `hidden`: the flat index of a head whose map stays blank (its exercise is unanswered)."""
    a = analyse(ids)
    w = a["weights"]
    if hidden is not None:
        w = np.array(w, dtype=np.float32, copy=True)  # (L, h, T, T)
        w[divmod(hidden, w.shape[1])] = np.nan
    return fig.head_maps(w, labels, a["prev"], a["ind"], a["jobs"], token_ticks=typed)


@charts
def scores_chart(ids: tuple[int, ...]):
    """Step 2: the two scores of every head, against uniform attention's."""
    a, names = analyse(ids), shipped().names
    return fig.head_score_bars(
        names, a["prev"], a["ind"], a["base_prev"], a["base_ind"], jobs=a["jobs"]
    )


@charts
def loss_chart(ids: tuple[int, ...], labels: tuple[str, ...], ablate: tuple[str, ...]):
    """Steps 3 and 4: the loss at every position, with the ablated heads' line if any."""
    a = analyse(ids)
    off = ablated_positions(ids, ablate) if ablate else None
    return fig.position_loss(a["loss"], a["repeated"], labels, shipped().chance,
                             ablated=off, ablated_name=", ".join(ablate))  # fmt: skip


@charts
def ablation_chart(ablate: tuple[str, ...]):
    """Step 4: each head off on its own (the shipped batch), the selection outlined."""
    sh = shipped()
    chosen = ablated_batch_loss(ablate) if ablate else None
    return fig.ablation_bars(sh.names, sh.single, sh.full, sh.chance,
                             selected=ablate, selected_loss=chosen)  # fmt: skip


@charts
def scatter_chart(ids: tuple[int, ...]):
    """Step 5: attention weight against what each head writes."""
    a = analyse(ids)
    return fig.contribution_scatter(a["weights"], a["contribution"], shipped().names)


@ui.cache_resource(max_entries=LIVE_SEEDS + 1, show_spinner=False)
def run_view(which: str, _run, title: str):
    """A run's training curves and the jobs its heads ended with, worked out once per run
    (`which` names the run: "shipped", or a live run's seed, steps and time; the jobs come
    from scoring its probe batch again)."""
    return fig.run_curves(_run, title), core.named_jobs(_run.last_scores().jobs())


@ui.cache_resource(max_entries=1)
def live_runs() -> tuple[OrderedDict, Lock]:
    return OrderedDict(), Lock()  # seed -> InductionRun, bounded to LIVE_SEEDS


# --- the page, top to bottom


def run() -> None:
    ui.page_header(FILE, W("intro"))
    s = controls(shipped())
    sequence_header(s)
    ui.steps(
        {
            "Maps": maps_step,
            "Scores": scores_step,
            "Loss": loss_step,
            "Switch off": switch_off_step,
            "Contribution": contribution_step,
            "Train": train_step,
        },
        s,
    )
    ui.prev_next(FILE)


def controls(sh: Shipped) -> Settings:
    """The sidebar, and the sequence it names; their notes show right below."""
    c = sh.model.config
    with ui.controls_area():
        st.markdown("**Trained heads**")
        text = ui.text(
            "tokens", "Your own sequence (empty: a random one)", "", max_chars=60_000,
            help="Words or token ids separated by spaces, e.g. `a b c d a b c d`. "
            f"A word without spaces is read letter by letter. Up to {c.seq_len} tokens.",
        )  # fmt: skip
        seed = ui.slider("seed", "Seed (random sequence, live training)", 0, 99, 0)
        ablate = tuple(sorted(ui.multiselect("ablate", "Switch off heads", sh.names, [])))
    ids, labels, source, typed = pick_input(text, seed, c)
    # pick_input's notes (page logic, after the controls area), right below the controls' own
    ui.show_notes()
    return Settings(tuple(ids), tuple(labels), source, typed, seed, ablate)


def pick_input(text: str, seed: int, config) -> tuple[list[int], list[str], str, bool]:
    """(ids, labels, where they came from, whether the user typed them)."""
    p = core.parse_tokens(text, config.vocab, config.seq_len)
    for n in token_notes(p, config):
        ui.note(n)
    if len(p.ids) >= 2:
        return p.ids, p.labels, W("source.typed", mode=p.mode), True
    if p.ids:
        ui.note(W("note.one_token"))
    ids, period = seeded_sequence(seed)
    source = W("source.random", period=period, seed=seed)
    return ids, [str(t) for t in ids], source, False


def token_notes(p: core.ParsedTokens, config) -> list[str]:
    """What parse_tokens changed in the user's text, in content/heads.md's words."""
    out = []
    if p.capped:
        out.append(W("note.capped", seq_len=config.seq_len, total=p.total))
    if p.bad_id is not None:
        b = p.bad_id
        digits = len(b.lstrip("+-"))
        shown = b if len(b) <= 12 else W("note.long_number", head=b[:12], digits=digits)
        out.append(W("note.bad_id", number=shown, top=config.vocab - 1))
    if p.distinct > config.vocab:
        out.append(W("note.wrap", distinct=p.distinct, vocab=config.vocab))
    return out


def sequence_header(s: Settings) -> None:
    """One row above the steps: the sequence, and how well the model predicts it."""
    a = analyse(s.ids)
    seq, score = st.columns([1.3, 1], vertical_alignment="center")  # one row: what, and how well
    text = " ".join(ui.safe_text(t, 12) for t in s.labels)
    ui.tokens(seq, W("input", source=s.source, n=len(s.ids)), text)
    rep, first = a["split"]
    m1, m2, m3 = score.columns(3)
    m1.metric("Loss on repeated tokens", "n/a" if a["n_ind"] == 0 else f"{rep:.3f}")
    m2.metric("Loss on first occurrences", f"{first:.3f}" if first == first else "n/a")
    m3.metric("Blind guess, ln(vocab)", f"{shipped().chance:.3f}")
    if a["n_ind"] == 0:
        st.info(W("info.no_repeat"))


# --- step 1: maps


def maps_step(s: Settings) -> None:
    st.header("What every head looks at")
    a, names = analyse(s.ids), shipped().names
    # the asked head's map would show the answer: blank until the reveal
    asking = core.induction_probe(torch.tensor(s.ids)) is not None
    maps = st.container()  # filled after the question: the run that reveals it opens the map
    looked = look_exercise(s.ids, s.labels, a, names)
    open_ = looked or ui.revealed(instance(s.ids, "look")) or not asking
    asked = None if open_ else look_head(a)
    with maps:
        ui.show(maps_chart(s.ids, s.labels, s.typed, asked))
        if asked is not None:
            ui.until_reveal(W("maps.hidden", head=names[asked]))
    ui.try_this(W.pairs("try.maps"))
    if looked:  # it says where an induction head looks: the question's answer
        ui.explain("How two layers make an induction head", W("explain.compose"), expanded=True)
    else:
        ui.until_reveal(W("maps.compose_hidden"))


def look_head(a) -> int | None:
    """The head the look question asks about: the highest induction score (flat index);
    None when nothing repeats (no score at all)."""
    score = np.asarray(a["ind"], dtype=float)
    return None if np.isnan(score).all() else int(np.nanargmax(score))


def look_exercise(ids, labels, a, names) -> bool:
    """Where does the strongest induction head look from a token's second appearance?"""
    probe = core.induction_probe(torch.tensor(ids))
    if probe is None:
        st.caption(W("exercise.look.none"))
        return True  # nothing asked, nothing to hide
    i, j = probe
    best = look_head(a)  # flat index into (L, h)
    L, h = divmod(best, a["ind"].shape[1])
    row = a["weights"][L, h, i]  # (T,) what head (L, h) reads from position i
    k = int(row.argmax())
    tok = ui.safe_text(labels[i], 12)
    said = W.choices("exercise.look.choices", first=0, before=i - 1, i=i, j=j, tok=tok, after=j + 1)
    # a dict: where two places coincide, the later description wins
    where = {0: said["first"], i - 1: said["before"], i: said["itself"], j: said["copy"],
             j + 1: said["after"]}  # fmt: skip
    choices = [*(where[p] for p in sorted(where)), said["else"]]  # in reading order
    return ui.predict_choice(
        instance(ids, "look"),
        W("exercise.look.q", head=names[best], i=i, tok=tok, j=j),
        choices,
        where.get(k, said["else"]),
        W("exercise.look.why"),
        truth=W("exercise.look.truth", head=names[best], k=k, weight=row[k]),
        secret=[W("exercise.look.secret", weight=row[k])],  # the maps wait for the reveal
    )


# --- steps 2 and 3: scores, loss


def scores_step(s: Settings) -> None:
    st.header("Each head's two scores")
    ui.show(scores_chart(s.ids))


def loss_step(s: Settings) -> None:
    st.header("Where the model is sure of the next token")
    ui.show(loss_chart(s.ids, s.labels, s.ablate))


# --- step 4: switch heads off


def switch_off_step(s: Settings) -> None:
    """Each head off alone (bars), the user's selection (metric, loss line), a question."""
    st.header("Switch heads off")
    sh = shipped()
    if not knockout_exercise(s.ids, analyse(s.ids), sh):  # the bars rank the heads: the answer
        ui.until_reveal(W("switch_off.hidden"))
        return
    st.caption(ui.where(W("switch_off.where")))
    ui.show(ablation_chart(s.ablate))
    if s.ablate:
        chosen = ablated_batch_loss(s.ablate)
        st.metric(
            f"Loss on repeated tokens with {', '.join(s.ablate)} off (128 sequences)",
            f"{chosen:.3f}", f"{chosen - sh.full:+.3f} against all heads on",
            delta_color="inverse",
        )  # fmt: skip
        ui.show(loss_chart(s.ids, s.labels, s.ablate))
    ui.try_this(switch_off_tries(sh))


def switch_off_tries(sh: Shipped) -> list[tuple[str, str]]:
    """Three experiments, named with the shipped model's own heads and numbers."""
    prev_heads, ind_heads = sh.jobs["previous-token"], sh.jobs["induction"]
    idle = [n for n in sh.names if n not in prev_heads + ind_heads]
    all_off = ablated_batch_loss(tuple(sorted(ind_heads)))
    return W.pairs(
        "try.switch_off",
        ind_heads=", ".join(ind_heads),
        full=sh.full,
        all_off=all_off,
        side=W("word.above" if all_off > sh.chance else "word.below"),
        chance=sh.chance,
        one_ind=ind_heads[0] if ind_heads else "L1H0",
        one_prev=prev_heads[0] if prev_heads else "L0H0",
        idle=", ".join(idle) or W("word.none"),
    )


def knockout_exercise(ids, a, sh: Shipped) -> bool:
    """Which single head matters most? Usually not the one whose map looks most striking.
    True once revealed, or when there is nothing to ask (no repeated token)."""
    if a["n_ind"] == 0:
        return True
    names, losses = sh.names, single_head_losses(tuple(ids))
    job = {n: kind for kind, heads in sh.jobs.items() for n in heads}
    none = W("exercise.knockout.no_job")
    choices = [W("exercise.knockout.choice", head=n, job=job.get(n, none)) for n in names]
    shown = " · ".join(f"{n} {x:.2f}" for n, x in zip(names, losses, strict=True))
    return ui.predict_choice(
        instance(ids, "knockout"),
        W("exercise.knockout.q"),
        choices,
        choices[int(np.argmax(losses))],
        W("exercise.knockout.why"),
        truth=W("exercise.knockout.truth", shown=shown, full=a["split"][0]),
        secret=[f"{x:.2f}" for x in losses],
    )


# --- step 5: contribution


def contribution_step(s: Settings) -> None:
    st.header("Attention is not contribution")
    ui.show(scatter_chart(s.ids))


# --- step 6: train it live


def train_step(s: Settings) -> None:
    st.header("Train it live")
    sh = shipped()
    live_section(s.seed, sh.run)
    ui.explain("Specialisation is the intent, not a guarantee", caveat(sh))


def _and(items: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return W("list.and", rest=", ".join(items[:-1]), last=items[-1]) if len(items) > 1 else items[0]


def caveat(sh: Shipped) -> str:
    """The note on specialisation, from the shipped model's jobs and its single-head
    ablations (repeated-token loss with each head off, layer-major as its names)."""
    loss = dict(zip(sh.names, np.ravel(sh.single).tolist(), strict=True))
    cheap = sh.full + 0.05 * sh.chance  # "little cost": within 5 % of a blind guess of all-on

    def each(heads):
        return _and([W("caveat.each", loss=loss[h], head=h) for h in heads])

    prev, copy = list(sh.jobs["previous-token"]), list(sh.jobs["induction"])
    idle = [n for n in sh.names if n not in prev + copy]
    out = [W("caveat.intro")]
    if prev:
        needed = all(loss[h] >= cheap for h in prev)
        kind = "one" if len(prev) == 1 else "needed" if needed else "many"
        out.append(W(f"caveat.prev.{kind}", heads=_and(prev), full=sh.full, each=each(prev)))
    if idle:
        kind = "many" if len(idle) > 1 else "one"
        out.append(W(f"caveat.idle.{kind}", heads=_and(idle), each=each(idle)))
    if copy:
        worst = max(loss[h] for h in copy)
        if len(copy) > 1 and worst < cheap:
            out.append(W("caveat.copy.cheap", heads=_and(copy), worst=worst, chance=sh.chance))
        else:
            kind = "many" if len(copy) > 1 else "one"
            out.append(W(f"caveat.copy.{kind}", heads=_and(copy), worst=worst))
    out.append(W("caveat.end"))
    return " ".join(out)


def train_label(seed: int, steps: int, took: float) -> str:
    over = took > ui.jobs.budget_s()  # then the server's per-job budget stops it early
    return f"Train from scratch at seed {seed} ({steps:,} steps, about {took:.0f} s" + (
        f"; this server stops a job after {ui.jobs.budget_s():g} s)" if over else ")"
    )


def shipped_view(srun):
    return run_view("shipped", srun, f"Training curves — the shipped model (seed {srun.seed})")


@st.fragment
def live_section(seed: int, srun) -> None:
    """Training from scratch: only on a button press, cached per seed (bounded)."""
    store = live_runs()[0]
    steps = core.PRETRAINED_STEPS  # as many as the shipped model had
    # How long a run takes: this server's own recent runs, else the shipped run's time.
    took = ui.jobs.limiter().typical_s("heads", srun.seconds * steps / max(srun.done, 1))
    if ui.presenting():  # a projector's first screen is the chart; the button under it
        status, chart = st.empty(), st.empty()
        go = st.button(train_label(seed, steps, took), type="primary")
    else:
        go = st.button(train_label(seed, steps, took), type="primary")
        status, chart = st.empty(), st.empty()  # progress bar above the chart
    r = store.get(seed)
    if go and r is None:
        r = train_live(seed, steps, status, chart, srun)
    cut = st.session_state.get("heads_cut")
    if cut and cut[0] == seed and store.get(seed) is None:
        r = cut[1]
        status.warning(W("train.cut", why=cut[2]), icon=":material/timer_off:")
    shown = r or srun
    curves, found = (
        run_view(
            f"{seed}: {r.done} in {r.seconds}", r, f"Training curves — your live run, seed {seed}"
        )
        if r
        else shipped_view(srun)
    )
    with chart.container():
        ui.show(curves)
    st.caption(
        W(
            "train.caption", done=shown.done, seconds=shown.seconds,
            repeated=shown.tail("loss_repeated"), first=shown.tail("loss_first"),
            prev=", ".join(found["previous-token"]) or W("word.none"),
            ind=", ".join(found["induction"]) or W("word.none"),
        )
    )  # fmt: skip


def train_live(seed: int, steps: int, status, chart, srun):
    """One run from scratch through ui.jobs (one heavy job at a time, in a worker process,
    stopped at the server's budget), drawn live; kept per seed unless it was cut short.
    The run, or None when the queue gave up."""
    store, lock = live_runs()
    r = None
    bar = status.progress(0.0, text="Starting…")
    with chart.container():  # the last result stays until the live curves replace it
        # drawn again below if the run never starts: its own id
        ui.show(shipped_view(srun)[0], key="heads-waiting")

    def on_step(step, run):
        left = (run.steps - step) * run.seconds / max(step, 1)
        bar.progress(
            step / run.steps,
            text=f"Training the two-layer model: step {step:,} of {run.steps:,} · "
            f"{run.seconds:.0f} s, about {left:.0f} s to go",
        )
        if step % 150 == 0:
            chart.plotly_chart(fig.run_curves(run, "Training live…").fig, key=f"live{step}")
        return job.should_stop()  # the server's per-job budget (ui.jobs)

    st.session_state.pop("heads_cut", None)
    try:  # one heavy job at a time on the server: wait in line (the bar says where)
        with ui.jobs.slot("heads", f"seed {seed}", show=lambda s: bar.progress(0.0, text=s)) as job:
            if (r := store.get(seed)) is None:  # nobody trained this seed while we waited
                _, r = ui.jobs.call(  # in a worker process (ui.jobs.call)
                    core.train_induction,
                    steps=steps, seed=seed, device=ui.device(), on_step=on_step,
                )  # fmt: skip
        bar.empty()
        if job.stopped:  # out of time: this session sees the run so far; nobody keeps it
            st.session_state["heads_cut"] = (seed, r, job.stopped_text(r.done, r.steps))
        else:
            with lock:
                store[seed] = r
                while len(store) > LIVE_SEEDS:
                    store.popitem(last=False)
    except ui.jobs.GaveUpError as e:
        bar.warning(str(e), icon=":material/hourglass_disabled:")
    return r


run()
