"""Trace one scenario: record the call under the three observers, explain every operator call beside the real
dispatcher, and find the aten op that does the GEMM (and, on CUDA, the device kernel it launched).

The real dispatcher's decisions, call by call: for every operator call of a recording, the chain of keys the
real dispatcher walks and the kernel in each key's slot, cross-checked against what the observers saw.

The chain is followed to its own end: the real key set (keys.real_keys_in_play), the real pick
(DispatchKeySet.highestPriorityTypeId), the real slot (the computed table and
_dispatch_get_computed_kernel_for_dispatch_key), then the keys below that one (_dispatch_keyset_full_after).
Every fact here comes from torch itself, never from the re-implementation the learner writes (reimpl.py, the
lab's two code exercises): those are graded against these chains and slots (lab.py's grade_exercises), and the
lab's demonstrations run the same whether they are written or not.

The TLS sets a call starts from are observed where possible: the root's when the traced function enters C++,
a nested call's while its parent's kernel ran below the Python key. Calls made by kernels above the Python key
(the decomposition at the autograd key, the autocast kernel) cannot be watched at their start; their TLS is the
root's plus the guards of the kernels the root passed (reimpl.guards), marked "predicted".
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import asdict

import torch
import torch.nn.functional as F

from workshop.i18n import N_
from workshop.labs.dispatcher import keys, reimpl
from workshop.labs.dispatcher.recorder import (
    PythonLayer,
    chrome_trace,
    describe,
    profiled,
    record,
    seen_call,
)
from workshop.labs.dispatcher.scenario_list import ROOT_OP
from workshop.minigpt.data import sample_corpus

# Where a call's TLS sets come from (a node's "tls_from"; trace.md shows it translated).
AT_ENTRY = N_("observed when the traced function entered C++")
WHILE_PARENT_RAN = N_("observed while the parent's kernel ran")
PREDICTED = N_("predicted from the root's chain")


def real_keys(node: dict) -> list[str]:
    """The keys of a call's chain (explain_call's node), in the order the real dispatcher walked them."""
    return [s["key"] for s in node["chain"]]


def real_chain(op: str, tensor_ks, include, exclude) -> list[dict]:
    """The keys the real dispatcher walks for one call, to the kernel that does the work: each step one key as the
    real dispatcher walked it, and the kernel in that key's slot."""
    ks = keys.real_keys_in_play(op, tensor_ks, include, exclude)
    table, out = keys.computed_table(op), []
    while (key := ks.highestPriorityTypeId().name) != "Undefined":
        entry = table.get(key)
        source, how = keys.computed_kernel_source(op, key)
        passes_on = reimpl.passes_on(key, entry)
        out.append(
            {
                "key": key,
                # the computed table's entry (keys.TableEntry's fields: source file, tag, fallthrough), or None
                "kernel": asdict(entry) if entry else None,
                "passes_on": passes_on,  # the kernel hands the call on to the next lower key
                # from _dispatch_get_computed_kernel_for_dispatch_key (else the table dump)
                "source": source,
                "found_with": how,
            }
        )
        if not passes_on:
            break
        ks = ks & keys.keys_below(key)
    return out


def explain_call(call: dict, include, exclude, tls_from: str) -> dict:
    """One operator call, explained: the node of the call tree that trace.json holds (its calls in "children")."""
    op = call["qualified"]
    chain = real_chain(op, call["tensor_keys"], include, exclude)
    walked = [s["key"] for s in chain]
    return {
        "op": call["op"],  # "aten::addmm"
        "overload": call["overload"],
        "qualified": op,  # "aten::transpose.int": the name its dispatch table goes by
        "output": call["output"],
        "tensor_keys": keys.names(call["tensor_keys"]),
        "tls_include": keys.names(include),
        "tls_exclude": keys.names(exclude),
        "tls_from": tls_from,  # AT_ENTRY, WHILE_PARENT_RAN or PREDICTED
        "arrived_at_python": call["arrived_at_python"],  # the recorder saw it at the Python key
        "below_python_key": call[
            "below_python_key"
        ],  # the key the recorder's redispatch ran, or None
        "chain": chain,  # real_chain's steps
        "kernel": chain[-1]["kernel"] if chain else None,  # the kernel that does the work
        # every step has a key and a kernel whose source torch names, ending at a kernel that does the work
        "explained": bool(chain)
        and all(s["kernel"] and s["source"] for s in chain)
        and not chain[-1]["passes_on"],
        # the recorder saw it at the Python key exactly when the chain passes there
        "python_key_consistent": call["arrived_at_python"] == ("Python" in walked)
        and (not call["arrived_at_python"] or walked[-1] == call["below_python_key"]),
        # the TLS exclude set the calls made by its last kernel start from
        "child_exclude": sorted(
            set(keys.names(exclude)) | reimpl.guards(walked, keys.computed_table(op).get)
        ),
        "children": [],  # the calls its kernels made, explained
    }


