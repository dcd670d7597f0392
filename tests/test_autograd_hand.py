"""Lab autograd, part 1: the hand-derived LM-head gradients."""

from __future__ import annotations

import pytest
import torch

from workshop.labs.autograd.hand_grads import (
    autograd_forward_backward,
    compare,
    hand_forward_backward,
    tf32,
)
from workshop.minigpt.model import PAD_ID


def small_problem(dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(3, 5, 8, generator=gen, dtype=dtype, requires_grad=True)  # (B, T, C)
    W = torch.randn(11, 8, generator=gen, dtype=dtype, requires_grad=True)  # (V, C)
    b = torch.randn(11, generator=gen, dtype=dtype, requires_grad=True)
    targets = torch.randint(1, 11, (3, 5), generator=gen)
    targets[0, 3:] = PAD_ID  # padded positions must contribute nothing
    return x, W, b, targets


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-14), (torch.float32, 1e-6)])
def test_hand_gradients_match_autograd(dtype, tol):
    x, W, b, t = small_problem(dtype)
    errors = compare(hand_forward_backward(x, W, b, t), autograd_forward_backward(x, W, b, t))
    assert set(errors) == {"loss", "logits", "W", "b", "x"}
    for name, e in errors.items():
        assert e["max_abs_error"] <= tol * max(1.0, e["max_abs_value"]), (name, e)


def test_padded_rows_get_no_gradient_and_do_not_count():
    x, W, b, t = small_problem()
    hand = hand_forward_backward(x, W, b, t)
    assert torch.all(hand["x"][0, 3:] == 0) and torch.all(hand["logits"][0, 3:] == 0)
    # A real row of dL/dlogits is (softmax - onehot) / N, N = number of real targets: it sums to 0, and at the
    # target column it is (p_target - 1) / N.
    real = (t != PAD_ID).reshape(-1)  # (M,)
    n = int(real.sum())
    G = hand["logits"].reshape(-1, 11)[real]  # (N, V)
    P = torch.softmax(x.detach().reshape(-1, 8)[real] @ W.detach().T + b.detach(), dim=1)  # (N, V)
    t_real = t.reshape(-1)[real][:, None]  # (N, 1)
    assert torch.allclose(G.sum(1), torch.zeros(n, dtype=G.dtype), atol=1e-15)
    assert torch.allclose(G.gather(1, t_real), (P.gather(1, t_real) - 1) / n, atol=1e-15)


def test_hand_gradients_use_no_autograd():
    x, W, b, t = small_problem()
    out = hand_forward_backward(x, W, b, t)
    assert all(v.grad_fn is None for v in out.values())
    assert x.grad is None and W.grad is None


def test_a_wrong_formula_is_caught():
    """The comparison can fail: forgetting the 1/N of the mean shows up at once."""
    x, W, b, t = small_problem()
    hand = hand_forward_backward(x, W, b, t)
    n = int((t != PAD_ID).sum())
    wrong = {**hand, "W": hand["W"] * n}
    assert compare(wrong, autograd_forward_backward(x, W, b, t))["W"]["max_abs_error"] > 1e-3


def test_bad_input_is_named():
    x, W, b, t = small_problem()
    with pytest.raises(ValueError, match="disagree on the leading dims"):
        hand_forward_backward(x, W, b, t[:, :4])
    with pytest.raises(ValueError, match="must be \\(V, C\\)"):
        hand_forward_backward(x, W[:, :7], b, t)
    with pytest.raises(ValueError, match="every target is <pad>"):
        hand_forward_backward(x, W, b, torch.full_like(t, PAD_ID))


def test_tf32_context_restores_the_flags_even_on_error():
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    with pytest.raises(RuntimeError), tf32(not before[0]):
        assert torch.backends.cuda.matmul.allow_tf32 == (not before[0])
        assert torch.backends.cudnn.allow_tf32 == (not before[0])
        raise RuntimeError("boom")
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cuda_hand_gradients_with_tf32_off(dtype):
    from workshop.labs.autograd.batch import leaves, load_batch

    batch = load_batch("cuda")
    t = leaves(batch, dtype)
    with tf32(False):
        errors = compare(
            hand_forward_backward(t["x"], t["W"], t["b"], batch.targets),
            autograd_forward_backward(t["x"], t["W"], t["b"], batch.targets),
        )
    for name in ("logits", "W", "b", "x"):
        assert errors[name]["max_abs_error"] <= 1e-7, (name, errors[name])
