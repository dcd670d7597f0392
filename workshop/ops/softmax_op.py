"""The operator `torch.ops.workshop.softmax(x, dim=-1)` and its backward, made with torch.library's public API.

What PyTorch needs from an operator, and the public call that gives it (`define_custom_op` and `define_triton_op`,
below; `define` registers an op from its pieces with one of them):
- a schema and an implementation: `torch.library.custom_op(name, fn, mutates_args=())` reads the schema from fn's
  annotations, `softmax(Tensor x, SymInt dim=-1) -> Tensor` (an int becomes a SymInt: under torch.compile with
  dynamic shapes, dim may be symbolic), and registers fn for every device: `forward_kernel`, which launches the
  Triton kernels (softmax_launch.py);
- a fake implementation, `register_fake`: the output's shape, dtype and strides without running anything, so that
  torch.compile and fake tensors can trace through the op: `empty_output`, built by the same `_empty_result` the
  real kernel allocates with, so the two cannot disagree;
- autograd, `register_autograd(backward, setup_context=...)`: after the forward, `setup_context` saves y (the
  backward's formula needs the output, not x) and dim; `gradients` returns one gradient per input, dx by the
  operator workshop::softmax_backward, None for dim. That operator is registered the same way, with an autograd
  formula of its own: double backward works. In an eager backward that records nothing (no double backward, plain
  tensors, nothing tracing), a call of that operator would only hand dx's computation through custom_op's wrappers
  to its implementation: there `ctx.ops.backward` calls the implementation directly (`runs_eagerly` says when),
  the one fast path that `define` adds inside the registered functions; under torch.compile, opcheck or a double
  backward the operator is called.

`torch.library.triton_op` registers all of that from the same function, and one thing more: under torch.compile it
runs the function's body instead of calling the op, each launch wrapped by `torch.library.wrap_triton`, so Inductor
sees the Triton kernels and copies them into its own generated code. A custom_op stays opaque: Inductor calls it,
an extern kernel between its own. A triton_op needs no register_fake: its body, run on fake tensors, is its fake
(a wrapped launch does nothing there).

`KIND`, how torch.ops.workshop.softmax is registered, is chosen once per process: a triton_op where Triton compiles
for a GPU; a custom_op under Triton's interpreter (CPU), where torch.compile cannot trace into a kernel (tracing
hands fake tensors to the interpreted kernel, which needs data, and Inductor generates no Triton code for a CPU).
The name, schema and behaviour are the same either way; only what Inductor sees differs. `registered_as(kind)`
gives the op registered the other way too, under a namespace of its own, for the custom_op lab's comparisons.

The kernels, the fake and the two autograd functions are the op's `Pieces`: `define` registers an op from a set of
them. torch.ops.workshop.softmax has the reference pieces (`REFERENCE`); the custom_op lab registers a learner's
own op from the learner's pieces the same way.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch.library import wrap_triton

from workshop.i18n import _
from workshop.ops import INTERPRETED, softmax_launch
from workshop.ops import softmax_kernels as k

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
KINDS = ("triton_op", "custom_op")
# How torch.ops.workshop.softmax is registered here.
KIND = "custom_op" if INTERPRETED else "triton_op"


@dataclass(frozen=True)
class Pieces:
    """What an op registered by `define` is made of, beyond its schema and the launch plans: the parts the custom_op
    lab has the learner write. A field left None is the reference, looked up in its module at each call."""

    # @triton.jit, _fwd_one_pass's parameters: y = softmax(x) over rows that fit one program
    forward_kernel: object = None
    # @triton.jit, _bwd_one_pass's parameters: dx = y * (dy - sum(dy * y))
    backward_kernel: object = None
    # (x, dim in [0, ndim)) -> the output, empty: `empty_output`. A custom_op's only: a triton_op's fake is its body.
    fake: Callable | None = None
    # (ctx, inputs (x, dim), output y) -> None: saves what backward needs: `setup_context`
    setup_context: Callable | None = None
    # (ctx, dy) -> (dx, None), one gradient per input: `gradients`
    backward: Callable | None = None


REFERENCE = Pieces()


def check_input(x: torch.Tensor, dim: int, name: str = "x") -> int:
    """Validates what the kernels can take; returns dim normalized to [0, ndim)."""
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(
            _(
                "workshop.softmax: {name} must be a floating-point tensor ({dtypes}), got {dtype}"
            ).format(name=name, dtypes=", ".join(map(str, FLOAT_DTYPES)), dtype=x.dtype)
        )
    # A 0-d tensor is softmaxed like one of shape (1,), as torch.softmax does.
    ndim = max(x.dim(), 1)
    if not -ndim <= dim < ndim:
        raise IndexError(
            _(
                "workshop.softmax: dim {dim} is out of range for a {ndim}-d tensor "
                "(expected a dim in [{low}, {high}])"
            ).format(dim=dim, ndim=x.dim(), low=-ndim, high=ndim - 1)
        )
    if not (x.is_cuda or x.is_cpu or x.is_meta):
        raise RuntimeError(
            _(
                "workshop.softmax: {name} is on {device}; the Triton kernels run on cuda, or on cpu "
                "through Triton's interpreter"
            ).format(name=name, device=x.device)
        )
    if x.is_cpu and not INTERPRETED:
        raise RuntimeError(
            _(
                "workshop.softmax: {name} is on the cpu but Triton's interpreter is off; set "
                "TRITON_INTERPRET=1 before anything imports triton, or move the tensor to cuda"
            ).format(name=name)
        )
    return dim % ndim


def _as_rows(t: torch.Tensor, dim: int) -> torch.Tensor:
    """(rows, N) with unit stride along N: a view where the layout allows, else one copy.

    A strided N (e.g. softmax over dim 0 of a row-major matrix) is copied once rather than read with a stride:
    each strided element would pull a whole 32-byte sector from memory, every time the kernels read the row.
    """
    t = t.reshape(1) if t.dim() == 0 else t.movedim(dim, -1)
    if t.stride(-1) != 1 and t.shape[-1] > 1:
        t = t.contiguous()
    return t.reshape(-1, t.shape[-1])  # a copy only when the leading dims cannot be merged


def _empty_result(like: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The op's output (like's shape) and its (rows, N) row-major view that the kernels write."""
    if like.dim() == 0:
        flat = torch.empty(1, dtype=like.dtype, device=like.device)  # (1,)
        return flat.reshape(()), flat.view(1, 1)
    shape = like.movedim(dim, -1).shape  # (..., N)
    moved = torch.empty(shape, dtype=like.dtype, device=like.device)
    rows = moved.view(-1, moved.shape[-1]) if moved.numel() else moved
    return moved.movedim(-1, dim), rows


