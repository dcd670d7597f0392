"""What a learner's kernel does that its output alone cannot say, watched while it runs (`watched()`): where its
loads and stores go, and what it computes in when its input is half precision.

## Out-of-bounds loads and stores

Stopped where they happen under Triton's interpreter, found afterwards on a GPU.

Under the interpreter (CPU) a kernel's `tl.load`/`tl.store` read and write process memory through raw addresses,
with no bounds check: a mask that lets one column too many through reads garbage or crashes the process.
`watched()` checks every address a load or store touches (its mask's true lanes) against the tensors that
launch was given, element by element (a row view's padding is outside it), and raises OutOfBounds before the
access, inside the learner's kernel: its traceback ends at the offending line of their file.

On a GPU nothing can stop a stray store as it happens, so the graded tensors sit in `guarded` buffers: rows
padded with extra columns and guard rows before and after, all holding a sentinel. After the kernel, any sentinel
that changed is a write out of bounds, and where it is (the padding after a row, the rows after the last)
says which mask is wrong. Reads are caught through the values: the input's padding holds POISON, a value that
wrecks any row that reads it.

## Half-precision arithmetic

What the kernel computes in when its input is half precision (bfloat16, float16) is read from what it does, the
same on the CPU and on a GPU, rather than from its values.

Why not from the values: Triton's interpreter (the CPU's) keeps a bfloat16 as its 16-bit pattern and runs arithmetic
on the patterns as if they were integers (Triton 3.7: bfloat16 0.5 * 2 gives 0.0; `interpreter_breaks_bfloat16` asks).
A kernel that adds or multiplies in bfloat16 gives garbage there, where a GPU gives a result that is only imprecise;
its values on the CPU say nothing true about it. What it does is the same everywhere:
- on the CPU, `watched()` also notes every floating-point add, subtract, multiply, divide and sum the interpreter
  runs on half-precision operands;
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
from dataclasses import dataclass
from unittest import mock

import numpy as np
import torch
import triton
import triton.language as tl

from workshop.i18n import N_, _, ngettext
from workshop.ops import INTERPRETED

POISON = 1e4  # in the input's padding and guards: a row that reads it has its max there, and softmax ~0 elsewhere
SENTINEL = (
    -1024.0
)  # in the output's padding, guards and body: exact in every float dtype; no softmax (or its
# gradient, here) is -1024


ACCESSES = {"load": N_("a load"), "store": N_("a store")}


class OutOfBounds(Exception):
    """A load or store outside the tensors of the launch (interpreter only): `access`, "load" or "store", and
    `place`, where its first stray address falls ({name, row, col, rows, cols, n}: plain values, which cross
    the worker's channel and are said in the lab's language by `said`)."""

    def __init__(self, access: str, place: dict):
        super().__init__(said(access, place))
        self.access, self.place = access, place


def said(access: str, place: dict) -> str:
    """'a load outside the kernel's tensors: x[0, 600] (x is 37 x 600: past the end of row 0), 4 addresses in
    all'."""
    return _("{access} outside the kernel's tensors: {where}").format(
        access=_(ACCESSES[access]), where=place_said(place)
    )


def place_said(place: dict) -> str:
    """Where a stray address falls, relative to the nearest tensor: 'y[36, 600] (y is 37 x 600: past the end
    of a row), 4 addresses in all'."""
    row, col, rows, cols = place["row"], place["col"], place["rows"], place["cols"]
    if 0 <= row < rows and col >= cols:
        why = _("past the end of row {row}: columns go up to {last}").format(row=row, last=cols - 1)
    elif row >= rows:
        why = _("past the last row, {last}").format(last=rows - 1)
    else:
        why = _("before the tensor's first element")
    text = ngettext(
        "{name}[{row}, {col}] ({name} is {shape}: {why}), {n} address in all",
        "{name}[{row}, {col}] ({name} is {shape}: {why}), {n} addresses in all",
        place["n"],
    )
    return text.format(
        name=place["name"], row=row, col=col, shape=f"{rows} x {cols}", why=why, n=place["n"]
    )


