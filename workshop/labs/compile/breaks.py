"""Graph breaks and recompiles: when Dynamo cannot capture one graph, and when it must capture again.

- A *graph break*: Dynamo meets something it cannot put in a graph (here `.item()`, which needs the value of a
  tensor while tracing), ends the graph there, runs that bit in Python and starts a new graph after it.
  `torch._dynamo.explain` traces without compiling and reports graphs, breaks and their reasons.
- A *recompile*: each compiled graph is guarded by checks on its inputs (shapes, dtypes, ...). A call that fails
  the guards compiles again. By default Dynamo compiles for the exact shapes first and, when a size changes,
  recompiles once with that size symbolic ("automatic dynamic"); dynamic=True or mark_dynamic start symbolic.
These experiments use a counting backend (no Inductor), since only Dynamo's decisions matter here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import torch
from torch import nn


class ItemInForward(nn.Module):
    """The MiniGPT with a deliberate graph break: it normalizes logits by a Python float taken with .item()."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        logits = self.model(idx)  # (B, T, V)
        return (
            logits / logits.abs().max().item()
        )  # .item(): a tensor -> Python number while tracing: break


@dataclass
class BreakReason:
    reason: str  # its first line
    where: str  # "file.py:line  code"


@dataclass
class BreakReport:
    graphs: int
    graph_breaks: int
    break_reasons: list[BreakReason] = field(default_factory=list)


def explain_breaks(fn, *args) -> BreakReport:
    """Graphs, graph breaks and their reasons, as torch._dynamo.explain reports them."""
    torch._dynamo.reset()
    out = torch._dynamo.explain(fn)(*args)
    reasons = []
    for r in out.break_reasons:
        frame = r.user_stack[-1] if r.user_stack else None
        where = (
            f"{short(frame.filename)}:{frame.lineno}  {(frame.line or '').strip()}" if frame else ""
        )
        reasons.append(BreakReason(str(r.reason).strip().splitlines()[0], where))
    return BreakReport(out.graph_count, out.graph_break_count, reasons)


def short(filename: str) -> str:
    return filename.replace("\\", "/").rsplit("/", 1)[-1]


class RecompileLog(logging.Handler):
    """Collects Dynamo's `recompiles` log records: which guard failed and why."""

    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "Recompiling" in message:
            self.messages.append(message)


@dataclass
class CompileCount:
    how: str  # "static", "default", "dynamic" or "mark_dynamic"
    lengths: list[int]
    compiles: int
    recompile_reasons: list[str]  # the guards that failed, as Dynamo's recompiles log says


def count_compiles(model: nn.Module, lengths: list[int], batch: int, how: str) -> CompileCount:
    """Call a compiled model on sequences of each length; count Dynamo compiles and keep the recompile reasons.

    how: "static" (dynamic=False: a compile per shape), "default" (automatic dynamic), "dynamic" (dynamic=True),
    "mark_dynamic" (default, but the time dimension marked dynamic on the input before the first call).
    """
    torch._dynamo.reset()
    compiles = 0

    def counting_backend(gm, example_inputs):
        nonlocal compiles
        compiles += 1
        return gm.forward

    dynamic = {"static": False, "dynamic": True}.get(how)
    compiled = torch.compile(model, backend=counting_backend, dynamic=dynamic)
    log = RecompileLog()
    dynamo_log = logging.getLogger(
        "torch._dynamo"
    )  # the caller turns on torch._logging.set_logs(recompiles=True)
    dynamo_log.addHandler(log)
    try:
        with torch.no_grad():
            for T in lengths:
                idx = torch.randint(
                    0, model.cfg.vocab_size, (batch, T), device=model.lm_head.weight.device
                )
                if how == "mark_dynamic":
                    torch._dynamo.mark_dynamic(idx, 1)
                compiled(idx)
    finally:
        dynamo_log.removeHandler(log)
    reasons = [
        line.strip()[2:]
        for m in log.messages
        for line in m.splitlines()
        if line.strip().startswith("- ")
    ]
    return CompileCount(how, lengths, compiles, reasons)
