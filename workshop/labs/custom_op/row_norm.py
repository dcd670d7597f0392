"""The handout's worked example, another op than the softmax the exercises ask for: each row scaled to unit length,
y = x / ||x||, over the last dim of a 2-D tensor. The chapter's four steps on it: (a) a one-pass Triton kernel;
(b) an operator, `torch.library.custom_op` with `register_fake` and `register_autograd`; (c) checked by opcheck,
gradcheck and torch.compile (tests/custom_op/test_row_norm.py); (d) the same op as a `torch.library.triton_op`,
whose launches go through `wrap_triton` so that Inductor can see the kernel.
"""

import torch
import triton
import triton.language as tl
from torch.library import wrap_triton

from workshop.i18n import _
from workshop.ops.softmax_kernels import _acc

ROWS = 4  # rows per program: a fixed choice here (softmax_launch.py picks its own by measurement)


# (a) The kernel. Program p takes rows p * ROWS ... p * ROWS + ROWS - 1, whole: a (ROWS, BLOCK_N) block.
@triton.jit
def _row_norm_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,  # a power of two >= n_cols: tl.arange needs one
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)  # (ROWS, 1)
    cols = tl.arange(0, BLOCK_N)[None, :]  # (1, BLOCK_N)
    # Lanes past the last row or column read nothing; they load 0, which adds nothing to a sum of squares.
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=0.0))
    norm = tl.sqrt(tl.sum(x * x, axis=1))[
        :, None
    ]  # (ROWS, 1): [:, None] keeps it 2-D, to broadcast
    tl.store(y_ptr + rows * y_row_stride + cols, (x / norm).to(y_ptr.dtype.element_ty), mask=mask)


def _launch(x: torch.Tensor, wrap=None) -> torch.Tensor:
    """y = x / ||x|| by the kernel; `wrap`: wrap_triton, in a triton_op's body."""
    if x.dim() != 2 or x.stride(1) != 1:
        raise ValueError(_("row_norm takes a 2-D tensor with unit stride along its rows"))
    n_rows, n_cols = x.shape
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    kernel = wrap(_row_norm_kernel) if wrap else _row_norm_kernel
    grid = (triton.cdiv(n_rows, ROWS),)
    kernel[grid](
        x, y, n_rows, n_cols, x.stride(0), n_cols, ROWS=ROWS, BLOCK_N=triton.next_power_of_2(n_cols)
    )
    return y


# (b) The operator. The schema comes from the annotations: row_norm(Tensor x) -> Tensor.
@torch.library.custom_op("workshop_example::row_norm", mutates_args=())
def row_norm(x: torch.Tensor) -> torch.Tensor:
    return _launch(x)


# The fake: what the real op returns (a contiguous tensor of x's shape and dtype), without computing it.
@row_norm.register_fake
def _row_norm_fake(x):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def setup_context(ctx, inputs, output):
    """After the forward: the backward's formula needs y and each row's norm. The norm is computed in the
    backward from the saved x: computed here, it would be a constant to a second backward (setup_context runs
    without autograd), and gradgradcheck would fail."""
    (x,) = inputs
    ctx.save_for_backward(x, output)


def backward(ctx, dy):
    """dx = (dy - y * sum(dy * y)) / ||x||, along each row; one gradient per input (x only here)."""
    x, y = ctx.saved_tensors
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    return (dy - y * (dy * y).sum(-1, keepdim=True)) / norm


row_norm.register_autograd(backward, setup_context=setup_context)


# (d) The same op as a triton_op: its body is traced by torch.compile, and wrap_triton shows it the launch. No
# register_fake: the body itself, run on fake tensors, gives the output's shape, dtype and strides.
@torch.library.triton_op("workshop_example::row_norm_visible", mutates_args=())
def row_norm_visible(x: torch.Tensor) -> torch.Tensor:
    return _launch(x, wrap=wrap_triton)


row_norm_visible.register_autograd(backward, setup_context=setup_context)
