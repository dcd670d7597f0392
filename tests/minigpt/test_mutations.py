"""Planted bugs in what the minigpt lab checks, each caught by one of the lab's own checks.

Each bug is monkeypatched into the package, one at a time, and only the lab section that checks it runs, in
this process (the sections are the lab's own functions; the held-out prompts are drawn once per module).
The test ids read "bug -> check that caught it".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
import torch

from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.minigpt import lab
from workshop.minigpt import checkpoint, evaluate, grammar, train
from workshop.minigpt.data import held_out_prompts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def prompts():
    return held_out_prompts()[:300]  # enough for 98% to mean something, a third of the time


def read_last_position_0(model, prompts_, batch_size=512):
    """Bug: the logits of position 0 (after <bos>) instead of each prompt's last position."""
    device = next(model.parameters()).device
    x = torch.full((len(prompts_), max(map(len, prompts_))), 0, dtype=torch.long)
    for i, p in enumerate(prompts_):
        x[i, : len(p)] = torch.tensor(p)
    with torch.no_grad():
        return model(x.to(device))[:, 0].argmax(-1).tolist()


def load_without_head(path=checkpoint.SHIPPED, device="cpu"):
    """Bug: a loader that skips the LM head's weight (strict=False), leaving its random initialisation."""
    raw = checkpoint.load_raw(path)
    model = checkpoint.GPT(checkpoint.GPTConfig(**raw["config"]))
    state = {k: v for k, v in raw["state_dict"].items() if k != "lm_head.weight"}
    model.load_state_dict(state, strict=False)
    return model.to(device).eval()


REAL_LOAD = checkpoint.load


def load_head_without_bias(path=checkpoint.SHIPPED, device="cpu"):
    """Bug: the LM head rebuilt without its bias (its 600 learned offsets dropped)."""
    model = REAL_LOAD(path, device)
    weight = model.lm_head.weight
    model.lm_head = torch.nn.Linear(64, 600, bias=False)
    model.lm_head.weight = weight
    return model


def no_warmup(step, args):
    """Bug: the learning-rate schedule without its warm-up (full rate from step 0)."""
    return args.lr


@dataclass(frozen=True)
class Mutation:
    bug: str
    check: str  # the name of the lab check that must fail
    patches: tuple[tuple[object, str, object], ...]
    section: Callable  # runs the lab's section under test: (ctx, prompts) -> None


def accuracy_section(ctx, prompts_):
    lab.check_accuracy(ctx, checkpoint.load(), prompts_)


def model_section(ctx, prompts_):
    lab.check_model(ctx, checkpoint.load())


def replay_section(ctx, prompts_):
    lab.check_replay(ctx, checkpoint.load_raw(), steps=3)


MUTATIONS = [
    Mutation(
        "accuracy reads position 0's logits, not the prompt's last",
        "prompt prediction accuracy (top-1 grammatical)",
        ((evaluate, "next_token_predictions", read_last_position_0),),
        accuracy_section,
    ),
    Mutation(
        "the grammar's oracle accepts every token",
        "accuracy of a uniformly random next token (the oracle tells a guess from a model)",
        (
            (grammar, "grammatical_next_tokens", lambda prefix: frozenset(range(600))),
            (evaluate, "grammatical_next_tokens", lambda prefix: frozenset(range(600))),
        ),
        accuracy_section,
    ),
    Mutation(
        "the checkpoint loads without the LM head's weight (strict=False)",
        "prompt prediction accuracy (top-1 grammatical)",
        ((checkpoint, "load", load_without_head),),
        accuracy_section,
    ),
    Mutation(
        "the LM head rebuilt without its bias",
        "lm_head is nn.Linear(64, 600) with bias",
        ((checkpoint, "load", load_head_without_bias),),
        model_section,
    ),
    Mutation(
        "training's learning-rate schedule loses its warm-up",
        "replayed first 3 training losses match the checkpoint's",
        ((train, "lr_at", no_warmup),),
        replay_section,
    ),
]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[f"{m.bug} -> {m.check}" for m in MUTATIONS])
def test_planted_bug_is_caught_by_a_lab_check(mutation, monkeypatch, tmp_path, prompts):
    for target, name, value in mutation.patches:
        monkeypatch.setattr(target, name, value)
    ctx = LabContext("minigpt", tmp_path, RunOptions("cpu", 1, 0))
    mutation.section(ctx, prompts)
    failed = [c.name for c in ctx.checks if not c.passed]
    assert mutation.check in failed, f"no lab check caught '{mutation.bug}': {ctx.checks}"
