"""Training sentences and the held-out prompts, all drawn from the grammar with fixed seeds."""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence

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
    sentences: Sequence[Sequence[int]], length: int = MAX_SENTENCE_LEN - 1
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


@functools.cache
def training_corpus() -> tuple[tuple[int, ...], ...]:
    """The N_TRAIN_SENTENCES training sentences, sampled once a process (6 s on one core): training reads them,
    and held_out_prompts keeps its prompts out of them."""
    return tuple(tuple(ids) for ids in sample_corpus(N_TRAIN_SENTENCES, TRAIN_SEED))


def train_tensors(n_sentences: int = N_TRAIN_SENTENCES) -> tuple[torch.Tensor, torch.Tensor]:
    """The first n_sentences training sentences as inputs and targets, (n_sentences, 22) each. A seed draws the
    same sentences whatever their number, so a few are sampled without the whole corpus."""
    if n_sentences == N_TRAIN_SENTENCES:
        return to_tensors(training_corpus())
    return to_tensors(sample_corpus(n_sentences, TRAIN_SEED))


def held_out_prompts(n: int = N_PROMPTS, seed: int = PROMPT_SEED) -> list[list[int]]:
    """Prefixes of sentences the model never trained on, each cut at a uniformly drawn point.

    A prompt is ids[:k] with 1 <= k < len(ids): it starts with <bos> and its next token may be <eos>.
    """
    seen = set(training_corpus())
    rng = random.Random(seed)
    prompts = []
    while len(prompts) < n:
        ids = sample_sentence(rng)
        if tuple(ids) not in seen:
            prompts.append(ids[: rng.randrange(1, len(ids))])
    return prompts
