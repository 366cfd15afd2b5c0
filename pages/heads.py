"""Trained heads: a two-layer attention-only model, trained here, whose heads took distinct jobs."""

import hashlib
from collections import OrderedDict
from threading import Lock

import numpy as np
import streamlit as st
import torch

import ui
from attn_core.lessons import heads as ind
from figures import heads as fh

FILE = "pages/heads.py"
LIVE_SEEDS = 4  # live runs kept in memory (one per seed)
STEPS = ("Maps", "Scores", "Loss", "Switch off", "Contribution", "Train")


@st.cache_resource(max_entries=1, show_spinner="Loading the trained model…")
def shipped():
    """The model trained by `python -m attn_core.lessons.heads`, loaded once per server,
    with its scores and single-head ablations on 128 held-out sequences."""
    model, run = ind.load_pretrained(device=ui.device())
    batch = ind.eval_batch(model.config)
    with torch.no_grad():
        tr = model.trace(batch)
    base = ind.scores_from_weights(ind.uniform_weights(batch.shape[1])[None], batch[:1])
    jobs = ind.named_jobs(ind.scores_from_weights(tr.weights, batch).jobs(base))
    full = ind.evaluate(model, batch)[0]
    return model, run, batch, full, ind.single_head_ablation(model, batch).numpy(), jobs


@st.cache_data(max_entries=64, show_spinner=False)
def seeded_sequence(seed: int) -> tuple[list[int], int]:
    tokens, period = ind.repeated_sequences(
        1, shipped()[0].config, generator=torch.Generator().manual_seed(seed)
    )
    return tokens[0].tolist(), int(period[0])


@st.cache_data(max_entries=32, show_spinner=False)
def analyse(ids: tuple[int, ...]) -> dict:
    """Everything the page draws about one sequence with every head on (numpy, plain Python)."""
    model = shipped()[0]
    tokens = torch.tensor(ids)
    with torch.no_grad():
        tr = model.trace(tokens)
    s = ind.scores_from_weights(tr.weights, tokens[None])
    base = ind.scores_from_weights(ind.uniform_weights(len(ids))[None], tokens[None])
    loss = ind.per_position_loss(tr.logits, tokens)  # (1, T-1)
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
        repeated=ind.repeated_positions(tokens).numpy(),
        split=ind.split_loss(loss, tokens),
    )


@st.cache_data(max_entries=32, show_spinner=False)
def ablated_positions(ids: tuple[int, ...], ablate: tuple[str, ...]):
    """Per-position loss of this sequence with the `ablate` heads switched off: (T-1,)."""
    model, tokens = shipped()[0], torch.tensor(ids)
    with torch.no_grad():
        off = model(tokens, ind.ablation_mask(model.config, ablate))
    return ind.per_position_loss(off, tokens)[0].float().cpu().numpy()


@st.cache_data(max_entries=16, show_spinner=False)
def ablated_batch_loss(ablate: tuple[str, ...]) -> float:
    model, _, batch, *_ = shipped()
    return ind.evaluate(model, batch, ind.ablation_mask(model.config, ablate))[0]


@st.cache_data(max_entries=32, show_spinner=False)
def single_head_losses(ids: tuple[int, ...]) -> list[float]:
    """This sequence's repeated-token loss with each head switched off in turn (layer-major)."""
    model = shipped()[0]
    return ind.single_head_ablation(model, torch.tensor(ids)[None]).flatten().tolist()


def instance(ids, *more) -> str:
    """A short name for one exercise instance: a new sequence or ablation starts unrevealed."""
    return "-".join([hashlib.sha1(repr(tuple(ids)).encode()).hexdigest()[:10], *more])


# Charts are built once per input and handed back as they are (st.cache_resource: plotly
# figures are slow to assemble and st.plotly_chart only reads them), one cache per step, so
# a seed press builds only the open step's charts; an unchanged chart reaches the browser
# with the same spec and is not redrawn there. Few entries: a figure is thousands of small
# Python objects, which Streamlit's full garbage collection after every rerun walks through.
charts = st.cache_resource(max_entries=4, show_spinner=False)


