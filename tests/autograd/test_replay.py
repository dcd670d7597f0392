"""Lab autograd, part 3: the hand-made backward engine, on the LM head and on other graphs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from workshop.labs.autograd.replay import (
    backpropagate,
    dependencies,
    engine_order,
    is_topological,
    record_engine_order,
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


def replayed(output: torch.Tensor, grad_output: torch.Tensor | None = None):
    """The reference engine's two halves on output's graph, grad mode off as in the engine without create_graph:
    (the nodes in the order they ran, leaf -> dL/dleaf). .grad and the graph are left untouched."""
    order = engine_order(output.grad_fn)
    with torch.no_grad():
        grads = backpropagate(
            order, torch.ones_like(output) if grad_output is None else grad_output
        )
    return order, grads


def test_second_graph_matches_backward_bit_for_bit():
    y, leaves = fan_out_graph()
    _order, ours = replayed(y)
    y.backward()
    for leaf in leaves:
        assert torch.equal(ours[leaf], leaf.grad)


def test_second_graph_matches_autograd_grad_independently():
    y, (a, B, c) = fan_out_graph()
    _order, ours = replayed(y)
    expected = torch.autograd.grad(y, (a, B, c))
    for got, want in zip((ours[a], ours[B], ours[c]), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-12)


def test_fan_in_is_counted_and_summed():
    a = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = (a * a).sum() + a.sin().sum()  # da = 2a + cos(a)
    deps = dependencies(y.grad_fn)
    accumulate = next(n for n in deps if type(n).__name__ == "AccumulateGrad")
    assert deps[accumulate] == 3  # MulBackward0 sends two gradients (self, other), SinBackward0 one
    torch.testing.assert_close(replayed(y)[1][a], 2 * a.detach() + a.detach().cos())


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
    order, ours = replayed(loss)
    assert record_engine_order(loss) == order
    for leaf in (x, W, b):
        assert ours[leaf].shape == leaf.shape
        assert torch.equal(ours[leaf], leaf.grad)


def test_replay_leaves_grad_and_graph_untouched():
    y, (a, B, c) = fan_out_graph()
    replayed(y)
    assert a.grad is None and B.grad is None
    replayed(y)  # the graph is still there: the saved tensors were not freed
    y.backward()


def test_a_non_scalar_output_takes_its_grad_output():
    a = torch.randn(3, requires_grad=True)
    torch.testing.assert_close(replayed(a * 2, torch.ones(3))[1][a], torch.full((3,), 2.0))


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
    order, ours = replayed(y)
    assert record_engine_order(y) == order
    for leaf in leaves:
        torch.testing.assert_close(ours[leaf], leaf.grad, rtol=0, atol=1e-12)