def _along_last_dim(t: torch.Tensor, dim: int) -> bool:
    """The common case, served without views: softmax over the last dim of a contiguous tensor."""
    return dim == t.dim() - 1 and t.is_contiguous() and t.numel() > 0


def _rows_and_cols(t: torch.Tensor) -> tuple[int, int]:
    # Plain ints, also when traced with symbolic shapes: they set constexprs.
    n_cols = int(t.shape[-1])
    return int(t.numel()) // n_cols, n_cols


def forward_kernel(x: torch.Tensor, dim: int = -1, kernel=None, wrap=None) -> torch.Tensor:
    """The op's implementation: y = softmax(x, dim) by the Triton kernels. `kernel`: the one-pass kernel (None:
    the reference's); `wrap`: torch.library.wrap_triton in a triton_op's body."""
    dim = check_input(x, dim)
    if _along_last_dim(x, dim):
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        n_rows, n_cols = _rows_and_cols(x)
        softmax_launch.forward(x, y, n_rows, n_cols, n_cols, n_cols, wrap, kernel)
        return y
    y, y_rows = _empty_result(x, dim)
    # Empty tensors and 0-size dims: the empty result is the answer, no kernel to launch.
    if x.numel():
        x_rows = _as_rows(x, dim)
        n_rows, n_cols = _rows_and_cols(x_rows)
        strides = int(x_rows.stride(0)), int(y_rows.stride(0))
        softmax_launch.forward(x_rows, y_rows, n_rows, n_cols, *strides, wrap, kernel)
    return y


def _check_backward(y: torch.Tensor, dy: torch.Tensor, dim: int) -> int:
    # First the devices: a mixed pair's real problem is the mix, not either device alone.
    if y.device != dy.device:
        raise RuntimeError(
            _(
                "workshop.softmax_backward: y is on {y_device} but dy is on {dy_device}; "
                "both must be on the same device"
            ).format(y_device=y.device, dy_device=dy.device)
        )
    dim = check_input(y, dim, "y")
    check_input(dy, dim, "dy")
    if y.shape != dy.shape or y.dtype != dy.dtype:
        raise ValueError(
            _(
                "workshop.softmax_backward: y {y_shape} {y_dtype} and dy {dy_shape} {dy_dtype} "
                "must have the same shape and dtype"
            ).format(
                y_shape=tuple(y.shape), y_dtype=y.dtype, dy_shape=tuple(dy.shape), dy_dtype=dy.dtype
            )
        )
    return dim


