"""Save and load the MiniGPT. Loading refuses a checkpoint made for another vocabulary or other shapes.

The file is a plain dict loaded with torch.load(weights_only=True): tensors, numbers, strings and lists only,
so loading runs no pickled code.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import torch

from workshop import atomic
from workshop.minigpt.grammar import VOCAB
from workshop.minigpt.model import GPT, GPTConfig

FORMAT = "workshop-minigpt/1"
SHIPPED = Path(__file__).with_name("minigpt.pt")


class CheckpointError(ValueError):
    pass


def save(path: str | Path, model: GPT, history: dict, train_args: dict) -> Path:
    return atomic.save_torch(
        path,
        {
            "format": FORMAT,
            "config": asdict(model.cfg),
            "vocab": list(VOCAB.tokens),
            "state_dict": model.state_dict(),
            "history": history,
            "train_args": train_args,
        },
    )


def load_raw(path: str | Path = SHIPPED) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(
            f"no checkpoint at {path}; make one with `python -m workshop train --out {path}`"
        )
    ckpt = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(ckpt, dict) or ckpt.get("format") != FORMAT:
        raise CheckpointError(f"{path} is not a {FORMAT} checkpoint")
    vocab = list(ckpt["vocab"])
    if vocab != list(VOCAB.tokens):
        if len(vocab) != len(VOCAB):
            detail = f"it has {len(vocab)} tokens, the grammar has {len(VOCAB)}"
        else:
            i = next(i for i, (a, b) in enumerate(zip(vocab, VOCAB.tokens, strict=True)) if a != b)
            detail = f"token {i} is {vocab[i]!r} there and {VOCAB.tokens[i]!r} here"
        raise CheckpointError(f"{path} was trained on another vocabulary: {detail}")
    return ckpt


def load(path: str | Path = SHIPPED, device: str | torch.device = "cpu") -> GPT:
    ckpt = load_raw(path)
    model = GPT(GPTConfig(**ckpt["config"]))
    expected = model.state_dict()
    got = ckpt["state_dict"]
    if set(got) != set(expected):
        missing, extra = sorted(set(expected) - set(got)), sorted(set(got) - set(expected))
        raise CheckpointError(
            f"{path}: parameters differ from the model's (missing {missing}, unexpected {extra})"
        )
    for name, tensor in got.items():
        if tensor.shape != expected[name].shape:
            raise CheckpointError(
                f"{path}: {name} has shape {tuple(tensor.shape)}, the model expects {tuple(expected[name].shape)}"
            )
    model.load_state_dict(got)
    return model.to(device).eval()
