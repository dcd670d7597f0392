"""Which lines of the MiniGPT's source each generated kernel came from.

Every FX node Dynamo records keeps the Python stack at the moment it was traced (`node.meta["stack_trace"]`),
and AOTAutograd copies it onto the aten-level nodes it makes (backward nodes get their forward node's line).
Two ways from a kernel to those nodes:
- Inductor wrote `Source Nodes: [scores, masked_fill, att]` above the kernel (Triton does): those are Dynamo
  graph node names, so we read their stack traces directly ("source nodes").
- Otherwise (Inductor's C++ kernels carry no such comment in torch 2.13) we match by op: the lines of the
  AOT graph nodes whose (original, undecomposed) aten op is one the kernel fuses ("op match"). Shape-only
  ops (view, transpose, ...) are left out when the kernel fuses real computation: they occur on most lines.
"""

from __future__ import annotations

import re

import torch

from workshop.i18n import N_
from workshop.labs.compile.generated_kernels import GeneratedKernel

FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in \w+\n\s*(?P<code>[^\n]*)')
SHAPE_ONLY = {
    "view",
    "_unsafe_view",
    "reshape",
    "transpose",
    "permute",
    "t",
    "expand",
    "slice",
    "clone",
    "select",
    "unsqueeze",
    "squeeze",
    "alias",
    "detach",
    "arange",
}
BY_SOURCE_NODES, BY_OP_MATCH = (
    N_("source nodes"),
    N_("op match"),
)  # kernel.lines_from, shown translated
MODEL_DIR = "workshop/minigpt/"  # the code whose lines we want; frames in torch itself are skipped


def source_line(node: torch.fx.Node) -> str | None:
    """'model.py:57  scores = ...': the innermost frame of the node's stack trace inside the MiniGPT package."""
    frames = [
        m
        for m in FRAME.finditer(node.meta.get("stack_trace") or "")
        if MODEL_DIR in m["file"].replace("\\", "/")
    ]
    if not frames:
        return None
    last = frames[-1]
    return f"{last['file'].rsplit('/', 1)[-1]}:{last['line']}  {last['code'].strip()}"


def op_name(node: torch.fx.Node) -> str | None:
    """The aten op a node stands for: the op before decomposition (meta['original_aten'], the name Inductor puts
    in kernel names: a softmax decomposed into amax/sub/exp/sum/div is still `_softmax`), else its own target."""
    if node.op != "call_function":
        return None
    for target in (node.meta.get("original_aten"), node.target):
        if isinstance(target, torch._ops.OpOverload):
            return target._overloadpacket.__name__
    return getattr(node.target, "__name__", None)


def attach_source_lines(
    kernels: list[GeneratedKernel],
    dynamo: list[torch.fx.GraphModule],
    aot: list[torch.fx.GraphModule],
) -> None:
    """Fill kernel.source_lines (sorted, unique) in place, and record how they were found in kernel.lines_from."""
    by_name = {n.name: source_line(n) for gm in dynamo for n in gm.graph.nodes}
    by_op: dict[str, set[str]] = {}
    for gm in aot:
        for node in gm.graph.nodes:
            if (op := op_name(node)) and (line := source_line(node)):
                by_op.setdefault(op, set()).add(line)
    for k in kernels:
        if k.source_nodes:
            lines = {by_name.get(n) for n in k.source_nodes} - {None}
            k.lines_from = BY_SOURCE_NODES
        else:
            ops = [op for op in k.fused_ops if op not in SHAPE_ONLY] or k.fused_ops
            lines = set().union(*(by_op.get(op, set()) for op in ops))
            k.lines_from = BY_OP_MATCH
        k.source_lines = sorted(lines, key=line_number)


def line_number(line: str) -> tuple[str, int]:
    file, _, rest = line.partition(":")
    return file, int(rest.split()[0]) if rest.split() and rest.split()[0].isdigit() else 0
