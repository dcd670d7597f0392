"""The operator `torch.ops.workshop.softmax(x, dim=-1)` and its backward, registered with torch.library.

What PyTorch needs from an operator, each registered by one line of `define`:
- a schema, `softmax(Tensor x, SymInt dim=-1) -> Tensor`: what the dispatcher, FX graphs and torch.export know
  of the op (SymInt: under torch.compile with dynamic shapes, dim may be a symbolic int);
- a backend kernel (CompositeExplicitAutograd: any device): `forward_kernel`, which launches the Triton kernels
  (softmax_launch.py);
- a fake kernel: the output's shape, dtype and strides without running anything, so that torch.compile and
  fake tensors can trace through the op: `forward_fake`, from the same `_empty_result` the real kernel uses, so
  the two cannot disagree;
- an autograd kernel (the Autograd key): `forward_autograd`. With a gradient to track it runs `SoftmaxFunction`,
  whose backward is the operator `workshop::softmax_backward` (itself differentiable: double backward works);
  without, it passes the call on to the kernels below autograd;
- for a "triton_op" only: a rule for torch.compile's functionalization (`traced`) that runs the kernel's body
  with torch.library.wrap_triton around each launch, so the tracer sees the Triton kernels and Inductor puts
  them into its own generated code. Without that rule ("custom_op") the op stays opaque: Inductor calls it.

That is what torch.library.triton_op and custom_op register too. They are written by hand here because those
wrap every call in general-purpose Python (argument binding, an alias check of the result, a context manager, an
autograd.Function per call): on an H200's host the layers above the implementation took 33 us a call, five
times torch.softmax's whole call; registered here, 6 us (benchmarks/custom_op/README.md). The custom_op lab
measures what each layer of a call costs (workshop/labs/custom_op/eager_cost.py).

The kernels, the fake and the two autograd functions are the op's `Pieces`: `define` registers an op from a
set of them. torch.ops.workshop.softmax has the reference pieces (`REFERENCE`: this module's and
softmax_kernels.py's own, found at each call); the custom_op lab registers twins under names of its own with one
of the learner's pieces in place of the reference's, to grade it (workshop/labs/custom_op/learner_op.py).

ONE public op; `KIND` is chosen once per process: "triton_op" when Triton compiles for a GPU, "custom_op" under
Triton's interpreter (CPU), where tracing into a kernel would hand fake tensors to the interpreted kernel. The
name, schema and behaviour of `torch.ops.workshop.softmax` are the same either way; only what Inductor sees
differs. The lab also registers an opaque twin, `workshop_lab::softmax`, to compare the two.
"""

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch._subclasses.functional_tensor import FunctionalTensor, FunctionalTensorMode
from torch.library import wrap_triton

from workshop.i18n import _
from workshop.ops import INTERPRETED, softmax_launch

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
KINDS = ("triton_op", "custom_op")
# How torch.ops.workshop.softmax is registered here.
KIND = "custom_op" if INTERPRETED else "triton_op"
AFTER_AUTOGRAD = torch._C._after_autograd_keyset  # the dispatch keys below autograd


@dataclass(frozen=True)
class Pieces:
    """What an op registered by `define` is made of, beyond its schema and the launch plans: the parts the custom_op
    lab has the learner write. A field left None is the reference, looked up in its module at each call."""

    # @triton.jit, _fwd_one_pass's parameters: y = softmax(x) over rows that fit one program
    forward_kernel: object = None
    backward_kernel: object = (
        None  # @triton.jit, _bwd_one_pass's parameters: dx = y * (dy - sum(dy * y))
    )
    fake: Callable | None = None  # (x, dim in [0, ndim)) -> the output, empty: `empty_output`
    # (ctx, inputs (x, dim), output y) -> None: saves what backward needs: `setup_context`
    setup_context: Callable | None = None
    backward: Callable | None = None  # (ctx, dy) -> (dx, None), one gradient per input: `gradients`


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


