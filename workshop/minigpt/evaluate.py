"""Prompt prediction accuracy: the share of held-out prompts whose top-1 next token is grammatical."""

from __future__ import annotations

from collections import Counter

import torch
from torch.nn.utils.rnn import pad_sequence

from workshop.minigpt.grammar import grammatical_next_tokens, parse
from workshop.minigpt.model import GPT, PAD_ID


@torch.no_grad()
def next_token_predictions(
    model: GPT, prompts: list[list[int]], batch_size: int = 512
) -> list[int]:
    device = next(model.parameters()).device
    top1 = []
    for start in range(0, len(prompts), batch_size):
        chunk = prompts[start : start + batch_size]
        # (b, T) with T the longest prompt, each right-padded with <pad>
        x = pad_sequence([torch.tensor(p) for p in chunk], batch_first=True, padding_value=PAD_ID)
        logits = model(x.to(device))  # (b, T, V)
        last = torch.tensor([len(p) - 1 for p in chunk], device=device)
        top1 += logits[torch.arange(len(chunk), device=device), last].argmax(-1).tolist()
    return top1


def prompt_accuracy(model: GPT, prompts: list[list[int]]) -> dict:
    """{'accuracy': float, 'by_position': {kind: [correct, total]}, 'errors': [...]}"""
    was_training = model.training
    model.eval()
    predictions = next_token_predictions(model, prompts)
    model.train(was_training)
    correct, total, errors = Counter(), Counter(), []
    for prompt, predicted in zip(prompts, predictions, strict=True):
        # where in the sentence the prompt stops, e.g. 'after_noun/subject_pp' (where the verb must agree)
        state = parse(prompt)
        kind = (
            f"{state.phase}/{state.role}"
            if state.phase in ("after_noun", "after_prep")
            else state.phase
        )
        total[kind] += 1
        if predicted in grammatical_next_tokens(prompt):
            correct[kind] += 1
        else:
            errors.append({"prompt": prompt, "predicted": predicted, "position": kind})
    return {
        "accuracy": sum(correct.values()) / len(prompts),
        "by_position": {k: [correct[k], total[k]] for k in sorted(total)},
        "errors": errors,
    }
