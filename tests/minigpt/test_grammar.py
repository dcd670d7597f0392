import random

import pytest
import torch

from workshop.minigpt import grammar
from workshop.minigpt.data import N_PROMPTS, held_out_prompts
from workshop.minigpt.grammar import (
    VOCAB,
    Cat,
    decode,
    grammatical_next_tokens,
    parse,
    sample_sentence,
)


def encode(text: str) -> list[int]:
    """'<bos> the cat' -> its token ids (the words are the vocabulary's)."""
    return [VOCAB.index[word] for word in text.split()]


def test_vocabulary_has_exactly_600_distinct_tokens():
    assert len(VOCAB) == 600 == grammar.VOCAB_SIZE
    assert len(set(VOCAB.tokens)) == 600
    assert VOCAB.tokens[:4] == ("<pad>", "<bos>", "<eos>", ".")
    assert sum(len(VOCAB.ids_by_category[c]) for c in Cat) == 600


def test_every_sampled_sentence_is_accepted_token_by_token():
    rng = random.Random(123)
    for _ in range(2000):
        ids = sample_sentence(rng)
        assert len(ids) <= grammar.MAX_SENTENCE_LEN
        for k in range(1, len(ids)):
            assert ids[k] in grammatical_next_tokens(ids[:k]), decode(ids[: k + 1])
        assert parse(ids).phase == "done"
        assert grammatical_next_tokens(ids) == frozenset()


def test_oracle_enforces_agreement_across_a_prepositional_phrase():
    prefix = encode("<bos> the cat near these dogs")
    nxt = grammatical_next_tokens(prefix)
    assert VOCAB.index["sleeps"] in nxt and VOCAB.index["sees"] in nxt
    assert VOCAB.index["sleep"] not in nxt and VOCAB.index["see"] not in nxt
    assert VOCAB.index["these"] not in nxt


def test_oracle_enforces_determiner_noun_agreement():
    assert VOCAB.index["cats"] not in grammatical_next_tokens(encode("<bos> this big"))
    assert VOCAB.index["cats"] in grammatical_next_tokens(encode("<bos> the big"))
    assert VOCAB.index["cat"] not in grammatical_next_tokens(encode("<bos> these"))


def test_ungrammatical_prefix_is_a_clear_error():
    with pytest.raises(grammar.UngrammaticalPrefix, match="'sleep'.*position 3"):
        parse(encode("<bos> the cat sleep"))


def test_ids_decode_to_their_words_from_a_list_and_a_tensor():
    text = "<bos> the cat near these dogs sleeps . <eos>"
    assert decode(encode(text)) == text
    assert decode(torch.tensor(encode(text))) == text  # the model's output, as it comes


@pytest.mark.parametrize("bad", [-1, len(VOCAB)])
def test_an_id_outside_the_vocabulary_is_refused(bad):
    with pytest.raises(ValueError, match=r"outside the vocabulary \(0\.\.599\)"):
        decode([1, bad])


def test_held_out_prompts_are_fixed_and_unseen():
    prompts = held_out_prompts()
    assert len(prompts) == N_PROMPTS
    assert prompts == held_out_prompts()  # same seed, same prompts
    assert all(p[0] == VOCAB.index["<bos>"] for p in prompts)
    for p in prompts:
        assert grammatical_next_tokens(p), "a prompt stops before the end of its sentence"
