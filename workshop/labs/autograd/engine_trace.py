"""The real engine seen by the autograd profiler: one .backward() written as a Chrome trace (open it in Perfetto).

The engine wraps every node it runs in a profiler range named "autograd::engine::evaluate_function: <Node>",
with the aten ops of that node's backward formula nested inside. That is a third witness of the order the engine
ran the nodes (after our pre-hooks and our own engine), in the tool practitioners use to read a backward pass.
torch.autograd.profiler is used rather than torch.profiler.profile: same Kineto trace, without the ~5 s that
torch.profiler spends importing Inductor on its first use.
"""

from __future__ import annotations

from pathlib import Path

import torch

PREFIX = "autograd::engine::evaluate_function: "


def profile_backward(loss: torch.Tensor, trace: Path, device: str) -> list[str]:
    """Run loss.backward() under the profiler, write its Chrome trace to `trace`; the nodes' names in the order
    the engine evaluated them (AccumulateGrad without its C++ namespace)."""
    with torch.autograd.profiler.profile(use_device="cuda" if device == "cuda" else None) as prof:
        loss.backward()
    prof.export_chrome_trace(str(trace))
    ranges = sorted(
        (e for e in prof.function_events if e.name.startswith(PREFIX)),
        key=lambda e: e.time_range.start,
    )
    return [e.name.removeprefix(PREFIX).rsplit("::", 1)[-1] for e in ranges]