def forward_kernel(
    x: torch.Tensor, dim: int = -1, wrap=None, pieces: Pieces = REFERENCE
) -> torch.Tensor:
    """The op's implementation: y = softmax(x, dim) by the Triton kernels."""
    dim = check_input(x, dim)
    kernel = pieces.forward_kernel
    if _along_last_dim(x, dim):
        y = torch.empty_like(x, memory_format=torch.contiguous_format)
        n_rows, n_cols = _rows_and_cols(x)
        softmax_launch.forward(x, y, n_rows, n_cols, n_cols, n_cols, wrap, kernel)
        return y
    y, y_rows = _empty_result(x, dim)
    if (
        x.numel()
    ):  # empty tensors and 0-size dims: the empty result is the answer, no kernel to launch
        x_rows = _as_rows(x, dim)
        n_rows, n_cols = _rows_and_cols(x_rows)
        strides = int(x_rows.stride(0)), int(y_rows.stride(0))
        softmax_launch.forward(x_rows, y_rows, n_rows, n_cols, *strides, wrap, kernel)
    return y


def _check_backward(y: torch.Tensor, dy: torch.Tensor, dim: int) -> int:
    if (
        y.device != dy.device
    ):  # first: a mixed pair's real problem is the mix, not either device alone
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
    y: torch.Tensor, dy: torch.Tensor, dim: int, wrap=None, pieces: Pieces = REFERENCE
) -> torch.Tensor:
    """The backward op's implementation: dx = y * (dy - sum(dy * y, dim)) by the Triton kernels."""
    dim = _check_backward(y, dy, dim)
    kernel = pieces.backward_kernel
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


def forward_fake(x: torch.Tensor, dim: int = -1, pieces: Pieces = REFERENCE) -> torch.Tensor:
    return (pieces.fake or empty_output)(x, check_input(x, dim))


def backward_fake(
    y: torch.Tensor, dy: torch.Tensor, dim: int, pieces: Pieces = REFERENCE
) -> torch.Tensor:
    # dx has y's layout: the same rule as the forward's output
    return (pieces.fake or empty_output)(y, _check_backward(y, dy, dim))


@dataclass(frozen=True)
class SoftmaxOps:
    """One registration's two operators (OpOverloads), e.g. torch.ops.workshop.softmax{,_backward}.default,
    and the pieces they were registered from."""

    forward: torch._ops.OpOverload
    backward: torch._ops.OpOverload
    pieces: Pieces = REFERENCE


def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
    """After the forward, what the backward will need (torch.library.register_autograd's setup_context):
    dx = y * (dy - sum(dy * y)) needs y, the output, not x; and dim."""
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def gradients(ctx, dy: torch.Tensor) -> tuple:
    """One gradient per input of the op (x, dim): dx by the backward operator (its kernel), None for dim."""
    (y,) = ctx.saved_tensors
    return ctx.ops.backward(y, dy, ctx.dim), None


class SoftmaxFunction(torch.autograd.Function):
    """The autograd node of y = softmax(x): its pieces' setup_context and backward (setup_context, gradients)."""

    @staticmethod
    def forward(ctx, x, dim, ops: SoftmaxOps):
        # straight to the kernels: autograd is this function
        with torch._C._AutoDispatchBelowAutograd():
            y = ops.forward(x, dim)
        ctx.ops = ops  # the backward calls ctx.ops.backward
        (ops.pieces.setup_context or setup_context)(ctx, (x, dim), y)
        return y

    @staticmethod
    def backward(ctx, dy):
        return *(ctx.ops.pieces.backward or gradients)(ctx, dy), None  # None: for `ops`


