"""What a learner's kernel got wrong, said from what it wrote: each rule compares the output with what a typical
mistake would have produced (no max subtracted, masked lanes loading 0, the sum term left out, ...) and names
the mistake whose prediction it matches."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from workshop.i18n import _
from workshop.labs.custom_op.grading.kernel_grading import (
    CASES,
    LARGE_ROWS,
    NEGATIVE_ROW,
    Direction,
    KernelCase,
    KernelRun,
    row_strides,
)


def stride_mistake(
    rerun: Callable[[KernelCase], KernelRun | None],
    case: KernelCase,
    direction: Direction,
    attribute: str,
) -> str | None:
    """The message for a kernel that failed on `case` because of its row strides, or None. Right when every tensor
    has the first one's row stride: it uses one tensor's stride for another's. Else right on the same rows one
    after another (row stride = n_cols): it mixes up n_cols and the row stride. `rerun(case)`: the kernel's run
    on another layout of the case (None where it raised or went out of bounds there)."""
    shared = dataclasses.replace(case, own_strides=False)
    if _passes(rerun(shared)):
        return shared_stride(case, direction, attribute)
    if _passes(rerun(dataclasses.replace(shared, pad=0))):
        return row_stride(case, direction, attribute)
    return None


def _passes(run: KernelRun | None) -> bool:
    """Right on that layout: nothing outside written, every element written, within the tolerance."""
    if run is None:  # an access out of bounds, or any error: not this mistake alone
        return False
    return not any(run.outside.values()) and not run.unwritten.any() and run.error <= run.tolerance


def row_stride(case: KernelCase, direction: Direction, attribute: str) -> str:
    """The message for a kernel that takes n_cols for the row stride."""
    strides = ", ".join(f"{name}_row_stride" for name in direction.tensors)
    return _(
        "{name} is right when each row follows the previous one directly (row stride = n_cols) and wrong "
        "when the rows are padded, as here ({label}: {cols} columns, rows {stride} elements apart): it takes "
        "n_cols for the distance between rows. Row r of a tensor starts at its pointer + r * its row stride "
        "({strides}); its columns run up to n_cols"
    ).format(
        name=attribute,
        label=case.label,
        cols=case.cols,
        stride=case.cols + case.pad,
        strides=strides,
    )


def shared_stride(case: KernelCase, direction: Direction, attribute: str) -> str:
    """The message for a kernel that reads or writes a tensor with another tensor's row stride."""
    strides = zip(direction.tensors, row_strides(case, len(direction.tensors)), strict=True)
    return _(
        "{name} is right when its tensors' rows are all the same distance apart and wrong when each tensor "
        "has its own row stride, as here ({label}: {strides}): it addresses one tensor with another's row "
        "stride. Row r of each tensor starts at its own pointer + r * its own row stride"
    ).format(
        name=attribute,
        label=case.label,
        strides=", ".join(f"{name}_row_stride = {stride}" for name, stride in strides),
    )


def half_precision(run: KernelRun, attribute: str) -> str:
    """The message for a kernel that adds or multiplies in half precision (half_precision.py)."""
    dtype, ops = next(iter(run.half_ops.items()))
    digits = int(-math.log10(torch.finfo(getattr(torch, dtype)).eps))
    message = _(
        "{name} computes in {dtype} when its input is {dtype} (in the {label} case its arithmetic in "
        "{dtype}: {ops}). A {dtype} number carries about {digits} significant decimal digits, so a sum of "
        "hundreds of them loses the small terms, where torch.softmax accumulates in float32. Accumulate in "
        "float32: convert what you load (_acc does: float64 stays float64, the rest goes to float32), and "
        "only the stored result to the output's dtype."
    ).format(
        name=attribute,
        dtype=dtype,
        ops=", ".join(map(_, ops)),
        label=run.case.label,
        digits=digits,
    )
    if not run.values_tell:
        message += " " + _(
            "(Triton's interpreter on this machine computes bfloat16 arithmetic wrongly, so this case's "
            "values were not graded here; what a kernel computes in is graded the same way on a GPU.)"
        )
    return message