@charts
def maps_chart(ids: tuple[int, ...], labels: tuple[str, ...], typed: bool, hidden=None):
    """Step 1: every head's map (token ticks only for typed text: a seed press stays cheap).
    `hidden`: the flat index of a head whose map stays blank (its exercise is unanswered)."""
    a = analyse(ids)
    w = a["weights"]
    if hidden is not None:
        w = np.array(w, dtype=np.float32, copy=True)  # (L, h, T, T)
        w[divmod(hidden, w.shape[1])] = np.nan
    return fh.head_maps(w, labels, a["prev"], a["ind"], a["jobs"], token_ticks=typed)


@charts
def scores_chart(ids: tuple[int, ...]):
    """Step 2: the two scores of every head, against uniform attention's."""
    a, names = analyse(ids), shipped()[0].config.head_names()
    return fh.head_score_bars(
        names, a["prev"], a["ind"], a["base_prev"], a["base_ind"], jobs=a["jobs"]
    )


@charts
def loss_chart(ids: tuple[int, ...], labels: tuple[str, ...], ablate: tuple[str, ...]):
    """Steps 3 and 4: the loss at every position, with the ablated heads' line if any."""
    a = analyse(ids)
    off = ablated_positions(ids, ablate) if ablate else None
    return fh.position_loss(a["loss"], a["repeated"], labels, shipped()[1].chance,
                            ablated=off, ablated_name=", ".join(ablate))  # fmt: skip


@charts
def ablation_chart(ablate: tuple[str, ...]):
    """Step 4: each head off on its own (the shipped batch), the selection outlined."""
    model, srun, _, rep0, single, _ = shipped()
    chosen = ablated_batch_loss(ablate) if ablate else None
    return fh.ablation_bars(model.config.head_names(), single, rep0, srun.chance,
                            selected=ablate, selected_loss=chosen)  # fmt: skip


@charts
def scatter_chart(ids: tuple[int, ...]):
    """Step 5: attention weight against what each head writes."""
    a = analyse(ids)
    return fh.contribution_scatter(
        a["weights"], a["contribution"], shipped()[0].config.head_names()
    )


@st.cache_resource(max_entries=LIVE_SEEDS + 1, show_spinner=False)
def run_view(which: str, _run, title: str):
    """A run's training curves and the jobs its heads ended with, worked out once per run
    (`which` names the run: "shipped", or a live run's seed, steps and time; the jobs come
    from scoring its probe batch again)."""
    return fh.run_curves(_run, title), ind.named_jobs(_run.last_scores().jobs())


@st.cache_resource(max_entries=1)
def live_runs() -> tuple[OrderedDict, Lock]:
    return OrderedDict(), Lock()  # seed -> InductionRun, bounded to LIVE_SEEDS


def pick_input(text: str, seed: int, config) -> tuple[list[int], list[str], str, bool]:
    """(ids, labels, where they came from, whether the user typed them)."""
    p = ind.parse_tokens(text, config.vocab, config.seq_len)
    for n in p.notes:
        ui.note(n)
    if len(p.ids) >= 2:
        return p.ids, p.labels, f"your text, read as {p.mode}", True
    if p.ids:
        ui.note("One token leaves nothing to predict, so a random sequence is shown instead.")
    ids, period = seeded_sequence(seed)
    source = f"random block of {period} tokens, repeated (seed {seed})"
    return ids, [str(t) for t in ids], source, False


