"""A torch.profiler trace of the op's eager call, layer by layer, for Perfetto or chrome://tracing.

It shows what eager_cost.py measures, for torch.ops.workshop.softmax: the ladder of calls, each rung one more
layer than the one before ("kernel launch", "plan", "checks, output", then the op's registration and its autograd
node), each in a range named after its layer; inside every call, ranges around the layers it passes through (the
input checks, the plan and launch, the launch itself), placed for the trace only by wrapping those functions while
it records; and the profiler's own events: the dispatcher's `workshop::softmax`, the output's allocation, the
autograd node, and on a GPU the CUDA kernels. Then a forward + backward step of the training shape. One call each:
the trace shows where time goes within a call, the eager-cost table what each layer costs.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from unittest import mock

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from workshop.labs.custom_op import eager_cost
from workshop.ops import softmax, softmax_launch, softmax_op

TRACE = "eager_call_trace.json"
# The public op's rungs (eager_cost.ladder): the layers inside it, then its registration and its autograd node.
RUNGS = (
    *eager_cost.COMMON_LAYERS,
    *(f"{softmax_op.KIND}: {layer}" for layer in eager_cost.OWN_LAYERS),
)
STEP_RANGE = "forward + backward step"
# Inner layers, by the function that is each one's entry, and the name its range gets in the trace.
INNER = {
    (softmax_op, "check_input"): "layer: input checks",
    (softmax_launch, "forward"): "layer: plan + kernel launch",
    (softmax_launch, "launch"): "layer: kernel launch",
}
RANGES = (
    *(f"rung {i}: {name}" for i, name in enumerate(RUNGS, start=1)),
    *INNER.values(),
    STEP_RANGE,
)


def record(path: Path, device: str) -> dict:
    """Profile the ladder and a step into `path` (Chrome trace JSON); what the exported trace holds: its ranges
    and the op's events, and the GPU kernels, by name."""
    rungs = eager_cost.ladder(device)
    x = torch.randn(eager_cost.STEP, device=device, requires_grad=True)
    for name in RUNGS:
        rungs[name]()  # warm: the trace shows calls, not first-call compilation
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with (
        profile(activities=activities, record_shapes=True) as prof,
        contextlib.ExitStack() as patches,
    ):
        for (
            owner,
            attr,
        ), name in INNER.items():  # each inner layer's function, wrapped in its range
            ranged = record_function(name)(getattr(owner, attr))
            patches.enter_context(mock.patch.object(owner, attr, ranged))
        for rung, name in zip(RANGES, RUNGS, strict=False):
            with record_function(rung):
                rungs[name]()
        with record_function(STEP_RANGE):
            softmax(x).backward(torch.ones_like(x))
        if device == "cuda":
            torch.cuda.synchronize()
    prof.export_chrome_trace(str(path))
    events = json.loads(Path(path).read_text())["traceEvents"]  # what the exported file holds
    names = [e.get("name", "") for e in events]
    return {
        "file": Path(path).name,
        "events": len(events),
        # the ranges the lab placed (rungs, inner layers, the step), each name once
        "ranges": [r for r in RANGES if r in names],
        "op_events": names.count("workshop::softmax"),  # the dispatcher's workshop::softmax events
        # names of the CUDA kernels in it (none on the CPU)
        "gpu_kernels": sorted({e["name"] for e in events if e.get("cat") == "kernel"}),
    }
