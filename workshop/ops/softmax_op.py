"""The operator `torch.ops.workshop.softmax(x, dim=-1)` and its backward, registered with torch.library.

What PyTorch needs from an operator, and where each piece is here:
- a schema, `(Tensor x, int dim=-1) -> Tensor`, inferred from type annotations: what the dispatcher, autograd
  and torch.compile know of the op's signature;
- an implementation: `_forward` / `_backward` below, which launch the Triton kernels of softmax_kernels.py;
- a fake (meta) implementation: the output's shape, dtype and strides without running a kernel, so that
  torch.compile and fake tensors can trace through the op (`_empty_result`, shared with the real one);
- autograd (`register_autograd`): the backward is itself an op, `workshop::softmax_backward`, whose own
  backward is written with torch ops, so double backward works too.

ONE public op, two ways of registering it (`define(kind=...)`), chosen once per process:
- "triton_op" (torch.library.triton_op + wrap_triton) when Triton compiles for a GPU: torch.compile traces INTO
  the op, sees the kernel launches and Inductor puts our kernel into its own generated code.
- "custom_op" (torch.library.custom_op + register_fake) under Triton's interpreter (CPU): triton_op's tracing
  hands fake tensors to the interpreted kernel and fails, while an opaque custom_op passes gradcheck, opcheck
  and torch.compile there. Whether the interpreter is on is fixed before triton is imported, so it cannot
  change within a process and the name, schema and behaviour of `torch.ops.workshop.softmax` are the same.
"""

import os

import torch
from torch.library import wrap_triton

from workshop.ops import softmax_kernels as kernels

FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
KIND = (
    "custom_op" if INTERPRETED else "triton_op"
)  # how torch.ops.workshop.softmax is registered here


def check_input(x: torch.Tensor, dim: int, name: str = "x") -> int:
    """Validates what the kernels can take; returns dim normalized to [0, ndim)."""
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(
            f"workshop.softmax: {name} must be a floating-point tensor "
            f"({', '.join(map(str, FLOAT_DTYPES))}), got {x.dtype}"
        )
    ndim = max(
        x.dim(), 1
    )  # a 0-d tensor is softmaxed like one of shape (1,), as torch.softmax does
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"workshop.softmax: dim {dim} is out of range for a {x.dim()}-d tensor "
            f"(expected a dim in [{-ndim}, {ndim - 1}])"
        )
    if x.device.type not in ("cuda", "cpu", "meta"):
        raise RuntimeError(
            f"workshop.softmax: {name} is on {x.device}; the Triton kernels run on cuda, or on cpu "
            "through Triton's interpreter"
        )
    if x.device.type == "cpu" and not INTERPRETED:
        raise RuntimeError(
            f"workshop.softmax: {name} is on the cpu but Triton's interpreter is off; set "
            "TRITON_INTERPRET=1 before anything imports triton, or move the tensor to cuda"
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
    moved = torch.empty(
        like.movedim(dim, -1).shape, dtype=like.dtype, device=like.device
    )  # (..., N)
    rows = moved.view(-1, moved.shape[-1]) if moved.numel() else moved
    return moved.movedim(-1, dim), rows


def _forward(x: torch.Tensor, dim: int, wrap) -> torch.Tensor:
    dim = check_input(x, dim)
    y, y_rows = _empty_result(x, dim)
    if (
        x.numel()
    ):  # empty tensors and 0-size dims: the empty result is the answer, no kernel to launch
        kernels.forward(_as_rows(x, dim), y_rows, wrap)
    return y


def _check_backward(y: torch.Tensor, dy: torch.Tensor, dim: int) -> int:
    if (
        y.device != dy.device
    ):  # first: a mixed pair's real problem is the mix, not either device alone
        raise RuntimeError(
            f"workshop.softmax_backward: y is on {y.device} but dy is on {dy.device}; "
            "both must be on the same device"
        )
    dim = check_input(y, dim, "y")
    check_input(dy, dim, "dy")
    if y.shape != dy.shape or y.dtype != dy.dtype:
        raise ValueError(
            f"workshop.softmax_backward: y {tuple(y.shape)} {y.dtype} and dy {tuple(dy.shape)} "
            f"{dy.dtype} must have the same shape and dtype"
        )
    return dim


def _backward(y: torch.Tensor, dy: torch.Tensor, dim: int, wrap) -> torch.Tensor:
    dim = _check_backward(y, dy, dim)
    dx, dx_rows = _empty_result(y, dim)
    if y.numel():
        kernels.backward(_as_rows(y, dim), _as_rows(dy, dim), dx_rows, wrap)
    return dx


def define(qualname: str, kind: str):
    """Registers `qualname` (softmax) and `qualname + "_backward"` as a "triton_op" or a "custom_op".

    Returns (forward op, backward op). The lab also calls this, under another namespace, to compare what
    Inductor makes of each kind.
    """
    if kind not in ("triton_op", "custom_op"):
        raise ValueError(f"kind must be 'triton_op' or 'custom_op', got {kind!r}")
    make = torch.library.triton_op if kind == "triton_op" else torch.library.custom_op
    wrap = wrap_triton if kind == "triton_op" else (lambda kernel: kernel)

    # The schemas are inferred from these annotations: (Tensor x, SymInt dim=-1) -> Tensor and
    # (Tensor y, Tensor dy, SymInt dim) -> Tensor. (torch 2.11's triton_op ignores an explicit schema=.)
    def softmax_backward(y: torch.Tensor, dy: torch.Tensor, dim: int) -> torch.Tensor:
        return _backward(y, dy, dim, wrap)

    def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return _forward(x, dim, wrap)

    backward_op = make(qualname + "_backward", softmax_backward, mutates_args=())
    forward_op = make(qualname, softmax, mutates_args=())
    if kind == "custom_op":  # a triton_op's fake implementation is its own body run on fake tensors
        forward_op.register_fake(lambda x, dim=-1: _empty_result(x, check_input(x, dim))[0])
        backward_op.register_fake(
            lambda y, dy, dim: _empty_result(y, _check_backward(y, dy, dim))[0]
        )

    def setup_forward(ctx, inputs, output):
        ctx.dim = inputs[1]
        ctx.save_for_backward(output)  # the backward needs y = softmax(x), not x

    def backward_of_forward(ctx, dy):
        (y,) = ctx.saved_tensors
        return backward_op(y, dy, ctx.dim), None

    def setup_backward(ctx, inputs, output):
        y, dy, ctx.dim = inputs
        ctx.save_for_backward(y, dy)

    def backward_of_backward(ctx, g):
        # dx = y * (dy - sum(dy * y)); with d = sum(g * y): d/d(dy) = y * (g - d) (the same op again) and
        # d/dy = g * (dy - sum(dy * y)) - dy * d.
        y, dy = ctx.saved_tensors
        d = (g * y).sum(ctx.dim, keepdim=True)
        grad_y = g * (dy - (dy * y).sum(ctx.dim, keepdim=True)) - dy * d
        return grad_y, backward_op(y, g, ctx.dim), None

    forward_op.register_autograd(backward_of_forward, setup_context=setup_forward)
    backward_op.register_autograd(backward_of_backward, setup_context=setup_backward)
    return forward_op, backward_op


forward_op, backward_op = define("workshop::softmax", KIND)


def softmax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """softmax(x) along `dim`, by the Triton kernels, with autograd: `torch.ops.workshop.softmax(x, dim)`."""
    return torch.ops.workshop.softmax(x, dim)
