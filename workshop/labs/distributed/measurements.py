"""What a demo measures and writes to measurements.json, as the plain dicts that file holds: one per rank, one
per training run, one per demo. The demo's processes fill them (instruments.py), rank 0 writes them (`write`,
only there), and the lab reads them back (`read`) to check and tabulate them. Their keys:

A rank's record (RankRecord):
    rank
    losses: per step; None where this rank computes no loss (a pipeline's first stage)
    step_time_s: median over the timed steps, barrier to end of the optimizer step
    collectives: the last step's, summed per (phase, op) (collectives.CollectiveLog.summary's rows)
    held: {"params", "grads", "optimizer"} -> bytes of the storages behind them on this rank
    params_digest: a hash of the full parameters after training: replicas must agree
    collective_seconds: per kind, from the trace
    trace: the profiler trace of the last step, relative to the demo's folder
    backward_ops: the autograd ops of the last step's backward, in the trace
    issued_in_backward: each collective issued during that backward, in order: [kind, backward's ops started
        after it]
    cuda_peak_bytes: 0 on CPU
    reference_losses
    reference_compute_s, reference_compute_cpu_s: one process: forward + backward of one step's chunks (the
        fastest timed step), wall and CPU seconds
    max_param_error, worst_param, params_compared
    a pipeline's only: intervals (per step, its Intervals), timer_resolution_s (the cost of one timestamp: a
        sync on GPUs), busy_cpu_s (per step, CPU seconds inside its chunks)

A training run (Run): a demo's, or one pipeline schedule's; its losses the run's (one per step).
    chunks: chunks of ROWS sentences per step (per rank for DDP/FSDP, micro-batches for PP)
    losses, reference_losses
    max_loss_error: relative
    max_param_error: absolute, the worst rank
    per_rank: the ranks' records
    a pipeline's only: stages_per_rank (v), microbatches (m)

A demo's measurements (Measurements): strategy, world_size, device, backend, steps, rows_per_chunk, seq_len, lr,
tolerance, torch, timeout_s (the process group's timeout in this demo: --pg-timeout), default_timeouts_s (the
installed torch's defaults: {"gloo": .., "nccl": ..}), runs (name -> Run); tensor parallel's
lm_head_local_shape; the pipeline's skipped_schedules (name -> why not).
"""

from __future__ import annotations

import json
from pathlib import Path

from workshop.foundations import atomic

# A pipeline rank's forward or backward of one micro-batch: (kind "F"/"B", stage, micro-batch, start_s, end_s),
# seconds since that rank's step began.
Interval = tuple[str, int, int, float, float]
# The records, as the docstring says them
RankRecord = Run = Measurements = dict


def timed_steps(values: list) -> list:
    """The steps whose times count: not the first (it also sets up) nor the last (logged and profiled), where
    steps are left between them."""
    return values[1:-1] or values


def write(out: Path, measurements: Measurements) -> Path:
    return atomic.write_json(Path(out) / "measurements.json", measurements)


def read(folder: Path) -> Measurements:
    return json.loads((Path(folder) / "measurements.json").read_text())
