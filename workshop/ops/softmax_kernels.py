"""Triton kernels for softmax over the last dimension of a (rows, N) view, forward and backward.

Two strategies, picked by the row length N:
- one pass (N <= ONE_PASS_MAX): a program loads a tile of ROWS whole rows into registers, reduces, and writes.
  Every byte is read once and written once: the least traffic there is.
- split rows (longer rows, e.g. a 262,144-token vocabulary): a row does not fit one program's registers, so it
  is cut into CHUNK-sized pieces, one program each. A first kernel writes each piece's partial reduction (for the
  forward, the online-softmax pair max m_i and sum s_i = sum(exp(x - m_i)); for the backward, sum(dy * y)), a
  second kernel combines the row's partials and writes the output. The second kernel walks the pieces in the
  REVERSE order, to start on those the first kernel read last, which may still be in L2. The row is read twice
  (3 transfers for 2): on an H200 this path reaches ~0.63 x copy bandwidth (benchmarks/custom_op/).

Accumulation is in float32 (float64 for float64 inputs). Masked lanes load -inf (forward) or 0 (backward), so
they add nothing. -inf, inf and NaN follow torch.softmax: exp(-inf - m) = 0; a row that is all -inf or holds
+inf or NaN becomes all NaN.

Launchers take `wrap`: identity for a plain (opaque) call, torch.library.wrap_triton inside a triton_op so that
torch.compile sees the kernel launch.
"""

import math
import os
import sys

import torch

if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
    # Triton has no CPU backend: without a GPU the kernels run in Triton's interpreter (numpy), which must be on
    # before triton is imported: triton.language's own @jit helpers (tl.sum, tl.max) are made at that import.
    if "triton" in sys.modules:
        raise ImportError(
            "workshop.ops: no CUDA GPU, and triton was imported before TRITON_INTERPRET=1 was set; "
            "set TRITON_INTERPRET=1 in the environment before anything imports triton "
            "(torch._dynamo and torch.compile do)"
        )
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# Launch parameters, measured on an H200 (benchmarks/custom_op/): 4096-element tiles beat 8192 and 16384 for
# N = 600 (fp32 3.70 vs 3.24 vs 2.21 TB/s at (32768, 600)); the backward keeps a 32,768-long row in one pass
# (y and dy: 64 registers a thread, at the limit) rather than split it (4.09 vs 2.59 TB/s in bf16).
ONE_PASS_MAX = (
    32768  # longest row kept in registers, forward and backward (32 values a thread at 32 warps)
)
ONE_PASS_MAX_BWD = 32768
CHUNK = 8192  # elements per program in the split-row kernels (4096..16384 measured within 3%)
TILE = 4096  # elements per program in the one-pass kernels for short rows (ROWS = TILE // BLOCK_N rows)
FWD_PER_THREAD, BWD_PER_THREAD = 32, 32  # row elements a thread holds at most


@triton.jit
def _acc(x, IS_FP64: tl.constexpr):
    """The accumulation type: float64 for float64 inputs, float32 for everything else."""
    if IS_FP64:
        return x.to(tl.float64)
    else:
        return x.to(tl.float32)


@triton.jit
def _fwd_one_pass(
    x_ptr,
    y_ptr,
    n_rows,
    n_cols,
    x_row_stride,
    y_row_stride,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
    ALIGN: tl.constexpr,
    IS_FP64: tl.constexpr,
):
    # n_cols and the strides are multiples of ALIGN; saying so lets the compiler use vector loads (N = 600: 8).
    n_cols, x_row_stride, y_row_stride = (
        n_cols // ALIGN * ALIGN,
        x_row_stride // ALIGN * ALIGN,
        y_row_stride // ALIGN * ALIGN,
    )
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(
        tl.int64
    )  # (ROWS, 1); int64: no overflow
    cols = tl.arange(0, BLOCK_N)[None, :]  # (1, BLOCK_N)
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")), IS_FP64)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])  # (ROWS, BLOCK_N)
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + rows * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _fwd_partials(
    x_ptr, m_ptr, s_ptr, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr, IS_FP64: tl.constexpr
):
    pid = tl.program_id(0)  # = row * n_chunks + chunk
    row, chunk = pid // n_chunks, pid % n_chunks
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    x = _acc(
        tl.load(
            x_ptr + row.to(tl.int64) * x_row_stride + cols, mask=cols < n_cols, other=-float("inf")
        ),
        IS_FP64,
    )
    m = tl.max(x, axis=0)
    # A piece that is all -inf contributes s = 0 (not exp(-inf - -inf) = NaN): other pieces may be finite.
    s = tl.sum(tl.exp(x - tl.where(m == -float("inf"), 0.0, m)), axis=0)
    tl.store(m_ptr + pid, m)
    tl.store(s_ptr + pid, s)