def outside(run: KernelRun, attribute: str) -> str:
    """Which mask let a store out, from where the guards changed."""
    changed = run.outside
    if changed["row padding"]:
        return _(
            "{name} wrote past the end of a row ({n} cells of the padding after the rows, {label}): the "
            "column mask must stop at cols < n_cols"
        ).format(name=attribute, n=changed["row padding"], label=run.case.label)
    if changed["rows after"]:
        return _(
            "{name} wrote rows past the last one ({n} cells after row {last}, {label}): the last program's "
            "rows past n_rows must be masked (rows < n_rows)"
        ).format(
            name=attribute, n=changed["rows after"], last=run.case.rows - 1, label=run.case.label
        )
    return _(
        "{name} wrote before the first row ({n} cells, {label}): check the row offsets"
    ).format(name=attribute, n=changed["rows before"], label=run.case.label)


def unwritten(run: KernelRun, attribute: str) -> str:
    """Which elements the kernel never wrote, as a pattern: the last column, all but one row a program, ..."""
    missing = run.unwritten
    rows = missing.all(-1).nonzero().flatten().tolist()
    per_program = run.plan[1]["ROWS"]
    if missing.all():
        return _(
            "{name} wrote nothing into its output ({label}): its stores go elsewhere. The output is the "
            "last pointer argument"
        ).format(name=attribute, label=run.case.label)
    if missing[:, -1].all() and not missing[:, :-1].any():
        return _(
            "{name} never wrote column {last}, the last ({label}): the column mask drops it. Columns "
            "0 ... n_cols - 1 are in: cols < n_cols"
        ).format(name=attribute, last=run.case.cols - 1, label=run.case.label)
    if rows and per_program > 1 and all(r % per_program for r in rows):
        return _(
            "{name} wrote only the first row of each program's {k} ({label}): a program covers ROWS rows, "
            "tl.program_id(0) * ROWS + tl.arange(0, ROWS)"
        ).format(name=attribute, k=per_program, label=run.case.label)
    if rows:
        return _("{name} never wrote rows {rows} ({label})").format(
            name=attribute, rows=_short(rows), label=run.case.label
        )
    cols = missing.any(0).nonzero().flatten().tolist()
    return _("{name} never wrote {n} elements, in columns {cols} ({label})").format(
        name=attribute, n=int(missing.sum()), cols=_short(cols), label=run.case.label
    )


def _short(items: list[int]) -> str:
    return ", ".join(map(str, items[:6])) + (" ..." if len(items) > 6 else "")


def _close(run: KernelRun, prediction: torch.Tensor) -> bool:
    """The output is what the mistake predicts (within the case's tolerance, NaN where it predicts NaN)."""
    err = (run.out - prediction).abs()
    err = torch.where(torch.isnan(run.out) & torch.isnan(prediction), 0.0, err)
    return bool(err.nan_to_num(torch.inf).max() <= 4 * run.tolerance + 1e-12)


def _masked_lanes_zero(run: KernelRun) -> torch.Tensor:
    """The forward whose masked lanes load 0: BLOCK_N - n_cols extra exp(0 - m) terms, m >= 0."""
    x = run.inputs["x"]
    pad = run.plan[1]["BLOCK_N"] - run.case.cols
    m = x.max(-1, keepdim=True).values.clamp(min=0.0)
    e = (x - m).exp()
    return e / (e.sum(-1, keepdim=True) + pad * (-m).exp())


