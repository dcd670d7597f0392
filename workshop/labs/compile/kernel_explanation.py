"""One fused kernel of this run explained from its generated code: the ops it fuses, where they came from, what
it reads and writes per call against what the same ops move unfused, how it reduces, how it is launched.

The figures are read from the code (generated_kernels.py, loops.py) and from AOTAutograd's graph (the eager
ops' result shapes); explanation.md.j2 turns them into prose, and prints a sentence about a mechanism only
when these figures show it. `check_explanation` holds the figures against what the model says they must be.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from workshop.foundations.tensor_bytes import tensor_bytes
from workshop.i18n import N_, _, templates
from workshop.lab_api import Check, LabContext
from workshop.labs.compile.generated_kernels import (
    SHAPE_ONLY,
    GeneratedKernel,
    op_name,
    source_line,
)
from workshop.labs.compile.loops import kernel_structure

PREFERRED = ("_softmax", "native_layer_norm")  # the attention softmax, else a LayerNorm
# The lab's worked example, from the training backward (no exercise asks about it): the attention softmax's
# backward, else a LayerNorm's
WORKED_EXAMPLE = ("_softmax_backward_data", "native_layer_norm_backward")
TEMPLATE = "explanation.md.j2"
# check names, one literal each so that a translation may word "read" and "written" its own way
READ_RATIO = N_(
    "forward softmax kernel: bytes read per call (from the code) / softmax result bytes (AOT graph)"
)
WRITTEN_RATIO = N_(
    "forward softmax kernel: bytes written per call (from the code) / softmax result bytes (AOT graph)"
)


def pick_kernel(kernels: list[GeneratedKernel], preferred=None) -> GeneratedKernel | None:
    """The first kernel fusing a softmax (else a LayerNorm, or the ops `preferred` names, in order); else the
    one fusing the most real ops."""
    for op in preferred or PREFERRED:
        for k in kernels:
            if op in k.fused_ops:
                return k
    return max(kernels, key=lambda k: len(set(k.fused_ops) - SHAPE_ONLY), default=None)


def eager_results(kernel: GeneratedKernel, graphs: list[torch.fx.GraphModule]) -> list[dict]:
    """The results the kernel's ops would write to memory unfused, over one run of the graph: the result of
    each eager aten op that the kernel fuses, as AOTAutograd's graph sizes it ({"op", "shape", "nbytes"}, as
    grading_facts.json keeps it).

    In the AOT graph an eager aten op is a run of consecutive nodes with the same original op and source line
    (a softmax decomposed into amax, sub, exp, sum, div); its result is the run's last node. This kernel's
    ops are the runs whose op it fuses on the lines it came from.
    """
    real_ops = set(kernel.fused_ops) - SHAPE_ONLY
    ends: list[torch.fx.Node] = []
    for gm in graphs:
        previous = None
        for node in gm.graph.nodes:
            key = (op_name(node), source_line(node))
            if key[0] in real_ops and key[1] in kernel.source_lines:
                if key == previous:
                    ends[-1] = node  # the same eager op continues: its result is the later node
                else:
                    ends.append(node)
            previous = key
    values = [(node, node.meta.get("val")) for node in ends]
    return [
        {
            "op": op_name(node),
            "shape": list(value.shape) if isinstance(value, torch.Tensor) else [],
            "nbytes": tensor_bytes(value),
        }
        for node, value in values
    ]


def explain(kernel: GeneratedKernel, device: str, eager: list[dict]) -> dict:
    """The kernel explained from its code, beside the eager results it replaces (eager_results, or the run's
    grading_facts.json where the graphs are gone): each figure explanation.md.j2 and the summary read, computed
    once. `eager`: over one run of the graph, all call sites together."""
    read, written = kernel.traffic("load"), kernel.traffic("store")
    # bytes per call of the eager results of all the fused ops
    results = sum(r["nbytes"] for r in eager) // max(kernel.calls, 1)
    # results the fused kernel never writes: each would be written and read back once unfused
    intermediate = max(results - (written or 0), 0)
    fused = None if read is None or written is None else read + written
    return {
        "kernel": kernel,
        "device": device,
        "structure": kernel_structure(kernel.source, kernel.language),
        "eager": eager,
        "bytes_read": read,
        "bytes_written": written,
        "result_bytes": results,
        "unfused_ops": sorted({r["op"] for r in eager}),
        "intermediate_bytes": intermediate,
        "fused_bytes": fused,
        "unfused_bytes": None if fused is None else fused + 2 * intermediate,
        "shape_only_ops": sorted(set(kernel.fused_ops) & SHAPE_ONLY),
    }


def recorded(ex: dict) -> dict:
    """What result.json records of an explained kernel (explain's)."""
    k, s = ex["kernel"], ex["structure"]
    return {
        "kernel": k.name,
        "graph": k.graph,
        "kind": k.kind,
        "fused_ops": k.fused_ops,
        "calls_per_run": k.calls,
        "bytes_read": ex["bytes_read"],
        "bytes_written": ex["bytes_written"],
        "unfused_bytes_estimate": ex["unfused_bytes"],
        "reduction": s["reduction_kind"],
        "reductions": s["reductions"],
        "grid": s["grid"],
        "source_lines": k.source_lines,
    }


def render(folder: Path, lang: str, explanations: list[dict]) -> str:
    """explanation.md: one section per explained kernel."""
    return templates.render(folder, lang, {"explanations": explanations}, source=TEMPLATE)


def ratio(numerator: int | None, denominator: int | None) -> float:
    """numerator / denominator, NaN (which fails every check) when either is unknown or the denominator 0."""
    if numerator is None or not denominator:
        return float("nan")
    return numerator / denominator


def check_holds(ctx: LabContext, name: str, value, expected) -> Check:
    """A lab check whose measured value would answer an exercise (a count that ANSWERS asks for, a figure of a
    kernel that KERNEL_EXPLAINED may explain): the summary's checks table shows every check's value, so this
    one records whether the value held, True or False, and the value only in a failure's message. It passes
    when value == expected. A failure of one is the lab's own bug, not the learner's: its message then says
    what was measured."""
    held = value == expected
    message = None if held else _("measured {value!r}, expected {expected!r}")
    return ctx.check_equal(
        name, held, True, message=message and message.format(value=value, expected=expected)
    )


def two_decimals(value: float, rounding) -> float:
    """value to 2 decimals, rounded down (math.floor, shown against a lower bound) or up (math.ceil, against an
    upper bound): shown against its bound, it can only fail where value does, and the value coarsened so
    no longer gives the exact figure of a kernel KERNEL_EXPLAINED may explain away."""
    return rounding(value * 100) / 100 if math.isfinite(value) else value


def check_explanation(ctx: LabContext, ex: dict) -> None:
    """Hold the explained kernel's figures, read from the generated code, against the model's own shapes.

    The kernel must be the attention softmax of (B, H, T, T) scores. Read from the code, it reads those scores
    and the causal mask, and writes the probabilities (plus, on the CPU, a max and a sum per row): both within
    [1, 1.25] of the softmax result's bytes as AOTAutograd's graph sizes it (measured 1.02 read; 1.09 written
    on the CPU, 1.00 on an H200). An unsized or uncounted buffer falls under 1, a buffer counted twice near 2.
    Unfused, mul, masked_fill and softmax would each write and read back a (B, H, T, T) tensor: 2.8x (CPU),
    3.0x (H200) the fused traffic; 2 is the floor, and an estimate that finds no intermediates gives 1.
    """
    k, s = ex["kernel"], ex["structure"]
    # bytes per call of the eager softmax's results
    softmax = sum(r["nbytes"] for r in ex["eager"] if r["op"] == "_softmax") // max(k.calls, 1)
    ctx.check_equal(
        _("forward softmax kernel: the picked kernel fuses the attention's _softmax"),
        "_softmax" in k.fused_ops,
        True,
    )
    # KERNEL_EXPLAINED may explain this kernel: its ratios show to 2 decimals, which no longer give its bytes
    for name, measured in ((READ_RATIO, ex["bytes_read"]), (WRITTEN_RATIO, ex["bytes_written"])):
        value = ratio(measured, softmax)
        ctx.check_min(_(name) + _(", at least"), two_decimals(value, math.floor), 1.0)
        ctx.check_max(_(name) + _(", at most"), two_decimals(value, math.ceil), 1.25)
    ctx.check_min(
        _("forward softmax kernel: unfused / fused bytes per call"),
        ratio(ex["unfused_bytes"], ex["fused_bytes"]),
        2.0,
    )
    ctx.check_equal(
        _("forward softmax kernel: reductions in its code (a max and a sum per row)"),
        sorted(s["reductions"]),
        ["max", "sum"],
    )
    rows = [math.prod(r["shape"][:-1]) for r in ex["eager"] if r["op"] == "_softmax"]
    parallel = (
        ctx.options.device == "cuda" or torch.get_num_threads() > 1
    )  # one thread: Inductor writes no omp for
    check_holds(
        ctx,
        _("forward softmax kernel: its launch grid spreads over the softmax's rows (AOT graph)"),
        max((g or 0 for g in s["grid"]), default=0),
        (rows[0] if rows else -1) if parallel else 0,
    )