@triton.jit
def _fwd_finish(
    x_ptr,
    y_ptr,
    m_ptr,
    s_ptr,
    n_cols,
    x_row_stride,
    y_row_stride,
    n_chunks,
    CHUNK: tl.constexpr,
    CHUNKS_P2: tl.constexpr,
    IS_FP64: tl.constexpr,
):
    pid = (
        tl.num_programs(0) - 1 - tl.program_id(0)
    )  # reverse: L2 may still hold what _fwd_partials read last
    row, chunk = pid // n_chunks, pid % n_chunks
    parts = row * n_chunks + tl.arange(0, CHUNKS_P2)
    in_row = tl.arange(0, CHUNKS_P2) < n_chunks
    m_i = tl.load(m_ptr + parts, mask=in_row, other=-float("inf"))  # (CHUNKS_P2,)
    s_i = tl.load(s_ptr + parts, mask=in_row, other=0.0)
    m = tl.max(m_i, axis=0)
    # Online-softmax combine: sum_i s_i * exp(m_i - m). All -inf: m = -inf, NaN as in torch.
    s = tl.sum(tl.where(in_row, s_i * tl.exp(m_i - m), 0.0), axis=0)
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    x = _acc(
        tl.load(x_ptr + row.to(tl.int64) * x_row_stride + cols, mask=mask, other=-float("inf")),
        IS_FP64,
    )
    y = tl.exp(x - m) / s
    tl.store(
        y_ptr + row.to(tl.int64) * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask
    )


@triton.jit
def _bwd_one_pass(
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
    IS_FP64: tl.constexpr,
):
    n_cols, y_row_stride = (
        n_cols // ALIGN * ALIGN,
        y_row_stride // ALIGN * ALIGN,
    )  # as in _fwd_one_pass
    dy_row_stride, dx_row_stride = dy_row_stride // ALIGN * ALIGN, dx_row_stride // ALIGN * ALIGN
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)  # (ROWS, 1)
    cols = tl.arange(0, BLOCK_N)[None, :]  # (1, BLOCK_N)
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0), IS_FP64)
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0), IS_FP64)
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])  # dx = y * (dy - sum(dy * y))
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bwd_partials(
    y_ptr,
    dy_ptr,
    dot_ptr,
    n_cols,
    y_row_stride,
    dy_row_stride,
    n_chunks,
    CHUNK: tl.constexpr,
    IS_FP64: tl.constexpr,
):
    pid = tl.program_id(0)
    row, chunk = pid // n_chunks, pid % n_chunks
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    y = _acc(tl.load(y_ptr + row.to(tl.int64) * y_row_stride + cols, mask=mask, other=0.0), IS_FP64)
    dy = _acc(
        tl.load(dy_ptr + row.to(tl.int64) * dy_row_stride + cols, mask=mask, other=0.0), IS_FP64
    )
    tl.store(dot_ptr + pid, tl.sum(dy * y, axis=0))


@triton.jit
def _bwd_finish(
    y_ptr,
    dy_ptr,
    dx_ptr,
    dot_ptr,
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    n_chunks,
    CHUNK: tl.constexpr,
    CHUNKS_P2: tl.constexpr,
    IS_FP64: tl.constexpr,
):
    pid = tl.num_programs(0) - 1 - tl.program_id(0)  # reverse order, as in _fwd_finish
    row, chunk = pid // n_chunks, pid % n_chunks
    parts = tl.arange(0, CHUNKS_P2)
    dot = tl.sum(
        tl.load(dot_ptr + row * n_chunks + parts, mask=parts < n_chunks, other=0.0), axis=0
    )
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    mask = cols < n_cols
    y = _acc(tl.load(y_ptr + row.to(tl.int64) * y_row_stride + cols, mask=mask, other=0.0), IS_FP64)
    dy = _acc(
        tl.load(dy_ptr + row.to(tl.int64) * dy_row_stride + cols, mask=mask, other=0.0), IS_FP64
    )
    dx = y * (dy - dot)
    tl.store(
        dx_ptr + row.to(tl.int64) * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask
    )


