"""Softmax variants and the Jacobian against autograd."""

import pytest
import torch
from torch.autograd.functional import jacobian

from attn_core import entropy, naive_softmax, softmax_jacobian, stable_softmax


@pytest.mark.parametrize("shape", [(1,), (5,), (3, 7), (2, 3, 4)])
def test_jacobian_matches_autograd(shape):
    x = torch.randn(*shape, dtype=torch.float64)
    J = softmax_jacobian(torch.softmax(x, -1))
    flat = x.reshape(-1, shape[-1])
    for i, row in enumerate(flat):
        ref = jacobian(lambda r: torch.softmax(r, -1), row)
        torch.testing.assert_close(J.reshape(-1, shape[-1], shape[-1])[i], ref)


def test_jacobian_vanishes_when_saturated():
    p = torch.softmax(torch.tensor([0.0, 24.0], dtype=torch.float64), -1)
    J = softmax_jacobian(p)
    # the two-key gradient α(1-α) at gap 24: about 3.8e-11
    assert 3.0e-11 < float(J[0, 0]) < 4.5e-11
    p = torch.softmax(torch.tensor([0.0, 3.0], dtype=torch.float64), -1)
    assert abs(float(softmax_jacobian(p)[0, 0]) - 0.045) < 0.001


def test_stable_matches_torch_and_naive_overflows():
    x = torch.tensor([100.0, 101.0, 102.0])
    assert torch.isnan(naive_softmax(x)).all()
    torch.testing.assert_close(stable_softmax(x), torch.softmax(x, -1))
    torch.testing.assert_close(stable_softmax(x), torch.softmax(x - 102, -1))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_stable_softmax_every_dtype(dtype):
    x = torch.randn(4, 9, dtype=torch.float64) * 5
    ref = torch.softmax(x, -1)
    torch.testing.assert_close(stable_softmax(x.to(dtype)).double(), ref, atol=1e-2, rtol=1e-2)


def test_stable_softmax_all_masked_row_is_zero():
    x = torch.tensor([[float("-inf")] * 3, [0.0, float("-inf"), 1.0]])
    p = stable_softmax(x)
    assert torch.equal(p[0], torch.zeros(3))
    torch.testing.assert_close(p[1].sum(), torch.tensor(1.0))


def test_naive_and_stable_agree_in_range():
    x = torch.randn(10, 6, dtype=torch.float64)
    torch.testing.assert_close(naive_softmax(x), stable_softmax(x))


def test_entropy_limits():
    n = 8
    assert (
        abs(float(entropy(torch.full((n,), 1.0 / n))) - torch.log(torch.tensor(8.0)).item()) < 1e-6
    )
    assert float(entropy(torch.eye(n)[0])) == 0.0
