"""Lab autograd, part 1: the hand-derived LM-head gradients."""

from __future__ import annotations

import pytest
import torch

from workshop.labs.autograd.hand_grads import (
    GRADIENTS,
    OUTPUTS,
    autograd_forward_backward,
    cross_entropy_grad,
    linear_grads,
    tf32,
)
from workshop.labs.autograd.precision import error_bound, max_abs_error
from workshop.minigpt.model import PAD_ID


def hand_path(x, W, b, targets) -> dict:
    """The two reference functions chained, as the learner's would be: x (B, T, C), W (V, C), b (V,)."""
    x, W, b = (t.detach() for t in (x, W, b))
    loss, dlogits = cross_entropy_grad(x @ W.T + b, targets)
    return dict(zip(OUTPUTS, (loss, dlogits, *linear_grads(dlogits, x, W)), strict=True))


def small_problem(dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 5, 8, generator=gen, dtype=dtype, requires_grad=True)  # (B, T, C)
    W = torch.randn(11, 8, generator=gen, dtype=dtype, requires_grad=True)  # (V, C)
    b = torch.randn(11, generator=gen, dtype=dtype, requires_grad=True)
    targets = torch.randint(1, 11, (3, 5), generator=gen)
    targets[0, 3:] = PAD_ID  # padded positions must contribute nothing
    return x, W, b, targets


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_hand_gradients_match_autograd_within_the_bound(dtype):
    x, W, b, t = small_problem(dtype)
    hand, auto = hand_path(x, W, b, t), autograd_forward_backward(x, W, b, t)
    for name in GRADIENTS:
        assert max_abs_error(hand[name], auto[name]) <= error_bound(auto[name]), name
    assert max_abs_error(hand["loss"], auto["loss"]) <= error_bound(auto["loss"], atol=float("inf"))


def test_the_bound_is_the_chapters_1e7_or_the_dtypes_scale_whichever_is_tighter():
    big32, small32 = torch.tensor([0.1]), torch.tensor([3.7e-3])
    assert error_bound(big32) == 1e-7  # 64 eps32 x 0.1 = 7.6e-7: the chapter's 1e-7 binds
    assert error_bound(small32) == pytest.approx(64 * 2**-23 * 3.7e-3)  # 2.8e-8: the scale binds
    assert error_bound(torch.tensor([0.1], dtype=torch.float64)) == pytest.approx(64 * 2**-52 * 0.1)


def test_padded_rows_get_no_gradient_and_do_not_count():
    x, W, b, t = small_problem()
    hand = hand_path(x, W, b, t)
    assert torch.all(hand["dx"][0, 3:] == 0) and torch.all(hand["dlogits"][0, 3:] == 0)
    # A real row of dL/dlogits is (softmax - onehot) / N, N = number of real targets: it sums to 0, and at the
    # target column it is (p_target - 1) / N.
    real = (t != PAD_ID).reshape(-1)  # (M,)
    n = int(real.sum())
    G = hand["dlogits"].reshape(-1, 11)[real]  # (N, V)
    P = torch.softmax(x.detach().reshape(-1, 8)[real] @ W.detach().T + b.detach(), dim=1)  # (N, V)
    t_real = t.reshape(-1)[real][:, None]  # (N, 1)
    assert torch.allclose(G.sum(1), torch.zeros(n, dtype=G.dtype), atol=1e-15)
    assert torch.allclose(G.gather(1, t_real), (P.gather(1, t_real) - 1) / n, atol=1e-15)


def test_tf32_context_restores_the_flags_even_on_error():
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    with pytest.raises(RuntimeError), tf32(not before[0]):
        assert torch.backends.cuda.matmul.allow_tf32 == (not before[0])
        assert torch.backends.cudnn.allow_tf32 == (not before[0])
        raise RuntimeError("boom")
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


@pytest.mark.gpu
def test_cuda_hand_gradients_pass_with_tf32_off_and_tf32_shows_against_float64(tmp_path):
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.autograd.batch import load_batch
    from workshop.labs.autograd.lab import check_precision, grade_hand

    ctx = LabContext("autograd", tmp_path, RunOptions("cuda", 1, 0))
    batch = load_batch("cuda")
    with tf32(False):
        _comparisons, hand, _gradchecks = grade_hand(ctx, batch)
        rows = check_precision(ctx, batch, hand)
    assert ctx.checks and all(c.passed for c in ctx.checks), [c for c in ctx.checks if not c.passed]
    assert {(r["path"], r["tf32"]) for r in rows} >= {
        ("autograd", True),
        ("hand vs autograd", True),
    }
