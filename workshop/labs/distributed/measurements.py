"""What a demo measures and writes to measurements.json, as typed records: one per rank, one per training run,
one per demo. The demo's processes fill them (instruments.py), rank 0 writes them (asdict, only
there), and the lab reads them back (Measurements.read) to check and tabulate them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from workshop.foundations import atomic
from workshop.labs.distributed.collectives import CollectiveRow

# A pipeline rank's forward or backward of one micro-batch: (kind "F"/"B", stage, micro-batch, start_s, end_s),
# seconds since that rank's step began.
Interval = tuple[str, int, int, float, float]
# A collective issued during a traced backward: (its kind, how many of backward's ops started after it)
IssuedInBackward = tuple[str, int]


def timed_steps(values: list) -> list:
    """The steps whose times count: not the first (it also sets up) nor the last (logged and profiled), where
    steps are left between them."""
    return values[1:-1] or values


@dataclass
class RankRecord:
    rank: int
    # per step; None where this rank computes no loss (a pipeline's first stage)
    losses: list[float | None]
    step_time_s: float  # median over the timed steps, barrier to end of the optimizer step
    collectives: list[CollectiveRow]  # the last step's, summed per (phase, op)
    held: dict[str, int]  # bytes of the storages behind params, grads, optimizer state on this rank
    params_digest: str  # a hash of the full parameters after training: replicas must agree
    collective_seconds: dict[str, float] = field(default_factory=dict)  # per kind, from the trace
    trace: str = ""  # the profiler trace of the last step, relative to the demo's folder
    backward_ops: int = 0  # the autograd ops of the last step's backward, in the trace
    # each collective issued during that backward, in order: (kind, backward's ops started after it)
    issued_in_backward: list[IssuedInBackward] = field(default_factory=list)
    cuda_peak_bytes: int = 0
    reference_losses: list[float] = field(default_factory=list)
    # one process: forward + backward of one step's chunks (the fastest timed step), wall and CPU seconds
    reference_compute_s: float = 0.0
    reference_compute_cpu_s: float = 0.0
    max_param_error: float = 0.0
    worst_param: str = ""
    params_compared: int = 0
    intervals: list[list[Interval]] = field(default_factory=list)  # pipeline: per step
    timer_resolution_s: float = 0.0  # pipeline: the cost of one timestamp (a sync on GPUs)
    busy_cpu_s: list[float] = field(
        default_factory=list
    )  # pipeline: per step, CPU seconds inside its chunks

    @classmethod
    def from_json(cls, d: dict) -> RankRecord:
        return cls(
            **{
                **d,
                "collectives": [CollectiveRow(**r) for r in d["collectives"]],
                "intervals": [[tuple(iv) for iv in step] for step in d.get("intervals", [])],
                "issued_in_backward": [tuple(c) for c in d.get("issued_in_backward", [])],
            }
        )


@dataclass
class Run:
    """One training run: a demo's, or one pipeline schedule's. Losses are the run's (one per step)."""

    chunks: int  # chunks of ROWS sentences per step (per rank for DDP/FSDP, micro-batches for PP)
    losses: list[float]
    reference_losses: list[float]
    max_loss_error: float  # relative
    max_param_error: float  # absolute, the worst rank
    per_rank: list[RankRecord]
    stages_per_rank: int = 0  # pipeline only: v
    microbatches: int = 0  # pipeline only: m

    @classmethod
    def from_json(cls, d: dict) -> Run:
        return cls(**{**d, "per_rank": [RankRecord.from_json(r) for r in d["per_rank"]]})


@dataclass
class Measurements:
    strategy: str
    world_size: int
    device: str
    backend: str
    steps: int
    rows_per_chunk: int
    seq_len: int
    lr: float
    tolerance: float
    torch: str
    timeout_s: float  # the process group's timeout in this demo (--pg-timeout)
    # the installed torch's defaults: {"gloo": .., "nccl": ..}
    default_timeouts_s: dict[str, float | None]
    runs: dict[str, Run]
    lm_head_local_shape: list[int] = field(default_factory=list)  # tensor parallel
    skipped_schedules: dict[str, str] = field(default_factory=dict)  # pipeline: name -> why not

    def write(self, out: Path) -> Path:
        return atomic.write_json(Path(out) / "measurements.json", asdict(self))

    @classmethod
    def read(cls, folder: Path) -> Measurements:
        d = json.loads((Path(folder) / "measurements.json").read_text())
        return cls(**{**d, "runs": {k: Run.from_json(v) for k, v in d["runs"].items()}})