def backward_kernel(
    y: torch.Tensor, dy: torch.Tensor, dim: int, kernel=None, wrap=None
) -> torch.Tensor:
    """The backward op's implementation: dx = y * (dy - sum(dy * y, dim)) by the Triton kernels."""
    dim = _check_backward(y, dy, dim)
    if _along_last_dim(y, dim) and dy.is_contiguous():
        dx = torch.empty_like(y, memory_format=torch.contiguous_format)
        n_rows, n_cols = _rows_and_cols(y)
        softmax_launch.backward(y, dy, dx, n_rows, n_cols, (n_cols,) * 3, wrap, kernel)
        return dx
    dx, dx_rows = _empty_result(y, dim)
    if y.numel():
        y_rows, dy_rows = _as_rows(y, dim), _as_rows(dy, dim)
        n_rows, n_cols = _rows_and_cols(y_rows)
        strides = tuple(int(t.stride(0)) for t in (y_rows, dy_rows, dx_rows))
        softmax_launch.backward(y_rows, dy_rows, dx_rows, n_rows, n_cols, strides, wrap, kernel)
    return dx


def empty_output(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The op's output for x, uninitialized: what the real kernel allocates (`_empty_result`), so that the fake
    says exactly what the kernel returns: x's shape and dtype, laid out with dim innermost."""
    return _empty_result(x, dim)[0]


@dataclass(frozen=True)
class SoftmaxOps:
    """One registration's two operators (OpOverloads), e.g. torch.ops.workshop.softmax{,_backward}.default (no
    backward operator: None), how they were registered, and the @triton.jit kernels they launch."""

    forward: torch._ops.OpOverload
    backward: torch._ops.OpOverload | None
    kind: str
    kernels: tuple = ()


def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
    """After the forward, what the backward will need (register_autograd's setup_context):
    dx = y * (dy - sum(dy * y)) needs y, the output, not x; and dim."""
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def gradients(ctx, dy: torch.Tensor) -> tuple:
    """One gradient per input of the op (x, dim): dx by the backward operator (its kernel), None for dim."""
    (y,) = ctx.saved_tensors
    return ctx.ops.backward(y, dy, ctx.dim), None


def runs_eagerly(*tensors: torch.Tensor) -> bool:
    """Whether a call of the backward operator on `tensors` would only run its implementation: no gradient of it
    to record (no double backward), plain tensors (no fake or functional ones: torch.compile and opcheck trace
    through the operator), no dispatch mode and no torch.func transform, nothing on the meta device."""
    return (
        not torch.is_grad_enabled()
        and all(type(t) is torch.Tensor and not t.is_meta for t in tensors)
        and torch._C._len_torch_dispatch_stack() == 0
        and not torch._C._are_functorch_transforms_active()
    )


def gradients_of_backward_op(ctx, g: torch.Tensor) -> tuple:
    """dx = y * (dy - sum(dy * y)); with d = sum(g * y): d/d(dy) = y * (g - d), the backward op again, and
    d/dy = g * (dy - sum(dy * y)) - dy * d."""
    y, dy = ctx.saved_tensors
    d = (g * y).sum(ctx.dim, keepdim=True)
    grad_y = g * (dy - (dy * y).sum(ctx.dim, keepdim=True)) - dy * d
    return grad_y, ctx.ops.backward(y, g, ctx.dim), None


def define_custom_op(qualname: str, implementation, fake, setup_context, backward):
    """`qualname` (e.g. "workshop::softmax") made an operator with torch.library.custom_op: softmax(x, dim=-1) by
    `implementation(x, dim)`, its fake by `fake(x, dim)`, its autograd by `backward(ctx, dy)` after
    `setup_context(ctx, inputs, output)`. Returns the op (torch.library's CustomOpDef)."""

    # The schema is read from the annotations: softmax(Tensor x, SymInt dim=-1) -> Tensor.
    @torch.library.custom_op(qualname, mutates_args=())
    def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    softmax.register_fake(fake)
    softmax.register_autograd(backward, setup_context=setup_context)
    return softmax


def define_triton_op(qualname: str, implementation, setup_context, backward):
    """The same operator with torch.library.triton_op: under torch.compile its body runs instead of a call of the
    op, and `implementation(x, dim, wrap=wrap_triton)` launches each kernel through wrap_triton, so that Inductor
    sees it. No fake to register: the body, run on fake tensors, is the fake. Returns the op."""

    @torch.library.triton_op(qualname, mutates_args=())
    def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim, wrap=wrap_triton)

    softmax.register_autograd(backward, setup_context=setup_context)
    return softmax


