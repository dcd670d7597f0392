"""The one-process reference every demo is compared with: the same steps of the same training (training.py) in
one process, without any process group. Rank 0 runs it, every rank receives it and compares its own losses and
final parameters with it (instruments.Instruments.record): they must agree within TOLERANCE.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist

from workshop.labs.distributed.measurements import timed_steps
from workshop.labs.distributed.training import batches, load_model, optimizer, sync
from workshop.minigpt.model import lm_loss

# Largest allowed |demo - reference| of a parameter, and relative difference of a loss. fp32 sums taken in
# another order (an all-reduce, a sharded matmul) differ by a few ulps: ~1e-7 relative.
TOLERANCE = {"cpu": 1e-6, "cuda": 1e-5}


@dataclass
class Reference:
    """The same steps in one process, no process group."""

    losses: list[float]
    params: dict[str, torch.Tensor]  # final, by name
    compute_s: float  # forward + backward of one step's chunks, the fastest timed step (as the pipeline's busy time)
    compute_cpu_s: float  # the same step's CPU seconds (as the pipeline's chunks')


def run_alone(steps: int, chunks: int, device) -> Reference:
    """`steps` SGD steps of `chunks` chunks each, in this process."""
    model = load_model(device)
    opt = optimizer(model.parameters())
    x, y = batches(steps, chunks, device)
    losses, times = [], []
    for s in range(steps):
        opt.zero_grad()
        start, cpu = time.perf_counter(), time.process_time()
        loss = sum(lm_loss(model(x[s, c]), y[s, c]) for c in range(chunks)) / chunks
        loss.backward()
        sync(torch.device(device))
        times.append((time.perf_counter() - start, time.process_time() - cpu))
        opt.step()
        losses.append(loss.item())
    fastest = min(
        timed_steps(times)
    )  # (wall, CPU) of the step least disturbed by the machine's other work
    return Reference(losses, {n: p.detach() for n, p in model.named_parameters()}, *fastest)


@functools.cache  # one per process: a demo's runs (DDP's two, the pipeline's schedules) share it
def shared(steps: int, chunks: int, device: torch.device) -> Reference:
    """The reference, run by rank 0 alone (its compute time is one process's, not N processes' sharing the
    cores) and sent to every rank. Every rank calls it at the same point, after its first run's training: the
    others wait for rank 0 in a collective, and a demo that hangs a rank on purpose (--pg-timeout 5) must
    hang in its training, not here."""
    box = [None]
    if dist.get_rank() == 0:
        ref = run_alone(steps, chunks, device)
        box = [dataclasses.replace(ref, params={n: p.cpu() for n, p in ref.params.items()})]
    # pickled CPU tensors: each rank puts them on its own device
    dist.broadcast_object_list(box, src=0)
    ref = box[0]
    return dataclasses.replace(ref, params={n: p.to(device) for n, p in ref.params.items()})
