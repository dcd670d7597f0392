"""Which softmax kernel runs, with which parameters, and its launch: `forward` and `backward` over (rows, N).

The constants below were chosen by measurement on an H200 and an H100 (`python -m tools.softmax_sweep`, recorded
in benchmarks/custom_op/ and benchmarks/gpu-records/). A plan depends only on the shape, the strides' alignment and
the dtype, so it is computed once per kind of call (lru_cache); the launch goes through triton_launch.launch (the
cached compiled kernel, and the launch record).
"""

import functools
import math

import torch
import triton

from workshop.ops import INTERPRETED
from workshop.ops import softmax_kernels as k
from workshop.ops.triton_launch import launch

# One pass while a row fits one program: at most PER_THREAD elements a thread of 1,024 (ONE_PASS_MAX) and at most
# ONE_PASS_BYTES read per program. The float32 backward at N = 32,768 reads 256 KiB (y and dy) and held them in
# one program at 0.73 x copy; in pieces (cooperative) it reached 1.00; the forward (128 KiB) stays at 0.97 whole.
PER_THREAD = 32
# A one-pass program's fewest warps, however short its rows. Inductor's backward over rows of 600 runs one warp a
# row and is 1-2.5% ahead of ours up to 1,024 rows; ours with 2 or 1 warps lost up to 18% forward and 2.4%
# backward on an H100 (benchmarks/gpu-records/20261207-0915-h100-issue41-interleaved, call 7).
MIN_WARPS = 4
ONE_PASS_MAX = 32 * 1024
ONE_PASS_BYTES = 128 * 1024
# Short rows: several rows a program, about TILE_BYTES of input (per tensor read) each. At (32768, 600) and
# (262144, 600) the forward at 8 KiB beat 16 and 32 KiB in both dtypes (float32 0.98-0.99 x copy against 0.88-0.95
# and 0.84-0.88; bfloat16 0.77-0.85 against 0.67-0.74). The backward reads two tensors and wants smaller tiles, more
# programs: on an H100 at 2 KiB against 8, bfloat16 (4096, 600) went from 0.99 to 1.18 x copy, (4096, 1024) from
# 1.13 to 1.22, (32768, 600) from 0.995 to 1.01-1.02, and float32 (4096, 600) from 1.19 to 1.21; rows of 4,096
# and more (one row a program either way) were level (benchmarks/gpu-records/20261206-1535-h100-softmax-profiles,
# tile_sweep.json). The forward over rows of 600 keeps 8 KiB: at 2 KiB bfloat16 (32768, 600) fell from 0.96 to 0.84.
TILE_BYTES = 8 * 1024
BACKWARD_TILE_BYTES = 2 * 1024
# A small batch fills no GPU at the forward's tile: bfloat16 (64, 600) ran as 16 programs of 4 rows on an H100's 132
# multiprocessors, 3.6 us against Liger's 3.2 with one row a program (Nsight Compute,
# benchmarks/gpu-records/20261206-2107-h100-issue41-profiles). Where n_rows is too small for PROGRAMS_PER_SM forward
# programs a multiprocessor, a program takes fewer rows: bfloat16 (1024, 600) went from 0.91 to 1.04 of the best
# peer, and 5 of the 6 small shapes measured ahead of every peer (benchmarks/gpu-records/20261206-1928-h100/issue41;
# 4 to 16 a multiprocessor measured alike). The backward's tile already gives rows of 600 one row a program.
PROGRAMS_PER_SM = 8
# Long rows: pieces of CHUNK elements, one program of CHUNK_WARPS warps each (4,096 to 16,384 and 4 to 16 warps
# measured within the run-to-run spread of about 5%).
CHUNK = 8192
CHUNK_WARPS = 8
# Triton's interpreter costs about a millisecond a program, whatever its size (numpy works on whole blocks): there
# a one-pass program takes up to ONE_PASS_MAX elements of rows, and a long row is cut into pieces of that length.
# The same kernels, fewer programs: the CPU runs of the lab and the tests take seconds, not minutes.