def run() -> None:
    ui.page_header(
        FILE,
        "Every other page uses random or hand-set weights. This one uses a model that **learned**: "
        "two layers of attention (4 heads each, no MLPs), trained in this repository to continue "
        "sequences like `17 4 52 9 17 4 52 …`. Nothing predicts a token the first time it appears; "
        "after that, the model can find the earlier copy and read what came next. Watch which "
        "heads take that job — and which do nothing at all. The steps below take it in turn.",
    )
    model, srun, _, rep0, _, jobs0 = shipped()
    c, names = model.config, model.config.head_names()
    with ui.controls_area():
        st.markdown("**Trained heads**")
        text = ui.text(
            "tokens", "Your own sequence (empty: a random one)", "", max_chars=60_000,
            help="Words or token ids separated by spaces, e.g. `a b c d a b c d`. "
            f"A word without spaces is read letter by letter. Up to {c.seq_len} tokens.",
        )  # fmt: skip
        seed = ui.slider("seed", "Seed (random sequence, live training)", 0, 99, 0)
        ablate = tuple(sorted(ui.multiselect("ablate", "Switch off heads", names, [])))
    ids, labels, source, typed = pick_input(text, seed, c)
    ids, labels = tuple(ids), tuple(labels)
    ui.show_notes()

    a = analyse(ids)
    seq, score = st.columns([1.3, 1], vertical_alignment="center")  # one row: what, and how well
    seq.markdown(f"**Input** — {source}, {len(ids)} tokens:")
    seq.code(" ".join(ui.safe_text(t, 12) for t in labels), language=None, wrap_lines=True)
    rep, first = a["split"]
    m1, m2, m3 = score.columns(3)
    m1.metric("Loss on repeated tokens", "n/a" if a["n_ind"] == 0 else f"{rep:.3f}")
    m2.metric("Loss on first occurrences", f"{first:.3f}" if first == first else "n/a")
    m3.metric("Blind guess, ln(vocab)", f"{srun.chance:.3f}")
    if a["n_ind"] == 0:
        st.info(
            "No token repeats in this sequence, so there is nothing to copy and no induction "
            "score. Type a pattern twice, e.g. `red fox jumps red fox jumps`."
        )

    tabs = ui.tabs("step", STEPS)
    with tabs[0]:
        if tabs[0].open:
            st.subheader("What every head looks at")
            # the asked head's map would show the answer: blank until the reveal
            asking = ind.induction_probe(torch.tensor(ids)) is not None
            open_ = ui.revealed(instance(ids, "look")) or not asking
            asked = None if open_ else look_head(a)
            ui.show(maps_chart(ids, labels, typed, asked))
            if asked is not None:
                ui.until_reveal(f"The map of {names[asked]} (left blank above)")
            look_exercise(ids, labels, a, names)
            ui.try_this([
                ("Type `a b c d e f a b c d e f`", "in the induction heads' maps the second half "
                 "lights up one step right of the first copy: `b` looks at the `c` that followed "
                 "it."),
                ("Type words that never repeat, e.g. `one two three four five`", "the induction "
                 "score is n/a and every first-occurrence loss stays near a blind guess."),
                ("Move the seed", "a new random sequence: the same heads keep the same jobs."),
            ])  # fmt: skip
            ui.explain("How two layers make an induction head", fh.COMPOSE, expanded=True)
    with tabs[1]:
        if tabs[1].open:
            st.subheader("Each head's two scores")
            ui.show(scores_chart(ids))
    with tabs[2]:
        if tabs[2].open:
            st.subheader("Where the model is sure of the next token")
            ui.show(loss_chart(ids, labels, ablate))
    with tabs[3]:
        if tabs[3].open:
            switch_off(ids, labels, ablate, a, names, rep0, jobs0)
    with tabs[4]:
        if tabs[4].open:
            st.subheader("Attention is not contribution")
            ui.show(scatter_chart(ids))
    with tabs[5]:
        if tabs[5].open:
            st.subheader("Train it live")
            live_section(seed, srun)
            caveat = fh.caveat(names, jobs0, shipped()[4], rep0, srun.chance)
            ui.explain("Specialisation is the intent, not a guarantee", caveat)
    ui.prev_next(FILE)