def forward_values(run: KernelRun, attribute: str) -> str:
    """The forward's wrong values, named."""
    first = run.case is CASES[0]
    rows_bad = run.errors.max(-1).values > run.tolerance
    if first and rows_bad[list(LARGE_ROWS)].all() and rows_bad.sum() <= len(LARGE_ROWS):
        return _(
            "{name} is right except on the rows of large logits (rows {rows}, x + 1000), which come out "
            "{got}: exp(1000) overflows. Subtract each row's max before exp: softmax(x) = softmax(x - max)"
        ).format(name=attribute, rows=LARGE_ROWS, got=_sample(run, LARGE_ROWS[0]))
    if first and _close(run, _masked_lanes_zero(run)):
        return _(
            "{name}'s masked lanes load 0, not -inf: each adds exp(0 - max) to the row's sum (row "
            "{row}, all near -60, is off by a factor of e^60). Load with other=-float('inf')"
        ).format(name=attribute, row=NEGATIVE_ROW)
    sums = run.out.nan_to_num(0.0).sum(-1)
    if first and (sums < 0.5).any():
        return _(
            "{name}'s rows {rows} sum to about 0, not 1: they read a value from past the end of the row "
            "(the padding holds 1e4, which then dominates). Mask the loads with cols < n_cols"
        ).format(name=attribute, rows=_short((sums < 0.5).nonzero().flatten().tolist()))
    return _precision(run, attribute) or _worst(run, attribute)


def backward_values(run: KernelRun, attribute: str) -> str:
    """The backward's wrong values, named."""
    y, dy = run.inputs["y"], run.inputs["dy"]
    if _close(run, y * dy):
        return _(
            "{name} returns y * dy: the sum term is missing. dx = y * (dy - sum(dy * y)) along the row; "
            "without it the rows of dx do not sum to 0, as they must (softmax's outputs always sum to 1)"
        ).format(name=attribute)
    if _close(run, -run.expected):
        return _(
            "{name} has the sign flipped: dx = y * (dy - sum(dy * y)), not y * (sum - dy)"
        ).format(name=attribute)
    if _close(run, dy - (dy * y).sum(-1, keepdim=True)):
        return _("{name} returns dy - sum(dy * y): multiply by y").format(name=attribute)
    if torch.isnan(run.out).any():
        return _(
            "{name} writes NaN ({label}): masked lanes must load 0 for y and dy (other=0.0), so that they "
            "add nothing to sum(dy * y)"
        ).format(name=attribute, label=run.case.label)
    return _precision(run, attribute) or _worst(run, attribute)


def _precision(run: KernelRun, attribute: str) -> str | None:
    """A kernel right in float32 but off in float64 (computed in float32) or bfloat16 (computed in bfloat16)."""
    if run.case.dtype == torch.float64 and run.error < 1e-5:
        return _(
            "{name} is off by {e:.1e} in float64, float32's accuracy: compute in float64 for float64 "
            "inputs (_acc(x) does: float64 stays float64, the rest goes to float32). gradcheck needs it"
        ).format(name=attribute, e=run.error)
    if run.case.dtype == torch.bfloat16:
        return _(
            "{name} is off by {e:.1e} in bfloat16, more than torch.softmax ({tol:.1e} allowed): accumulate in "
            "float32 (_acc), and convert only the stored result to the output's dtype"
        ).format(name=attribute, e=run.error, tol=run.tolerance)
    return None


def _sample(run: KernelRun, row: int) -> str:
    values = run.out[row]
    return (
        "NaN"
        if torch.isnan(values).any()
        else _("{value:.3g} at most").format(value=values.max().item())
    )


def _worst(run: KernelRun, attribute: str) -> str:
    errors = run.errors
    index = int(errors.argmax())
    row, col = divmod(index, run.case.cols)
    return _(
        "{name}'s largest error is {e:.3g} ({label}, row {row}, column {col}: {got!r} where {want!r} is "
        "right; {tol:.1e} allowed)"
    ).format(
        name=attribute,
        e=run.error,
        label=run.case.label,
        row=row,
        col=col,
        got=run.out[row, col].item(),
        want=run.expected[row, col].item(),
        tol=run.tolerance,
    )


def values(run: KernelRun, direction: Direction, attribute: str) -> str:
    """The mistake, read from a case whose error is too large."""
    return (forward_values if direction.name == "forward" else backward_values)(run, attribute)
