"""The operator a learner's piece is graded in, `graded_<exercise>::softmax`: the learner's piece for that exercise
and the grader's own stand-ins for the rest (torch_pieces.py: PyTorch's softmax and its backward, in the op's layout),
registered by hand (by_hand.py) as a custom_op or a triton_op.

Why a twin per exercise: each piece is graded alone (a wrong forward kernel cannot fail the grading of the fake),
torch.ops.workshop.softmax is never touched, and no check takes its truth from a reference (in the learner edition
the references are stubs). The dispatcher, autograd, fake tensors, opcheck and torch.compile see the learner's
piece where the op's own would sit. A plain run grades the reference pieces through the same twins.

Before a piece goes in, it is checked for what would otherwise fail far from the learner's code: a kernel that is
not a @triton.jit function (a Python fallback would launch nothing) or whose parameters differ from the launch's,
and a backward that returns the wrong number of gradients.

The twins are built and run in the worker, where the learner's code runs (op_probes.py); what they report is
plain values (op_probes.kernel_signature, pair_problem), which the lab's process judges (exercise_grading's
_launchable, and registration_grading for the backward's).
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import torch

from workshop.labs.custom_op import by_hand
from workshop.labs.custom_op.grading import torch_pieces
from workshop.learner import workspace
from workshop.ops import softmax_op
from workshop.ops.softmax_op import SoftmaxOps


def twin(exercise: str, kind: str, piece) -> SoftmaxOps:
    """torch.ops.graded_<exercise>.softmax{,_backward}: the learner's piece for `exercise`, one of forward_kernel,
    backward_kernel, fake, setup_context or backward, and the grader's stand-ins (PyTorch's) for the rest,
    registered by hand as `kind` (registered again at each grading: the namespace's earlier operators go)."""
    # the grader's stand-ins (by_hand.Bodies' fields), the learner's piece in its place
    bodies = {
        "forward": torch_pieces.forward,
        "backward": torch_pieces.backward,
        "fake": torch_pieces.fake,
        "setup_context": torch_pieces.setup_context,
        "gradients": torch_pieces.gradients,
    }
    if exercise.endswith("_kernel"):
        # the op's implementation (forward_kernel) or its backward operator's (backward_kernel), launching the
        # learner's one-pass kernel
        implementation = functools.partial(getattr(softmax_op, exercise), kernel=piece)
        bodies[exercise.removesuffix("_kernel")] = implementation
        bodies["kernels"] = (piece,)
    else:
        bodies[{"backward": "gradients"}.get(exercise, exercise)] = piece
    return by_hand.define(f"graded_{exercise}::softmax", kind, by_hand.Bodies(**bodies))


class GradientCount(Exception):
    """The learner's backward did not return (dx, None), dx shaped like dy: its args, what it returned instead
    (pair_problem's plain values) and where that backward is defined. Kept in args: autograd's engine re-raises an
    error from a backward as a new one made from its args."""


def counted(backward):
    """The learner's backward, made to raise GradientCount saying what it returned when that is not (dx, None)
    with dx of dy's shape and dtype, instead of autograd's 'returned an incorrect number of gradients (expected 3,
    got 5)' (a returned tensor unpacks by rows) or its error for a gradient of a non-tensor input."""
    where = defined_at(backward)

    def checked(ctx, dy):
        grads = backward(ctx, dy)
        problem = pair_problem(grads, dy)
        if problem is not None:
            raise GradientCount(problem, where)
        return grads

    return checked


def pair_problem(grads, dy: torch.Tensor) -> dict | None:
    """What is wrong with a backward's `grads` as (dx, None), as plain values: the problem (a key of
    registration_grading.RETURNED, which says it) and its particulars; None when nothing is."""
    if not isinstance(grads, tuple | list):
        return {"problem": "single", "kind": type(grads).__name__}
    if len(grads) != 2:
        return {"problem": "count", "kind": type(grads).__name__, "n": len(grads)}
    dx = grads[0]
    if not isinstance(dx, torch.Tensor) or dx.shape != dy.shape or dx.dtype != dy.dtype:
        got = f"{tuple(dx.shape)} {dx.dtype}" if isinstance(dx, torch.Tensor) else type(dx).__name__
        return {"problem": "dx", "got": got, "shape": str(tuple(dy.shape)), "dtype": str(dy.dtype)}
    if grads[1] is not None:
        return {"problem": "second", "kind": type(grads[1]).__name__}
    return None


def defined_at(function) -> str:
    """'my-work/custom_op.py:57': where a function is defined (its module when its source cannot be read)."""
    try:
        first = inspect.getsourcelines(function)[1]
        return f"{workspace.display(Path(inspect.getsourcefile(function)))}:{first}"
    except (OSError, TypeError):
        return getattr(function, "__module__", "?")
