"""The dispatcher's choice, re-implemented in a page of Python: a table lookup.

Given an operator's registrations (what was registered for which key, incl. alias keys such as
CompositeImplicitAutograd), the per-key backend fallbacks, the key sets of the tensor arguments and the
thread-local include/exclude sets, compute
  1. which keys are in play:   (tensor keys | TLS include) - TLS exclude - keys whose kernel is a fallthrough
  2. which key wins:           the one of highest priority (PRIORITY below, then the backend's rank)
  3. which kernel runs there:  the table entry for that key, computed from the registrations by the precedence
                               rules of OperatorEntry::computeDispatchTableEntry (c10/core/impl)
  4. the chain a call walks:   kernels that only add a concern (autograd, view tracking, Python TLS, the lab's
                               recorder at the Python key) pass the call on to the next lower key; the first
                               kernel that does the work ends the chain.
lab.py checks every answer against the real dispatcher (keys.py reads it), so this file cannot quietly drift.
Keys are plain names ("AutogradCPU", "Python"); keys.split_runtime_key splits a per-backend key in two.
"""

from __future__ import annotations

from dataclasses import dataclass

from workshop.labs.dispatcher.keys import Kernel, backend_names, split_runtime_key

# Functionality keys, highest priority first (c10/core/DispatchKey.h declares them lowest first).
PRIORITY = [
    "PythonDispatcher",
    "PreDispatch",
    "TESTING_ONLY_GenericMode",
    "TESTING_ONLY_GenericWrapper",
    "FuncTorchDynamicLayerFrontMode",
    "PythonTLSSnapshot",
    "DeferredInit",
    "FuncTorchGradWrapper",
    "VmapMode",
    "Batched",
    "FuncTorchVmapMode",
    "BatchedNestedTensor",
    "FuncTorchBatched",
    "AutocastPrivateUse1",
    "AutocastCUDA",
    "AutocastMPS",
    "AutocastXLA",
    "AutocastHPU",
    "AutocastIPU",
    "AutocastXPU",
    "AutocastMAIA",
    "AutocastMTIA",
    "AutocastCPU",
    "Tracer",
    "AutogradNestedTensor",
    "AutogradFunctionality",
    "AutogradOther",
    "ADInplaceOrView",
    "ZeroTensor",
    "Negative",
    "Conjugate",
    "NamedTensor",
    "Functionalize",
    "FuncTorchDynamicLayerBackMode",
    "Fake",
    "Python",
    "BackendSelect",
    "NestedTensor",
    "SparseCsr",
    "Sparse",
    "MkldnnCPU",
    "CustomRNGKeyId",
    "Quantized",
    "Metal",
    "Vulkan",
    "FPGA",
    "Dense",
]
AUTOGRAD = {"AutogradFunctionality", "AutogradOther", "AutogradNestedTensor"}
BACKENDS = {
    "Dense",
    "Quantized",
    "Sparse",
    "SparseCsr",
    "NestedTensor",
}  # where Composite*Autograd kernels may sit
# Kernels at these keys add their concern and hand the call to the next lower key (a "redispatch").
PASS_ON = AUTOGRAD | {"ADInplaceOrView", "PythonTLSSnapshot", "Python"}
# AutoDispatchBelowADInplaceOrView: what autograd and view-tracking kernels exclude for the calls made below them.
BELOW_AUTOGRAD_EXCLUDE = AUTOGRAD | {"ADInplaceOrView"}


def functionality(key: str) -> str:
    return split_runtime_key(key)[0]


def rank(key: str) -> tuple[int, int]:
    """Bigger wins: first the functionality's place in PRIORITY, then (for per-backend keys) the backend's."""
    f, backend = split_runtime_key(key)
    if f not in PRIORITY:
        raise KeyError(
            f"no priority known for dispatch key {key!r}; add its functionality to reimpl.PRIORITY"
        )
    return len(PRIORITY) - PRIORITY.index(f), (backend_names().index(backend) + 1) if backend else 0


def keys_in_play(tensor_keys, include, exclude) -> set[str]:
    """Step 1 (before fallthroughs). Excluding works on functionalities: excluding 'AutogradFunctionality' (or
    'AutogradCPU') removes AutogradCPU, AutogradCUDA, ... alike."""
    gone = {functionality(k) for k in exclude}
    return {k for k in set(tensor_keys) | set(include) if functionality(k) not in gone}


def table_entry(regs: dict[str, Kernel], fallbacks: dict[str, Kernel], key: str) -> Kernel | None:
    """Step 3: the kernel in key's slot of the computed table, from what was registered."""
    f, backend = split_runtime_key(key)
    if key in regs:  # 1. registered for exactly this key
        return Kernel(regs[key].source, "kernel", regs[key].fallthrough)
    if (
        f in BACKENDS
    ):  # 2.1, 2.2 a backend key takes a CompositeExplicitAutograd[NonFunctional] kernel
        for alias in (
            "CompositeExplicitAutogradNonFunctional[alias]",
            "CompositeExplicitAutograd[alias]",
        ):
            if alias in regs:
                return Kernel(regs[alias].source, "default backend kernel", False)
    if (f in BACKENDS or f in AUTOGRAD) and "CompositeImplicitAutograd[alias]" in regs:
        # 2.3 the decomposition; at an autograd key only if the backend has no kernel of its own, since then
        # autograd must wrap that kernel instead of differentiating through the decomposition
        backend_has_kernel = f in AUTOGRAD and (
            backend in regs or "CompositeExplicitAutograd[alias]" in regs
        )
        if not backend_has_kernel:
            return Kernel(regs["CompositeImplicitAutograd[alias]"].source, "math kernel", False)
    if (
        f in AUTOGRAD and "Autograd[alias]" in regs
    ):  # 2.4 the generated autograd kernel (VariableType)
        return Kernel(regs["Autograd[alias]"].source, "autograd kernel", False)
    if key in fallbacks:  # 3. the key's fallback for every operator
        return fallbacks[key]
    return None  # 4. nothing: calling op with this key would raise "could not run ... with arguments from ..."


@dataclass(frozen=True)
class Step:
    key: str
    kernel: Kernel | None
    passes_on: bool  # the kernel hands the call to the next lower key
    candidates: tuple[str, ...]  # the keys in play when this one won, highest first


def walk(regs, fallbacks, tensor_keys, include, exclude) -> tuple[list[Step], set[str]]:
    """Steps 1-4 for one call: the chain of (key, kernel), and the TLS exclude set the calls made by the last
    kernel will see (its guards: autograd excludes itself and ADInplaceOrView, autocast excludes itself)."""
    in_play = {
        k
        for k in keys_in_play(tensor_keys, include, exclude)
        if not ((e := table_entry(regs, fallbacks, k)) and e.fallthrough)
    }
    steps, child_exclude = [], set(exclude)
    while in_play:
        key = max(in_play, key=rank)
        kernel = table_entry(regs, fallbacks, key)
        passes_on = (
            kernel is not None and kernel.tag != "math kernel" and functionality(key) in PASS_ON
        )
        steps.append(Step(key, kernel, passes_on, tuple(sorted(in_play, key=rank, reverse=True))))
        if passes_on and functionality(key) in BELOW_AUTOGRAD_EXCLUDE:
            child_exclude |= BELOW_AUTOGRAD_EXCLUDE
        if functionality(key).startswith("Autocast") and kernel is not None:
            child_exclude.add(key)
        if not passes_on:
            break
        in_play = {k for k in in_play if rank(k) < rank(key)}
    return steps, child_exclude
