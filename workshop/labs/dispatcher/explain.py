"""Explain a recording: for every operator call, the re-implementation's chain of (key, kernel), each step set
beside the real dispatcher's answer, and the cross-checks against what the observers saw.

The TLS sets a call starts from are observed where possible: the root's when F.linear enters C++, a nested
call's while its parent's kernel ran below the Python key. Calls made by kernels above the Python key (the
decomposition at the autograd key, the autocast kernel) cannot be watched at their start; their TLS is the
root's plus the guards of the kernels the root passed (reimpl.walk says which), marked "predicted".
"""

from __future__ import annotations

import itertools

import torch

from workshop.labs.dispatcher import keys, reimpl
from workshop.labs.dispatcher.recorder import Call, Recording


def real_chain(op: str, tensor_ks, include, exclude, chain_keys: list[str]) -> list[dict]:
    """The real dispatcher's pick at each step of a chain: highestPriorityTypeId of the keys in play (after its
    own fallthrough skipping), then of the keys below the previous step; and the kernel in that key's slot."""
    table = keys.computed_table(op)
    ks = (tensor_ks | include) - exclude
    for name in keys.names(ks):
        if name in table and table[name].fallthrough:
            ks = ks.remove(getattr(keys.DK, name))
    out = []
    for i, _ in enumerate(chain_keys):
        if i:
            ks = ks & keys.keys_below(chain_keys[i - 1])
        key = ks.highestPriorityTypeId().name
        source, how = keys.computed_kernel_source(op, key) if key != "Undefined" else (None, "")
        entry = table.get(key)
        out.append(
            {"key": key, "source": source, "tag": entry.tag if entry else None, "found_with": how}
        )
    return out


def explain_call(call: Call, include, exclude, tls_from: str) -> dict:
    op = call.qualified
    steps, child_exclude = reimpl.walk(
        keys.registrations(op),
        keys.backend_fallbacks(op),
        keys.names(call.tensor_keys),
        keys.names(include),
        keys.names(exclude),
    )
    real = real_chain(op, call.tensor_keys, include, exclude, [s.key for s in steps])
    chain = []
    for s, r in zip(steps, real, strict=True):
        mine = s.kernel.as_dict() if s.kernel else None
        agrees = (
            s.key == r["key"]
            and mine is not None
            and (mine["source"], mine["tag"]) == (r["source"], r["tag"])
        )
        chain.append(
            {"key": s.key, "kernel": mine, "passes_on": s.passes_on, "real": r, "agrees": agrees}
        )
    keys_walked = [s.key for s in steps]
    return {
        "op": call.op,
        "overload": call.overload,
        "output": call.output,
        "tensor_keys": keys.names(call.tensor_keys),
        "tls_include": keys.names(include),
        "tls_exclude": keys.names(exclude),
        "tls_from": tls_from,
        "arrived_at_python": call.arrived_at_python,
        "below_python_key": call.below_python_key,
        "chain": chain,
        "winner": keys_walked[0] if keys_walked else None,
        "kernel": chain[-1]["kernel"] if chain else None,
        "explained": bool(chain)
        and all(c["kernel"] and c["real"]["source"] for c in chain)
        and not chain[-1]["passes_on"],
        "agrees": bool(chain) and all(c["agrees"] for c in chain),
        # the recorder saw the call at the Python key exactly when the chain says it gets there
        "python_key_consistent": call.arrived_at_python == ("Python" in keys_walked)
        and (not call.arrived_at_python or keys_walked[-1] == call.below_python_key),
        "child_exclude": sorted(child_exclude),
        "children": [],
    }