@dataclass(frozen=True)
class Region:
    """The elements of one tensor argument, by address: a 1-D or 2-D view with unit stride along its last dim."""

    name: str
    base: int
    itemsize: int
    rows: int
    cols: int
    row_stride: int  # elements; 0 for rows that all alias one (an expanded row)

    @classmethod
    def of(cls, name: str, t: torch.Tensor) -> Region:
        t2 = t.reshape(1, -1) if t.dim() == 1 else t  # the kernels' arguments are 1-D or (rows, N)
        return cls(name, t.data_ptr(), t.element_size(), *t2.shape, int(t2.stride(0)))

    def index(self, addresses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(inside, row, col) of each address: inside when it is one of the view's elements."""
        offset = addresses.astype(np.int64) - self.base
        aligned = offset % self.itemsize == 0
        offset //= self.itemsize
        # rows that all alias one (row stride 0): every address is in row 0
        row, col = (
            divmod(offset, self.row_stride) if self.row_stride else (np.zeros_like(offset), offset)
        )
        inside = aligned & (offset >= 0) & (row < self.rows) & (col < self.cols)
        return inside, row, col

    def distance(self, address: int) -> int:
        """Bytes from `address` to the view's span, from its first element to its last (0 within)."""
        span = ((self.rows - 1) * self.row_stride + self.cols) * self.itemsize  # bytes
        return max(self.base - address, address - (self.base + span), 0)


_regions: list[Region] | None = None  # the current launch's tensors, while watched() is on


def _check(access: str, ptrs, mask) -> None:
    addresses = np.asarray(ptrs.data).ravel()
    on = np.broadcast_to(np.asarray(mask.data, dtype=bool), np.shape(ptrs.data)).ravel()
    addresses = addresses[on]
    if _regions is None or addresses.size == 0:
        return
    inside = np.zeros(addresses.shape, dtype=bool)
    for region in _regions:
        inside |= region.index(addresses)[0]
    if not inside.all():
        # where the first stray address falls, relative to the nearest tensor (place_said says it): nearest by
        # its span, not its start (a row past x's last may lie closer to the start of y, allocated after it)
        stray = addresses[~inside]
        nearest = min(_regions, key=lambda r: r.distance(int(stray[0])))
        _inside, row, col = nearest.index(stray[:1])
        place = {
            "name": nearest.name,
            "row": int(row[0]),
            "col": int(col[0]),
            "rows": nearest.rows,
            "cols": nearest.cols,
            "n": len(stray),
        }
        raise OutOfBounds(access, place)


def guarded(values: torch.Tensor, pad: int, guard: int, fill: float) -> torch.Tensor:
    """A (rows, cols) tensor inside a buffer with `pad` extra columns after each row and `guard` rows before and
    after, all filled with `fill`: the buffer, (guard + rows + guard, cols + pad); what the kernel gets is its
    view `inside` (row stride cols + pad)."""
    rows, cols = values.shape
    buffer = torch.full(
        (guard + rows + guard, cols + pad), fill, dtype=values.dtype, device=values.device
    )
    inside(buffer, rows, cols, guard).copy_(values)
    return buffer


def inside(buffer: torch.Tensor, rows: int, cols: int, guard: int) -> torch.Tensor:
    """The (rows, cols) view of a buffer made by `guarded` (rows, cols and guard as there)."""
    return buffer[guard : guard + rows, :cols]


def outside_changed(
    buffer: torch.Tensor, rows: int, cols: int, guard: int, fill: float
) -> dict[str, int]:
    """Cells of a buffer made by `guarded` outside its view that no longer hold `fill`: {'row padding': n, 'rows
    after': n, 'rows before': n}."""
    changed = buffer != fill
    body = changed[guard : guard + rows]
    return {
        "rows before": int(changed[:guard].sum()),
        "row padding": int(body[:, cols:].sum()),
        "rows after": int(changed[guard + rows :].sum()),
    }


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
    """Every interpreted launch inside, watched: each load and store checked against that launch's tensor
    arguments (named after their parameters), OutOfBounds raised before a stray one, and the kernel's own
    exceptions raised as they are (not wrapped in an InterpreterError), so that their traceback reaches the
    learner's line; and the half-precision arithmetic of every kernel run inside noted in what it yields,
    {dtype: {op, ...}}. Nothing on a GPU: it yields {} (read the compiled kernel's IR instead, half_arithmetic)."""
    found: dict[str, set[str]] = {}
    if not INTERPRETED:
        yield found
        return
    from triton.runtime import interpreter

    builder, executor = interpreter.interpreter_builder, interpreter.GridExecutor
    reduce_ops = interpreter.ReduceOps
    load, store, init_args = (
        builder.create_masked_load,
        builder.create_masked_store,
        executor._init_args_hst,
    )
    binary_op, reduce_sum = builder.binary_op, reduce_ops.sum

    def checked_load(ptrs, mask, *args):
        _check("load", ptrs, mask)
        return load(ptrs, mask, *args)

    def checked_store(ptrs, value, mask, *args):
        _check("store", ptrs, mask)
        return store(ptrs, value, mask, *args)

    def recording_args(self, args, kwargs):
        global _regions
        host_args, host_kwargs = init_args(self, args, kwargs)
        named = zip(
            self.arg_names, host_args, strict=False
        )  # a tensor is named by its parameter: x_ptr -> x
        _regions = [
            Region.of(name.removesuffix("_ptr"), t)
            for name, t in named
            if isinstance(t, torch.Tensor)
        ]
        return host_args, host_kwargs

    def noting_binary_op(lhs, rhs, op):
        if op in NUMPY_OPS:
            _noted(found, lhs.dtype.scalar, NUMPY_OPS[op])
        return binary_op(lhs, rhs, op)

    def noting_sum(self, input):
        _noted(found, input.dtype.scalar, ADD)
        return reduce_sum(self, input)

    knobs = triton.knobs.compilation
    debugging, knobs.front_end_debugging = knobs.front_end_debugging, True
    try:
        # each set for the block, then restored (or deleted: the builder's methods are its class's, set on the
        # instance); _regions back to what it was
        with (
            mock.patch.object(builder, "create_masked_load", checked_load),
            mock.patch.object(builder, "create_masked_store", checked_store),
            mock.patch.object(executor, "_init_args_hst", recording_args),
            mock.patch(f"{__name__}._regions", _regions),
            mock.patch.object(builder, "binary_op", noting_binary_op),
            mock.patch.object(reduce_ops, "sum", noting_sum),
        ):
            yield found
    finally:
        knobs.front_end_debugging = debugging


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
