"""The real dispatcher's state, read through torch._C: key sets as names, TLS sets, and the kernel tables.

Everything here asks PyTorch; nothing decides. These are private APIs whose text changes between versions, so
the table dumps are parsed leniently (key, source file without line number, [tag], fallthrough) and a missing
function degrades to a note instead of a crash.
"""

from __future__ import annotations

import functools
import operator
import os
import re
from dataclasses import dataclass

import torch

C = torch._C
DK = C.DispatchKey

# Functionalities that exist once per backend: their runtime keys are "<prefix><backend>", e.g. AutogradCPU.
PER_BACKEND_PREFIX = {
    "Dense": "",
    "Quantized": "Quantized",
    "Sparse": "Sparse",
    "SparseCsr": "SparseCsr",
    "NestedTensor": "NestedTensor",
    "AutogradFunctionality": "Autograd",
}
# An operator with a schema and no kernel of its own: every filled slot of its table is a backend fallback.
PROBE_NAMESPACE, PROBE_OP = "workshop_dispatcher_probe", "no_kernels"


@functools.cache
def backend_names() -> tuple[str, ...]:
    """Dense backends in the enum's (= priority) order, lowest first: CPU, CUDA, ..., Meta."""
    lo, hi = DK.StartOfDenseBackends.value, DK.EndOfDenseBackends.value
    return tuple(
        n
        for n, k in sorted(DK.__members__.items(), key=lambda nk: nk[1].value)
        if lo < k.value <= hi and not n.startswith(("StartOf", "EndOf"))
    )


def split_runtime_key(name: str) -> tuple[str, str | None]:
    """'AutogradCPU' -> ('AutogradFunctionality', 'CPU'); 'CPU' -> ('Dense', 'CPU'); 'Python' -> ('Python', None)."""
    for functionality, prefix in sorted(PER_BACKEND_PREFIX.items(), key=lambda fp: -len(fp[1])):
        rest = name[len(prefix) :] if name.startswith(prefix) else None
        if rest in backend_names():
            return functionality, rest
    return name, None


@functools.cache
def runtime_key_names() -> tuple[str, ...]:
    """Every key a DispatchKeySet can hold that is neither an alias nor a bare per-backend functionality."""
    return tuple(
        n
        for n, k in DK.__members__.items()
        if n not in PER_BACKEND_PREFIX
        and n != "Undefined"
        and not n.startswith(("StartOf", "EndOf"))
        and not C._dispatch_is_alias_key(k)
    )


def names(ks) -> list[str]:
    """A DispatchKeySet as key names. A per-backend functionality bit with no backend bit (what the TLS exclude
    set holds for autograd: 'all backends') shows as its functionality name, e.g. 'AutogradFunctionality'."""
    out = [n for n in runtime_key_names() if ks.has(getattr(DK, n))]
    covered = {split_runtime_key(n)[0] for n in out}
    out += [f for f in PER_BACKEND_PREFIX if f not in covered and ks.has(getattr(DK, f))]
    return sorted(set(out))


def keyset(key_names) -> C.DispatchKeySet:
    return functools.reduce(
        operator.or_,
        (C.DispatchKeySet(getattr(DK, n)) for n in key_names),
        C.DispatchKeySet(DK.Undefined),
    )


def tensor_keys(tensors) -> C.DispatchKeySet:
    """The union of the tensors' key sets."""
    return functools.reduce(
        operator.or_, map(C._dispatch_keys, tensors), C.DispatchKeySet(DK.Undefined)
    )


def tls() -> tuple[C.DispatchKeySet, C.DispatchKeySet]:
    """The thread-local (include, exclude) sets the dispatcher folds into every key set it computes."""
    return C._dispatch_tls_local_include_set(), C._dispatch_tls_local_exclude_set()


def keys_below(key: str) -> C.DispatchKeySet:
    """The real 'every key of lower priority than key' mask that kernels redispatch with."""
    return C._dispatch_keyset_full_after(getattr(DK, key))


def real_keys_in_play(op: str, tensor_ks, include, exclude) -> C.DispatchKeySet:
    """The key set the real dispatcher picks from for op: (tensor keys | TLS include) - TLS exclude, without the
    keys whose slot in op's table is a fallthrough (the dispatcher skips those as if they were absent)."""
    ks = (tensor_ks | include) - exclude
    table = computed_table(op)
    for name in names(ks):
        if name in table and table[name].fallthrough:
            ks = ks.remove(getattr(DK, name))
    return ks


