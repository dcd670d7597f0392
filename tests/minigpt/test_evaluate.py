"""minigpt.evaluate: prompt accuracy is the share of prompts whose top-1 next token is grammatical, counted by
where the prompt stops; the model's training mode is given back as it was."""

from __future__ import annotations

import torch
from torch import nn

from workshop.minigpt import evaluate
from workshop.minigpt.data import held_out_prompts
from workshop.minigpt.grammar import VOCAB, grammatical_next_tokens


class Oracle(nn.Module):
    """A 'model' whose logits put the most weight on a grammatical next token (or, `wrong`, on <pad>)."""

    def __init__(self, prompts, wrong: bool = False):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))
        self.answers = {tuple(p): min(grammatical_next_tokens(p)) for p in prompts}
        self.wrong = wrong

    def forward(self, x):  # (b, T) -> (b, T, V)
        logits = torch.zeros(*x.shape, len(VOCAB))
        for i, row in enumerate(x.tolist()):
            for t in range(len(row)):
                prompt = tuple(row[: t + 1])
                target = 0 if self.wrong else self.answers.get(prompt, 0)
                logits[i, t, target] = 1.0
        return logits


def test_a_model_that_always_answers_grammatically_scores_one():
    prompts = held_out_prompts(40)
    model = Oracle(prompts).train()
    result = evaluate.prompt_accuracy(model, prompts)
    assert result["accuracy"] == 1.0 and result["errors"] == []
    assert sum(total for _, total in result["by_position"].values()) == 40
    assert model.training  # given back as it was


def test_a_model_that_answers_pad_scores_zero_and_each_error_is_listed():
    prompts = held_out_prompts(40)
    result = evaluate.prompt_accuracy(Oracle(prompts, wrong=True), prompts)
    assert result["accuracy"] == 0.0 and len(result["errors"]) == 40
    assert {e["position"] for e in result["errors"]} == set(result["by_position"])
