"""One torch.profiler trace per rank of a demo's last step, and how long its collectives took according to it.

The trace (Chrome trace format, gzipped) opens in https://ui.perfetto.dev or chrome://tracing: one row per
thread (and per CUDA stream on a GPU). Where communication overlaps compute shows there: DDP's all-reduce runs
on gloo's worker thread (CPU) or NCCL's stream (GPU) while backward continues on the main thread; tensor
parallel's all-reduces sit between the ops that wait for them.

A collective's time is read from the events that do the work: gloo's `gloo:<op>` spans on its worker threads,
and NCCL's kernels (`ncclDevKernel_AllReduce_...`) on a GPU. That time includes waiting for the slowest rank to
arrive, as nccl-tests' does.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections import defaultdict
from pathlib import Path

import torch

from workshop.labs.distributed.collectives import kind


@contextlib.contextmanager
def profiled(path: Path, device: torch.device):
    """Profile the block (CPU ops, and CUDA kernels on a GPU) into `path` (a .json.gz Chrome trace)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.profiler.profile(activities=activities) as prof:
        yield
    prof.export_chrome_trace(str(path))


def is_collective_work(event: dict) -> bool:
    """gloo's spans (CPU, worker threads) and NCCL's kernels (GPU); not the CPU-side `nccl:<op>` record of the
    launch, which would count the same collective twice."""
    name = event.get("name", "")
    return name.startswith("gloo:") or (event.get("cat") == "kernel" and name.startswith("nccl"))


def collective_seconds(path: Path) -> dict[str, float]:
    """Seconds spent in each kind of collective (allreduce, allgather ...), summed over the trace's events."""
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as f:
        events = json.load(f)["traceEvents"]
    seconds: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and is_collective_work(e) and kind(e["name"]):
            seconds[kind(e["name"])] += (
                e.get("dur", 0) * 1e-6
            )  # the trace's durations are microseconds
    return dict(seconds)
