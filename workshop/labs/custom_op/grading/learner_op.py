"""The operator a learner's piece is graded in, `graded_<exercise>::softmax`: the learner's piece for that exercise
and the grader's own stand-ins for the rest (stand_ins.py: PyTorch's softmax and its backward, in the op's layout),
registered by hand (by_hand.py) as a custom_op or a triton_op.

Why a twin per exercise: each piece is graded alone (a wrong forward kernel cannot fail the grading of the fake),
torch.ops.workshop.softmax is never touched, and no check takes its truth from a reference (in the learner edition
the references are stubs). The dispatcher, autograd, fake tensors, opcheck and torch.compile see the learner's
piece where the op's own would sit. A plain run grades the reference pieces through the same twins.

Before a piece goes in, it is checked for what would otherwise fail far from the learner's code: a kernel that is
not a @triton.jit function (a Python fallback would launch nothing) or whose parameters differ from the launch's,
and a backward that returns the wrong number of gradients.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path

import torch
import triton

from workshop.grading import workspace
from workshop.i18n import _
from workshop.lab import LabContext, Unavailable
from workshop.labs.custom_op import by_hand
from workshop.labs.custom_op.grading import stand_ins
from workshop.ops import softmax_op
from workshop.ops.softmax_op import SoftmaxOps

CONSTEXPRS = ("ROWS", "BLOCK_N", "ALIGN")


def twin(exercise: str, kind: str, **piece) -> SoftmaxOps:
    """torch.ops.graded_<exercise>.softmax{,_backward}: the learner's piece, one of forward_kernel, backward_kernel,
    fake, setup_context or backward, and the grader's stand-ins (PyTorch's) for the rest, registered by hand as
    `kind` (registered again at each grading: the namespace's earlier operators go)."""
    bodies = stand_in_bodies()
    ((name, value),) = piece.items()
    if name == "forward_kernel":
        forward = functools.partial(_launching, value)
        bodies = dataclasses.replace(bodies, forward=forward, kernels=(value,))
    elif name == "backward_kernel":
        backward = functools.partial(_launching_backward, value)
        bodies = dataclasses.replace(bodies, backward=backward, kernels=(value,))
    else:
        bodies = dataclasses.replace(bodies, **{{"backward": "gradients"}.get(name, name): value})
    return by_hand.define(f"graded_{exercise}::softmax", kind, bodies)


def stand_in_bodies() -> by_hand.Bodies:
    return by_hand.Bodies(
        stand_ins.forward,
        stand_ins.backward,
        stand_ins.fake,
        stand_ins.setup_context,
        stand_ins.gradients,
    )


def _launching(kernel, x, dim=-1, wrap=None):
    """The op's implementation with the learner's one-pass forward kernel."""
    return softmax_op.forward_kernel(x, dim, kernel, wrap)


def _launching_backward(kernel, y, dy, dim, wrap=None):
    """The backward operator's implementation with the learner's one-pass backward kernel."""
    return softmax_op.backward_kernel(y, dy, dim, kernel, wrap)


def loaded(impl):
    """impl itself, or the reason the learner's file could not give it, raised (LabContext records it)."""
    if isinstance(impl, Unavailable):
        raise impl.error
    return impl


class KernelMismatch(Exception):
    """The learner's kernel cannot be launched as the op launches its reference: what it is (`value`) against
    what the launch needs (`expected`), and why, in the message."""

    def __init__(self, value: str, expected: str, message: str):
        super().__init__(message)
        self.value, self.expected = value, expected


def check_kernel(kernel, reference, attribute: str) -> None:
    """A @triton.jit function with the reference's parameters, ROWS, BLOCK_N and ALIGN constexpr."""
    if not isinstance(kernel, triton.runtime.KernelInterface):
        raise KernelMismatch(
            type(kernel).__name__,
            _("a @triton.jit kernel"),
            _(
                "{name} is a {kind}, not a Triton kernel: the op launches it as kernel[grid](...), so a Python "
                "function (a fallback to torch.softmax, say) would run nothing on the device. Decorate it with "
                "@triton.jit and compute with tl.load, tl.max, tl.exp, tl.sum and tl.store."
            ).format(name=attribute, kind=type(kernel).__name__),
        )
    params = inspect.signature(kernel.fn).parameters
    expected = inspect.signature(reference.fn).parameters
    if list(params) != list(expected):
        got, want = ", ".join(params), ", ".join(expected)
        raise KernelMismatch(
            f"({got})",
            f"({want})",
            _("{name}'s parameters are ({got}); the launch passes ({want}), in this order.").format(
                name=attribute, got=got, want=want
            ),
        )
    plain = [n for n in CONSTEXPRS if "constexpr" not in str(params[n].annotation)]
    if plain:
        raise KernelMismatch(
            _("{names} not constexpr").format(names=", ".join(plain)),
            _("ROWS, BLOCK_N, ALIGN: tl.constexpr"),
            _(
                "{names} must be annotated `: tl.constexpr`: they are compile-time constants "
                "(tl.arange needs them known when the kernel is compiled)."
            ).format(names=", ".join(plain)),
        )


class GradientCount(Exception):
    """The learner's backward did not return (dx, None), dx shaped like dy: what it returned instead (`what`),
    and where that backward is defined (`where`)."""

    # Kept in args: autograd's engine re-raises an error from a backward as a new one made from its args.
    @property
    def what(self) -> str:
        return self.args[0]

    @property
    def where(self) -> str:
        return self.args[1]


def counted(backward):
    """The learner's backward, made to raise GradientCount saying what it returned when that is not (dx, None)
    with dx of dy's shape and dtype, instead of autograd's 'returned an incorrect number of gradients (expected 3,
    got 5)' (a returned tensor unpacks by rows) or its error for a gradient of a non-tensor input."""
    where = defined_at(backward)

    def checked(ctx, dy):
        grads = backward(ctx, dy)
        if not isinstance(grads, tuple | list):
            raise GradientCount(_("a single {kind}").format(kind=type(grads).__name__), where)
        if len(grads) != 2:
            what = _("a {kind} of {n}").format(kind=type(grads).__name__, n=len(grads))
            raise GradientCount(what, where)
        dx = grads[0]
        if not isinstance(dx, torch.Tensor) or dx.shape != dy.shape or dx.dtype != dy.dtype:
            got = (
                f"{tuple(dx.shape)} {dx.dtype}"
                if isinstance(dx, torch.Tensor)
                else type(dx).__name__
            )
            what = _("a pair whose dx is {got}, where x is {shape} {dtype}").format(
                got=got, shape=tuple(dy.shape), dtype=dy.dtype
            )
            raise GradientCount(what, where)
        if grads[1] is not None:
            what = _(
                "a pair whose second entry, the gradient for dim (an int), is a {kind}"
            ).format(kind=type(grads[1]).__name__)
            raise GradientCount(what, where)
        return grads

    return checked


def defined_at(function) -> str:
    """'my-work/custom_op.py:57': where a function is defined (its module when its source cannot be read)."""
    try:
        first = inspect.getsourcelines(function)[1]
        return f"{workspace.display(Path(inspect.getsourcefile(function)))}:{first}"
    except (OSError, TypeError):
        return getattr(function, "__module__", "?")


def source_file(ctx: LabContext, reference_module) -> Path:
    """Where the graded code lives: the learner's custom_op.py, or the reference's module in a plain run."""
    if ctx.graded:
        return workspace.lab_file(ctx.work, ctx.name)
    return Path(inspect.getsourcefile(reference_module))
