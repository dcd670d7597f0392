"""A tensor subclass that records every aten op it takes part in: __torch_dispatch__ on a tensor, not a mode.

A wrapper subclass is a tensor with sizes, strides and a dtype but no data of its own: it holds a plain tensor,
`elem`, and every aten op that one of its instances reaches calls the class's __torch_dispatch__, which must
unwrap the arguments (elem), call func on plain tensors (calling it on the wrapper would come straight back) and
wrap the results again, so that the next op reaches the class too. torch's LoggingTensor is built this way.

The lab's exercise is that classmethod: record_dispatch (below, the instructor's) is the one the class calls.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_map_only

from workshop.labs.tensor.counting_mode import NoResult


class RecordingTensor(torch.Tensor):
    """A wrapper around `elem` whose class records each op in `log` (recording_class makes one per use)."""

    log: list[str] = []
    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor, requires_grad: bool = False):
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            elem.size(),
            strides=elem.stride(),
            storage_offset=elem.storage_offset(),
            dtype=elem.dtype,
            device=elem.device,
            requires_grad=requires_grad,
        )
        wrapper.elem = elem
        return wrapper

    # ops only: no torch-function layer above them (the plain tensor's default)
    __torch_function__ = torch._C._disabled_torch_function_impl


def recording_class(record_dispatch) -> type[RecordingTensor]:
    """A RecordingTensor class of its own (its own log) whose __torch_dispatch__ is record_dispatch."""

    class Recorded(RecordingTensor):
        log: list[str] = []

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            out = record_dispatch(cls, func, types, args, kwargs)
            if out is None:
                raise NoResult(str(func))
            return out

    return Recorded


def record_dispatch(cls, func, types, args=(), kwargs=None):
    """A RecordingTensor class's __torch_dispatch__: append str(func) to cls.log, run func on the plain tensors
    inside, and return its results wrapped in cls."""
    cls.log.append(str(func))
    args, kwargs = tree_map_only(cls, lambda t: t.elem, (args, kwargs or {}))
    out = func(*args, **kwargs)
    return tree_map_only(torch.Tensor, cls, out)
