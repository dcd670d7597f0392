"""A learner's solutions to the custom_op lab's exercises: one correct set, written as a learner would (not the
reference), and the typical mistakes, each a small change of it. The tests grade them as a learner's file, in a
worker process (custom_op/planted.py: this file must pass the worker's reading of a learner's file);
the end-to-end test writes correct ones into a workspace file (source_of)."""

import inspect

import torch
import triton
import triton.language as tl

from workshop.ops.softmax_kernels import _acc

# ---- correct ----


@triton.jit
def softmax_fwd_kernel(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def softmax_bwd_kernel(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx, mask=mask)


def softmax_fake(x, dim):
    return torch.empty(x.movedim(dim, -1).shape, dtype=x.dtype, device=x.device).movedim(-1, dim)


def setup_context(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(output)


def backward(ctx, dy):
    (y,) = ctx.saved_tensors
    return ctx.ops.backward(y, dy, ctx.dim), None


def define_custom_op(qualname, implementation, fake, setup_context, backward):
    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    op.register_fake(fake)
    op.register_autograd(backward, setup_context=setup_context)
    return op


def define_triton_op(qualname, implementation, setup_context, backward):
    @torch.library.triton_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim, wrap=torch.library.wrap_triton)

    op.register_autograd(backward, setup_context=setup_context)
    return op


CORRECT = (softmax_fwd_kernel, softmax_bwd_kernel, softmax_fake, setup_context, backward)


def _function(function):
    """A kernel's Python function (a @triton.jit kernel keeps it in .fn), or the function itself."""
    return function.fn if isinstance(function, triton.runtime.KernelInterface) else function


def source_of(*functions) -> str:
    """The functions' source, as a learner's file would hold it (kernels with their @triton.jit)."""
    return "\n\n".join(inspect.getsource(_function(f)) for f in functions)


def line_of(function, text: str) -> int:
    """The line number, in this file, of the first line of `function` that contains `text`."""
    lines, first = inspect.getsourcelines(_function(function))
    return first + next(i for i, line in enumerate(lines) if text in line)


# ---- the forward kernel's mistakes ----


@triton.jit
def fwd_calls_torch_softmax(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf"))
    tl.store(y_ptr + rows * y_row_stride + cols, torch.softmax(x, 1), mask=mask)


def fwd_python_fallback(
    x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride, ROWS, BLOCK_N, ALIGN
):
    """Not a Triton kernel: torch.softmax in Python, which would launch nothing."""
    y_ptr.copy_(torch.softmax(x_ptr, -1))


@triton.jit
def fwd_mask_drops_last_column(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols - 1)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_mask_one_column_past(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols <= n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_no_row_mask(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows >= 0) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_no_max_subtracted(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x)
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_masked_lanes_load_zero(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=0.0))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_one_row_per_program(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    row = (tl.program_id(0) * ROWS).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = (row < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * y_row_stride + cols, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def fwd_float32_always(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_ignores_row_stride(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * n_cols + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(y_ptr + rows * n_cols + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_sums_in_output_dtype(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    """Converts to the output's dtype too early: the sum and the division run in bfloat16 for bfloat16 input."""
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None]).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + rows * y_row_stride + cols, e / tl.sum(e, axis=1)[:, None], mask=mask)


@triton.jit
def fwd_rows_without_constexpr(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    pass


# ---- the backward kernel's mistakes ----


@triton.jit
def bwd_no_sum_term(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    tl.store(dx_ptr + rows * dx_row_stride + cols, y * dy, mask=mask)


@triton.jit
def bwd_sign_flipped(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    dx = y * (tl.sum(dy * y, axis=1)[:, None] - dy)
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx, mask=mask)


@triton.jit
def bwd_mask_drops_last_column(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols - 1)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx, mask=mask)


@triton.jit
def bwd_reads_dy_with_y_stride(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx, mask=mask)


@triton.jit
def bwd_masked_lanes_load_inf(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=-float("inf")))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx, mask=mask)


@triton.jit
def bwd_writes_into_dy(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dy_ptr + rows * dy_row_stride + cols, dx, mask=mask)


@triton.jit
def bwd_skips_accumulation_dtype(
    y_ptr,
    dy_ptr,
    dx_ptr,
    n_rows,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
):
    """Computes in the input's dtype: right for float32 and float64, bfloat16 arithmetic for bfloat16."""
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    y = tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0)
    dy = tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0)
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx, mask=mask)


# ---- the fake's mistakes ----


def fake_empty_like(x, dim):
    return torch.empty_like(x)


def fake_empty_shape(x, dim):
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


def fake_rows_shape(x, dim):
    return torch.empty(x.movedim(dim, -1).shape, dtype=x.dtype, device=x.device)


def fake_default_dtype(x, dim):
    return torch.empty(x.movedim(dim, -1).shape, device=x.device).movedim(-1, dim)


def fake_reads_data(x, dim):
    if x.max() > 100:
        raise ValueError("logits too large")
    return softmax_fake(x, dim)


def fake_returns_x(x, dim):
    return x


# ---- setup_context's mistakes ----


def setup_saves_x(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[0])


def setup_keeps_y_as_attribute(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.y = output


def setup_forgets_dim(ctx, inputs, output):
    ctx.save_for_backward(output)


def setup_saves_x_and_y(ctx, inputs, output):
    ctx.dim = inputs[1]
    ctx.save_for_backward(inputs[0], output)


# ---- backward's mistakes ----


def backward_dx_only(ctx, dy):
    (y,) = ctx.saved_tensors
    return ctx.ops.backward(y, dy, ctx.dim)


def backward_three_gradients(ctx, dy):
    (y,) = ctx.saved_tensors
    return ctx.ops.backward(y, dy, ctx.dim), None, None


def backward_arguments_swapped(ctx, dy):
    (y,) = ctx.saved_tensors
    return ctx.ops.backward(dy, y, ctx.dim), None


def backward_without_sum_term(ctx, dy):
    (y,) = ctx.saved_tensors
    return y * dy, None


def backward_gradient_for_dim(ctx, dy):
    (y,) = ctx.saved_tensors
    dx = ctx.ops.backward(y, dy, ctx.dim)
    return dx, torch.zeros((), dtype=dx.dtype, device=dx.device)


def backward_none_first(ctx, dy):
    (y,) = ctx.saved_tensors
    return None, ctx.ops.backward(y, dy, ctx.dim)


# ---- the registration's mistakes ----


def define_custom_op_under_its_own_name(qualname, implementation, fake, setup_context, backward):
    return define_custom_op("mine::softmax", implementation, fake, setup_context, backward)


def define_custom_op_without_dims_default(qualname, implementation, fake, setup_context, backward):
    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int) -> torch.Tensor:
        return implementation(x, dim)

    op.register_fake(fake)
    op.register_autograd(backward, setup_context=setup_context)
    return op


def define_custom_op_without_fake(qualname, implementation, fake, setup_context, backward):
    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    op.register_autograd(backward, setup_context=setup_context)
    return op


def define_custom_op_without_setup_context(qualname, implementation, fake, setup_context, backward):
    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    op.register_fake(fake)
    op.register_autograd(backward)
    return op


def define_custom_op_without_backward(qualname, implementation, fake, setup_context, backward):
    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    op.register_fake(fake)
    return op


def define_triton_op_as_a_custom_op(qualname, implementation, setup_context, backward):
    @torch.library.custom_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    op.register_fake(lambda x, dim=-1: torch.empty_like(x))
    op.register_autograd(backward, setup_context=setup_context)
    return op


def define_triton_op_without_wrap_triton(qualname, implementation, setup_context, backward):
    @torch.library.triton_op(qualname, mutates_args=())
    def op(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
        return implementation(x, dim)

    op.register_autograd(backward, setup_context=setup_context)
    return op
