"""A learner's one-pass kernel graded on its own: launched by the op's own launch code (softmax_launch) on
padded, guarded inputs, compared with float64, its launches read from the launch record, and its mistakes named.

Four cases, each a (rows, N) matrix whose rows are padded past N (the row stride is N + pad, so a mask that lets
column N through reads padding, not the next row), each tensor with a row stride of its own (a kernel that reads
dy with y's stride reads the wrong rows): float32 (FIRST_ROWS, 600), whose rows do not fill the last program and
whose rows 3 and 20 are shifted by +1000 (exp overflows there unless the row's max is subtracted first), row 11 by
-60 (where masked lanes loading 0 instead of -inf would dominate the sum) and row 7 half -inf (a causal attention
row); float32 (5, 37), whose N is odd (ALIGN 1); float64 (6, 100), which needs float64 arithmetic; bfloat16
(6, 600), which needs float32 arithmetic. Under the interpreter every load and store is bounds-checked
(kernel_watch.py); on a GPU the guards around each tensor show stray writes afterwards.

Where each part runs (the worker protocol): `guarded_case`, in the lab's process, makes a case's inputs from the
seed and puts each tensor in its guarded buffer; `launch_case` launches the learner's kernel on those buffers in the
worker and sends back what it left (the output's whole guarded buffer, the launch record, the half-precision
arithmetic it did); `judged`, in the lab's process, reads that buffer against float64 from the same inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import triton

from workshop.labs.custom_op.grading import correctness, kernel_watch
from workshop.ops import INTERPRETED, softmax_launch
from workshop.ops.triton_launch import recording


@dataclass(frozen=True)
class KernelCase:
    label: str
    dtype: torch.dtype
    rows: int
    cols: int
    pad: int  # columns of padding after each row of the first tensor: its row stride is cols + pad
    own_strides: bool = True  # each next tensor's rows 2 x ALIGN further apart (row_strides)


# The first case's rows: enough that every program of the forward's plan holds several rows and the last holds
# fewer. On a GPU, 4133: two rows a program on up to 258 multiprocessors (softmax_launch.PROGRAMS_PER_SM gives a
# small batch one row a program, where a kernel that handles only one row of each program's, or has no row mask,
# would pass). Under the interpreter a program takes 32 rows of 600 (ONE_PASS_MAX), so 37 do it, and 4133 would
# cost every grading of the kernel exercises 50 times as much: a forward launch took 1.6 s against 0.03 s.
FIRST_ROWS = 37 if INTERPRETED else 4133
CASES = (
    KernelCase(f"float32 ({FIRST_ROWS}, 600)", torch.float32, FIRST_ROWS, 600, 8),
    KernelCase("float32 (5, 37)", torch.float32, 5, 37, 3),
    KernelCase("float64 (6, 100)", torch.float64, 6, 100, 4),
    KernelCase("bfloat16 (6, 600)", torch.bfloat16, 6, 600, 8),
)
LARGE_ROWS = (3, 20)  # of the first case: logits + 1000
NEGATIVE_ROW = 11  # of the first case: logits - 60
MASKED_ROW = 7  # of the first case: its first half -inf


def row_strides(case: KernelCase, n_tensors: int) -> list[int]:
    """Each tensor's row stride: cols + pad, then 2 x ALIGN more for each next tensor (own_strides), which keeps
    ALIGN, the largest power of two up to 16 dividing cols and every stride, the same."""
    align = softmax_launch.alignment(case.cols, case.cols + case.pad)
    step = 2 * align if case.own_strides else 0
    return [case.cols + case.pad + i * step for i in range(n_tensors)]


def logits(case: KernelCase, seed: int) -> torch.Tensor:
    """(rows, cols) float64 on the CPU: N(0, 16), with the first case's special rows."""
    x = torch.randn(case.rows, case.cols, generator=torch.Generator().manual_seed(seed)) * 4
    x = x.double()
    if case.label == CASES[0].label:  # padded or not (exercise_grading.layout_mistake)
        x[list(LARGE_ROWS)] += 1000.0
        x[NEGATIVE_ROW] -= 60.0
        x[MASKED_ROW, : case.cols // 2] = float("-inf")
    return x


@dataclass(frozen=True)
class Direction:
    """The forward or the backward kernel: its tensors, its launch, and what it must compute."""

    name: str
    tensors: tuple[str, ...]  # the kernel's tensor arguments, the output last
    inputs: Callable  # (case, seed) -> {name: float64 (rows, cols)}: the inputs before rounding to the dtype
    expected: Callable  # {name: float64} -> the exact output, float64
    by_torch: Callable  # {name: tensor in the dtype} -> torch's own result
    launch: Callable  # (kernel, [views], rows, cols) -> None: the op's launch code with `kernel` as one pass


def _backward_inputs(case, seed):
    dy = torch.randn(case.rows, case.cols, generator=torch.Generator().manual_seed(seed + 1))
    return {"y": torch.softmax(logits(case, seed), -1), "dy": dy.double()}


FORWARD = Direction(
    "forward",
    ("x", "y"),
    lambda case, seed: {"x": logits(case, seed)},
    lambda t: torch.softmax(t["x"], -1),
    lambda t: torch.softmax(t["x"], -1),
    # x, y, then their row strides
    lambda kernel, views, rows, cols: softmax_launch.forward(
        *views, rows, cols, *(v.stride(0) for v in views), one_pass=kernel
    ),
)
BACKWARD = Direction(
    "backward",
    ("y", "dy", "dx"),
    _backward_inputs,
    # dx = y * (dy - sum(dy * y)) along the rows
    lambda t: t["y"] * (t["dy"] - (t["dy"] * t["y"]).sum(-1, keepdim=True)),
    lambda t: torch.ops.aten._softmax_backward_data(t["dy"], t["y"], -1, t["y"].dtype),
    # y, dy, dx, then the tuple of their row strides
    lambda kernel, views, rows, cols: softmax_launch.backward(
        *views, rows, cols, tuple(int(v.stride(0)) for v in views), one_pass=kernel
    ),
)
DIRECTIONS = {direction.name: direction for direction in (FORWARD, BACKWARD)}


@dataclass
class KernelRun:
    """One case's launch of the learner's kernel, and what it left."""

    case: KernelCase
    inputs: dict[str, torch.Tensor]  # as the kernel read them, float64 copies
    out: torch.Tensor  # what the kernel wrote into its output view, float64
    expected: torch.Tensor  # float64
    tolerance: float
    # region -> cells changed outside the output view (kernel_watch.outside_changed)
    outside: dict[str, int]
    # the launch record: {"kernel": name, "grid": [programs], "learners": the learner's kernel or another}
    launches: list[dict]
    plan: tuple[tuple[int], dict]  # (grid, constexprs) that the launch plan gives for this case
    # the arithmetic the kernel did in half precision, {dtype: [op, ...]} (kernel_watch.half_arithmetic)
    half_ops: dict[str, list[str]]

    @property
    def values_tell(self) -> bool:
        """Whether the output says what the kernel computes: not where Triton's interpreter ran the kernel's
        bfloat16 arithmetic, which it gets wrong (kernel_watch.py)."""
        return not ("bfloat16" in self.half_ops and kernel_watch.interpreter_breaks_bfloat16())

    @property
    def unwritten(self) -> torch.Tensor:
        """(rows, cols) bool: cells still holding the sentinel."""
        return self.out == kernel_watch.SENTINEL

    @property
    def errors(self) -> torch.Tensor:
        """(rows, cols) |out - expected|, inf where out is NaN (or inf) and expected is not."""
        err = (self.out - self.expected).abs()
        return torch.where(
            torch.isfinite(err) | torch.isnan(self.expected), err.nan_to_num(0.0), torch.inf
        )

    @property
    def error(self) -> float:
        return float(self.errors.max())


# Beyond 1.25 x torch's own error, in units of the result's scale: 8 roundings in float32 and float64, where a
# row's sum taken in another order than torch's moves the last bits (the reference kernel's worst: 5 units at
# float32 (37, 600), the first case under the interpreter); in bfloat16 the result's own rounding (correctness.SLACK).
# The mistakes graded here are orders of magnitude above: NaN, a factor e^60, the sum term (O(1)), float32's 1e-8 in
# float64.
ROUNDING = {
    torch.float64: 8 * torch.finfo(torch.float64).eps,
    torch.float32: 8 * torch.finfo(torch.float32).eps,
    torch.bfloat16: correctness.SLACK[torch.bfloat16],
}


def tolerance(direction: Direction, rounded: dict, expected: torch.Tensor, dtype) -> float:
    """1.25 x torch's own error against float64, plus ROUNDING of the result's scale."""
    theirs = (direction.by_torch(rounded).double() - expected).abs().nan_to_num(0.0).max()
    return 1.25 * float(theirs) + ROUNDING[dtype] * float(expected.abs().nan_to_num(0.0).max())


def _plan(case: KernelCase, direction: Direction) -> tuple[tuple[int], dict]:
    """(grid, constexprs) of the op's launch plan for this case (the backward's tiles are smaller on a GPU)."""
    return softmax_launch.one_pass_plan(
        case.rows,
        case.cols,
        softmax_launch.alignment(case.cols, case.cols + case.pad),
        torch.empty(0, dtype=case.dtype).element_size(),
        backward=direction is BACKWARD,
    )


def _guard_rows(case: KernelCase, plan) -> int:
    """Guard rows around each tensor: more than a program's rows and a block's reach past the last row."""
    return plan[1]["ROWS"] + triton.cdiv(plan[1]["BLOCK_N"], case.cols + case.pad) + 1


def _rounded(case: KernelCase, direction: Direction, seed: int) -> dict[str, torch.Tensor]:
    return {name: t.to(case.dtype) for name, t in direction.inputs(case, seed).items()}


def guarded_case(case: KernelCase, direction: Direction, seed: int) -> dict:
    """In the lab's process: what the worker launches the kernel on (launch_case's arguments, wire values). Each
    of the direction's tensors in a guarded buffer (kernel_watch.guarded) padded to its own row stride
    (row_strides): the inputs rounded to the case's dtype, among POISON; the output all SENTINEL. With the view's
    rows and cols and the guard rows around it."""
    rounded = _rounded(case, direction, seed)
    guard = _guard_rows(case, _plan(case, direction))
    tensors = [
        *rounded.values(),
        torch.full_like(rounded[direction.tensors[0]], kernel_watch.SENTINEL),
    ]
    fills = [kernel_watch.POISON] * len(rounded) + [kernel_watch.SENTINEL]
    strides = row_strides(case, len(direction.tensors))
    buffers = [
        kernel_watch.guarded(t, stride - case.cols, guard, fill)
        for t, stride, fill in zip(tensors, strides, fills, strict=True)
    ]
    return {"buffers": buffers, "rows": case.rows, "cols": case.cols, "guard": guard}


def launch_case(
    kernel, direction: Direction, device: str, buffers: list, rows: int, cols: int, guard: int
) -> dict:
    """In the worker: `kernel` launched through the op's launch code on one case's guarded buffers
    (guarded_case), moved to `device`, watched (kernel_watch: its loads and stores bounds-checked under the
    interpreter, OutOfBounds raised before a stray one); what it left, as wire values: {"out": the output's whole
    buffer, "launches", "half_ops"}."""
    buffers = [buffer.to(device) for buffer in buffers]
    views = [kernel_watch.inside(buffer, rows, cols, guard) for buffer in buffers]
    with recording() as launches, kernel_watch.watched() as half_ops:
        direction.launch(kernel, views, rows, cols)
    return {
        "out": buffers[-1],
        "launches": [
            {
                "kernel": launch.kernel,
                "grid": list(launch.grid),
                "learners": launch.function is kernel,
            }
            for launch in launches
        ],
        "half_ops": kernel_watch.half_arithmetic(half_ops, launches),
    }


def judged(case: KernelCase, direction: Direction, seed: int, launched: dict) -> KernelRun:
    """In the lab's process: what `launch_case` sent back, read against float64 from the same inputs."""
    rounded = _rounded(case, direction, seed)
    expected = direction.expected({name: t.double() for name, t in rounded.items()})
    plan = _plan(case, direction)
    buffer, guard = launched["out"], _guard_rows(case, plan)
    # the buffer came back from the worker: laid out as launch_case made it, or no verdict is read from it
    if (
        buffer.dim() != 2
        or buffer.shape[0] != guard + case.rows + guard
        or buffer.shape[1] < case.cols
    ):
        raise ValueError(
            f"a buffer of shape {tuple(buffer.shape)}, not guarded rows of {case.label}"
        )
    return KernelRun(
        case,
        {name: t.double() for name, t in rounded.items()},
        kernel_watch.inside(buffer, case.rows, case.cols, guard).double().cpu(),
        expected,
        tolerance(direction, rounded, expected, case.dtype),
        kernel_watch.outside_changed(buffer, case.rows, case.cols, guard, kernel_watch.SENTINEL),
        list(launched["launches"]),
        plan,
        dict(launched["half_ops"]),
    )
