"""Trace one scenario: record the call under the three observers, explain every operator call beside the real
dispatcher, and find the aten op that does the GEMM (and, on CUDA, the device kernel it launched)."""

from __future__ import annotations

import contextlib
import re

import torch
import torch.nn.functional as F

from workshop.labs.dispatcher import keys
from workshop.labs.dispatcher.crosscheck import (
    explain,
    flat,
    profiler_consistency,
)
from workshop.labs.dispatcher.recorder import (
    chrome_trace,
    describe,
    profiled,
    record,
)
from workshop.labs.dispatcher.scenario_list import ROOT_OP
from workshop.minigpt.data import sample_corpus

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
        "tree": tree,  # crosscheck.explain's: the root call, explained, and every call under it
        "profiled_ops": ops,
        # crosscheck.profiler_consistency's: the recorder's calls against the profiler's ops
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
