"""The LM head's real inputs: MiniGPT hidden states of training sentences and their next-token targets.

The hidden states are detached and made a leaf, so the graph this lab studies is exactly the LM head plus the
training loss: dL/dx is the gradient the head would send back into the transformer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn as nn

from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors
from workshop.minigpt.model import PAD_ID

N_SENTENCES = 8  # 8 sentences x 22 positions = 176 rows, 82 of them real targets, the rest <pad>


@dataclass
class HeadBatch:
    hidden: torch.Tensor  # (B, T, 64) float32, no grad: model.hidden_states(idx)
    targets: torch.Tensor  # (B, T) int64 next-token ids, PAD_ID where the sentence has ended
    head: nn.Linear  # the trained lm_head, Linear(64, 600)

    @property
    def n_real(self) -> int:
        return int((self.targets != PAD_ID).sum())


@torch.no_grad()
def load_batch(device: str, n_sentences: int = N_SENTENCES) -> HeadBatch:
    model = checkpoint.load(checkpoint.from_environment(), device=device)  # --checkpoint
    idx, targets = train_tensors(n_sentences)  # (B, T) each, right-padded with <pad>
    idx, targets = idx.to(device), targets.to(device)
    return HeadBatch(model.hidden_states(idx), targets, model.lm_head)


def leaves(batch: HeadBatch, dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """Fresh leaf tensors x, W, b in `dtype` that require grad: every run gets its own graph and .grad."""
    return leaf_tensors(batch.hidden, batch.head.weight, batch.head.bias, dtype)


def leaf_tensors(
    hidden: torch.Tensor, W: torch.Tensor, b: torch.Tensor, dtype: torch.dtype
) -> dict[str, torch.Tensor]:
    return {
        "x": hidden.detach().to(dtype).clone().requires_grad_(),  # (B, T, 64)
        "W": W.detach().to(dtype).clone().requires_grad_(),  # (600, 64)
        "b": b.detach().to(dtype).clone().requires_grad_(),  # (600,)
    }