class SoftmaxBackwardFunction(torch.autograd.Function):
    """The autograd node of dx = softmax_backward(y, dy), for double backward."""

    @staticmethod
    def forward(ctx, y, dy, dim, ops: SoftmaxOps):
        with torch._C._AutoDispatchBelowAutograd():
            dx = ops.backward(y, dy, dim)
        ctx.dim, ctx.ops = dim, ops
        ctx.save_for_backward(y, dy)
        return dx

    @staticmethod
    def backward(ctx, g):
        # dx = y * (dy - sum(dy * y)); with d = sum(g * y): d/d(dy) = y * (g - d) (the same op again) and
        # d/dy = g * (dy - sum(dy * y)) - dy * d.
        y, dy = ctx.saved_tensors
        d = (g * y).sum(ctx.dim, keepdim=True)
        grad_y = g * (dy - (dy * y).sum(ctx.dim, keepdim=True)) - dy * d
        return grad_y, ctx.ops.backward(y, g, ctx.dim), None, None


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


def traced(kernel, mode, func, types, args, kwargs):
    """Under torch.compile's functionalization (FunctionalTensorMode): run `kernel`'s body, its Triton launches
    wrapped by wrap_triton, so that the graph holds the kernels instead of a call of the op."""
    if any(
        t not in (torch.Tensor, FunctionalTensor) and not issubclass(t, FakeTensor) for t in types
    ):
        return NotImplemented  # another tensor subclass: let it handle the op
    with mode:
        return kernel(*args, **kwargs, wrap=wrap_triton)


_libraries = []  # a torch.library.Library unregisters its operators when it is garbage-collected


def define(qualname: str, kind: str, pieces: Pieces = REFERENCE) -> SoftmaxOps:
    """Registers `qualname` (softmax) and `qualname + "_backward"` as a "triton_op" or a "custom_op", made of
    `pieces`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'triton_op' or 'custom_op', got {kind!r}")
    namespace, name = qualname.split("::")
    lib = torch.library.Library(namespace, "FRAGMENT")
    _libraries.append(lib)
    tags = (torch.Tag.pt2_compliant_tag,)
    lib.define(f"{name}(Tensor x, SymInt dim=-1) -> Tensor", tags=tags)
    lib.define(f"{name}_backward(Tensor y, Tensor dy, SymInt dim) -> Tensor", tags=tags)
    ops_namespace = getattr(torch.ops, namespace)
    ops = SoftmaxOps(
        getattr(ops_namespace, name).default,
        getattr(ops_namespace, f"{name}_backward").default,
        pieces,
    )
    kernels = (
        functools.partial(forward_kernel, pieces=pieces),
        functools.partial(backward_kernel, pieces=pieces),
    )
    lib.impl(name, kernels[0], "CompositeExplicitAutograd")
    lib.impl(f"{name}_backward", kernels[1], "CompositeExplicitAutograd")
    fakes = (
        functools.partial(forward_fake, pieces=pieces),
        functools.partial(backward_fake, pieces=pieces),
    )
    torch.library.register_fake(qualname, fakes[0], lib=lib)
    torch.library.register_fake(f"{qualname}_backward", fakes[1], lib=lib)
    lib.impl(name, functools.partial(forward_autograd, ops), "Autograd", with_keyset=True)
    lib.impl(
        f"{name}_backward", functools.partial(backward_autograd, ops), "Autograd", with_keyset=True
    )
    if kind == "triton_op":
        for op_name, kernel in zip((qualname, f"{qualname}_backward"), kernels, strict=True):
            rule = functools.partial(traced, kernel)
            torch.library.register_torch_dispatch(op_name, FunctionalTensorMode, rule, lib=lib)
    return ops


def undefine(ops: SoftmaxOps) -> None:
    """Removes a registration made by `define` (the custom_op lab's graded twins), so that its name can be
    registered again."""
    namespace = ops.forward.namespace
    for lib in [lib for lib in _libraries if lib.ns == namespace]:
        lib._destroy()
        _libraries.remove(lib)


OPS = define("workshop::softmax", KIND)
# softmax(x, dim=-1) along dim, by the Triton kernels, with autograd: the op itself, with no Python in front of it.
softmax = OPS.forward