# ---- kernel tables ----
_LINE = re.compile(r"^(?P<key>\w+)(?P<alias>\[alias\])?(?P<inactive> \(inactive\))?: (?P<rest>.*)$")
_SOURCE = re.compile(r"registered at (?P<path>[^\s:']+)")  # the path, without ":LINE"
_TAG = re.compile(r"\[(?P<tag>[^\]]*)\]\s*$")


@dataclass(frozen=True)
class TableEntry:
    """One slot of an operator's dispatch table (or one registration): which kernel, and how it got there."""

    source: str  # file the kernel was registered from, no directory, no line: "VariableType_0.cpp"
    tag: str  # what the table says about it: "kernel", "math kernel", "autograd kernel", "backend fallback", ...
    fallthrough: bool  # the dispatcher skips fallthrough keys as if they were not in the key set


def parse_table(text: str) -> dict[str, TableEntry]:
    """'KEY[alias]: [fallthrough ]registered at PATH:LINE ... [tag]' lines -> {key: TableEntry}. Lines that do not
    look like that (name:, schema:, debug:, inactive kernels) are skipped, so format drift degrades gently."""
    table = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if not m or m["inactive"] or m["key"] in ("name", "schema", "debug", "alias"):
            continue
        src, tag = _SOURCE.search(m["rest"]), _TAG.search(m["rest"])
        if not src:
            continue
        tag_text = tag["tag"].strip() if tag else ""
        fallthrough = m["rest"].startswith("fallthrough") or "fallthrough" in tag_text.split()
        kind = (
            " ".join(w for w in tag_text.split() if w not in ("fallthrough", "boxed", "unboxed"))
            or "kernel"
        )
        table[m["key"] + ("[alias]" if m["alias"] else "")] = TableEntry(
            os.path.basename(src["path"]), kind, fallthrough
        )
    return table


@functools.cache
def computed_table(op: str) -> dict[str, TableEntry]:
    """The dispatcher's computed table for op: runtime key -> the kernel a call at that key runs."""
    return parse_table(C._dispatch_dump_table(op))


@functools.cache
def registrations(op: str) -> dict[str, TableEntry]:
    """What was registered for op itself (runtime keys and 'Alias[alias]' keys), before the table is computed."""
    return parse_table(C._dispatch_dump(op))


@functools.cache
def _probe_library() -> torch.library.Library:
    """Define PROBE_OP once per process (a schema, no kernels); the Library object keeps it registered."""
    lib = torch.library.Library(PROBE_NAMESPACE, "DEF")
    lib.define(f"{PROBE_OP}(Tensor x) -> Tensor")
    return lib


@functools.cache
def backend_fallbacks() -> dict[str, TableEntry]:
    """The per-key fallbacks (one kernel per key, for every operator, e.g. Python's or autograd's) as they were
    registered: the table of an operator with no kernels of its own, so nothing in it is op-specific. Reading
    them from the traced op's own table instead would copy the answer the re-implementation is graded on."""
    _probe_library()
    table = parse_table(C._dispatch_dump_table(f"{PROBE_NAMESPACE}::{PROBE_OP}"))
    return {k: v for k, v in table.items() if v.tag == "backend fallback"}


def fallback_contradictions() -> list[str]:
    """Keys where backend_fallbacks() and the dispatcher's own _dispatch_has_backend_fallback(key) disagree
    (keys this torch's Python enum cannot name, such as Tracer, are not asked)."""
    mine = backend_fallbacks()
    return [
        n
        for n in runtime_key_names()
        if (n in mine) != C._dispatch_has_backend_fallback(getattr(DK, n))
    ]


def computed_kernel_source(op: str, key: str) -> tuple[str | None, str]:
    """The dispatcher's own answer for (op, key): the registering file of the kernel in its table slot.

    Asks _dispatch_get_computed_kernel_for_dispatch_key where this torch has it, else reads the table dump;
    returns (source or None, how it was found)."""
    getter = getattr(C, "_dispatch_get_computed_kernel_for_dispatch_key", None)
    if getter is not None:
        try:
            m = _SOURCE.search(repr(getter(op, getattr(DK, key))))
            if m:
                return os.path.basename(m["path"]), "_dispatch_get_computed_kernel_for_dispatch_key"
        except RuntimeError:  # "no kernel for KEY": the slot is empty
            return None, "_dispatch_get_computed_kernel_for_dispatch_key"
    entry = computed_table(op).get(key)
    return (entry.source if entry else None), "_dispatch_dump_table (this torch lacks the getter)"
