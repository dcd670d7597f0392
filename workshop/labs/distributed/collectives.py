"""A step's collectives as numbers: what kind each op is, its buffer's bytes, and what crosses the wire.

The buffer is not what crosses the wire. With the ring algorithms (NCCL's and gloo's defaults at these sizes)
each of N ranks sends, per byte of buffer: all-reduce 2(N-1)/N (a reduce-scatter then an all-gather),
all-gather and reduce-scatter (N-1)/N, broadcast (N-1)/N averaged over the ranks (a pipeline of N-1 hops),
send 1 and recv 0. nccl-tests reports "bus bandwidth" with the same factors (broadcast and send/recv: 1), so
that a collective's figure compares with the link's speed: busbw = buffer bytes / time x factor.

Which collectives a step issues, and how big they are: a TorchDispatchMode that logs every c10d op (CollectiveLog).
Every collective in PyTorch reaches the dispatcher as an operator: the eager ProcessGroup calls that DDP's
reducer and FSDP2 make (`c10d::allreduce_`, `c10d::_allgather_base_`, `c10d::send` ...) and the functional
ones that DTensor issues for tensor parallel (`_c10d_functional::all_reduce` ...). A dispatch mode sees them all.
(`torch.distributed.tensor.debug.CommDebugMode` counts the same ops, but not their sizes.)

Size rule, the same for every op: the largest tensor argument or result, i.e. the full (unsharded) buffer
that the collective reduces, gathers or sends. For a list argument (coalesced ops) its tensors are summed.

One torch.profiler trace per rank of a demo's last step, and what it says about the step's collectives: how
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
from torch.utils._python_dispatch import TorchDispatchMode

from workshop.foundations.tensor_bytes import tensor_bytes

KINDS = ("allreduce", "allgather", "reducescatter", "broadcast", "send", "recv")
NAMESPACES = {"c10d", "_c10d_functional", "c10d_functional"}
# Ops of those namespaces that move no data (names with "_" stripped)
NOT_COMMUNICATION = {"wait_tensor", "wrap_tensor_autograd", "barrier", "monitored_barrier"}
AUTOGRAD_OP = "autograd::engine::evaluate_function: "
COLLECTIVE_OPS = ("c10d::", "_c10d_functional::", "c10d_functional::")


def kind(op: str) -> str:
    """The collective an op name or a trace event name stands for: 'c10d::_allgather_base_',
    '_c10d_functional::all_gather_into_tensor', 'gloo:all_gather', 'ncclDevKernel_AllGather_RING_LL' ->
    'allgather'; '' for anything else."""
    flat = op.lower().replace("_", "")
    return next((k for k in KINDS if k in flat), "")


def bus_factor(op_kind: str, n: int) -> float:
    """nccl-tests' busbw / algbw: all-reduce 2(N-1)/N, all-gather and reduce-scatter (N-1)/N, others 1."""
    return {
        "allreduce": 2 * (n - 1) / n,
        "allgather": (n - 1) / n,
        "reducescatter": (n - 1) / n,
    }.get(op_kind, 1.0)


# All calls of one op in one phase of a step, as a dict: {"phase": set by the demo (forward, backward, optimizer,
# schedule), "op": the op's name, "_" stripped (allreduce, allgather_base, all_reduce, send ...), "count": how many,
# "bytes": their buffers' bytes summed}
CollectiveRow = dict


def sent_bytes(row: CollectiveRow, n: int) -> float:
    """Bytes one rank sends for the row's calls among n ranks: their buffers' bytes times what one rank sends per
    byte of buffer with the ring algorithms (see the module docstring)."""
    sent_per_buffer_byte = {
        "allreduce": 2 * (n - 1) / n,
        "allgather": (n - 1) / n,
        "reducescatter": (n - 1) / n,
        "broadcast": (n - 1) / n,
        "send": 1.0 if n > 1 else 0.0,
        "recv": 0.0,
    }
    return row["bytes"] * sent_per_buffer_byte[kind(row["op"])]


def total(
    rows: list[CollectiveRow], op_kind: str = "", phase: str | None = None
) -> tuple[int, int]:
    """(count, buffer bytes) of the rows of this kind ('' = all) and phase (None = all)."""
    rows = [r for r in rows if op_kind in ("", kind(r["op"])) and phase in (None, r["phase"])]
    return sum(r["count"] for r in rows), sum(r["bytes"] for r in rows)


class CollectiveLog(TorchDispatchMode):
    """Records (phase, op, bytes) for each collective dispatched while active. The phase is the one the demo
    names (`in_phase`: the pipeline's "schedule", whose forwards and backwards interleave) or "optimizer" during
    `opt.step()` (`watch`), else what the step is doing: "backward" while autograd runs a backward (its hooks
    included: DDP's all-reduces, FSDP's reduce-scatters), "forward" otherwise."""

    def __init__(self):
        super().__init__()
        self.named_phase: str | None = None
        self.events: list[tuple[str, str, int]] = []

    @contextlib.contextmanager
    def in_phase(self, phase: str):
        before, self.named_phase = self.named_phase, phase
        try:
            yield
        finally:
            self.named_phase = before

    def watch(self, opt: torch.optim.Optimizer) -> tuple:
        """Tell the optimizer's steps apart (its step is the phase "optimizer", from its start to its end);
        returns the hooks' two handles (remove them when done: each is a context manager that does). The optimizer
        steps outside any `in_phase`."""
        return (
            opt.register_step_pre_hook(lambda *_args: setattr(self, "named_phase", "optimizer")),
            opt.register_step_post_hook(lambda *_args: setattr(self, "named_phase", None)),
        )

    def phase(self) -> str:
        if self.named_phase:
            return self.named_phase
        if torch._C._current_graph_task_id() != -1:  # this thread is running a backward
            return "backward"
        return "forward"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.distributed.tensor import DTensor

        if any(issubclass(t, DTensor) for t in types):
            return NotImplemented  # let DTensor turn itself into plain ops (and collectives) first; we see those
        out = func(*args, **(kwargs or {}))
        namespace, name = getattr(func, "namespace", ""), func.__name__.split(".")[0].strip("_")
        if namespace in NAMESPACES and name not in NOT_COMMUNICATION:
            size = max([tensor_bytes(a) for a in args] + [tensor_bytes(out)])
            self.events.append((self.phase(), name, size))
        return out

    def summary(self) -> list[CollectiveRow]:
        """One row per (phase, op), summed over the events, in first-seen order."""
        sizes: dict[tuple[str, str], list[int]] = {}
        for phase, op, size in self.events:
            sizes.setdefault((phase, op), []).append(size)
        return [
            {"phase": phase, "op": op, "count": len(s), "bytes": sum(s)}
            for (phase, op), s in sizes.items()
        ]


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


def collective_seconds(path: Path) -> dict[str, float]:
    """Seconds spent in each kind of collective (allreduce, allgather ...), summed over the trace's events."""
    seconds: dict[str, float] = defaultdict(float)
    for e in spans(path):
        # the collectives' work: gloo's spans (CPU, worker threads) and NCCL's kernels (GPU); not the CPU-side
        # `nccl:<op>` record of the launch, which would count the same collective twice
        work = e["name"].startswith("gloo:") or (
            e.get("cat") == "kernel" and e["name"].startswith("nccl")
        )
        if work and kind(e["name"]):
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
