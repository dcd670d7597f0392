"""A dispatch mode that counts what each aten op costs: FLOPs and bytes, keyed by the op's name.

A TorchDispatchMode is the kernel of the Python dispatch key: while it is active, every aten op that reaches that
key calls its __torch_dispatch__(func, types, args, kwargs) instead of running, and the op runs only if that method
calls func(*args, **kwargs), with the mode switched off meanwhile (so the call does not come back to it). What the
method returns is the op's result. torch.utils.flop_counter.FlopCounterMode and DebugMode are built this way.

The lab's exercise is the method: count_dispatch (below, the instructor's) is CountingMode's __torch_dispatch__.
"""

from __future__ import annotations

from collections import Counter

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


class NoResult(Exception):
    """The mode's method returned None for an op: it never called func, or dropped what func returned."""


class CountingMode(TorchDispatchMode):
    """Counts, for each op that runs while it is active: flops[name] and bytes[name], name = str(func)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here runs under torch.compile; torch's default wraps the method in a Dynamo guard whose first
        # call imports torch._dynamo (seconds of the lab's start).
        return False

    def __init__(self, count_dispatch):
        super().__init__()
        self.count_dispatch = (
            count_dispatch  # the method's body: the learner's, or the instructor's below
        )
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
    if (
        not func.is_view
    ):  # a view reads and writes no element: it is new numbers over the same storage
        tensors = [t for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)]
        self.bytes[name] += sum(t.numel() * t.element_size() for t in tensors)
    return out
