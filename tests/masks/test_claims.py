"""Every numeric sentence of the masks page, recomputed here from attn_core's tensors (or
plain torch) and compared with what the page or the figure shows. Numbers are never copied
from the page; each test fails if the text and the computation disagree.
"""

import math

import pytest
import torch

from attn_core import DTYPES, FILLS, apply_fill, build_mask, demo_qkv, fill_outcomes
from attn_core.lessons.masks import min_fill_overflow, stored_fill
from figures import masks as fig
from tests.support.apptest import explanations, no_exception, run_page

PAGE = "pages/masks.py"


def nan_pairs(kind: str, T: int, logit_size: float, **opts) -> dict:
    """{(fill, dtype): (NaN rows, NaN rows that are empty rows)} from apply_fill directly."""
    keep = build_mask(kind, T, **opts)  # (B, T, T)
    q, k, v = demo_qkv(keep.shape[0], T, T)
    empty = ~keep.any(-1)  # (B, T)
    out = {}
    for dtype, dt in DTYPES.items():
        for fill in FILLS:
            w = apply_fill(q, k, v, keep, fill, dt, logit_size=logit_size).weights
            nan = torch.isnan(w).any(-1)  # (B, T)
            if nan.any():
                out[(fill, dtype)] = (int(nan.sum()), int((nan & empty).sum()))
    return out


def named(fill: str) -> str:
    return fill.replace("-", "−")


def fill_caption(**params) -> str:
    at = run_page(PAGE, reveal=True, step="Fill", **params)
    no_exception(at)
    return next(c.value for c in at.caption if c.value.startswith("The same mask and logits"))


def test_fill_grid_caption_names_the_pairs_that_give_nan_on_an_empty_row():
    """Issue 16, item 6: a finite fill does give NaN on an empty row when the precision
    stores it as −inf (−1e9 in float16); the caption says which pairs, from the grid."""
    pairs = nan_pairs("custom", 8, 1.0, cells=((0, 0),))
    assert ("-1e9", "float16") in pairs  # the case the old sentence denied
    # at logit size 1 the only NaN rows are the empty row, and every precision NaNs −inf
    assert all(p[0] == p[1] == 1 for p in pairs.values())
    others = sorted(d for f, d in pairs if f != "-inf")
    assert {d for f, d in pairs if f == "-inf"} == set(DTYPES)
    caption = fill_caption(mask="custom", custom="0-0")
    assert "never give NaN" not in caption
    expected = "; ".join(
        [f"{named('-inf')} in every precision"]
        + [f"{named(f)} in {d}" for f, d in pairs if f != "-inf"]
    )
    assert f"NaN here: {expected}." in caption
    for dtype in others:  # each finite fill that NaNs is stored as −inf there
        fill = next(f for f, d in pairs if d == dtype and f != "-inf")
        assert math.isinf(stored_fill(fill, DTYPES[dtype]))
        assert f"{named(fill)} in {dtype}: finite on paper, but stored as −inf" in caption
    assert "This mask leaves 1 row with no allowed key" in caption


def test_fill_grid_caption_without_empty_rows_and_with_overflowing_scores():
    assert nan_pairs("causal", 8, 1.0) == {}
    caption = fill_caption()
    assert "No fill gives NaN here." in caption and "keeps at least one allowed key" in caption
    # logit size 30000: float16 scores pass 65504 and come out ±inf, NaN whatever the fill
    pairs = nan_pairs("causal", 8, 30000.0)
    assert {d for _, d in pairs} == {"float16"} and len(pairs) == len(FILLS)
    assert all(rows > empty_rows for rows, empty_rows in pairs.values())
    caption = fill_caption(logit_size="30000")
    assert "NaN here: every fill in float16." in caption
    big = fig.fmt_value(torch.finfo(torch.float16).max)
    assert f"({big} in float16)" in caption


def test_fill_summary_leak_share_comes_from_the_weights():
    keep = build_mask("causal", 8)
    q, k, v = demo_qkv(1, 8, 8)
    top = 0.0
    for dt in DTYPES.values():
        w = apply_fill(q, k, v, keep, "-1e4", dt, logit_size=10000.0).weights.double()
        top = max(top, float((w * (~keep).double()).sum(-1).max()))
    text = fig.fill_summary(fill_outcomes(q, k, v, keep, DTYPES, logit_size=10000.0))
    assert f"Forbidden keys leak (up to {top:.0%} of a row) with −1e4 in every precision" in text
    text = fig.fill_summary(fill_outcomes(q, k, v, keep, DTYPES, logit_size=1.0))
    assert "No fill leaks at this logit size." in text


def leak_rows(T: int, dtype: str):
    """Rows of the causal mask with forbidden keys, their leaked weight, and which rows
    have a future score beating the best allowed one by more than the stored fill."""
    keep = build_mask("causal", T)
    q, k, v = demo_qkv(1, T, T)
    dt = DTYPES[dtype]
    r = apply_fill(q, k, v, keep, "-1e4", dt, logit_size=10000.0)
    w = r.weights[0].double()  # what the plain weights chart draws
    leak = (w * (~keep[0]).double()).sum(-1)  # (T,)
    s = (q[0] @ k[0].T / math.sqrt(q.shape[-1]) * 10000.0).to(dt).double()  # (T, T)
    fill = stored_fill("-1e4", dt)
    best_future = s.masked_fill(keep[0], -math.inf).amax(-1)
    best_allowed = s.masked_fill(~keep[0], -math.inf).amax(-1)
    rows = [i for i in range(T) if (~keep[0][i]).any()]
    beats = [i for i in rows if best_future[i] + fill > best_allowed[i]]
    return rows, leak, beats, fill


