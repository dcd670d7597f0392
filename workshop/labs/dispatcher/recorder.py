"""Watch one call go through PyTorch: the Python layer, every aten op that reaches the Python key, the profiler.

Three observers, each at a different depth:
- PythonLayer (a TorchFunctionMode) sees `F.linear` / `torch.matmul` before any dispatching, with the TLS sets
  of that moment.
- DispatchRecorder (a TorchDispatchMode) is the kernel at the Python key. It records each aten op that gets
  that far (op, key sets of its tensor inputs, TLS), then hands the call on below the Python key itself, with
  `redispatch` and the key set the real dispatcher would use, so the kernel there runs exactly as it would
  without the recorder. It re-enters itself meanwhile, so the calls that kernel makes are recorded too,
  nested. Ops decided above the Python key (CompositeImplicitAutograd at the autograd key, autocast) never
  arrive: that difference is what the lab is about.
- torch.profiler records every operator call (not redispatches), wherever it was decided, and on CUDA the device
  kernels each op launched (the GEMM). Its trace is kept for Perfetto / chrome://tracing.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from workshop.labs.dispatcher import keys


def seen_call(
    op: str, overload: str, tensor_keys, tls: tuple, arrived_at_python: bool = False
) -> dict:
    """One operator call as the lab saw it; the recorder fills in what it learns below the Python key."""
    return {
        "op": op,  # schema name, "aten::addmm"
        "overload": overload,  # "default", "int", ...
        # the name its dispatch table goes by, "aten::transpose.int"
        "qualified": op if overload == "default" else f"{op}.{overload}",
        "tensor_keys": tensor_keys,  # DispatchKeySet: union over the tensor arguments
        "tls": tls,  # (include, exclude) DispatchKeySets where it was observed
        "arrived_at_python": arrived_at_python,
        "below_python_key": None,  # the key the recorder's redispatch ran (the real pick)
        "child_tls": None,  # TLS while the kernel below Python ran (the calls it makes start from it)
        "children": [],  # the calls that kernel made, seen_call's each
        "output": "",
    }


def describe(out) -> str:
    """'float32[2, 6, 600]' for each tensor in out."""
    ts = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
    return ", ".join(f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}" for t in ts)


class DispatchRecorder(TorchDispatchMode):
    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here runs under torch.compile. Left True (torch 2.13's default), __torch_dispatch__ is wrapped in
        # torch._disable_dynamo, whose first call imports torch._dynamo: 2-6 s of the lab's start.
        return False

    def __init__(self):
        super().__init__()
        self.calls: list[
            dict
        ] = []  # calls that arrived from above the Python key, in order (seen_call's)
        self._stack: list[dict] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        call = seen_call(
            func._schema.name, func._overloadname, keys.tensor_keys(tensors), keys.tls(), True
        )
        (self._stack[-1]["children"] if self._stack else self.calls).append(call)
        # what the dispatcher itself would pass on from the Python key: the keys below it only
        ks = keys.real_keys_in_play(call["qualified"], call["tensor_keys"], *call["tls"])
        ks = ks & keys.keys_below("Python")
        call["below_python_key"] = ks.highestPriorityTypeId().name
        self._stack.append(call)
        try:
            with self:  # see the calls the kernel below makes
                call["child_tls"] = keys.tls()
                out = func.redispatch(ks, *args, **kwargs)
        finally:
            self._stack.pop()
        call["output"] = describe(out)
        return out


class PythonLayer(TorchFunctionMode):
    """Records the torch-level function calls; the first one is the root of everything the dispatcher does."""

    def __init__(self):
        super().__init__()
        # {"function": "torch.nn.functional.linear", "tensor_args": [{shape, dtype, device, requires_grad,
        # dispatch_keys}, ...], "tls_include", "tls_exclude": the TLS key sets when the call enters C++}
        self.calls: list[dict] = []
        self.root_args: tuple = ()  # the tensors the traced function was called with
        self.root_tls: tuple = ()  # (include, exclude) DispatchKeySets when it entered C++

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
        include, exclude = keys.tls()
        if not self.calls:
            self.root_args, self.root_tls = tuple(tensors), (include, exclude)
        function = name.replace("torch._C._nn.", "torch.nn.functional.")
        self.calls.append(
            {
                "function": function,
                "tensor_args": info,
                "tls_include": keys.names(include),
                "tls_exclude": keys.names(exclude),
            }
        )
        return func(*args, **kwargs)


def record(fn, device: str) -> tuple[torch.Tensor, PythonLayer, DispatchRecorder, object]:
    """Run fn() under all three observers (profiler outermost, so it also sees the recorders' work): fn()'s
    output, the two recorders, the profiler.

    torch.autograd.profiler is the profiler torch.profiler.profile wraps (same Kineto trace and events), without
    the 2-4 s torch.profiler spends importing Inductor on its first use."""
    python, dispatch = PythonLayer(), DispatchRecorder()
    use_device = "cuda" if device == "cuda" else None
    # use_kineto on CUDA: without it this profiler falls back to timing each op with CUDA events, and an op's
    # "kernel" is the op itself (aten::addmm), not the cuBLAS kernel it launched (torch 2.11 on the H200)
    with torch.autograd.profiler.profile(
        use_device=use_device, use_kineto=use_device is not None
    ) as prof:
        with dispatch, python:
            out = fn()
        if device == "cuda":
            torch.cuda.synchronize()
    return out, python, dispatch, prof


def profiled(prof, device: str) -> tuple[list[str], list[dict], list[str]]:
    """What the profiler saw: every aten op called, in call order; each device kernel launched (CUDA only), as
    {"op": the aten op that launched it (None where the profiler does not say), "kernel": the device kernel's
    name, e.g. cuBLAS's "gemmSN_TN_kernel<...>"}; notes. Device kernels hang off the op that launched them; where
    this profiler does not link them, they are listed without their op, and a note says so."""
    events = sorted(prof.function_events, key=lambda e: (e.time_range.start, -e.time_range.end))
    ops = [e for e in events if e.name.startswith("aten::") and str(e.device_type).endswith("CPU")]
    kernels = [{"op": e.name, "kernel": k.name} for e in ops for k in getattr(e, "kernels", [])]
    if device != "cuda" or kernels:
        return [e.name for e in ops], kernels, []
    unlinked = [
        {"op": None, "kernel": e.name} for e in events if str(e.device_type).endswith("CUDA")
    ]
    return (
        [e.name for e in ops],
        unlinked,
        ["profiler events carry no .kernels here: device kernels listed without their op"],
    )


def chrome_trace(prof) -> bytes:
    """The profile as Chrome trace JSON (export_chrome_trace writes only to a path)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        return path.read_bytes()
