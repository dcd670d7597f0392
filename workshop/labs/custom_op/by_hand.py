"""The op registered by hand, one dispatch key at a time, with torch.library.Library: what `torch.library.custom_op`
and `triton_op` do for you, without the general-purpose Python they put around each call. Two uses: the appendix's
third registration, of the shipped pieces, which the eager-cost ladder compares custom_op and triton_op with
(eager_cost.py); and the operators the exercises grade a learner's piece in, made of that piece and the grader's own
(grading/learner_op.py).

What custom_op registers, and what it adds (torch/_library/custom_ops.py and autograd.py):
- the schema, `lib.define("softmax(Tensor x, SymInt dim=-1) -> Tensor")`: custom_op reads it from the annotations;
- the implementation, `lib.impl(name, fn, "CompositeExplicitAutograd")` (every device): custom_op wraps yours in a
  function that checks that the result aliases no input, itself inside `torch._disable_dynamo`;
- the fake, `torch.library.register_fake`: the same call;
- the autograd kernel, `lib.impl(name, fn, "Autograd", with_keyset=True)`: custom_op's makes, on every call, the
  metadata of an autograd.Function it generated, fills the default arguments back in for setup_context, and
  redispatches below autograd. Here: `SoftmaxFunction.apply` with a gradient to track, else the redispatch;
- for a triton_op, a rule for torch.compile's functionalization (`register_torch_dispatch` with
  FunctionalTensorMode): the body runs, its launches wrapped by `wrap_triton`, instead of a call of the op.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.library import wrap_triton

from workshop.i18n import N_
from workshop.ops import softmax_kernels, softmax_op

AFTER_AUTOGRAD = torch._C._after_autograd_keyset  # the dispatch keys below autograd
KIND = N_("by hand")  # a registration kind, as eager_cost.py names the three


@dataclass(frozen=True)
class Bodies:
    """What an op registered here is made of."""

    forward: Callable  # (x, dim, wrap=None) -> y, the implementation
    backward: Callable  # (y, dy, dim, wrap=None) -> dx, the backward operator's implementation
    fake: Callable  # (x, dim in [0, ndim)) -> the output, empty
    setup_context: Callable  # (ctx, inputs (x, dim), output y) -> None
    gradients: Callable  # (ctx, dy) -> (dx, None), the backward operator through ctx.ops.backward
    kernels: tuple = ()  # the @triton.jit kernels the implementations launch (what a compiled step must run)


def shipped() -> Bodies:
    """torch.ops.workshop.softmax's own pieces (the instructor edition's: the learner edition has stubs)."""
    kernels = (softmax_kernels._fwd_one_pass, softmax_kernels._bwd_one_pass)
    return Bodies(
        softmax_op.forward_kernel,
        softmax_op.backward_kernel,
        softmax_op.empty_output,
        softmax_op.setup_context,
        softmax_op.gradients,
        kernels,
    )


class SoftmaxFunction(torch.autograd.Function):
    """The autograd node of y = softmax(x), from the bodies' setup_context and gradients."""

    @staticmethod
    def forward(ctx, x, dim, ops: softmax_op.SoftmaxOps, bodies: Bodies):
        # Straight to the implementation: autograd is this function.
        with torch._C._AutoDispatchBelowAutograd():
            y = ops.forward(x, dim)
        ctx.ops, ctx.bodies = ops, bodies
        bodies.setup_context(ctx, (x, dim), y)
        return y

    @staticmethod
    def backward(ctx, dy):
        return *ctx.bodies.gradients(ctx, dy), None, None  # None, None: for `ops`, `bodies`


class SoftmaxBackwardFunction(torch.autograd.Function):
    """The autograd node of dx = softmax_backward(y, dy), for double backward."""

    @staticmethod
    def forward(ctx, y, dy, dim, ops: softmax_op.SoftmaxOps):
        with torch._C._AutoDispatchBelowAutograd():
            dx = ops.backward(y, dy, dim)
        ctx.ops, ctx.dim = ops, dim
        ctx.save_for_backward(y, dy)
        return dx

    @staticmethod
    def backward(ctx, g):
        return *softmax_op.gradients_of_backward_op(ctx, g), None


def forward_autograd(ops, bodies, keyset, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if torch.is_grad_enabled() and x.requires_grad:
        return SoftmaxFunction.apply(x, dim, ops, bodies)
    return ops.forward.redispatch(keyset & AFTER_AUTOGRAD, x, dim)


def backward_autograd(ops, keyset, y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
    if torch.is_grad_enabled() and (y.requires_grad or dy.requires_grad):
        return SoftmaxBackwardFunction.apply(y, dy, dim, ops)
    return ops.backward.redispatch(keyset & AFTER_AUTOGRAD, y, dy, dim)


def traced(body, mode, func, types, args, kwargs):
    """Under torch.compile's functionalization (FunctionalTensorMode): run `body`, its Triton launches wrapped by
    wrap_triton, so that the graph holds the kernels instead of a call of the op."""
    if any(
        t not in (torch.Tensor, FunctionalTensor) and not issubclass(t, FakeTensor) for t in types
    ):
        return NotImplemented  # another tensor subclass: let it handle the op
    with mode:
        return body(*args, **kwargs, wrap=wrap_triton)


_libraries = {}  # namespace -> its Library: a Library unregisters its operators when it is garbage-collected


def define(
    qualname: str, kind: str = "custom_op", bodies: Bodies | None = None
) -> softmax_op.SoftmaxOps:
    """Registers `qualname` (softmax) and `qualname + "_backward"` by hand, made of `bodies` (the shipped ones by
    default), as an opaque op ("custom_op") or one torch.compile traces into ("triton_op"). Registering a namespace
    again replaces its operators."""
    bodies = bodies or shipped()
    namespace, name = qualname.split("::")
    if namespace in _libraries:
        _libraries.pop(namespace)._destroy()
    lib = _libraries[namespace] = torch.library.Library(namespace, "FRAGMENT")
    schemas = ("(Tensor x, SymInt dim=-1) -> Tensor", "(Tensor y, Tensor dy, SymInt dim) -> Tensor")
    names = (name, f"{name}_backward")  # the op, and the backward operator its gradient calls
    for op_name, schema in zip(names, schemas, strict=True):
        lib.define(op_name + schema, tags=(torch.Tag.pt2_compliant_tag,))
    ops = softmax_op.SoftmaxOps(
        *(softmax_op.registered(f"{namespace}::{n}") for n in names), kind, bodies.kernels
    )
    implementations = (bodies.forward, bodies.backward)
    fakes = softmax_op.fakes(softmax_op.Pieces(fake=bodies.fake))
    autograds = (
        functools.partial(forward_autograd, ops, bodies),
        functools.partial(backward_autograd, ops),
    )
    for op_name, body, fake, autograd in zip(names, implementations, fakes, autograds, strict=True):
        lib.impl(op_name, body, "CompositeExplicitAutograd")
        torch.library.register_fake(f"{namespace}::{op_name}", fake, lib=lib)
        lib.impl(op_name, autograd, "Autograd", with_keyset=True)
        if kind == "triton_op":
            rule = functools.partial(traced, body)
            torch.library.register_torch_dispatch(
                f"{namespace}::{op_name}", FunctionalTensorMode, rule, lib=lib
            )
    return ops