def switch_off(ids, labels, ablate, a, names, rep0, jobs0) -> None:
    """Step 4: each head off alone (bars), the user's selection (metric, loss line), a question."""
    st.subheader("Switch heads off")
    if not knockout_exercise(ids, a, names, jobs0):  # the bars rank the heads: the answer
        ui.until_reveal("Each head switched off on its own, and your selection")
        return
    st.caption(ui.where("Pick heads under **Switch off heads** in the sidebar."))
    ui.show(ablation_chart(ablate))
    if ablate:
        chosen = ablated_batch_loss(ablate)
        st.metric(
            f"Loss on repeated tokens with {', '.join(ablate)} off (128 sequences)",
            f"{chosen:.3f}", f"{chosen - rep0:+.3f} against all heads on", delta_color="inverse",
        )  # fmt: skip
        ui.show(loss_chart(ids, labels, ablate))
    prev_heads, ind_heads = jobs0["previous-token"], jobs0["induction"]
    idle = [n for n in names if n not in prev_heads + ind_heads]
    all_off, chance = ablated_batch_loss(tuple(sorted(ind_heads))), shipped()[1].chance
    ui.try_this([
        (f"Switch off every induction head ({', '.join(ind_heads)})", "the orange diamonds in "
         "the loss chart (it appears here once a head is off) jump up: on 128 sequences the "
         f"repeated-token loss goes from {rep0:.3f} to {all_off:.2f}, "
         f"{'above' if all_off > chance else 'below'} a blind guess ({chance:.2f}). The "
         "in-context gain is gone."),
        (f"Switch off just one of them, {ind_heads[0] if ind_heads else 'L1H0'}", "almost nothing "
         "changes: the others do the same job. A redundant head, the kind pruning removes."),
        (f"Switch off the previous-token head {prev_heads[0] if prev_heads else 'L0H0'}", "the "
         "repeated-token loss rises although every induction head is still on: they read what it "
         f"wrote. Heads with no job ({', '.join(idle) or 'none'}) can go with little change."),
    ])  # fmt: skip


def look_head(a) -> int | None:
    """The head the look question asks about: the highest induction score (flat index);
    None when nothing repeats (no score at all)."""
    ind = np.asarray(a["ind"], dtype=float)
    return None if np.isnan(ind).all() else int(np.nanargmax(ind))


def look_exercise(ids, labels, a, names) -> bool:
    """Where does the strongest induction head look from a token's second appearance?"""
    probe = ind.induction_probe(torch.tensor(ids))
    if probe is None:
        st.caption(
            "No position in this sequence makes a clean “where does the induction head look?” "
            "question (a block of two repeated puts the token before and the copy's successor "
            "in the same place). Move the seed for one."
        )
        return True  # nothing asked, nothing to hide
    i, j = probe
    best = look_head(a)  # flat index into (L, h)
    L, h = divmod(best, a["ind"].shape[1])
    row = a["weights"][L, h, i]  # (T,) what head (L, h) reads from position i
    k = int(row.argmax())
    tok = ui.safe_text(labels[i], 12)
    where = {
        0: "position 0, the very first token",
        i - 1: f"position {i - 1}, the token just before it",
        i: f"position {i}, itself",
        j: f"position {j}, the earlier copy of `{tok}`",
        j + 1: f"position {j + 1}, the token that came right after that copy",
    }
    choices = [*(where[p] for p in sorted(where)), "somewhere else"]  # in reading order
    return ui.predict_choice(
        instance(ids, "look"),
        f"**{names[best]}** has the highest induction score on this sequence. At "
        f"position {i} the token `{tok}` appears for the second time; its first appearance "
        f"was at position {j}. Where does {names[best]} put most of its weight from there?",
        choices, where.get(k, "somewhere else"),
        "An induction head does not look for the same token again: it looks for what "
        "*followed* it last time, because that is the token worth predicting. Its query comes "
        "from the current token, while its keys come from notes that a previous-token head in "
        "layer 0 wrote into every position — “the token before me was …”. Only the position "
        "right after the earlier copy carries a note that matches, so that is where the weight "
        "goes. Take the notes away (switch off both previous-token heads in the Switch off "
        "step) and the loss on repeated tokens rises above even a blind guess, with every "
        "induction head still on.",
        truth=f"{names[best]} gives position {k} a weight of {row[k]:.2f}.",
        secret=[f"weight of {row[k]:.2f}"],  # the maps themselves wait for the reveal
    )  # fmt: skip


