"""AppTest: the predict-then-reveal exercises of /heads, checked against attn_core.lessons.heads."""

import functools
import hashlib

import pytest
import torch

import attn_core.lessons.heads as ind
from tests.support.apptest import no_exception, run_page
from ui.content import Words

PAGE = "pages/heads.py"
W = Words("heads")
KNOCKOUT = "Switch off"  # the step with the knockout question; the look question is on the first


@functools.cache
def _model():
    return ind.load_pretrained()[0]


def _tokens(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return ind.repeated_sequences(1, _model().config, generator=g)[0][0]  # (T,)


def _key(tokens: torch.Tensor, *more: str) -> str:
    return "-".join([hashlib.sha1(repr(tuple(tokens.tolist())).encode()).hexdigest()[:10], *more])


def _questions(at) -> list[str]:
    return [md.value for md in at.markdown if "Predict, then reveal" in md.value]


def _reveal(at, key: str, answer: str) -> None:
    at.radio(key=f"pick-{key}").set_value(answer)
    [button] = [b for b in at.button if b.proto.form_id == f"form-{key}"]
    button.click().run()
    no_exception(at)


def _said(at) -> tuple[str, str]:
    return " ".join(s.value for s in at.success), " ".join(e.value for e in at.error)


def _look(seed: int) -> tuple[str, int, int]:
    """(head, query position, the position its largest weight goes to), from the model."""
    model, tokens = _model(), _tokens(seed)
    i, _ = ind.induction_probe(tokens)
    s = ind.head_scores(model, tokens[None])
    with torch.no_grad():
        w = model.trace(tokens).weights[0]  # (L, h, T, T)
    L, h = divmod(int(s.induction.argmax()), model.config.heads)
    return ind.head_name(L, h), i, int(w[L, h, i].argmax())


def _places(tokens: torch.Tensor, labels=None) -> dict[str, str]:
    """The look question's answer choices for this sequence, by name (content/heads.md)."""
    i, j = ind.induction_probe(tokens)
    tok = (labels or [str(t) for t in tokens.tolist()])[i]
    return W.choices("exercise.look.choices", first=0, before=i - 1, i=i, j=j, tok=tok, after=j + 1)


def _job(head: str, job: str) -> str:
    return W("exercise.knockout.choice", head=head, job=job)


def _worst_head(seed: int) -> str:
    """The single head whose removal raises this sequence's repeated-token loss the most."""
    model, tokens = _model(), _tokens(seed)
    names = model.config.head_names()
    losses = [
        ind.evaluate(model, tokens[None], ind.ablation_mask(model.config, [n]))[0] for n in names
    ]
    return names[max(range(len(names)), key=losses.__getitem__)]


def test_both_exercises_ask_about_the_sequence_on_screen():
    at = run_page(PAGE)
    no_exception(at)
    head, i, _ = _look(0)
    tokens = _tokens(0)
    _, j = ind.induction_probe(tokens)
    [q] = _questions(at)  # the first step asks where the induction head looks
    assert W("exercise.look.q", head=head, i=i, tok=str(int(tokens[i])), j=j) in q
    assert not at.success and not at.error
    at = run_page(PAGE, step=KNOCKOUT)
    no_exception(at)
    [q] = _questions(at)  # the Switch off step asks which head matters most
    assert W("exercise.knockout.q") in q
    assert not at.success and not at.error


@pytest.mark.parametrize("seed", [0, 2])
def test_induction_head_looks_after_the_earlier_copy(seed):
    head, i, k = _look(seed)
    _, j = ind.induction_probe(_tokens(seed))
    assert k == j + 1  # the trained head reads what followed the earlier copy
    at = run_page(PAGE, seed=seed)
    key = _key(_tokens(seed), "look")
    places = _places(_tokens(seed))
    _reveal(at, key, places["before"])
    ok, bad = _said(at)
    assert not ok and f"**{places['after']}**" in bad
    with torch.no_grad():
        L, h = ind.parse_head(head)
        weight = float(_model().trace(_tokens(seed)).weights[0, L, h, i, k])
    assert W("exercise.look.truth", head=head, k=k, weight=weight) in bad
    right = next(o for o in at.radio(key=f"pick-{key}").options if o.startswith(f"position {k},"))
    _reveal(at, key, right)
    assert f"Right: **{right}**" in _said(at)[0]


def test_typed_text_is_an_instance_of_its_own():
    text = "red fox jumps over it red fox jumps over it"
    tokens = torch.tensor(ind.parse_tokens(text).ids)
    i, j = ind.induction_probe(tokens)
    assert (i, j) == (6, 1)  # the second "fox"
    model = _model()
    s = ind.head_scores(model, tokens[None])
    L, h = divmod(int(s.induction.argmax()), model.config.heads)
    with torch.no_grad():
        k = int(model.trace(tokens).weights[0, L, h, i].argmax())
    at = run_page(PAGE, tokens=text)
    key = _key(tokens, "look")
    q = _questions(at)[0]
    assert W("exercise.look.q", head=ind.head_name(L, h), i=6, tok="fox", j=1) in q
    right = next(o for o in at.radio(key=f"pick-{key}").options if o.startswith(f"position {k},"))
    _reveal(at, key, _places(tokens, text.split())["itself"])
    ok, bad = _said(at)
    assert not ok and f"the computed answer is **{right}**" in bad
    _reveal(at, key, right)
    assert f"Right: **{right}**" in _said(at)[0]


def test_most_damaging_head_is_computed_and_follows_the_seed():
    worst = {seed: _worst_head(seed) for seed in (0, 2)}
    assert worst == {0: "L0H2", 2: "L0H0"}  # a previous-token head, not an induction head
    for seed, head in worst.items():
        at = run_page(PAGE, seed=seed, step=KNOCKOUT)
        key = _key(_tokens(seed), "knockout")
        _reveal(at, key, _job("L1H0", "induction"))
        ok, bad = _said(at)
        assert not ok and f"the computed answer is **{_job(head, 'previous-token')}**" in bad
        assert W.raw("exercise.knockout.truth").split("{{")[0] in bad  # "Loss on … off: "
        _reveal(at, key, _job(head, "previous-token"))
        assert f"Right: **{_job(head, 'previous-token')}**" in _said(at)[0]


def test_a_block_of_two_gives_no_look_question_but_says_why():
    assert ind.induction_probe(_tokens(57)) is None  # seed 57 repeats a block of 2
    at = run_page(PAGE, seed=57)
    no_exception(at)
    assert not _questions(at)  # no look question on the first step…
    assert any(c.value == W("exercise.look.none") for c in at.caption)
    at = run_page(PAGE, seed=57, step=KNOCKOUT)
    assert len(_questions(at)) == 1  # …while the knockout question still has one


def test_induction_probe_needs_four_distinct_places():
    def probe(text):
        return ind.induction_probe(torch.tensor(ind.parse_tokens(text).ids))

    assert probe("a b c a b c") == (4, 1)  # second b: before 3, copy 1, after it 2
    assert probe("a b a b a b") is None  # the token before is what followed the copy
    assert probe("a b c d") is None  # nothing repeats
