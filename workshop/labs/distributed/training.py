"""The training every demo does, and its one-process reference does too: the same checkpoint, the same data, the
same optimizer, a few steps.

A step's batch is `chunks` chunks of ROWS sentences, and its loss is the mean over chunks of lm_loss(chunk). DDP
and FSDP give each rank a chunk (their gradients are averaged), pipeline parallel makes them its micro-batches
(the schedule averages), tensor parallel has one chunk, which every rank sees whole.
"""

from __future__ import annotations

import torch

from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors

STEPS = 5
ROWS = 8  # sentences per chunk (per rank for DDP/FSDP, per micro-batch for PP)
LR = 0.02


def batches(steps: int, chunks: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets, each (steps, chunks, ROWS, T) token ids, the same on every rank."""
    x, y = train_tensors(n_sentences=steps * chunks * ROWS)  # (steps*chunks*ROWS, T)
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
