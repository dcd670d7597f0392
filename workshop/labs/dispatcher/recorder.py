"""Watch one call go through PyTorch: the Python layer, every aten op that reaches the Python key, the profiler.

Three observers, each at a different depth:
- PythonLayer (a TorchFunctionMode) sees `F.linear` before any dispatching, with the TLS sets of that moment.
- DispatchRecorder (a TorchDispatchMode) is the kernel at the Python key. It records each aten op that gets
  that far (op, key sets of its tensor inputs, TLS), then hands the call on below the Python key itself, with
  `redispatch` and a key set it computes from the real dispatcher's data, so the kernel there runs exactly as it
  would without the recorder. It re-enters itself meanwhile, so the calls that kernel makes are recorded too,
  nested. Ops decided above the Python key (CompositeImplicitAutograd at the autograd key, autocast) never
  arrive: that difference is what the lab is about.
- torch.profiler records every operator call (not redispatches), wherever it was decided, and on CUDA the device
  kernels each op launched (the GEMM).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from workshop.labs.dispatcher import keys


@dataclass
class Call:
    """One operator call as the lab saw it."""

    op: str  # schema name, "aten::addmm"
    overload: str  # "default", "int", ...
    tensor_keys: object  # DispatchKeySet: union over the tensor arguments
    tls: tuple  # (include, exclude) DispatchKeySets where it was observed
    arrived_at_python: bool = False
    below_python_key: str | None = (
        None  # the key the recorder's redispatch ran (the real dispatcher's pick)
    )
    child_tls: tuple | None = (
        None  # TLS in force while the kernel below Python ran (its calls start from this)
    )
    children: list[Call] = field(default_factory=list)
    output: str = ""

    @property
    def qualified(self) -> str:
        return self.op if self.overload == "default" else f"{self.op}.{self.overload}"

    def flat(self):
        yield self
        for c in self.children:
            yield from c.flat()


def _describe(out) -> str:
    ts = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
    return ", ".join(f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}" for t in ts)


def below_python_keyset(op: str, tensor_ks, include, exclude):
    """What the dispatcher itself would pass on from the Python key: (tensor keys | include) - exclude, the keys
    below Python only, without the keys whose kernel for op is a fallthrough (the dispatcher skips them)."""
    ks = ((tensor_ks | include) - exclude) & keys.keys_below("Python")
    table = keys.computed_table(op)
    for name in keys.names(ks):
        if name in table and table[name].fallthrough:
            ks = ks.remove(getattr(keys.DK, name))
    return ks


class DispatchRecorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls: list[Call] = []  # calls that arrived from above the Python key, in order
        self._stack: list[Call] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        call = Call(
            func._schema.name, func._overloadname, keys.tensor_keys(tensors), keys.tls(), True
        )
        (self._stack[-1].children if self._stack else self.calls).append(call)
        ks = below_python_keyset(call.qualified, call.tensor_keys, *call.tls)
        call.below_python_key = ks.highestPriorityTypeId().name
        self._stack.append(call)
        try:
            with self:  # see the calls the kernel below makes
                call.child_tls = keys.tls()
                out = func.redispatch(ks, *args, **kwargs)
        finally:
            self._stack.pop()
        call.output = _describe(out)
        return out


@dataclass
class PythonCall:
    function: str  # "torch.nn.functional.linear"
    tensor_args: list[dict]  # shape, dtype, device, requires_grad, dispatch keys
    tls: tuple  # (include, exclude) DispatchKeySets when the call enters C++


class PythonLayer(TorchFunctionMode):
    """Records the torch-level function calls; the first one is the root of everything the dispatcher does."""

    def __init__(self):
        super().__init__()
        self.calls: list[PythonCall] = []
        self.root_args: tuple = ()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        name = f"{getattr(func, '__module__', None) or 'torch'}.{getattr(func, '__name__', repr(func))}"
        info = [
            {
                "shape": list(t.shape),
                "dtype": str(t.dtype).removeprefix("torch."),
                "device": str(t.device),
                "requires_grad": t.requires_grad,
                "dispatch_keys": keys.names(torch._C._dispatch_keys(t)),
            }
            for t in tensors
        ]
        if not self.calls:
            self.root_args = tuple(tensors)
        self.calls.append(
            PythonCall(name.replace("torch._C._nn.", "torch.nn.functional."), info, keys.tls())
        )
        return func(*args, **kwargs)


@dataclass
class Recording:
    output: torch.Tensor
    python: list[PythonCall]
    root_args: tuple  # the tensors F.linear was called with
    observed: list[Call]  # DispatchRecorder.calls
    profiled_ops: list[str]  # every aten op called, in call order (profiler)
    device_kernels: list[dict]  # {"op", "kernel"} for each device kernel launched (CUDA only)
    notes: list[str]


def record(fn, device: str) -> Recording:
    """Run fn() under all three observers (profiler outermost, so it also sees the recorders' work)."""
    notes = []
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    python, dispatch = PythonLayer(), DispatchRecorder()
    with torch.profiler.profile(activities=activities) as prof:
        with dispatch, python:
            out = fn()
        if device == "cuda":
            torch.cuda.synchronize()
    events = sorted(prof.events(), key=lambda e: (e.time_range.start, -e.time_range.end))
    ops = [e for e in events if e.name.startswith("aten::") and str(e.device_type).endswith("CPU")]
    kernels = []
    for e in ops:  # device kernels hang off the op that launched them
        kernels += [{"op": e.name, "kernel": k.name} for k in getattr(e, "kernels", [])]
    if device == "cuda" and not kernels:
        kernels = [
            {"op": None, "kernel": e.name} for e in events if str(e.device_type).endswith("CUDA")
        ]
        notes.append(
            "profiler events carry no .kernels here: device kernels listed without their op"
        )
    return Recording(
        out, python.calls, python.root_args, dispatch.calls, [e.name for e in ops], kernels, notes
    )