def explain(python: PythonLayer, observed: list[dict], root_op: str) -> dict:
    """The tree of calls under the traced function's root op ("aten::linear", "aten::matmul"), from what the
    recorders saw: the Python layer's root call and the calls that reached the Python key."""
    root = seen_call(root_op, "default", keys.tensor_keys(python.root_args), python.root_tls)
    arrived = bool(observed) and observed[0]["qualified"] == root_op
    if arrived:  # the root call itself reached the Python key: what the recorder saw is the root
        seen_keys = ("arrived_at_python", "below_python_key", "children", "child_tls", "output")
        root |= {key: observed[0][key] for key in seen_keys}
    tree = explain_call(root, *python.root_tls, AT_ENTRY)
    if arrived:
        tree["children"] = [_explain_observed(c, root["child_tls"]) for c in root["children"]]
    else:  # calls made by kernels above the Python key: they start from the root's TLS plus its kernels' guards
        tls = (python.root_tls[0], keys.keyset(tree["child_exclude"]))
        tree["children"] = [_explain_observed(c, tls, PREDICTED) for c in observed]
    return tree


def _explain_observed(call: dict, tls: tuple, tls_from: str = WHILE_PARENT_RAN) -> dict:
    node = explain_call(call, *tls, tls_from)
    node["children"] = [_explain_observed(c, call["child_tls"]) for c in call["children"]]
    return node


def depths(node: dict, depth: int = 0) -> Iterator[tuple[int, dict]]:
    """(depth, node) for the node and every call under it, in call order."""
    yield depth, node
    for c in node["children"]:
        yield from depths(c, depth + 1)


def flat(node: dict) -> Iterator[dict]:
    """The node and every call under it, in call order."""
    return (n for _depth, n in depths(node))


def profiler_consistency(tree: dict, profiled_ops: list[str], autocast_key: str | None) -> dict:
    """The recorder's calls against the profiler's list of every op called: every op the recorder saw is in the
    profiler's list, in order; every op only the profiler saw was decided above the Python key, so it must have a
    decomposition (CompositeImplicitAutograd) or an autocast kernel."""
    seen = [n["op"] for n in flat(tree) if n["arrived_at_python"]]
    unseen, i = [], 0
    for name in profiled_ops:
        if i < len(seen) and seen[i] == name:
            i += 1
        else:
            unseen.append(name)
    unexplained = sorted({n for n in unseen if not _decided_above_python(n, autocast_key)})
    return {
        # every op the recorder saw is in the profiler's list, in order
        "recorded_in_profiler_order": i == len(seen),
        "decided_above_python": unseen,  # ops only the profiler saw
        # ... of which these have neither a decomposition nor an autocast kernel to explain it
        "unexplained": unexplained,
        "ok": i == len(seen) and not unexplained,
    }


def _decided_above_python(op: str, autocast_key: str | None) -> bool:
    packet = getattr(torch.ops.aten, op.split("::", 1)[1], None)
    for overload in packet.overloads() if packet is not None else []:
        regs = keys.registrations(op if overload == "default" else f"{op}.{overload}")
        if reimpl.IMPLICIT in regs or (autocast_key and autocast_key in regs):
            return True
    return False


def priority_disagreements() -> list[tuple[str, str, str]]:
    """Neighbours in reimpl.PRIORITY (a above b) that the real highestPriorityTypeId orders otherwise, as
    (a, b, real winner); per-backend functionalities are tried with their CPU key, backends as CPU vs CUDA."""

    def runtime(f: str) -> str | None:
        name = keys.PER_BACKEND_PREFIX[f] + "CPU" if f in keys.PER_BACKEND_PREFIX else f
        # e.g. MAIA, a functionality name in older torch and a dense backend in newer
        is_backend = name in keys.backend_names() and f not in keys.PER_BACKEND_PREFIX
        known = hasattr(keys.DK, name) and name in keys.runtime_key_names() and not is_backend
        return name if known else None

    known = [k for k in map(runtime, reimpl.PRIORITY) if k]
    pairs = list(itertools.pairwise(known)) + [("CUDA", "CPU"), ("AutogradCUDA", "AutogradCPU")]
    real = [(a, b, keys.keyset([a, b]).highestPriorityTypeId().name) for a, b in pairs]
    return [(a, b, winner) for a, b, winner in real if winner != a]


# The aten ops whose kernels call a BLAS GEMM (or GEMV) routine: CPU BLAS / oneDNN, or cuBLAS(Lt) on CUDA.
GEMM_OPS = frozenset(
    {
        "aten::addmm",
        "aten::mm",
        "aten::bmm",
        "aten::baddbmm",
        "aten::addbmm",
        "aten::addmv",
        "aten::mv",
    }
)
GEMM_KERNEL = re.compile(r"gemm|gemv|nvjet|xmma|cutlass", re.IGNORECASE)  # cuBLAS / cuBLASLt names