def fakes(pieces: Pieces) -> tuple[Callable, Callable]:
    # The reference pieces are looked up at each call (`or` below), so that a test can replace one in this module.
    def softmax_fake(x, dim=-1):
        return (pieces.fake or empty_output)(x, check_input(x, dim))

    def softmax_backward_fake(y, dy, dim):
        # dx has y's layout: the forward's rule
        return (pieces.fake or empty_output)(y, _check_backward(y, dy, dim))

    return softmax_fake, softmax_backward_fake


def _define_backward_op(qualname: str, kind: str, pieces: Pieces, setup: Callable):
    """The backward operator, `qualname` (softmax_backward), registered as `kind` the same way, with an autograd
    formula of its own (double backward)."""
    register = torch.library.triton_op if kind == "triton_op" else torch.library.custom_op
    wrap = wrap_triton if kind == "triton_op" else None

    @register(qualname, mutates_args=())
    def softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
        return backward_kernel(y, dy, dim, pieces.backward_kernel, wrap)

    if kind == "custom_op":
        softmax_backward.register_fake(fakes(pieces)[1])
    softmax_backward.register_autograd(gradients_of_backward_op, setup_context=setup)
    return softmax_backward


def define(
    qualname: str, kind: str, pieces: Pieces = REFERENCE, registration: Callable | None = None
) -> SoftmaxOps:
    """Registers `qualname` (softmax) and `qualname + "_backward"` as a "triton_op" or a "custom_op", made of
    `pieces`. Registering a name again replaces the earlier registration (torch.library.custom_op allows it).
    `registration`: what registers the forward op in place of define_custom_op or define_triton_op (the custom_op
    lab grades a learner's), called with the same arguments."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'triton_op' or 'custom_op', got {kind!r}")

    def implementation(x, dim, wrap=None):
        return forward_kernel(x, dim, pieces.forward_kernel, wrap)

    def backward_operator(y, dy, dim):
        # The eager fast path of a backward: where the backward operator would only run its implementation
        # (`runs_eagerly`), that implementation, called without the operator's round trip through the dispatcher
        # and custom_op's wrappers; elsewhere the operator.
        if runs_eagerly(y, dy):
            return backward_kernel(y, dy, dim, pieces.backward_kernel)
        return ops.backward(y, dy, dim)

    def setup_forward(ctx, inputs, output):
        # the backward calls ctx.ops.backward: this registration's backward operator, or its eager fast path
        ctx.ops = in_backward
        (pieces.setup_context or setup_context)(ctx, inputs, output)

    def backward_of_forward(ctx, dy):
        return (pieces.backward or gradients)(ctx, dy)

    def setup_backward(ctx, inputs, output):
        ctx.ops, ctx.dim = in_backward, inputs[2]
        ctx.save_for_backward(*inputs[:2])  # y, dy

    backward = _define_backward_op(f"{qualname}_backward", kind, pieces, setup_backward)
    if kind == "custom_op":
        register = registration or define_custom_op
        register(qualname, implementation, fakes(pieces)[0], setup_forward, backward_of_forward)
    else:
        register = registration or define_triton_op
        register(qualname, implementation, setup_forward, backward_of_forward)
    kernels = (pieces.forward_kernel or k._fwd_one_pass, pieces.backward_kernel or k._bwd_one_pass)
    ops = SoftmaxOps(registered(qualname), backward._opoverload, kind, kernels)
    in_backward = replace(ops, backward=backward_operator)
    return ops


def registered(qualname: str) -> torch._ops.OpOverload:
    """The operator registered as `qualname` ("namespace::name"): its default overload; LookupError if none."""
    namespace, name = qualname.split("::")
    packet = (
        getattr(getattr(torch.ops, namespace), name, None)
        if hasattr(torch.ops, namespace)
        else None
    )
    if packet is None:
        raise LookupError(f"no operator {qualname} is registered")
    return packet.default


try:
    OPS = define("workshop::softmax", KIND)
except NotImplementedError:
    # The learner edition: the registration is the custom_op lab's exercise, a stub there, and so are the pieces.
    # The lab then checks the learner's own op; whatever needs the shipped one says that it waits (shipped_ready).
    OPS = None
# softmax(x, dim=-1) along dim, by the Triton kernels, with autograd: the op itself, with no Python in front of it.
softmax = OPS.forward if OPS is not None else None


@functools.cache
def registered_as(kind: str) -> SoftmaxOps:
    """The op registered as `kind`: torch.ops.workshop.softmax when that is its KIND, else a twin with the same
    pieces under a namespace of its own, torch.ops.workshop_<kind>.softmax."""
    return OPS if kind == KIND else define(f"workshop_{kind}::softmax", kind)
