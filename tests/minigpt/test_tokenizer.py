"""minigpt.tokenizer: words <-> ids of the grammar's 600-token vocabulary, round trip exact; a word outside it
is an error naming the word, its position and the closest words; an id outside it is an error naming the range."""

from __future__ import annotations

import pytest
import torch

from workshop.minigpt.grammar import VOCAB
from workshop.minigpt.tokenizer import UnknownWordError, decode, encode


def test_a_sentence_round_trips_through_ids_and_a_tensor():
    text = " ".join(VOCAB.tokens[i] for i in (1, 7, 42, 599))
    ids = encode(text)
    assert ids == [1, 7, 42, 599] and decode(ids) == text
    assert decode(torch.tensor(ids)) == text  # the model's output, as it comes


def test_an_unknown_word_is_named_with_its_position_and_the_words_it_resembles():
    word = VOCAB.tokens[42]
    typo = word[:-1] + ("x" if word[-1] != "x" else "y")
    with pytest.raises(UnknownWordError) as raised:
        encode(f"{VOCAB.tokens[1]} {typo}")
    message = str(raised.value)
    assert message.startswith(
        f"word {typo!r} at position 1 is not in the grammar's 600-token vocabulary"
    )
    assert repr(word) in message  # did you mean ...
    assert not message.startswith('"')  # KeyError's quotes are gone


@pytest.mark.parametrize("bad", [-1, len(VOCAB)])
def test_an_id_outside_the_vocabulary_is_refused(bad):
    with pytest.raises(ValueError, match=r"outside the vocabulary \(0\.\.599\)"):
        decode([1, bad])
