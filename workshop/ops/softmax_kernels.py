"""Triton kernels for softmax over rows, forward and backward: y = softmax(x) and dx = y * (dy - sum(dy * y)).

Each kernel sees a (rows, N) matrix through pointers, a row stride and unit stride along N; softmax_launch.py picks
the kernel and its parameters. Three ways to cover a row, by its length N:
- one pass (`_fwd_one_pass`, `_bwd_one_pass`): a program loads ROWS whole rows into registers, reduces and writes.
  Every byte is read once and written once: the least traffic there is.
- cooperative (`_fwd_cooperative`, `_bwd_cooperative`), for rows too long for one program's registers (a
  262,144-token vocabulary): a row is cut into CHUNK-sized pieces, one program each, and each program keeps its
  piece in registers while the row's programs exchange their partial reductions through global memory (and L2):
  each publishes its piece's partial, counts itself in at the row's counter, waits until the row's other pieces
  are in, combines all the partials and writes its piece. The row is still read once.
- split (`_fwd_partials` + `_fwd_finish`, `_bwd_partials` + `_bwd_finish`): the same pieces in two kernels, the
  first writing the partials, the second re-reading the row to finish it: 3 transfers for 2. It needs no
  program to wait for another, so it runs where programs run one after another: Triton's interpreter.

The forward's partial of a piece is the online-softmax pair (m_i = max, s_i = sum exp(x - m_i)), combined as
m = max m_i, s = sum s_i * exp(m_i - m); the backward's is sum(dy * y), added up.

Accumulation is in float32 (float64 for float64 inputs). Masked lanes load -inf (forward) or 0 (backward), so they
add nothing. -inf, inf and NaN follow torch.softmax: exp(-inf - m) = 0; a row that is all -inf or holds +inf or
NaN becomes all NaN.
"""

import triton
import triton.language as tl


@triton.jit
def _acc(x):
    """x in the accumulation type: float64 for float64 inputs, float32 for everything else."""
    if x.dtype == tl.float64:
        return x
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
    ROWS: tl.constexpr,  # rows per program
    BLOCK_N: tl.constexpr,  # N rounded up to a power of two (tl.arange needs one)
    ALIGN: tl.constexpr,  # a power of two that divides n_cols and both row strides
):
    # Saying that n_cols and the strides are multiples of ALIGN lets the compiler use vector loads.
    n_cols = n_cols // ALIGN * ALIGN
    x_row_stride, y_row_stride = x_row_stride // ALIGN * ALIGN, y_row_stride // ALIGN * ALIGN
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]  # (ROWS, 1)
    rows = rows.to(tl.int64)  # row * stride may pass 2**31
    cols = tl.arange(0, BLOCK_N)[None, :]  # (1, BLOCK_N)
    mask = (rows < n_rows) & (cols < n_cols)
    x = _acc(tl.load(x_ptr + rows * x_row_stride + cols, mask=mask, other=-float("inf")))
    e = tl.exp(x - tl.max(x, axis=1)[:, None])  # (ROWS, BLOCK_N)
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(y_ptr + rows * y_row_stride + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


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
    ALIGN: tl.constexpr,  # as in _fwd_one_pass
):
    n_cols = n_cols // ALIGN * ALIGN
    y_row_stride, dy_row_stride = y_row_stride // ALIGN * ALIGN, dy_row_stride // ALIGN * ALIGN
    dx_row_stride = dx_row_stride // ALIGN * ALIGN
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)  # (ROWS, 1)
    cols = tl.arange(0, BLOCK_N)[None, :]  # (1, BLOCK_N)
    mask = (rows < n_rows) & (cols < n_cols)
    y = _acc(tl.load(y_ptr + rows * y_row_stride + cols, mask=mask, other=0.0))
    dy = _acc(tl.load(dy_ptr + rows * dy_row_stride + cols, mask=mask, other=0.0))
    dx = y * (dy - tl.sum(dy * y, axis=1)[:, None])  # (ROWS, BLOCK_N)
    tl.store(dx_ptr + rows * dx_row_stride + cols, dx.to(dx_ptr.dtype.element_ty), mask=mask)


# ---- long rows: helpers shared by the cooperative and the split kernels ----