def _one_pass_launch(n_rows: int, n_cols: int, strides: tuple[int, ...], per_thread: int):
    """(programs, constexprs and launch options) for a one-pass kernel: about TILE elements per program and at
    most `per_thread` elements of each row a thread (registers: 65,536 a multiprocessor, <= 64 a thread at 1024)."""
    block_n = triton.next_power_of_2(n_cols)
    rows = max(1, min(TILE // block_n, triton.next_power_of_2(n_rows)))
    warps = max(4, min(32, block_n * rows // (32 * per_thread)))
    align = math.gcd(n_cols, *strides, 16)
    return triton.cdiv(n_rows, rows), {
        "ROWS": rows,
        "BLOCK_N": block_n,
        "ALIGN": align,
        "num_warps": warps,
    }


def _acc_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def forward(
    x: torch.Tensor,
    y: torch.Tensor,
    wrap=lambda k: k,
    one_pass_max: int = ONE_PASS_MAX,
    chunk: int = CHUNK,
) -> None:
    """y = softmax(x) over dim 1. x, y: (rows, N), unit stride along N, any row stride; y is written."""
    n_rows, n_cols = map(
        int, x.shape
    )  # plain ints, also when traced with symbolic shapes: they set constexprs
    strides = (int(x.stride(0)), int(y.stride(0)))
    fp64 = x.dtype == torch.float64
    if n_cols <= one_pass_max:
        programs, opts = _one_pass_launch(n_rows, n_cols, strides, FWD_PER_THREAD)
        wrap(_fwd_one_pass)[(programs,)](x, y, n_rows, n_cols, *strides, IS_FP64=fp64, **opts)
        return
    n_chunks = triton.cdiv(n_cols, chunk)
    m = torch.empty(
        n_rows * n_chunks, device=x.device, dtype=_acc_dtype(x)
    )  # (rows * chunks,) partial maxima
    s = torch.empty_like(m)  # partial sums of exp(x - m_i)
    grid = (n_rows * n_chunks,)
    wrap(_fwd_partials)[grid](
        x, m, s, n_cols, strides[0], n_chunks, CHUNK=chunk, IS_FP64=fp64, num_warps=8
    )
    wrap(_fwd_finish)[grid](
        x,
        y,
        m,
        s,
        n_cols,
        *strides,
        n_chunks,
        CHUNK=chunk,
        CHUNKS_P2=triton.next_power_of_2(n_chunks),
        IS_FP64=fp64,
        num_warps=8,
    )


def backward(
    y: torch.Tensor,
    dy: torch.Tensor,
    dx: torch.Tensor,
    wrap=lambda k: k,
    one_pass_max: int = ONE_PASS_MAX_BWD,
    chunk: int = CHUNK,
) -> None:
    """dx = y * (dy - sum(dy * y)) over dim 1. y, dy, dx: (rows, N), unit stride along N; dx is written."""
    n_rows, n_cols = map(int, y.shape)
    fp64 = y.dtype == torch.float64
    strides = tuple(int(t.stride(0)) for t in (y, dy, dx))
    if n_cols <= one_pass_max:
        programs, opts = _one_pass_launch(n_rows, n_cols, strides, BWD_PER_THREAD)
        wrap(_bwd_one_pass)[(programs,)](y, dy, dx, n_rows, n_cols, *strides, IS_FP64=fp64, **opts)
        return
    n_chunks = triton.cdiv(n_cols, chunk)
    dot = torch.empty(
        n_rows * n_chunks, device=y.device, dtype=_acc_dtype(y)
    )  # partial sum(dy * y)
    grid = (n_rows * n_chunks,)
    wrap(_bwd_partials)[grid](
        y, dy, dot, n_cols, strides[0], strides[1], n_chunks, CHUNK=chunk, IS_FP64=fp64, num_warps=8
    )
    wrap(_bwd_finish)[grid](
        y,
        dy,
        dx,
        dot,
        n_cols,
        *strides,
        n_chunks,
        CHUNK=chunk,
        CHUNKS_P2=triton.next_power_of_2(n_chunks),
        IS_FP64=fp64,
        num_warps=8,
    )
