"""Out-of-bounds loads and stores of a learner's kernel: stopped where they happen under Triton's interpreter,
found afterwards on a GPU.

Under the interpreter (CPU) a kernel's `tl.load`/`tl.store` read and write process memory through raw addresses,
with no bounds check: a mask that lets one column too many through reads garbage or crashes the process.
`bounds_checked()` checks every address a load or store touches (its mask's true lanes) against the tensors that
launch was given, element by element (a row view's padding is outside it), and raises OutOfBounds before the
access, inside the learner's kernel: its traceback ends at the offending line of their file.

On a GPU nothing can stop a stray store as it happens, so the graded tensors sit in `guarded` buffers: rows
padded with extra columns and guard rows before and after, all holding a sentinel. After the kernel, any sentinel
that changed is a write out of bounds, and where it is (the padding after a row, the rows after the last)
says which mask is wrong. Reads are caught through the values: the input's padding holds POISON, a value that
wrecks any row that reads it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from unittest import mock

import numpy as np
import torch
import triton

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


_regions: list[Region] | None = None  # the current launch's tensors, while bounds_checked() is on


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


@contextlib.contextmanager
def bounds_checked():
    """Every interpreted launch inside: each load and store checked against that launch's tensor arguments
    (named after their parameters), and the kernel's own exceptions raised as they are (not wrapped in an
    InterpreterError), so that their traceback reaches the learner's line. Nothing on a GPU."""
    if not INTERPRETED:
        yield
        return
    from triton.runtime import interpreter

    builder, executor = interpreter.interpreter_builder, interpreter.GridExecutor
    load, store, init_args = (
        builder.create_masked_load,
        builder.create_masked_store,
        executor._init_args_hst,
    )

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

    knobs = triton.knobs.compilation
    debugging, knobs.front_end_debugging = knobs.front_end_debugging, True
    try:
        # each set for the block, then restored (or deleted: the builder's methods are its class's); _regions
        # back to what it was
        with (
            mock.patch.object(builder, "create_masked_load", checked_load),
            mock.patch.object(builder, "create_masked_store", checked_store),
            mock.patch.object(executor, "_init_args_hst", recording_args),
            mock.patch(f"{__name__}._regions", _regions),
        ):
            yield
    finally:
        knobs.front_end_debugging = debugging


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