@triton.jit
def _piece(piece, n_chunks, n_cols, CHUNK: tl.constexpr):
    """Piece number `piece` (= row * n_chunks + chunk): its row, its columns (CHUNK,) and their mask."""
    row, chunk = piece // n_chunks, piece % n_chunks
    cols = chunk * CHUNK + tl.arange(0, CHUNK)
    return row, cols, cols < n_cols


@triton.jit
def _load(ptr, row, row_stride, cols, mask, other):
    """A piece of a row (CHUNK,), in the accumulation type; `other` in the masked lanes."""
    return _acc(tl.load(ptr + row.to(tl.int64) * row_stride + cols, mask=mask, other=other))


@triton.jit
def _store(ptr, row, row_stride, cols, mask, values):
    """Writes a piece of a row in ptr's dtype."""
    tl.store(ptr + row.to(tl.int64) * row_stride + cols, values.to(ptr.dtype.element_ty), mask=mask)


@triton.jit
def _piece_stats(x):
    """The online-softmax pair of one piece (CHUNK,): (max m_i, sum exp(x - m_i)). A piece that is all -inf
    gives s_i = 0, not exp(-inf - -inf) = NaN: the row's other pieces may be finite."""
    m = tl.max(x, axis=0)
    return m, tl.sum(tl.exp(x - tl.where(m == -float("inf"), 0.0, m)), axis=0)


@triton.jit
def _row_stats(m_ptr, s_ptr, row, n_chunks, CHUNKS_P2: tl.constexpr):
    """The row's (max, sum of exp(x - max)) from its pieces' pairs, at m_ptr/s_ptr[row * n_chunks + i]."""
    pieces = tl.arange(0, CHUNKS_P2)
    in_row = pieces < n_chunks
    # .cg: read at L2, where other multiprocessors wrote them (L1 is not kept coherent with their writes)
    m_i = tl.load(
        m_ptr + row * n_chunks + pieces, mask=in_row, other=-float("inf"), cache_modifier=".cg"
    )
    s_i = tl.load(s_ptr + row * n_chunks + pieces, mask=in_row, other=0.0, cache_modifier=".cg")
    m = tl.max(m_i, axis=0)
    # sum_i s_i * exp(m_i - m). A row that is all -inf has m = -inf and gets NaN, as in torch.
    return m, tl.sum(tl.where(in_row, s_i * tl.exp(m_i - m), 0.0), axis=0)


@triton.jit
def _row_dot(dot_ptr, row, n_chunks, CHUNKS_P2: tl.constexpr):
    """The row's sum(dy * y) from its pieces' partial sums, at dot_ptr[row * n_chunks + i]."""
    pieces = tl.arange(0, CHUNKS_P2)
    parts = tl.load(
        dot_ptr + row * n_chunks + pieces, mask=pieces < n_chunks, other=0.0, cache_modifier=".cg"
    )
    return tl.sum(parts, axis=0)


@triton.jit
def _take_piece(counters_ptr):
    """The next piece to work on, in the order programs START (a ticket), not by program id: a program only ever
    waits for pieces already handed to running programs, never for one that the GPU has not scheduled yet. So the
    cooperative kernels cannot deadlock as long as one row's pieces fit on the GPU at once."""
    return tl.atomic_add(counters_ptr, 1, sem="relaxed")


@triton.jit
def _arrive_and_wait(count_ptr, n_arrivals):
    """Counts this program in at *count_ptr, after its stores, and waits until n_arrivals programs have."""
    tl.debug_barrier()  # all of this program's threads have stored their partials before the release below
    arrived = tl.atomic_add(count_ptr, 1, sem="acq_rel") + 1
    while (
        arrived < n_arrivals
    ):  # each read is an atomic with acquire: the loads after it see the partials
        arrived = tl.atomic_add(count_ptr, 0, sem="acquire")
    tl.debug_barrier()


# ---- long rows, cooperative: read once ----


