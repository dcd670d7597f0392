"""Training sentences and the held-out prompts, all drawn from the grammar with fixed seeds."""

from __future__ import annotations

import random

import torch

from workshop.minigpt.grammar import MAX_SENTENCE_LEN, sample_sentence
from workshop.minigpt.model import PAD_ID

TRAIN_SEED = 0
PROMPT_SEED = 1
N_TRAIN_SENTENCES = 50_000
N_PROMPTS = 1_000


def sample_corpus(n_sentences: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    return [sample_sentence(rng) for _ in range(n_sentences)]


def to_tensors(
    sentences: list[list[int]], length: int = MAX_SENTENCE_LEN - 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sentences -> inputs x and next-token targets y, both (N, length), right-padded with <pad>.

    Right padding never changes the logits of real positions, since attention is causal; the loss ignores it.
    """
    x = torch.full((len(sentences), length), PAD_ID, dtype=torch.long)
    y = torch.full((len(sentences), length), PAD_ID, dtype=torch.long)
    for i, ids in enumerate(sentences):
        n = len(ids) - 1
        x[i, :n] = torch.tensor(ids[:-1])
        y[i, :n] = torch.tensor(ids[1:])
    return x, y


def train_tensors(n_sentences: int = N_TRAIN_SENTENCES, seed: int = TRAIN_SEED):
    return to_tensors(sample_corpus(n_sentences, seed))


def held_out_prompts(n: int = N_PROMPTS, seed: int = PROMPT_SEED) -> list[list[int]]:
    """Prefixes of sentences the model never trained on, each cut at a uniformly drawn point.

    A prompt is ids[:k] with 1 <= k < len(ids): it starts with <bos> and its next token may be <eos>.
    """
    seen = {tuple(s) for s in sample_corpus(N_TRAIN_SENTENCES, TRAIN_SEED)}
    rng = random.Random(seed)
    prompts = []
    while len(prompts) < n:
        ids = sample_sentence(rng)
        if tuple(ids) in seen:
            continue
        prompts.append(ids[: rng.randrange(1, len(ids))])
    return prompts
