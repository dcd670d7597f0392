"""A tensor's anatomy on the LM head's own tensors: each view's sizes, strides (in elements), storage offset, and
whether it shares the weight's storage (untyped_storage().data_ptr(): the same memory, not a copy).

A strided tensor is a storage (a flat run of elements) read through three numbers per dimension: element
[i0, i1, ...] lives at storage index offset + i0 * stride[0] + i1 * stride[1] + ... A view is a new set of those
numbers over the same storage; a copy is a new storage.
"""

from __future__ import annotations

import torch


def head_views(W: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The views the run takes apart, by the expression that makes each, evaluated on the head's tensors. W (600,
    64), b (600,), x (B, T, 64)."""
    rows = x.shape[:-1].numel()  # M = B*T: b.expand stands for the bias added to each of x's rows
    return {
        "W": W,
        "W.t()": W.t(),  # (64, 600)
        "x.view(-1, 64)": x.view(-1, 64),  # (M, 64)
        "W.narrow(0, 100, 50)": W.narrow(0, 100, 50),  # (50, 64): rows 100..149
        "b.expand(176, 600)": b.expand(rows, 600),  # (M, 600), stride 0 along the rows
        "W.t().contiguous()": W.t().contiguous(),  # (64, 600): a copy laid out row by row
        "W[2::3, 16:]": W[2::3, 16:],  # (200, 48): every third row from row 2, from column 16
    }


def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether a and b read the same memory: the same storage, seen through any sizes, strides and offset."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def anatomy(W: torch.Tensor, b: torch.Tensor, x: torch.Tensor) -> list[dict]:
    """One row per view of head_views."""
    bases = {"W": W, "b": b, "x": x}
    return [
        {
            "expression": expression,
            "size": list(view.shape),
            "stride": list(view.stride()),  # in elements, not bytes
            "offset": view.storage_offset(),  # storage_offset(): the storage index of element [0, 0, ...]
            # "W", "b" or "x": the tensor it was made from (each expression starts with its name)
            "base": expression[0],
            # its storage is its base's (untyped_storage().data_ptr() equal)
            "shares": shares_storage(view, bases[expression[0]]),
            "contiguous": view.is_contiguous(),
        }
        for expression, view in head_views(W, b, x).items()
    ]


def storage_indices(size: list[int], stride: list[int], offset: int) -> torch.Tensor:
    """The storage index of every element of a 2-D view: offset + i * stride[0] + j * stride[1]. (size)"""
    i = torch.arange(size[0]).unsqueeze(1)  # (rows, 1)
    j = torch.arange(size[1]).unsqueeze(0)  # (1, cols)
    return offset + i * stride[0] + j * stride[1]