def lm_head_input(model, seed: int, device: str) -> torch.Tensor:
    """Hidden states of two real prompts (prefixes of grammar sentences), (B=2, T, 64), no autograd history."""
    sentences = sample_corpus(2, seed)
    # a proper prefix of both: the model must predict the next token
    T = min(len(s) for s in sentences) - 1
    idx = torch.tensor([s[:T] for s in sentences], device=device)  # (2, T)
    with torch.no_grad():
        return model.hidden_states(idx)  # (2, T, 64)


def _context(sc: dict):
    """The state the call runs in. requires_grad_off changes the weights instead (see _calls)."""
    return {
        "no_grad": torch.no_grad,
        "inference_mode": torch.inference_mode,
        "autocast_bf16": lambda: torch.autocast(sc["device"], dtype=torch.bfloat16),
    }.get(sc["mode"], contextlib.nullcontext)()


def _calls(sc: dict, head: torch.nn.Linear, x3: torch.Tensor):
    """(the traced call, the same computation made the plain way). Operands are prepared outside the trace,
    so that the first torch function the trace sees is the call itself."""
    W, b = head.weight, head.bias  # (600, 64), (600,)
    if sc["mode"] == "requires_grad_off":
        W, b = W.detach(), b.detach()
    x = x3 if sc["rank"] == 3 else x3[0]  # (2, T, 64) or (T, 64)
    if sc["call"] == "linear":
        return (lambda: F.linear(x, W, b)), (lambda: head(x))
    other = W.t() if sc["call"] == "matmul" else x.transpose(1, 2)  # (64, 600) or (B, 64, T)
    return (lambda: torch.matmul(x, other)), (lambda: torch.matmul(x, other))


def autograd_nodes(out: torch.Tensor) -> list[str]:
    """The backward graph the call recorded, breadth first from out.grad_fn: e.g. AddmmBackward0 <- TBackward0."""
    seen, frontier = {}, [out.grad_fn]  # seen: node -> its name, in the order found
    while frontier:
        fn = frontier.pop(0)
        if fn is not None and fn not in seen:
            seen[fn] = type(fn).__name__
            frontier += [nxt for nxt, _ in fn.next_functions]
    return list(seen.values())


def gemm_kernels(kernels: list[dict], gemm_op: str | None) -> list[str]:
    """The device GEMM kernels `gemm_op` launched (cuBLAS / cuBLASLt names), else those the profiler linked to
    no op. A name that is not a GEMM kernel's (the op's own name, from a profiler that timed the op instead of
    seeing its kernels) is none."""
    launched = [k["kernel"] for k in kernels if gemm_op and k["op"] == gemm_op]
    unlinked = [k["kernel"] for k in kernels if k["op"] is None]
    return sorted({name for name in launched or unlinked if GEMM_KERNEL.search(name)})


def run_scenario(sc: dict, head: torch.nn.Linear, x3: torch.Tensor) -> tuple[dict, bytes]:
    """The scenario's result (scenario_list.scenario's, and what the trace found), and its profiler trace (Chrome
    trace JSON)."""
    traced, plain = _calls(sc, head, x3)
    with _context(sc):
        out, python, dispatch, prof = record(traced, sc["device"])
        expected = plain()
    ops, kernels, notes = profiled(prof, sc["device"])
    tree = explain(python, dispatch.calls, ROOT_OP[sc["call"]])
    # the autocast key of the scenario's device where its mode is autocast: its kernels explain ops the profiler saw
    autocast_key = f"Autocast{sc['device'].upper()}" if sc["mode"] == "autocast_bf16" else None
    gemm_ops = [n["op"] for n in flat(tree) if n["op"] in GEMM_OPS]  # in call order (one expected)
    gemm_op = (
        gemm_ops[-1] if gemm_ops else None
    )  # the aten op that finally does the GEMM: the last one
    result = {
        **sc,
        "python_layer": python.calls,  # recorder.PythonLayer's calls
        "tree": tree,  # explain's: the root call, explained, and every call under it
        "profiled_ops": ops,
        # profiler_consistency's: the recorder's calls against the profiler's ops
        "profiler": profiler_consistency(tree, ops, autocast_key),
        "autograd_nodes": autograd_nodes(
            out
        ),  # the backward graph the output records, breadth first
        "device_kernels": kernels,  # recorder.profiled's: {op, kernel}
        "gemm_ops": gemm_ops,
        "gemm_kernels": gemm_kernels(
            kernels, gemm_op
        ),  # the device kernels the GEMM op launched (CUDA)
        "output": describe(out),
        # the result's own key set: one made inside inference_mode lacks autograd's keys
        "output_keys": keys.names(keys.tensor_keys([out])),
        # bitwise equal to the same call made with nobody watching
        "output_equals_plain_call": bool(torch.equal(out, expected)),
        "notes": notes,
        "gemm_op": gemm_op,
    }
    return result, chrome_trace(prof)
