"""The dispatcher's choice, re-implemented in a page of Python: a table lookup.

Given an operator's registrations (what was registered for which key, incl. alias keys such as
CompositeImplicitAutograd), the per-key backend fallbacks, the key sets of the tensor arguments and the
thread-local include/exclude sets, compute
  1. which kernel sits in a key's slot (table_entry): the precedence rules of
     OperatorEntry::computeDispatchTableEntry (c10/core/impl), for the keys the lab grades (GRADED_KEYS in
     lab.py: dense backends, nested-tensor and autograd keys, and the single keys above them);
  2. which keys are in play:  (tensor keys | TLS include) - TLS exclude - keys whose slot is a fallthrough;
  3. which key wins:          the one of highest priority (PRIORITY below, then the backend's rank);
  4. the chain a call walks (walk): kernels that only add a concern (autograd, view tracking, Python TLS, the
     lab's recorder at the Python key) pass the call on to the next lower key; the first kernel that does the
     work ends the chain.
table_entry and walk are the lab's exercises (the instructor's solution is this file); the lab grades them
against the real dispatcher on every decision the run recorded. Keys are plain names ("AutogradCPU",
"Python"); keys.split_runtime_key splits a per-backend key in two.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from workshop.labs.dispatcher.keys import TableEntry, backend_names, split_runtime_key

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
# Kernels at these keys add their concern and hand the call to the next lower key (a "redispatch").
PASS_ON = AUTOGRAD | {"ADInplaceOrView", "PythonTLSSnapshot", "Python"}
# AutoDispatchBelowADInplaceOrView: what autograd and view-tracking kernels exclude for the calls made below them.
BELOW_AUTOGRAD_EXCLUDE = AUTOGRAD | {"ADInplaceOrView"}
EXPLICIT = ("CompositeExplicitAutogradNonFunctional[alias]", "CompositeExplicitAutograd[alias]")
IMPLICIT = "CompositeImplicitAutograd[alias]"


def functionality(key: str) -> str:
    """'AutogradCPU' -> 'AutogradFunctionality', 'CUDA' -> 'Dense', 'Python' -> 'Python'."""
    return split_runtime_key(key)[0]


def rank(key: str) -> tuple[int, int]:
    """Bigger wins: first the functionality's place in PRIORITY, then (for per-backend keys) the backend's."""
    f, backend = split_runtime_key(key)
    if f not in PRIORITY:
        raise KeyError(
            f"no priority known for dispatch key {key!r}; add its functionality to reimpl.PRIORITY"
        )
    return len(PRIORITY) - PRIORITY.index(f), (backend_names().index(backend) + 1) if backend else 0


def passes_on(key: str, entry: TableEntry | None) -> bool:
    """Does the kernel in key's slot hand the call on to the next lower key? Autograd, view tracking and the
    Python keys' kernels do; a decomposition ('math kernel') calls other operators instead, and any other kernel
    does the work itself."""
    return entry is not None and entry.tag != "math kernel" and functionality(key) in PASS_ON


def _backend_has_kernel(regs: dict[str, TableEntry], key: str) -> bool:
    """At an autograd key: does the backend it wraps have a kernel of its own (or a CompositeExplicitAutograd
    one)? AutogradCPU wraps CPU; AutogradNestedTensor wraps every NestedTensor<backend> key."""
    f, backend = split_runtime_key(key)
    if "CompositeExplicitAutograd[alias]" in regs:
        return True
    if f == "AutogradNestedTensor":
        return any(functionality(k) == "NestedTensor" for k in regs if not k.endswith("[alias]"))
    return backend is not None and backend in regs


def table_entry(
    regs: dict[str, TableEntry], fallbacks: dict[str, TableEntry], key: str
) -> TableEntry | None:
    """The kernel in key's slot of op's dispatch table, from what was registered for op (regs) and the
    per-key fallbacks for every operator; None when the slot is empty."""
    f = functionality(key)
    if key in regs:  # 1. registered for exactly this key
        return TableEntry(regs[key].source, "kernel", regs[key].fallthrough)
    if f == "Dense":  # 2.1, 2.2 a dense backend key takes a CompositeExplicitAutograd kernel
        for alias in EXPLICIT:
            if alias in regs:
                return TableEntry(regs[alias].source, "default backend kernel", False)
    # 2.3 the decomposition, for backend keys and for autograd keys; at an autograd key only when the backend has
    # no kernel of its own, since then autograd must wrap that kernel instead of differentiating the pieces
    takes_implicit = f in ("Dense", "NestedTensor") or (
        f in AUTOGRAD and not _backend_has_kernel(regs, key)
    )
    if takes_implicit and IMPLICIT in regs:
        return TableEntry(regs[IMPLICIT].source, "math kernel", False)
    if (
        f in AUTOGRAD and "Autograd[alias]" in regs
    ):  # 2.4 the generated autograd kernel (VariableType)
        return TableEntry(regs["Autograd[alias]"].source, "autograd kernel", False)
    return fallbacks.get(key)  # 3. the key's fallback for every operator; 4. else nothing


def keys_in_play(tensor_keys: Iterable[str], include: Iterable[str], exclude: Iterable[str]):
    """(tensor keys | include) - exclude. Excluding works on functionalities: excluding 'AutogradFunctionality'
    (or 'AutogradCPU') removes AutogradCPU, AutogradCUDA, ... alike."""
    gone = {functionality(k) for k in exclude}
    return {k for k in set(tensor_keys) | set(include) if functionality(k) not in gone}


def walk(
    entry: Callable[[str], TableEntry | None],
    tensor_keys: Iterable[str],
    include: Iterable[str],
    exclude: Iterable[str],
) -> list[str]:
    """The keys one call walks, highest priority first, ending at the key whose kernel does the work.
    entry(key) is the kernel in key's slot of the op's table (None: empty)."""
    in_play = {
        k
        for k in keys_in_play(tensor_keys, include, exclude)
        if not ((e := entry(k)) and e.fallthrough)
    }
    chain = []
    while in_play:
        key = max(in_play, key=rank)
        chain.append(key)
        if not passes_on(key, entry(key)):
            break
        in_play = {k for k in in_play if rank(k) < rank(key)}
    return chain


def guards(chain: list[str], entry: Callable[[str], TableEntry | None]) -> set[str]:
    """The keys the kernels of a chain add to the TLS exclude set for the calls its last kernel makes: autograd
    and view tracking exclude themselves (AutoDispatchBelowADInplaceOrView), autocast excludes its own key."""
    out = set()
    for key in chain:
        f, kernel = functionality(key), entry(key)
        if passes_on(key, kernel) and f in BELOW_AUTOGRAD_EXCLUDE:
            out |= BELOW_AUTOGRAD_EXCLUDE
        if f.startswith("Autocast") and kernel is not None:
            out.add(key)
    return out