def explain(rec: Recording) -> dict:
    root_py = rec.python[0]
    root = Call("aten::linear", "default", keys.tensor_keys(rec.root_args), root_py.tls)
    arrived = bool(rec.observed) and rec.observed[0].qualified == "aten::linear"
    if arrived:  # the root call itself reached the Python key: what the recorder saw is the root
        observed = rec.observed[0]
        root.arrived_at_python, root.below_python_key = True, observed.below_python_key
        root.children, root.child_tls, root.output = (
            observed.children,
            observed.child_tls,
            observed.output,
        )
    tree = explain_call(root, *root_py.tls, "observed when F.linear entered C++")
    if arrived:
        tree["children"] = [_explain_observed(c, root.child_tls) for c in root.children]
    else:  # calls made by kernels above the Python key: they start from the root's TLS plus its kernels' guards
        include, exclude = root_py.tls[0], keys.keyset(tree["child_exclude"])
        tree["children"] = [
            _explain_observed(c, (include, exclude), "predicted from the root's chain")
            for c in rec.observed
        ]
    return tree


def _explain_observed(
    call: Call, tls: tuple, tls_from: str = "observed while the parent's kernel ran"
) -> dict:
    node = explain_call(call, *tls, tls_from)
    node["children"] = [_explain_observed(c, call.child_tls) for c in call.children]
    return node


def flat(node: dict):
    yield node
    for c in node["children"]:
        yield from flat(c)


def profiler_consistency(tree: dict, rec: Recording, autocast_key: str | None) -> dict:
    """Every op the recorder saw is in the profiler's list, in order; every op only the profiler saw was decided
    above the Python key, so it must have a decomposition (CompositeImplicitAutograd) or an autocast kernel."""
    seen = [n["op"] for n in flat(tree) if n["arrived_at_python"]]
    unseen, i = [], 0
    for name in rec.profiled_ops:
        if i < len(seen) and seen[i] == name:
            i += 1
        else:
            unseen.append(name)
    unexplained = sorted({n for n in unseen if not _decided_above_python(n, autocast_key)})
    return {
        "recorded_in_profiler_order": i == len(seen),
        "decided_above_python": unseen,
        "unexplained": unexplained,
        "ok": i == len(seen) and not unexplained,
    }


def _decided_above_python(op: str, autocast_key: str | None) -> bool:
    packet = getattr(torch.ops.aten, op.split("::", 1)[1], None)
    for overload in packet.overloads() if packet is not None else []:
        regs = keys.registrations(op if overload == "default" else f"{op}.{overload}")
        if "CompositeImplicitAutograd[alias]" in regs or (autocast_key and autocast_key in regs):
            return True
    return False


def autograd_nodes(out: torch.Tensor) -> list[str]:
    """The backward graph the call recorded, breadth first from out.grad_fn: e.g. AddmmBackward0 <- TBackward0."""
    names, frontier, seen = [], [out.grad_fn], set()
    while frontier:
        fn = frontier.pop(0)
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        names.append(type(fn).__name__)
        frontier += [nxt for nxt, _ in fn.next_functions]
    return names


def priority_disagreements() -> list[tuple[str, str, str]]:
    """Neighbours in reimpl.PRIORITY (a above b) that the real highestPriorityTypeId orders otherwise, as
    (a, b, real winner); per-backend functionalities are tried with their CPU key, backends as CPU vs CUDA."""

    def runtime(f: str) -> str | None:
        name = keys.PER_BACKEND_PREFIX[f] + "CPU" if f in keys.PER_BACKEND_PREFIX else f
        is_backend = (
            name in keys.backend_names() and f not in keys.PER_BACKEND_PREFIX
        )  # e.g. MAIA in newer torch
        known = hasattr(keys.DK, name) and name in keys.runtime_key_names() and not is_backend
        return name if known else None

    known = [k for k in map(runtime, reimpl.PRIORITY) if k]
    pairs = list(itertools.pairwise(known)) + [("CUDA", "CPU"), ("AutogradCUDA", "AutogradCPU")]
    out = []
    for a, b in pairs:
        real = keys.keyset([a, b]).highestPriorityTypeId().name
        if real != a:
            out.append((a, b, real))
    return out
