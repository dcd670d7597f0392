"""minigpt.data: training pairs are each sentence shifted by one, right-padded (the loss ignores <pad>); the
held-out prompts are never training sentences, start with <bos>, and are the same in every run (fixed seeds)."""

from __future__ import annotations

import random

import torch

from workshop.minigpt import data
from workshop.minigpt.grammar import VOCAB, sample_sentence
from workshop.minigpt.model import PAD_ID


def test_inputs_and_targets_are_the_sentence_shifted_by_one_then_padding():
    x, y = data.to_tensors([[1, 5, 6, 2], [1, 7, 2]], length=5)
    assert x.tolist() == [[1, 5, 6, PAD_ID, PAD_ID], [1, 7, PAD_ID, PAD_ID, PAD_ID]]
    assert y.tolist() == [[5, 6, 2, PAD_ID, PAD_ID], [7, 2, PAD_ID, PAD_ID, PAD_ID]]
    assert x.dtype == y.dtype == torch.long


def test_the_corpus_is_the_same_for_a_seed_and_differs_across_seeds():
    assert data.sample_corpus(20, seed=3) == data.sample_corpus(20, seed=3)
    assert data.sample_corpus(20, seed=3) != data.sample_corpus(20, seed=4)


def drawn(seen_first: bool) -> list[int]:
    """The first prompt held_out_prompts draws when the prompt seed's first sentence is, or is not, a training
    sentence: the same random draws, made here."""
    rng = random.Random(data.PROMPT_SEED)
    first = sample_sentence(rng)
    ids = sample_sentence(rng) if seen_first else first
    return ids[: rng.randrange(1, len(ids))]


def test_a_prompt_is_never_cut_from_a_training_sentence(monkeypatch):
    first = sample_sentence(random.Random(data.PROMPT_SEED))
    monkeypatch.setattr(data, "training_corpus", lambda: (tuple(first),))  # training holds it
    assert data.held_out_prompts(1) == [drawn(seen_first=True)] != [drawn(seen_first=False)]
    monkeypatch.setattr(data, "training_corpus", lambda: ())
    assert data.held_out_prompts(1) == [drawn(seen_first=False)]


def test_prompts_start_with_bos_and_stop_before_the_sentence_ends(monkeypatch):
    monkeypatch.setattr(data, "training_corpus", lambda: ())
    prompts = data.held_out_prompts(200)
    assert all(p[0] == VOCAB.index["<bos>"] and VOCAB.index["<eos>"] not in p for p in prompts)
    assert prompts == data.held_out_prompts(200)  # the same prompts in every run


def test_a_few_training_sentences_are_the_corpus_first_ones():
    """train_tensors(n) samples n sentences instead of the whole corpus: the same rows, since a seed draws the
    same sentences whatever their number."""
    few, whole = data.train_tensors(16), data.train_tensors()
    assert all(torch.equal(part, full[:16]) for part, full in zip(few, whole, strict=True))
    assert data.training_corpus() is data.training_corpus()  # sampled once a process
