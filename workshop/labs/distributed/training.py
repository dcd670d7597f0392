"""The training every demo does, and its one-process reference does too: the same checkpoint, the same data, the
same optimizer, a few steps.

A step's batch is `chunks` chunks of ROWS sentences, and its loss is the mean over chunks of lm_loss(chunk). DDP
and FSDP give each rank a chunk (their gradients are averaged), pipeline parallel makes them its micro-batches
(the schedule averages), tensor parallel has one chunk, which every rank sees whole.

The one-process reference every demo is compared with: the same steps of the same training in
one process, without any process group. Rank 0 runs it, every rank receives it and compares its own losses and
final parameters with it (Instruments.record): they must agree within TOLERANCE.
"""

from __future__ import annotations

import functools
import time

import torch
import torch.distributed as dist

from workshop.labs.distributed.measurements import timed_steps
from workshop.minigpt import checkpoint, data
from workshop.minigpt.model import lm_loss

STEPS = 5
ROWS = 8  # sentences per chunk (per rank for DDP/FSDP, per micro-batch for PP)
LR = 0.02


def batches(steps: int, chunks: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets, each (steps, chunks, ROWS, T) token ids, the same on every rank."""
    x, y = data.train_tensors(n_sentences=steps * chunks * ROWS)  # (steps*chunks*ROWS, T)
    shape = (steps, chunks, ROWS, x.shape[-1])
    return x.view(shape).to(device), y.view(shape).to(device)


def load_model(device):
    """Every run, demo or reference, starts from the same checkpoint: the lab's --checkpoint, else the shipped one."""
    return checkpoint.load(checkpoint.from_environment(), device=device).train()


def optimizer(params):
    """SGD with momentum (state: one buffer per parameter). Not AdamW: it divides each gradient by its own size,
    so a gradient that is mathematically zero (the key bias's: softmax ignores a per-row constant) but ~1e-10 of
    round-off becomes a full-size step whose sign is noise, and no two runs would agree to 1e-6."""
    # foreach=False: the same per-tensor arithmetic for plain tensors and DTensors, demo and reference alike.
    return torch.optim.SGD(params, lr=LR, momentum=0.9, foreach=False)


def sync(device: torch.device) -> None:
    """Wait for the device's queued work, so that a time taken next includes it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# Largest allowed |demo - reference| of a parameter, and relative difference of a loss. fp32 sums taken in
# another order (an all-reduce, a sharded matmul) differ by a few ulps: ~1e-7 relative.
TOLERANCE = {"cpu": 1e-6, "cuda": 1e-5}


# The same steps in one process, no process group, as a dict: losses; params, final, by name; compute_s, forward +
# backward of one step's chunks, the fastest timed step (as the pipeline's busy time); compute_cpu_s, the same
# step's CPU seconds (as the pipeline's chunks')
Reference = dict


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
    # (wall, CPU) of the step least disturbed by the machine's other work
    compute_s, compute_cpu_s = min(timed_steps(times))
    return dict(
        losses=losses,
        params={n: p.detach() for n, p in model.named_parameters()},
        compute_s=compute_s,
        compute_cpu_s=compute_cpu_s,
    )


@functools.cache  # one per process: a demo's runs (DDP's two, the pipeline's schedules) share it
def shared_reference(steps: int, chunks: int, device: torch.device) -> Reference:
    """The reference, run by rank 0 alone (its compute time is one process's, not N processes' sharing the
    cores) and sent to every rank. Every rank calls it at the same point, after its first run's training: the
    others wait for rank 0 in a collective, and a demo that hangs a rank on purpose (--pg-timeout 5) must
    hang in its training, not here."""
    box = [None]
    if dist.get_rank() == 0:
        ref = run_alone(steps, chunks, device)
        box = [{**ref, "params": {n: p.cpu() for n, p in ref["params"].items()}}]
    # pickled CPU tensors: each rank puts them on its own device
    dist.broadcast_object_list(box, src=0)
    ref = box[0]
    return {**ref, "params": {n: p.to(device) for n, p in ref["params"].items()}}
