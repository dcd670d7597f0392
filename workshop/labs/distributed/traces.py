"""One torch.profiler trace per rank of a demo's last step, and what it says about the step's collectives: how
long they took, and whether they were issued while backward still had work to do.

The trace (Chrome trace format, gzipped) opens in https://ui.perfetto.dev or chrome://tracing: one row per
thread (and per CUDA stream on a GPU). Where communication overlaps compute shows there: a collective's work runs
on gloo's worker thread (CPU) or NCCL's stream (GPU), so the thread that issued it may go on computing; tensor
parallel's all-reduces sit between the ops that wait for them.

A collective's time is read from the events that do the work: gloo's `gloo:<op>` spans on its worker threads,
and NCCL's kernels (`ncclDevKernel_AllReduce_...`) on a GPU. That time includes waiting for the slowest rank to
arrive, as nccl-tests' does.

Whether it overlapped backward is read from when it was issued: its c10d op (`c10d::allreduce_`,
`_c10d_functional::all_reduce` ...) on the issuing thread, against the autograd engine's ops
(`autograd::engine::evaluate_function: ...`, one per node of the backward graph) on the thread that runs
backward. Both are CPU events on either device, and in the order that thread ran them, so the count of
backward's ops that started after a collective was issued does not depend on how fast either ran.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections import defaultdict
from pathlib import Path

import torch

from workshop.labs.distributed.collectives import kind

AUTOGRAD_OP = "autograd::engine::evaluate_function: "
COLLECTIVE_OPS = ("c10d::", "_c10d_functional::", "c10d_functional::")


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


def spans(path: Path) -> list[dict]:
    """The trace's complete events ("X": a name, a start `ts` and a duration `dur`, in microseconds)."""
    with gzip.open(path, "rt") if str(path).endswith(".gz") else open(path) as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def is_collective_work(event: dict) -> bool:
    """gloo's spans (CPU, worker threads) and NCCL's kernels (GPU); not the CPU-side `nccl:<op>` record of the
    launch, which would count the same collective twice."""
    name = event.get("name", "")
    return name.startswith("gloo:") or (event.get("cat") == "kernel" and name.startswith("nccl"))


def collective_seconds(path: Path) -> dict[str, float]:
    """Seconds spent in each kind of collective (allreduce, allgather ...), summed over the trace's events."""
    seconds: dict[str, float] = defaultdict(float)
    for e in spans(path):
        if is_collective_work(e) and kind(e["name"]):
            seconds[kind(e["name"])] += e.get("dur", 0) * 1e-6  # microseconds
    return dict(seconds)


def issued(events: list[dict]) -> list[dict]:
    """The collectives' c10d ops, outermost only: a dispatch mode (the collective log) dispatches each op again
    inside its own span."""
    ops = sorted(
        (e for e in events if e["name"].startswith(COLLECTIVE_OPS) and kind(e["name"])),
        key=lambda e: e["ts"],
    )
    outer, end = [], float("-inf")
    for e in ops:
        if e["ts"] >= end:
            outer.append(e)
            end = e["ts"] + e["dur"]
    return outer


def backward_overlap(path: Path) -> tuple[int, list[tuple[str, int]]]:
    """(backward's autograd ops, and for each collective issued during backward, in order: (its kind, how many
    of backward's ops started after it was issued)). No backward: (0, [])."""
    events = spans(path)
    ops = [e for e in events if e["name"].startswith(AUTOGRAD_OP)]
    if not ops:
        return 0, []
    start, end = min(e["ts"] for e in ops), max(e["ts"] + e["dur"] for e in ops)
    during = [e for e in issued(events) if start <= e["ts"] <= end]
    return len(ops), [(kind(c["name"]), sum(o["ts"] > c["ts"] for o in ops)) for c in during]


def overlap(backward_ops: int, issued: list[tuple[str, int]], op_kind: str) -> float | None:
    """The share of backward's ops that started after the first collective of this kind was issued during
    backward (`backward_overlap`'s result): 0 when it was issued as backward ended, near 1 when backward had
    hardly begun; None when none was issued during backward."""
    after = next((n for k, n in issued if k == op_kind), None)
    return None if after is None or not backward_ops else after / backward_ops
