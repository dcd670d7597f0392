"""The grader's own pieces of the op, computed by PyTorch: what stands in for the pieces a learner's exercise does not
write, in the operator that exercise is graded in (learner_op.py).

Not the reference's pieces: in the learner edition those are stubs (the reference of every exercise is), and a
piece graded next to them could not be graded at all; nor copies of them (the edition checks that no reference's
body is left in its code). These are PyTorch's softmax and its backward, laid out as the op lays its output out
(softmax_op._empty_result), and the autograd pieces that go with them. Each
body takes `wrap` like the op's own (torch.library.wrap_triton in a triton_op's body) and ignores it: PyTorch's ops
need no wrapping to be traced.
"""

import torch

from workshop.ops import softmax_op


def forward(x: torch.Tensor, dim: int = -1, wrap=None) -> torch.Tensor:
    """y = softmax(x, dim) by torch, in the op's layout."""
    dim = softmax_op.check_input(x, dim)
    y = softmax_op._empty_result(x, dim)[0]
    return y.copy_(torch.softmax(x, dim))


def backward(y: torch.Tensor, dy: torch.Tensor, dim: int, wrap=None) -> torch.Tensor:
    """dx = y * (dy - sum(dy * y, dim)) by torch (aten's softmax backward), in the op's layout."""
    dim = softmax_op.check_input(y, dim, "y")
    dx = softmax_op._empty_result(y, dim)[0]
    return dx.copy_(torch.ops.aten._softmax_backward_data(dy, y, dim, y.dtype))


def fake(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The op's output for x, empty, as its implementation allocates it (softmax_op._empty_result)."""
    return softmax_op._empty_result(x, dim)[0]


def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
    """Leaves on ctx what the backward exercise's statement says a backward finds there: y saved (the output,
    which stays differentiable for a second backward) and dim."""
    ctx.save_for_backward(output)
    ctx.dim = inputs[1]  # inputs: (x, dim)


def gradients(ctx, dy: torch.Tensor) -> tuple:
    """(dx, None), dx by the twin's backward operator (ctx.ops.backward: its kernel, a learner's or `backward`)."""
    return ctx.ops.backward(*ctx.saved_tensors, dy, ctx.dim), None


def gradients_by_torch(ctx, dy: torch.Tensor) -> tuple:
    """(dx, None) by aten's softmax backward, for an op registered without a backward operator of its own."""
    (y,) = ctx.saved_tensors
    return torch.ops.aten._softmax_backward_data(dy, y, ctx.dim, y.dtype), None