def knockout_exercise(ids, a, names, jobs) -> bool:
    """Which single head matters most? Usually not the one whose map looks most striking.
    True once revealed, or when there is nothing to ask (no repeated token)."""
    if a["n_ind"] == 0:
        return True
    losses = single_head_losses(tuple(ids))
    job = {n: kind for kind, heads in jobs.items() for n in heads}
    choices = [f"{n} ({job.get(n, 'no clear job')})" for n in names]
    shown = " · ".join(f"{n} {x:.2f}" for n, x in zip(names, losses, strict=True))
    return ui.predict_choice(
        instance(ids, "knockout"),
        "On this sequence, switch off **one** head and leave the other seven on. Which head's "
        "absence raises the loss on repeated tokens the most?",
        choices, choices[int(np.argmax(losses))],
        "The copying is done by several induction heads in layer 1, so losing any one of them "
        "hardly matters: the others still find the right token. A previous-token head in layer "
        "0 is a different case. It writes “the token before me was …” into every position, and "
        "those notes are what all the induction heads build their keys from, so removing the "
        "main writer blinds every copier at once. How much a head matters depends on who reads "
        "what it writes, not on how striking its attention map looks.",
        truth=f"Loss on repeated tokens with each head off: {shown} "
        f"(all heads on: {a['split'][0]:.3f}).",
        secret=[f"{x:.2f}" for x in losses],
    )  # fmt: skip


@st.fragment
def live_section(seed: int, srun) -> None:
    """Training from scratch: only on a button press, cached per seed (bounded)."""
    store, lock = live_runs()
    steps = ind.PRETRAINED_STEPS  # as many as the shipped model had
    # How long a run takes: this server's own recent runs, else the shipped run's time.
    took = ui.jobs.limiter().typical_s("heads", srun.seconds * steps / max(srun.done, 1))
    over = took > ui.jobs.budget_s()  # then the server's per-job budget stops it early
    go = st.button(
        f"Train from scratch at seed {seed} ({steps:,} steps, about {took:.0f} s"
        + (f"; this server stops a job after {ui.jobs.budget_s():g} s)" if over else ")"),
        type="primary",
    )
    status, chart = st.empty(), st.empty()  # progress bar above the chart
    r = store.get(seed)
    if go and r is None:
        bar = status.progress(0.0, text="Starting…")
        with chart.container():  # the last result stays until the live curves replace it
            ui.show(
                run_view(
                    "shipped", srun, f"Training curves — the shipped model (seed {srun.seed})"
                )[0],
                key="heads-waiting",  # drawn again below if the run never starts: own id
            )

        def on_step(step, run):
            left = (run.steps - step) * run.seconds / max(step, 1)
            bar.progress(
                step / run.steps,
                text=f"Training the two-layer model: step {step:,} of {run.steps:,} · "
                f"{run.seconds:.0f} s, about {left:.0f} s to go",
            )
            if step % 150 == 0:
                chart.plotly_chart(fh.run_curves(run, "Training live…").fig, key=f"live{step}")
            return job.should_stop()  # the server's per-job budget (ui.jobs)

        st.session_state.pop("heads_cut", None)
        try:  # one heavy job at a time on the server: wait in line (the bar says where)
            with ui.jobs.slot(
                "heads", f"seed {seed}", show=lambda s: bar.progress(0.0, text=s)
            ) as job:
                if (r := store.get(seed)) is None:  # nobody trained this seed while we waited
                    _, r = ui.jobs.call(  # in a worker process (ui.jobs.call)
                        ind.train_induction,
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
    cut = st.session_state.get("heads_cut")
    if cut and cut[0] == seed and store.get(seed) is None:
        r = cut[1]
        status.warning(f"{cut[2]} The curves show the run so far.", icon=":material/timer_off:")
    shown = r or srun
    curves, found = (
        run_view(
            f"{seed}: {r.done} in {r.seconds}", r, f"Training curves — your live run, seed {seed}"
        )
        if r
        else run_view("shipped", srun, f"Training curves — the shipped model (seed {srun.seed})")
    )
    with chart.container():
        ui.show(curves)
    st.caption(
        f"{shown.done:,} steps in {shown.seconds:.1f} s. Loss over the last 50 steps: repeated "
        f"tokens {shown.tail('loss_repeated'):.3f}, first occurrences "
        f"{shown.tail('loss_first'):.3f}. Previous-token heads: "
        f"{', '.join(found['previous-token']) or 'none'}; induction heads: "
        f"{', '.join(found['induction']) or 'none'}. Another seed may hand the jobs to other heads."
    )


run()
