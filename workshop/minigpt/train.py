"""Deterministic training of the MiniGPT on the grammar (seeded; bit-identical on one machine and device).

Reproduce the shipped checkpoint with:  python -m workshop train --out workshop/minigpt/minigpt.pt
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from workshop.minigpt.data import TRAIN_SEED, train_tensors
from workshop.minigpt.model import GPT, GPTConfig, lm_loss


@dataclass(frozen=True)
class TrainArgs:
    steps: int = 1500
    batch_size: int = 128
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01
    seed: int = TRAIN_SEED


def lr_at(step: int, args: TrainArgs) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train(
    args: TrainArgs = TrainArgs(), device: str = "cpu", on_step=None, stop_after: int | None = None
) -> tuple[GPT, dict]:
    """Returns the model and its history {'step': [...], 'loss': [...]}. on_step(step, loss) reports progress.

    stop_after=k runs only the first k steps of the same schedule (to replay the start of a run).
    """
    torch.manual_seed(args.seed)
    x, y = train_tensors()  # (N, 22) each
    model = GPT(GPTConfig()).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    order = torch.Generator().manual_seed(args.seed)
    history = {"step": [], "loss": []}
    for step in range(args.steps if stop_after is None else min(stop_after, args.steps)):
        idx = torch.randint(0, x.shape[0], (args.batch_size,), generator=order)
        xb, yb = x[idx].to(device), y[idx].to(device)  # (B, 22)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        loss = lm_loss(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history["step"].append(step)
        history["loss"].append(loss.item())
        if on_step:
            on_step(step, history["loss"][-1])
    return model.eval(), history


def train_args_dict(args: TrainArgs) -> dict:
    return asdict(args)
