"""assets/model_knobs.json: the task scores /model's Knobs step quotes for every visitor,
shipped so that no rerun pays for them, against what the code measures now."""

import pytest
import torch

from attn_core.lessons import model as M

from .test_tasks import minilm_only


@minilm_only
@pytest.mark.parametrize("name", list(M.REFERENCE_KNOBS))
def test_each_shipped_score_is_what_the_model_gives_now(name):
    knobs = M.REFERENCE_KNOBS[name]
    shipped = M.shipped_similarity(M.MINILM, **knobs)
    fresh = M.similarity(M.load_model(), **knobs)
    # cosines of unit vectors in float32: another CPU's sums differ in the 7th digit
    torch.testing.assert_close(shipped.para, fresh.para, atol=1e-5, rtol=0)
    torch.testing.assert_close(shipped.unrel, fresh.unrel, atol=1e-5, rtol=0)
    # a ranking flips only across a near tie, each flip moving the score by 1/48²
    assert shipped.auc == pytest.approx(fresh.auc, abs=3 / 48**2)
    assert shipped.triples == pytest.approx(fresh.triples, abs=1 / 48)


def test_only_the_reference_settings_of_the_shipped_model_are_shipped():
    assert M.shipped_similarity(M.MINILM, temperature=2.0) is None
    assert M.shipped_similarity(M.MINILM, ablate=[(0, 1)]) is None
    assert M.shipped_similarity("gpt2") is None
    own = M.shipped_similarity(M.MINILM, scaled=True, temperature=1.0, ablate=(), causal=False)
    assert own is not None and own.para.shape == own.unrel.shape == (48,)
    assert torch.equal(M.shipped_similarity(M.MINILM).para, own.para)  # causal=None: own
