"""A step's collectives as numbers: what kind each op is, its buffer's bytes, and what crosses the wire.

The buffer is not what crosses the wire. With the ring algorithms (NCCL's and gloo's defaults at these sizes)
each of N ranks sends, per byte of buffer: all-reduce 2(N-1)/N (a reduce-scatter then an all-gather),
all-gather and reduce-scatter (N-1)/N, broadcast (N-1)/N averaged over the ranks (a pipeline of N-1 hops),
send 1 and recv 0. nccl-tests reports "bus bandwidth" with the same factors (broadcast and send/recv: 1), so
that a collective's figure compares with the link's speed: busbw = buffer bytes / time x factor.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("allreduce", "allgather", "reducescatter", "broadcast", "send", "recv")


def kind(op: str) -> str:
    """The collective an op name or a trace event name stands for: 'c10d::_allgather_base_',
    '_c10d_functional::all_gather_into_tensor', 'gloo:all_gather', 'ncclDevKernel_AllGather_RING_LL' ->
    'allgather'; '' for anything else."""
    flat = op.lower().replace("_", "")
    return next((k for k in KINDS if k in flat), "")


def sent_per_buffer_byte(op_kind: str, n: int) -> float:
    """Bytes one rank sends per byte of the collective's buffer, ring algorithms (see the module docstring)."""
    return {
        "allreduce": 2 * (n - 1) / n,
        "allgather": (n - 1) / n,
        "reducescatter": (n - 1) / n,
        "broadcast": (n - 1) / n,
        "send": 1.0 if n > 1 else 0.0,
        "recv": 0.0,
    }[op_kind]


def bus_factor(op_kind: str, n: int) -> float:
    """nccl-tests' busbw / algbw: all-reduce 2(N-1)/N, all-gather and reduce-scatter (N-1)/N, others 1."""
    return {
        "allreduce": 2 * (n - 1) / n,
        "allgather": (n - 1) / n,
        "reducescatter": (n - 1) / n,
    }.get(op_kind, 1.0)


@dataclass
class CollectiveRow:
    """All calls of one op in one phase of a step: how many, and their buffers' bytes summed."""

    phase: str  # set by the demo: forward, backward, optimizer, schedule
    op: str  # the op's name, "_" stripped: allreduce, allgather_base, all_reduce, send ...
    count: int
    bytes: int

    @property
    def kind(self) -> str:
        return kind(self.op)

    def sent_bytes(self, n: int) -> float:
        return self.bytes * sent_per_buffer_byte(self.kind, n)


def total(
    rows: list[CollectiveRow], op_kind: str = "", phase: str | None = None
) -> tuple[int, int]:
    """(count, buffer bytes) of the rows of this kind ('' = all) and phase (None = all)."""
    rows = [r for r in rows if op_kind in ("", r.kind) and phase in (None, r.phase)]
    return sum(r.count for r in rows), sum(r.bytes for r in rows)