@pytest.mark.parametrize(("T", "dtype"), [(8, "float32"), (48, "float16"), (2, "bfloat16")])
def test_leak_suggestion_counts_rows_and_shares_from_the_chart_tensors(T, dtype):
    """Issue 16, item 7: at the defaults 2 of the 7 rows with forbidden keys leak about
    100 % and the others nothing; the suggestion says so, from the same weights."""
    rows, leak, beats, fill = leak_rows(T, dtype)
    at = run_page(PAGE, reveal=True, step="Weights", tokens=str(T), dtype=dtype)
    no_exception(at)
    text = next(m.value for m in at.markdown if "Causal mask, fill -1e4" in m.value)
    text = text.split("**Causal mask, fill -1e4, logit size 10000** — ")[1].split("\n")[0]
    assert "grab most of the weight" not in text
    if not beats:
        top = max(float(leak[i]) for i in rows)
        assert f"no row with forbidden keys ({len(rows)} of them)" in text
        assert (f"more than {top:.1g}" in text) if top else ("leaks anything" in text)
        return
    hit = [float(leak[i]) for i in beats]
    lo, hi = f"{min(hit):.0%}", f"{max(hit):.0%}"
    share = lo if lo == hi else f"{lo}–{hi}"
    queries = ", ".join(map(str, beats))
    assert (
        f"{len(beats)} of the {len(rows)} rows with forbidden keys (query {queries}) put "
        f"{share} of their weight on future keys" in text
    )
    rest = [float(leak[i]) for i in rows if i not in beats]
    if rest:
        most = max(rest)
        tail = f"leak at most {most:.1g}" if most else "leak nothing"
        assert f"the other {len(rest)} {tail}" in text
    assert all(float(leak[i]) > 0.5 for i in beats)  # the outrun rows are the leaking ones
    assert f"by more than {-fill:g}" in text


def test_empty_row_notice_follows_the_fill_and_precision():
    for fill, dtype in (("-inf", "float32"), ("-1e9", "float16"), ("-1e9", "float32")):
        pairs = nan_pairs("custom", 8, 1.0, cells=((0, 0),))
        at = run_page(
            PAGE, reveal=True, step="Weights", mask="custom", custom="0-0", fill=fill, dtype=dtype
        )
        no_exception(at)
        note = next(i.value for i in at.info if "no key at all" in i.value)
        stored = fig.fmt_value(stored_fill(fill, DTYPES[dtype]))
        assert f"with the fill {fill} (stored as {stored} in {dtype})" in note
        if (fill, dtype) in pairs:
            assert "returns NaN there" in note
        else:
            assert "spreads the row's weight over forbidden keys" in note


def test_fill_explanation_and_help_numbers_are_float16s_own():
    at = run_page(PAGE, reveal=True, step="Fill")
    no_exception(at)
    body = explanations(at)[0].markdown[0].value
    top = torch.finfo(torch.float16).max
    assert f"tops out at {top:,.0f}" in body
    low = torch.tensor(torch.finfo(torch.float16).min, dtype=torch.float16)
    edges = [s for s in range(-64, 1) if torch.isinf(low + torch.tensor(float(s)).half())]
    assert min_fill_overflow(torch.float16) == max(edges)
    assert f"a score of {max(edges):g} or below".replace("-", "−") in body
    assert not torch.isinf(low + torch.tensor(max(edges) + 1.0).half())
    help_text = at.radio(key="fill").help
    assert f"{torch.finfo(torch.float16).min:,.0f}".replace("-", "−") in help_text


def test_safe_path_caption_admits_rows_whose_scores_overflowed():
    keep = build_mask("causal", 8)
    q, k, v = demo_qkv(1, 8, 8)
    s = (q[0] @ k[0].T / math.sqrt(q.shape[-1]) * 30000.0).to(torch.float16)  # (T, T)
    plus_inf = (torch.isposinf(s) & keep[0]).any(-1)  # rows holding +inf among allowed keys
    r = apply_fill(q, k, v, keep, "-inf", torch.float16, logit_size=30000.0)
    assert torch.equal(torch.isnan(r.safe_weights[0]).any(-1), plus_inf)
    n = int(plus_inf.sum())
    assert n > 0
    at = run_page(PAGE, reveal=True, step="Weights", logit_size="30000", dtype="float16")
    no_exception(at)
    cap = next(c.value for c in at.caption if c.value.startswith("The same scores masked"))
    assert f"Except {n} row{'s' * (n != 1)} holding a score that is already +inf" in cap
    at = run_page(PAGE, reveal=True, step="Weights")
    cap = next(c.value for c in at.caption if c.value.startswith("The same scores masked"))
    assert "Except" not in cap and "whatever the fill" in cap
