"""Lab autograd, part 3: the hand-made backward engine, on the LM head and on other graphs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from workshop.labs.autograd.replay import (
    dependencies,
    engine_order,
    is_topological,
    record_engine_order,
    replay_backward,
)
from workshop.minigpt.model import lm_loss


def fan_out_graph(device="cpu"):
    """Not the LM head: a used four times (fan-out, so gradients must be summed), tanh and exp non-linear,
    a matmul with broadcasting, and an unbind whose backward takes several gradients, one of them never sent."""
    gen = torch.Generator().manual_seed(1)
    a, B, c = (
        torch.randn(*shape, generator=gen, dtype=torch.float64).to(device).requires_grad_()
        for shape in ((4, 3), (3, 5), (5,))
    )
    h = torch.tanh(a) * a  # a twice
    first, second, _unused = h.unbind(
        1
    )  # three gradients for UnbindBackward; the third never arrives
    y = (
        (a @ B + c).exp().sum() + (first * second).sum() + (a * a).mean()
    )  # a twice more, c broadcast
    return y, (a, B, c)


def test_second_graph_matches_backward_bit_for_bit():
    y, leaves = fan_out_graph()
    ours = replay_backward(y)
    y.backward()
    for leaf in leaves:
        assert torch.equal(ours.grad(leaf), leaf.grad)


def test_second_graph_matches_autograd_grad_independently():
    y, (a, B, c) = fan_out_graph()
    ours = replay_backward(y)
    expected = torch.autograd.grad(y, (a, B, c))
    for got, want in zip((ours.grad(a), ours.grad(B), ours.grad(c)), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_fan_in_is_counted_and_summed():
    a = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (a * a).sum() + a.sin().sum()  # da = 2a + cos(a)
    deps = dependencies(y.grad_fn)
    accumulate = next(n for n in deps if type(n).__name__ == "AccumulateGrad")
    assert deps[accumulate] == 3  # MulBackward0 sends two gradients (self, other), SinBackward0 one
    torch.testing.assert_close(replay_backward(y).grad(a), 2 * a.detach() + a.detach().cos())


def test_order_is_topological_and_the_real_engines():
    y, _ = fan_out_graph()
    order = engine_order(y.grad_fn)
    assert is_topological(order, y.grad_fn)
    assert not is_topological(order[::-1], y.grad_fn)
    assert not is_topological(order[:-1], y.grad_fn)
    assert record_engine_order(y) == order


def test_lm_head_replay_is_bit_identical_and_in_engine_order():
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 7, 8, generator=gen, requires_grad=True)
    W = torch.randn(11, 8, generator=gen, requires_grad=True)
    b = torch.randn(
        11, generator=gen, requires_grad=True
    )  # broadcast over rows: the engine must sum it back
    loss = lm_loss(F.linear(x, W, b), torch.randint(0, 11, (2, 7), generator=gen))
    ours = replay_backward(loss)
    assert record_engine_order(loss) == ours.order
    for leaf in (x, W, b):
        assert ours.grad(leaf).shape == leaf.shape
        assert torch.equal(ours.grad(leaf), leaf.grad)


def test_replay_leaves_grad_and_graph_untouched():
    y, (a, B, c) = fan_out_graph()
    replay_backward(y)
    assert a.grad is None and B.grad is None
    replay_backward(y)  # the graph is still there: the saved tensors were not freed
    y.backward()


def test_non_scalar_output_needs_grad_output():
    a = torch.randn(3, requires_grad=True)
    y = a * 2
    with pytest.raises(ValueError, match="give grad_output"):
        replay_backward(y)
    torch.testing.assert_close(replay_backward(y, torch.ones(3)).grad(a), torch.full((3,), 2.0))


def test_clear_errors():
    with pytest.raises(ValueError, match="no grad_fn"):
        replay_backward(torch.ones(()))
    a, other = torch.randn(2, requires_grad=True), torch.randn(2, requires_grad=True)
    with pytest.raises(KeyError, match="no gradient reached"):
        replay_backward(a.sum()).grad(other)


def test_engine_hooks_are_removed_afterwards():
    a = torch.randn(3, requires_grad=True)
    y = (a + 1).sum()  # saves no tensors, so its graph may run backward twice
    ran = record_engine_order(y)
    assert (
        len(ran) == 3
        and type(ran[0]).__name__ == "SumBackward0"
        and type(ran[-1]).__name__ == "AccumulateGrad"
    )
    y.backward()  # had the pre-hooks stayed, this second run would append to `ran`
    assert len(ran) == 3


@pytest.mark.gpu
def test_cuda_replay_matches_the_engine():
    y, leaves = fan_out_graph("cuda")
    ours = replay_backward(y)
    assert record_engine_order(y) == ours.order
    for leaf in leaves:
        torch.testing.assert_close(ours.grad(leaf), leaf.grad, rtol=0, atol=1e-12)
