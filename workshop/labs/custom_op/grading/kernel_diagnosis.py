"""What a learner's kernel got wrong where the output alone cannot say it: its row strides, found by running the
kernel again on other layouts of a case, and the arithmetic it did in half precision (half_precision.py). The
mistakes its output shows are data: kernel_mistakes.py."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch

from workshop.i18n import _
from workshop.labs.custom_op.grading.kernel_grading import (
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
