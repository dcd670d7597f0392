"""ops.softmax_launch: the plans behind each launch. A one-pass grid covers every row with whole rows per program;
rows too long for one pass are cut into pieces that cover the row (split kernels under the interpreter, whose
programs run one after another and so cannot wait for each other); ALIGN divides every int argument."""

from __future__ import annotations

import pytest
import torch
import triton

from workshop.ops import INTERPRETED, softmax_launch


def covers(plan, n_rows: int, n_cols: int) -> bool:
    (programs,), constexprs = plan(n_rows, n_cols, 8, 4)
    return programs * constexprs["ROWS"] >= n_rows and constexprs["BLOCK_N"] >= n_cols


def one_row_short(n_rows, n_cols, align, itemsize):
    """Planted: a grid one program short."""
    (programs,), constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, itemsize)
    return (max(0, programs - 1),), constexprs


@pytest.mark.parametrize("n_rows, n_cols", [(1, 1), (33, 600), (64, 600), (1000, 3), (7, 4096)])
def test_a_one_pass_grid_covers_every_row(n_rows, n_cols):
    assert covers(softmax_launch.one_pass_plan, n_rows, n_cols)
    (_,), constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, 8, 4)
    block = constexprs["BLOCK_N"]
    assert block & (block - 1) == 0 and 4 <= constexprs["num_warps"] <= 32


def test_the_check_catches_a_grid_one_program_short():
    assert not covers(one_row_short, 33, 600)


def off_the_interpreter(monkeypatch) -> None:
    """The GPU's plans on this machine: not interpreted, on an H100's 132 multiprocessors."""
    monkeypatch.setattr(softmax_launch, "INTERPRETED", False)
    monkeypatch.setattr(softmax_launch, "multiprocessors", lambda device: 132)
    softmax_launch.one_pass_plan.cache_clear()


def tiles_by_direction(plan, monkeypatch) -> bool:
    """Off the interpreter, whether a program's rows fill at most TILE_BYTES forward and BACKWARD_TILE_BYTES
    backward, with fewer rows backward (bfloat16 rows of 600, padded to 1,024 lanes: 2 KiB a row)."""
    off_the_interpreter(monkeypatch)
    try:
        (_,), fwd = plan(4096, 600, 8, 2)
        (_,), bwd = plan(4096, 600, 8, 2, backward=True)
    finally:
        softmax_launch.one_pass_plan.cache_clear()
    row_bytes = fwd["BLOCK_N"] * 2
    return (
        fwd["ROWS"] * row_bytes <= softmax_launch.TILE_BYTES
        and bwd["ROWS"] * row_bytes <= softmax_launch.BACKWARD_TILE_BYTES
        and bwd["ROWS"] < fwd["ROWS"]
    )


def one_tile_for_both(n_rows, n_cols, align, itemsize, backward=False):
    """Planted: the forward's tile for the backward too."""
    return softmax_launch.one_pass_plan(n_rows, n_cols, align, itemsize)


def test_the_backward_takes_smaller_tiles_than_the_forward(monkeypatch):
    assert tiles_by_direction(softmax_launch.one_pass_plan, monkeypatch)
    assert not tiles_by_direction(one_tile_for_both, monkeypatch)


def small_batch_programs(plan, monkeypatch) -> tuple[int, int]:
    """Off the interpreter, on an H100's 132 multiprocessors: the programs of bfloat16 (64, 600)'s forward and
    backward, and (4133, 600)'s forward (the kernel exercises' first case on a GPU, which must keep several rows
    a program so that the grader sees a kernel that handles one row of each program's)."""
    off_the_interpreter(monkeypatch)
    try:
        (fwd,), _ = plan(64, 600, 8, 2)
        (bwd,), _ = plan(64, 600, 8, 2, backward=True)
        (_,), graded = plan(4133, 600, 8, 4)
    finally:
        softmax_launch.one_pass_plan.cache_clear()
    return fwd, bwd, graded["ROWS"]


def whole_tiles(n_rows, n_cols, align, itemsize, backward=False):
    """Planted: the tile alone sets a program's rows, however few the rows."""
    block_n = triton.next_power_of_2(n_cols)
    tile = softmax_launch.BACKWARD_TILE_BYTES if backward else softmax_launch.TILE_BYTES
    rows = max(1, min(tile // itemsize // block_n, triton.next_power_of_2(n_rows)))
    return (triton.cdiv(n_rows, rows),), {"ROWS": rows}


def test_a_small_batch_takes_one_forward_row_a_program(monkeypatch):
    # at 8 KiB a program the forward was 16 programs of 4 rows; the backward's 2 KiB tile is one row already
    assert small_batch_programs(softmax_launch.one_pass_plan, monkeypatch) == (64, 64, 2)
    assert small_batch_programs(whole_tiles, monkeypatch)[0] == 16


def test_alignment_divides_every_int_up_to_16():
    assert softmax_launch.alignment(600, 600, 1200) == 8
    assert softmax_launch.alignment(64, 128) == 16 and softmax_launch.alignment(601, 600) == 1


def test_a_long_row_is_cut_into_pieces_that_cover_it():
    n_cols = 3 * softmax_launch.ONE_PASS_MAX + 1
    device = torch.device("cpu" if INTERPRETED else "cuda")
    strategy, pieces, constexprs = softmax_launch.long_row_plan(n_cols, 10**9, device)
    assert pieces * constexprs["CHUNK"] >= n_cols > (pieces - 1) * constexprs["CHUNK"]
    if INTERPRETED:
        assert strategy == "split"
    assert softmax_launch.one_pass_max(2, 4) <= softmax_launch.one_pass_max(
        1, 4
    )  # backward reads two


@pytest.mark.skipif(not INTERPRETED, reason="the CPU path: Triton's interpreter")
def test_forward_and_backward_on_padded_rows(monkeypatch):
    x = torch.randn(5, 64)[:, :50]  # row stride 64, 50 columns
    y = torch.empty(5, 50)
    softmax_launch.forward(x, y, 5, 50, 64, 50)
    torch.testing.assert_close(y, torch.softmax(x, -1))
    monkeypatch.setattr(softmax_launch, "ONE_PASS_MAX", 8)  # the long-row kernels, on the same rows
    y_split = torch.empty(5, 50)
    softmax_launch.forward(x, y_split, 5, 50, 64, 50)
    torch.testing.assert_close(y_split, y)
    dy, dx = torch.randn(5, 50), torch.empty(5, 50)
    softmax_launch.backward(y, dy, dx, 5, 50, (50, 50, 50))
    torch.testing.assert_close(dx, torch.ops.aten._softmax_backward_data(dy, y, -1, torch.float32))