@functools.lru_cache(maxsize=1024)
def one_pass_plan(
    n_rows: int, n_cols: int, align: int, itemsize: int, backward: bool = False
) -> tuple[tuple[int], dict]:
    """(grid, constexprs) for a one-pass kernel: about TILE_BYTES (the backward: BACKWARD_TILE_BYTES) of input per
    program, whole rows, in the forward no more rows than leave PROGRAMS_PER_SM programs a multiprocessor, and at
    most PER_THREAD elements of a row a thread."""
    block_n = triton.next_power_of_2(n_cols)
    tile_bytes = BACKWARD_TILE_BYTES if backward else TILE_BYTES
    per_program = ONE_PASS_MAX if INTERPRETED else tile_bytes // itemsize  # elements; see below
    rows = max(1, min(per_program // block_n, triton.next_power_of_2(n_rows)))
    if not INTERPRETED and not backward:
        spread = n_rows // (PROGRAMS_PER_SM * multiprocessors(torch.device("cuda")))
        rows = min(rows, 1 << max(0, spread.bit_length() - 1))  # a power of two, at least 1
    warps = max(MIN_WARPS, min(32, block_n * rows // (32 * PER_THREAD)))
    return (triton.cdiv(n_rows, rows),), {
        "ROWS": rows,
        "BLOCK_N": block_n,
        "ALIGN": align,
        "num_warps": warps,
    }


@functools.lru_cache
def multiprocessors(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count


@functools.lru_cache
def l2_bytes(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).L2_cache_size


def one_pass_max(tensors_read: int, itemsize: int) -> int:
    """The longest row the one-pass kernel takes: forward (1 tensor read) or backward (2)."""
    return min(ONE_PASS_MAX, ONE_PASS_BYTES // (tensors_read * itemsize))


def long_row_plan(n_cols: int, bytes_read: int, device: torch.device) -> tuple[str, int, dict]:
    """("cooperative" or "split", pieces a row, constexprs) for rows too long for one pass.

    Cooperative reads the input once, but its programs wait for each other: it needs a row's pieces resident
    together (no more of them than multiprocessors, each of which holds at least one program), which programs
    that run one after another, as in Triton's interpreter, never are; and it pays only where the input does not
    fit in L2. Where it fits, the split kernels' second read comes from L2 and nobody waits: bfloat16
    (64, 262144), 32 MiB, measured 0.63 x copy split and 0.54 cooperative; at 64 MiB and more, cooperative won
    (float32 (64, 262144) forward 0.69-0.73 against 0.63, backward 0.81-0.84 against 0.61)."""
    chunk = ONE_PASS_MAX if INTERPRETED else CHUNK
    n_chunks = triton.cdiv(n_cols, chunk)
    cooperative = (
        not INTERPRETED and n_chunks <= multiprocessors(device) and bytes_read > l2_bytes(device)
    )
    constexprs = {
        "CHUNK": chunk,
        "CHUNKS_P2": triton.next_power_of_2(n_chunks),
        "num_warps": CHUNK_WARPS,
    }
    return ("cooperative" if cooperative else "split"), n_chunks, constexprs


def alignment(*ints: int) -> int:
    """The largest power of two up to 16 that divides every int (see ALIGN in the kernels)."""
    return math.gcd(*ints, 16)


# What each direction's kernels read and keep: "reads", its input tensors (the forward's x; the backward's y and
# dy), the first of a launch's tensors, its output last; "scratch", the long-row kernels' statistics of the pieces,
# (n_rows * n_chunks,) each: the forward's maxima m_i and sums of exp(x - m_i), the backward's sums of dy * y.
DIRECTIONS = {"forward": {"reads": 1, "scratch": 2}, "backward": {"reads": 2, "scratch": 1}}


def forward(
    x,
    y,
    n_rows: int,
    n_cols: int,
    x_row_stride: int,
    y_row_stride: int,
    wrap=None,
    one_pass=None,
) -> None:
    """y = softmax(x) along rows of n_cols elements, unit stride along a row; x and y any tensors with that layout
    (a contiguous (..., N) tensor needs no view). `wrap`: torch.library.wrap_triton in a triton_op's body.
    `one_pass`: the one-pass kernel to launch, with _fwd_one_pass's parameters (None: _fwd_one_pass; the
    custom_op lab passes the learner's)."""
    # The kernels looked up at each call, so that a test can replace one in softmax_kernels.
    one_pass = k._fwd_one_pass if one_pass is None else one_pass
    kernels = (one_pass, k._fwd_cooperative, k._fwd_partials, k._fwd_finish)
    _launch_rows("forward", kernels, (x, y), n_rows, n_cols, (x_row_stride, y_row_stride), wrap)


def backward(
    y, dy, dx, n_rows: int, n_cols: int, strides: tuple[int, int, int], wrap=None, one_pass=None
) -> None:
    """dx = y * (dy - sum(dy * y)) along rows; strides: the row strides of y, dy and dx. `one_pass`: as in
    forward, for _bwd_one_pass."""
    one_pass = k._bwd_one_pass if one_pass is None else one_pass
    kernels = (one_pass, k._bwd_cooperative, k._bwd_partials, k._bwd_finish)
    _launch_rows("backward", kernels, (y, dy, dx), n_rows, n_cols, strides, wrap)


def _launch_rows(
    direction: str, kernels: tuple, tensors: tuple, n_rows: int, n_cols: int, strides, wrap
) -> None:
    """The direction's kernels (one-pass, cooperative, partials, finish) over (n_rows, n_cols) rows: `tensors` its
    inputs then its output, `strides` their row strides, in the same order. A kernel's parameters: its tensors (the
    scratch after them), n_cols and the row strides (the partials': the inputs' only), then n_chunks for the
    long-row kernels."""
    one_pass, cooperative, partials, finish = kernels
    reads, first = DIRECTIONS[direction]["reads"], tensors[0]
    itemsize = first.element_size()
    ints = (n_cols, *strides)
    if n_cols <= one_pass_max(reads, itemsize):
        grid, constexprs = one_pass_plan(
            n_rows, n_cols, alignment(*ints), itemsize, backward=direction == "backward"
        )
        launch(one_pass, grid, tensors, (n_rows, *ints), constexprs, wrap)
        return
    bytes_read = reads * n_rows * n_cols * itemsize
    strategy, n_chunks, constexprs = long_row_plan(n_cols, bytes_read, first.device)
    grid = (n_rows * n_chunks,)
    scratch = tuple(
        # the statistics in float32, or in float64 for float64 inputs
        torch.empty(
            n_rows * n_chunks,
            device=first.device,
            dtype=torch.promote_types(first.dtype, torch.float32),
        )
        for _ in range(DIRECTIONS[direction]["scratch"])
    )
    if strategy == "cooperative":
        counters = torch.zeros(1 + n_rows, device=first.device, dtype=torch.int32)
        cooperative_tensors = (*tensors, *scratch, counters)
        launch(cooperative, grid, cooperative_tensors, (*ints, n_chunks), constexprs, wrap)
        return
    partial_constexprs = {"CHUNK": constexprs["CHUNK"], "num_warps": CHUNK_WARPS}
    read = (*tensors[:reads], *scratch)  # the partials read the inputs and write the scratch
    launch(partials, grid, read, (n_cols, *strides[:reads], n_chunks), partial_constexprs, wrap)
    launch(finish, grid, (*tensors, *scratch), (*ints, n_chunks), constexprs, wrap)