@triton.jit
def _fwd_cooperative(
    x_ptr,
    y_ptr,
    m_ptr,  # (rows * n_chunks,) the pieces' maxima
    s_ptr,  # (rows * n_chunks,) the pieces' sums of exp(x - m_i)
    counters_ptr,  # (1 + rows,) int32 zeros: [0] the piece ticket, [1 + row] the row's pieces published
    n_cols,
    x_row_stride,
    y_row_stride,
    n_chunks,
    CHUNK: tl.constexpr,
    CHUNKS_P2: tl.constexpr,  # n_chunks rounded up to a power of two
):
    piece = _take_piece(counters_ptr)
    row, cols, mask = _piece(piece, n_chunks, n_cols, CHUNK)
    x = _load(x_ptr, row, x_row_stride, cols, mask, -float("inf"))
    m_i, s_i = _piece_stats(x)
    tl.store(m_ptr + piece, m_i)
    tl.store(s_ptr + piece, s_i)
    _arrive_and_wait(counters_ptr + 1 + row, n_chunks)
    m, s = _row_stats(m_ptr, s_ptr, row, n_chunks, CHUNKS_P2)
    # x is still in registers: the row is read once
    _store(y_ptr, row, y_row_stride, cols, mask, tl.exp(x - m) / s)


@triton.jit
def _bwd_cooperative(
    y_ptr,
    dy_ptr,
    dx_ptr,
    dot_ptr,  # (rows * n_chunks,) the pieces' sums of dy * y
    counters_ptr,  # as in _fwd_cooperative
    n_cols,
    y_row_stride,
    dy_row_stride,
    dx_row_stride,
    n_chunks,
    CHUNK: tl.constexpr,
    CHUNKS_P2: tl.constexpr,
):
    piece = _take_piece(counters_ptr)
    row, cols, mask = _piece(piece, n_chunks, n_cols, CHUNK)
    y = _load(y_ptr, row, y_row_stride, cols, mask, 0.0)
    dy = _load(dy_ptr, row, dy_row_stride, cols, mask, 0.0)
    tl.store(dot_ptr + piece, tl.sum(dy * y, axis=0))
    _arrive_and_wait(counters_ptr + 1 + row, n_chunks)
    # y and dy are still in registers: the row is read once
    dx = y * (dy - _row_dot(dot_ptr, row, n_chunks, CHUNKS_P2))
    _store(dx_ptr, row, dx_row_stride, cols, mask, dx)


# ---- long rows, split in two kernels: read twice ----


@triton.jit
def _fwd_partials(x_ptr, m_ptr, s_ptr, n_cols, x_row_stride, n_chunks, CHUNK: tl.constexpr):
    piece = tl.program_id(0)
    row, cols, mask = _piece(piece, n_chunks, n_cols, CHUNK)
    m_i, s_i = _piece_stats(_load(x_ptr, row, x_row_stride, cols, mask, -float("inf")))
    tl.store(m_ptr + piece, m_i)
    tl.store(s_ptr + piece, s_i)


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
):
    # Last piece first: L2 may still hold what _fwd_partials read last.
    piece = tl.num_programs(0) - 1 - tl.program_id(0)
    m, s = _row_stats(m_ptr, s_ptr, piece // n_chunks, n_chunks, CHUNKS_P2)
    row, cols, mask = _piece(piece, n_chunks, n_cols, CHUNK)
    x = _load(x_ptr, row, x_row_stride, cols, mask, -float("inf"))
    _store(y_ptr, row, y_row_stride, cols, mask, tl.exp(x - m) / s)


@triton.jit
def _bwd_partials(
    y_ptr, dy_ptr, dot_ptr, n_cols, y_row_stride, dy_row_stride, n_chunks, CHUNK: tl.constexpr
):
    piece = tl.program_id(0)
    row, cols, mask = _piece(piece, n_chunks, n_cols, CHUNK)
    y = _load(y_ptr, row, y_row_stride, cols, mask, 0.0)
    dy = _load(dy_ptr, row, dy_row_stride, cols, mask, 0.0)
    tl.store(dot_ptr + piece, tl.sum(dy * y, axis=0))


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
):
    # Last piece first, as in _fwd_finish.
    row, cols, mask = _piece(tl.num_programs(0) - 1 - tl.program_id(0), n_chunks, n_cols, CHUNK)
    y = _load(y_ptr, row, y_row_stride, cols, mask, 0.0)
    dy = _load(dy_ptr, row, dy_row_stride, cols, mask, 0.0)
    dx = y * (dy - _row_dot(dot_ptr, row, n_chunks, CHUNKS_P2))
    _store(dx_ptr, row, dx_row_stride, cols, mask, dx)
