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
import logging.handlers
import sys

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


def explain_breaks(fn, *args) -> dict:
    """Graphs, graph breaks and their reasons, as torch._dynamo.explain reports them (and breaks.json keeps
    them): {"graphs": n, "graph_breaks": n, "break_reasons": [{"reason": its first line, "where": "file.py:line
    code"}]}."""
    torch._dynamo.reset()
    out = torch._dynamo.explain(fn)(*args)
    reasons = []
    for r in out.break_reasons:
        frame = r.user_stack[-1] if r.user_stack else None
        short = frame.filename.replace("\\", "/").rsplit("/", 1)[-1] if frame else ""
        where = f"{short}:{frame.lineno}  {(frame.line or '').strip()}" if frame else ""
        reasons.append({"reason": str(r.reason).strip().splitlines()[0], "where": where})
    return {
        "graphs": out.graph_count,
        "graph_breaks": out.graph_break_count,
        "break_reasons": reasons,
    }


def count_compiles(model: nn.Module, lengths: list[int], batch: int, how: str) -> dict:
    """Call a compiled model on sequences of each length; count Dynamo compiles and keep the recompile reasons
    (the guards that failed, as Dynamo's recompiles log says), as breaks.json keeps them: {"how", "lengths",
    "compiles", "recompile_reasons"}.

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
    # collects Dynamo's log records, the `recompiles` ones among them: which guard failed and why (a capacity
    # never reached: the buffer is never flushed)
    log = logging.handlers.BufferingHandler(capacity=sys.maxsize)
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
        for record in log.buffer
        if "Recompiling" in record.getMessage()
        for line in record.getMessage().splitlines()
        if line.strip().startswith("- ")
    ]
    return {"how": how, "lengths": lengths, "compiles": compiles, "recompile_reasons": reasons}
