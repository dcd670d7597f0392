"""Lab autograd, part 4: finite differences as the third witness."""

from __future__ import annotations

import pytest
import torch

from workshop.labs.autograd.finite_diff import (
    ROWS_PAD,
    ROWS_REAL,
    TOLERANCE,
    HandHeadLoss,
    pick_rows,
    run_gradchecks,
)
from workshop.minigpt.model import PAD_ID


def small_inputs():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 8, generator=gen, dtype=torch.float64)
    W = torch.randn(11, 8, generator=gen, dtype=torch.float64)
    b = torch.randn(11, generator=gen, dtype=torch.float64)
    t = torch.tensor([3, 1, PAD_ID, 7, 10, 2])
    return x, W, b, t


def test_hand_function_passes_full_gradcheck():
    x, W, b, t = small_inputs()
    inputs = tuple(v.clone().requires_grad_() for v in (x, W, b))
    assert torch.autograd.gradcheck(lambda x, W, b: HandHeadLoss.apply(x, W, b, t), inputs)


def wrong_bias(factor: float):
    """The hand loss with its bias gradient scaled by `factor`: a gradient off by (factor - 1)."""

    class WrongBias(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, W, b, t):
            return HandHeadLoss.forward(ctx, x, W, b, t)

        @staticmethod
        def backward(ctx, grad):
            dx, dW, db, _ = HandHeadLoss.backward(ctx, grad)
            return dx, dW, db * factor, None

    return WrongBias


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("factor", [5.0, 1.01])
def test_gradcheck_at_the_labs_tolerance_catches_a_wrong_bias_gradient(fast_mode, factor):
    """The lab's TOLERANCE (gradcheck's defaults) is tight enough to fail a db off by 1%, in both modes."""
    x, W, b, t = small_inputs()
    inputs = (x, W, b.clone().requires_grad_())
    assert not torch.autograd.gradcheck(
        lambda x, W, b: wrong_bias(factor).apply(x, W, b, t),
        inputs,
        fast_mode=fast_mode,
        raise_exception=False,
        **TOLERANCE,
    )


def test_pick_rows_takes_real_then_pad():
    t = torch.tensor([[5, 6, 7, 8, 9, 4, 3, PAD_ID, PAD_ID, PAD_ID]])
    rows = pick_rows(t)
    assert rows.tolist() == [0, 1, 2, 3, 4, 5, 7, 8] and len(rows) == ROWS_REAL + ROWS_PAD
    with pytest.raises(ValueError, match="need 6 real and 2 <pad>"):
        pick_rows(t[:, :7])


def test_run_gradchecks_all_pass_on_a_small_head():
    gen = torch.Generator().manual_seed(2)
    hidden = torch.randn(2, 6, 8, generator=gen)
    targets = torch.tensor([[1, 2, 3, 4, PAD_ID, PAD_ID], [5, 6, 7, PAD_ID, PAD_ID, PAD_ID]])
    W, b = torch.randn(11, 8, generator=gen), torch.randn(11, generator=gen)
    records = run_gradchecks(hidden, targets, W, b)
    assert len(records) == 4 and {r.gradient for r in records} == {"hand", "autograd"}
    assert all(r.passed for r in records), records
    assert {r.fast_mode for r in records} == {False, True}
