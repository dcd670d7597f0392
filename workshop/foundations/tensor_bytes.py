"""Bytes held by a tensor, or by the tensors of a (nested) list or tuple; anything else counts 0.

Used to size what moves through memory or over the wire: a collective's buffers (distributed lab) and the
FakeTensor results of FX graph nodes (compile lab). FakeTensors answer numel() and element_size() too.
"""

from __future__ import annotations

import torch


def tensor_bytes(value) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    return 0
