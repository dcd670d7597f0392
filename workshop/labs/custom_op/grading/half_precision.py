"""What a learner's kernel computes in when its input is half precision (bfloat16, float16): read from what the kernel
does, the same on the CPU and on a GPU, rather than from its values.

Why not from the values: Triton's interpreter (the CPU's) keeps a bfloat16 as its 16-bit pattern and runs arithmetic
on the patterns as if they were integers (Triton 3.7: bfloat16 0.5 * 2 gives 0.0; `interpreter_breaks_bfloat16` asks).
A kernel that adds or multiplies in bfloat16 gives garbage there, where a GPU gives a result that is only imprecise;
its values on the CPU say nothing true about it. What it does is the same everywhere:
- on the CPU, `watched()` notes every floating-point add, subtract, multiply, divide and sum the interpreter runs on
  half-precision operands;
- on a GPU, the compiled kernel's Triton IR (`ttir_half_arithmetic`) says the same: the types its arith operations
  and its reductions work in.
Both give the operations done in half precision, e.g. {"bfloat16": ["add", "multiply"]}, which
`half_precision_message` says to the learner, in the lab's process.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
from collections.abc import Iterator
from unittest import mock

import numpy as np
import torch
import triton
import triton.language as tl

from workshop.i18n import N_, _
from workshop.ops import INTERPRETED

HALF = {"bf16": "bfloat16", "fp16": "float16", "f16": "float16"}  # Triton's names -> torch's
ADD, SUBTRACT, MULTIPLY, DIVIDE = N_("add"), N_("subtract"), N_("multiply"), N_("divide")
NUMPY_OPS = {np.add: ADD, np.subtract: SUBTRACT, np.multiply: MULTIPLY, np.divide: DIVIDE}
TTIR_OPS = {
    "addf": ADD,
    "subf": SUBTRACT,
    "mulf": MULTIPLY,
    "divf": DIVIDE,
    "precise_divf": DIVIDE,
    "fma": MULTIPLY,
}
# `%5 = arith.mulf %3, %4 : tensor<4x1024xbf16>`, `%7 = arith.addf %a, %b : bf16` (inside a tt.reduce).
TTIR_LINE = re.compile(
    r"\b(?:arith|math|tt)\.(" + "|".join(TTIR_OPS) + r")\b[^\n]*:\s*(?:tensor<(?:\d+x)+)?(b?f16)\b"
)


@triton.jit
def _twice(x_ptr, y_ptr):
    x = tl.load(x_ptr)
    tl.store(y_ptr, x + x)


@functools.cache
def interpreter_breaks_bfloat16() -> bool:
    """Whether this process's Triton runs bfloat16 arithmetic wrongly: 0.5 + 0.5 in a kernel, under the
    interpreter."""
    if not INTERPRETED:
        return False
    x = torch.tensor([0.5], dtype=torch.bfloat16)
    y = torch.empty_like(x)
    _twice[(1,)](x, y)
    return y.item() != 1.0


def _noted(found: dict[str, set[str]], dtype, op: str) -> None:
    name = HALF.get(getattr(dtype, "name", ""))
    if name:
        found.setdefault(name, set()).add(op)


@contextlib.contextmanager
def watched() -> Iterator[dict[str, set[str]]]:
    """Under the interpreter: the half-precision arithmetic of every kernel run inside, {dtype: {op, ...}}.
    Nothing is noted on a GPU (read the compiled kernel's IR instead)."""
    found: dict[str, set[str]] = {}
    if not INTERPRETED:
        yield found
        return
    from triton.runtime import interpreter

    builder, reduce_ops = interpreter.interpreter_builder, interpreter.ReduceOps
    binary_op, reduce_sum = builder.binary_op, reduce_ops.sum

    def noting_binary_op(lhs, rhs, op):
        if op in NUMPY_OPS:
            _noted(found, lhs.dtype.scalar, NUMPY_OPS[op])
        return binary_op(lhs, rhs, op)

    def noting_sum(self, input):
        _noted(found, input.dtype.scalar, ADD)
        return reduce_sum(self, input)

    # the builder's binary_op set on the instance, then deleted (the class's method is back); ReduceOps.sum restored
    with (
        mock.patch.object(builder, "binary_op", noting_binary_op),
        mock.patch.object(reduce_ops, "sum", noting_sum),
    ):
        yield found


def ttir_half_arithmetic(ttir: str) -> dict[str, set[str]]:
    """The half-precision arithmetic in a compiled kernel's Triton IR, {dtype: {op, ...}}."""
    found: dict[str, set[str]] = {}
    for op, dtype in TTIR_LINE.findall(ttir):
        found.setdefault(HALF[dtype], set()).add(TTIR_OPS[op])
    return found


def half_arithmetic(watched_ops: dict[str, set[str]], launches) -> dict[str, list[str]]:
    """What a run of a kernel did in half precision: the interpreter's watch, or on a GPU the IR of the kernels it
    launched (their compiled form, kept by the launch record). {dtype: sorted ops}."""
    found = {dtype: set(ops) for dtype, ops in watched_ops.items()}
    for launch in launches:
        if launch.compiled is not None:
            for dtype, ops in ttir_half_arithmetic(launch.compiled.asm["ttir"]).items():
                found.setdefault(dtype, set()).update(ops)
    return {dtype: sorted(ops) for dtype, ops in sorted(found.items())}


def half_precision_message(run, attribute: str) -> str:
    """The message for a kernel that adds or multiplies in half precision, from its run on one case (a
    kernel_grading.KernelRun: its half_ops, values_tell, case)."""
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
