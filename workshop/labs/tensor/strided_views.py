"""Views written with as_strided only: the instructor's solutions of the lab's three view exercises.

as_strided(size, stride, storage_offset) is the one primitive under every view: it reads the input's storage
through new numbers. Its offset is an index into the storage, not into the input: a view of a view starts at the
input's own storage_offset() plus what it skips. Strides and offsets count elements, never bytes.
"""

from __future__ import annotations

import torch


def narrow_view(x: torch.Tensor, dim: int, start: int, length: int) -> torch.Tensor:
    """x.narrow(dim, start, length) with as_strided only: `length` entries of `dim` from `start`."""
    size = list(x.shape)
    size[dim] = length
    # skipping `start` entries of dim skips start * stride[dim] storage elements; the strides stay x's
    return x.as_strided(size, x.stride(), x.storage_offset() + start * x.stride(dim))


def diagonal_view(x: torch.Tensor) -> torch.Tensor:
    """x.diagonal() of a 2-D x (R, C) with as_strided only: x[k, k] for k < min(R, C). (min(R, C),)"""
    n = min(x.shape)
    # one step along the diagonal is one row and one column: both strides at once
    return x.as_strided((n,), (x.stride(0) + x.stride(1),), x.storage_offset())


def sliding_window(x: torch.Tensor, size: int, step: int) -> torch.Tensor:
    """x.unfold(-1, size, step) with as_strided only: windows of `size` along x's last dimension, one every `step`
    entries. x (..., L) -> (..., (L - size) // step + 1, size)"""
    *lead, length = x.shape
    *lead_strides, last = x.stride()
    windows = (length - size) // step + 1
    # the next window starts `step` entries further; within a window the entries are x's own last stride apart
    return x.as_strided(
        (*lead, windows, size), (*lead_strides, step * last, last), x.storage_offset()
    )
