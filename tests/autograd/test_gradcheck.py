"""Lab autograd, part 4: finite differences as the third witness, of autograd and of each exercise's function."""

from __future__ import annotations

import pytest
import torch

from tests.autograd import wrong_solutions as w
from workshop.labs.autograd.finite_diff import (
    ROWS_PAD,
    ROWS_REAL,
    gradcheck_autograd,
    gradcheck_cross_entropy,
    gradcheck_linear,
    head_slice,
    pick_rows,
)
from workshop.labs.autograd.hand_grads import cross_entropy_grad, linear_grads
from workshop.minigpt.model import PAD_ID


@pytest.fixture(scope="module")
def head():
    """A small head (V = 11, C = 8) with the lab's slice of 6 real and 2 <pad> rows."""
    gen = torch.Generator().manual_seed(2)
    hidden = torch.randn(2, 6, 8, generator=gen)
    targets = torch.tensor([[1, 2, 3, 4, PAD_ID, PAD_ID], [5, 6, 7, PAD_ID, PAD_ID, PAD_ID]])
    W, b = torch.randn(11, 8, generator=gen), torch.randn(11, generator=gen)
    return head_slice(hidden, targets, W, b)


@pytest.fixture(scope="module")
def G(head):
    return torch.randn(
        (head["x"].shape[0], head["W"].shape[0]),
        generator=torch.Generator().manual_seed(0),
        dtype=torch.float64,
    )


def test_autograd_and_the_reference_functions_pass_every_gradcheck(head, G):
    records = (
        gradcheck_autograd(head)
        + gradcheck_cross_entropy("cross_entropy_grad", cross_entropy_grad, head)
        + gradcheck_linear("linear_grads", linear_grads, head, G)
    )
    assert [r["gradient"] for r in records] == ["autograd"] * 2 + ["cross_entropy_grad"] * 2 + [
        "linear_grads"
    ] * 2
    assert all(r["passed"] for r in records), records
    assert [r["fast_mode"] for r in records] == [False, True] * 3
    assert records[2]["n_probed"] == 2 * 11  # every logit of one real and one <pad> row


def scaled_db(factor):
    def linear(dlogits, x, W):
        dW, db, dx = linear_grads(dlogits, x, W)
        return dW, db * factor, dx

    return linear


@pytest.mark.parametrize("factor", [5.0, 1.01])
def test_gradcheck_at_the_labs_tolerance_catches_a_bias_gradient_off_by_one_percent(
    head, G, factor
):
    """The lab's TOLERANCE (gradcheck's defaults) fails a db off by 1%, in full and in fast mode."""
    records = gradcheck_linear("linear_grads", scaled_db(factor), head, G)
    assert not any(r["passed"] for r in records), records


@pytest.mark.parametrize(
    "wrong", [w.ce_mask_dropped, w.ce_sign_flipped, w.ce_sum_not_mean], ids=lambda f: f.__name__
)
def test_a_wrong_dlogits_fails_the_finite_differences_of_lm_loss(head, wrong):
    """(With one real row in the full-mode pair, a sum is its mean: the fast mode over every row tells them apart.)"""
    assert not all(r["passed"] for r in gradcheck_cross_entropy("cross_entropy_grad", wrong, head))


def test_pick_rows_takes_real_then_pad():
    t = torch.tensor([[5, 6, 7, 8, 9, 4, 3, PAD_ID, PAD_ID, PAD_ID]])
    rows = pick_rows(t)
    assert rows.tolist() == [0, 1, 2, 3, 4, 5, 7, 8] and len(rows) == ROWS_REAL + ROWS_PAD
    with pytest.raises(ValueError, match="need 6 real and 2 <pad>"):
        pick_rows(t[:, :7])
