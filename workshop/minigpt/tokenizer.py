"""Words <-> token ids for the grammar's 600-token vocabulary. Whitespace-separated; no subwords."""

from __future__ import annotations

import difflib

from workshop.i18n import _
from workshop.minigpt.grammar import VOCAB


class UnknownWordError(KeyError):
    def __str__(self) -> str:  # KeyError would print the message in quotes
        return self.args[0]


def encode(text: str) -> list[int]:
    """'<bos> the cat sleeps' -> [1, ...]. A word outside the vocabulary is an error that names it."""
    ids = []
    for position, word in enumerate(text.split()):
        if word not in VOCAB.index:
            close = difflib.get_close_matches(word, VOCAB.tokens, n=3)
            hint = (
                _("; did you mean {words}?").format(words=", ".join(map(repr, close)))
                if close
                else ""
            )
            raise UnknownWordError(
                _(
                    "word {word!r} at position {position} is not in the grammar's {n}-token vocabulary"
                ).format(word=word, position=position, n=len(VOCAB))
                + hint
            )
        ids.append(VOCAB.index[word])
    return ids


def decode(ids) -> str:
    """[1, ...] -> '<bos> the cat ...'. Accepts a list of ints or a 1-D integer tensor."""
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    for i in ids:
        if not 0 <= i < len(VOCAB):
            raise ValueError(
                _("token id {id} is outside the vocabulary (0..{last})").format(
                    id=i, last=len(VOCAB) - 1
                )
            )
    return " ".join(VOCAB.tokens[i] for i in ids)
