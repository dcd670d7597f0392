"""The Python dispatch key, built by the learner two ways: a mode that counts what each aten op costs (FLOPs and
bytes, keyed by the op's name), and a tensor subclass that records every aten op it takes part in.

A TorchDispatchMode is the kernel of the Python dispatch key: while it is active, every aten op that reaches that
key calls its __torch_dispatch__(func, types, args, kwargs) instead of running, and the op runs only if that method
calls func(*args, **kwargs), with the mode switched off meanwhile (so the call does not come back to it). What the
method returns is the op's result. torch.utils.flop_counter.FlopCounterMode and DebugMode are built this way.
The lab's exercise is the method: count_dispatch (below, the instructor's) is CountingMode's __torch_dispatch__.

A tensor subclass puts __torch_dispatch__ on a tensor instead of a mode. A wrapper subclass is a tensor with sizes,
strides and a dtype but no data of its own: it holds a plain tensor, `elem`, and every aten op that one of its
instances reaches calls the class's __torch_dispatch__, which must unwrap the arguments (elem), call func on plain
tensors (calling it on the wrapper would come straight back) and wrap the results again, so that the next op
reaches the class too. torch's LoggingTensor is built this way. The lab's exercise is that classmethod:
record_dispatch (below, the instructor's) is the one the class calls.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map_only


class NoResult(Exception):
    """The mode's (or the recording class's) method returned None for an op: it never called func, or dropped what
    func returned."""


class CountingMode(TorchDispatchMode):
    """Counts, for each op that runs while it is active: flops[name] and bytes[name], name = str(func)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here runs under torch.compile; torch's default wraps the method in a Dynamo guard whose first
        # call imports torch._dynamo (seconds of the lab's start).
        return False

    def __init__(self, count_dispatch):
        super().__init__()
        # the method's body: the learner's, or the instructor's below
        self.count_dispatch = count_dispatch
        self.flops: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = self.count_dispatch(self, func, types, args, kwargs)
        if out is None:
            raise NoResult(str(func))
        return out


def count_dispatch(self, func, types, args=(), kwargs=None):
    """CountingMode's __torch_dispatch__: run the op, add its FLOPs and bytes to self.flops and self.bytes under
    str(func), and return what it returned."""
    kwargs = kwargs or {}
    out = func(*args, **kwargs)
    name = str(func)
    if func is torch.ops.aten.mm.default:
        (m, k), (_, n) = args[0].shape, args[1].shape  # (M, K) @ (K, N)
        self.flops[name] += 2 * m * k * n  # a multiply and an add per term of each of the M*N sums
    elif func is torch.ops.aten.addmm.default:
        (m, k), (_, n) = args[1].shape, args[2].shape  # bias + (M, K) @ (K, N)
        self.flops[name] += 2 * m * k * n + m * n  # and the bias added to each of the M*N outputs
    # a view reads and writes no element: it is new numbers over the same storage
    if not func.is_view:
        tensors = [t for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)]
        self.bytes[name] += sum(t.numel() * t.element_size() for t in tensors)
    return out


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
