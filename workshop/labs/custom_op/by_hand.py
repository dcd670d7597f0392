"""The appendix's third registration: the same op registered by hand, one dispatch key at a time, with
torch.library.Library, as `torch.library.custom_op` does for you, without the general-purpose Python custom_op
puts around each call. It is what the eager-cost ladder compares custom_op and triton_op with (eager_cost.py).

What custom_op registers, and what it adds (torch/_library/custom_ops.py and autograd.py):
- the schema, `lib.define("softmax(Tensor x, SymInt dim=-1) -> Tensor")`: custom_op reads it from the annotations;
- the implementation, `lib.impl(name, fn, "CompositeExplicitAutograd")` (every device): custom_op wraps yours in a
  function that checks that the result aliases no input, itself inside `torch._disable_dynamo`;
- the fake, `torch.library.register_fake`: the same call;
- the autograd kernel, `lib.impl(name, fn, "Autograd", with_keyset=True)`: custom_op's makes, on every call, the
  metadata of an autograd.Function it generated, fills the default arguments back in for setup_context, and
  redispatches below autograd. Here: `SoftmaxFunction.apply` with a gradient to track, else the redispatch.
The op's body, fake, setup_context and gradients are softmax_op's own: only the registration differs.
"""

import functools

import torch

from workshop.i18n import N_
from workshop.ops import softmax_op
from workshop.ops.softmax_op import SoftmaxOps

AFTER_AUTOGRAD = torch._C._after_autograd_keyset  # the dispatch keys below autograd
KIND = N_("by hand")  # a registration kind, as eager_cost.py names the three


class SoftmaxFunction(torch.autograd.Function):
    """The autograd node of y = softmax(x), from softmax_op's setup_context and gradients."""

    @staticmethod
    def forward(ctx, x, dim, ops: SoftmaxOps):
        # Straight to the implementation: autograd is this function.
        with torch._C._AutoDispatchBelowAutograd():
            y = ops.forward(x, dim)
        ctx.ops = ops
        softmax_op.setup_context(ctx, (x, dim), y)
        return y

    @staticmethod
    def backward(ctx, dy):
        return *softmax_op.gradients(ctx, dy), None  # None: for `ops`


class SoftmaxBackwardFunction(torch.autograd.Function):
    """The autograd node of dx = softmax_backward(y, dy), for double backward."""

    @staticmethod
    def forward(ctx, y, dy, dim, ops: SoftmaxOps):
        with torch._C._AutoDispatchBelowAutograd():
            dx = ops.backward(y, dy, dim)
        ctx.ops, ctx.dim = ops, dim
        ctx.save_for_backward(y, dy)
        return dx

    @staticmethod
    def backward(ctx, g):
        return *softmax_op.gradients_of_backward_op(ctx, g), None


def forward_autograd(ops: SoftmaxOps, keyset, x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    if torch.is_grad_enabled() and x.requires_grad:
        return SoftmaxFunction.apply(x, dim, ops)
    return ops.forward.redispatch(keyset & AFTER_AUTOGRAD, x, dim)


def backward_autograd(
    ops: SoftmaxOps, keyset, y: torch.Tensor, dy: torch.Tensor, dim: int
) -> torch.Tensor:
    if torch.is_grad_enabled() and (y.requires_grad or dy.requires_grad):
        return SoftmaxBackwardFunction.apply(y, dy, dim, ops)
    return ops.backward.redispatch(keyset & AFTER_AUTOGRAD, y, dy, dim)


_libraries = []  # a torch.library.Library unregisters its operators when it is garbage-collected


def define(qualname: str) -> SoftmaxOps:
    """Registers `qualname` (softmax) and `qualname + "_backward"` by hand, one dispatch key at a time."""
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _libraries.append(lib)
    tags = (torch.Tag.pt2_compliant_tag,)
    lib.define(f"{name}(Tensor x, SymInt dim=-1) -> Tensor", tags=tags)
    lib.define(f"{name}_backward(Tensor y, Tensor dy, SymInt dim) -> Tensor", tags=tags)
    namespace_ops = getattr(torch.ops, namespace)
    forward = getattr(namespace_ops, name).default
    ops = SoftmaxOps(forward, getattr(namespace_ops, f"{name}_backward").default, KIND)
    lib.impl(name, softmax_op.forward_kernel, "CompositeExplicitAutograd")
    lib.impl(f"{name}_backward", softmax_op.backward_kernel, "CompositeExplicitAutograd")
    fakes = softmax_op.fakes(softmax_op.REFERENCE)
    torch.library.register_fake(qualname, fakes[0], lib=lib)
    torch.library.register_fake(f"{qualname}_backward", fakes[1], lib=lib)
    lib.impl(name, functools.partial(forward_autograd, ops), "Autograd", with_keyset=True)
    lib.impl(
        f"{name}_backward", functools.partial(backward_autograd, ops), "Autograd", with_keyset=True
    )
    return ops
