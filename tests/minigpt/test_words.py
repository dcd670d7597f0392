"""minigpt.words: the word lists add up to exactly 600 tokens, every surface form distinct (a token alone says
its part of speech and number), and every irregular plural is of a listed noun."""

from __future__ import annotations

from workshop.minigpt import words
from workshop.minigpt.grammar import VOCAB, VOCAB_SIZE, plural


def lexicon_size(w) -> int:
    """The vocabulary's size as grammar.py counts it from the lists: 4 fixed tokens, then every form."""
    determiners = w.SINGULAR_DETERMINERS + w.PLURAL_DETERMINERS + w.ANY_NUMBER_DETERMINERS
    fixed = len(determiners) + len(w.PREPOSITIONS) + len(w.ADVERBS) + len(w.ADJECTIVES)
    return 4 + fixed + 2 * (len(w.NOUNS) + len(w.TRANSITIVE_VERBS) + len(w.INTRANSITIVE_VERBS))


class OneNounMore:
    """Planted: the lists with one noun added."""

    def __getattr__(self, name):
        value = getattr(words, name)
        return [*value, "kettle"] if name == "NOUNS" else value


def test_the_lists_make_exactly_the_vocabulary():
    assert lexicon_size(words) == VOCAB_SIZE == len(VOCAB) == 600
    assert lexicon_size(OneNounMore()) != VOCAB_SIZE  # the count catches a list that grew


def test_every_surface_form_is_its_own_token():
    assert len(set(VOCAB.tokens)) == len(VOCAB.tokens)


def test_irregular_plurals_are_of_listed_nouns_and_used():
    assert set(words.IRREGULAR_PLURALS) <= set(words.NOUNS)
    assert all(plural(noun) == form for noun, form in words.IRREGULAR_PLURALS.items())
