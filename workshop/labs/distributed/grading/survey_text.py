"""A survey's text as the grader reads it: its prose (no comments, code, tables or headings), its words, its
sentences under their headings, the language it is written in (English or Spanish, from its own words, so
that a survey is graded the same whatever language the run speaks), and the passages it shares with another text.
"""

from __future__ import annotations

import re

# A word: letters of any script (está, años), then letters, apostrophes or hyphens (all-reduce, it's). On ASCII
# text this is exactly [A-Za-z][A-Za-z'’-]*, so English counts do not change.
WORD = re.compile(r"[^\W\d_](?:[^\W\d_]|['’-])*")
# A sentence ends at . ! or ? before a space and what can start one: a capital (accented ones too), Spanish's
# opening ¿ and ¡, emphasis, a parenthesis or code.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-ZÁÉÍÓÚÜÑ¿¡*_(`])")
# Function words that only one of the two languages has (not "a": both do): a page of prose has dozens of them.
FUNCTION_WORDS = {
    "en": frozenset(
        {"the", "of", "and", "to", "is", "are", "that", "it", "its", "for", "on", "with"}
    ),
    "es": frozenset({"el", "la", "los", "las", "de", "del", "que", "y", "en", "un", "una", "por"}),
}


def strip(text: str) -> str:
    """The text without HTML comments and fenced code (their lines kept blank, so line numbers hold)."""
    blank = lambda m: "\n" * m.group(0).count("\n")  # noqa: E731
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)
    return re.sub(r"^```.*?^```", blank, text, flags=re.S | re.M)


def prose(text: str) -> str:
    """What counts as prose: no comments, code, tables or headings."""
    lines = strip(text).splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith(("|", "#")))


def words(text: str) -> int:
    return len(WORD.findall(prose(text)))


def shared_passages(text: str, other: str, length: int) -> list[str]:
    """Runs of `length` words in a row that both texts' prose hold (case aside), each as its words, in the order
    `text` has them."""

    def runs(t: str) -> list[str]:
        found = [w.lower() for w in WORD.findall(prose(t))]
        return [" ".join(found[i : i + length]) for i in range(len(found) - length + 1)]

    theirs = set(runs(other))
    return [run for run in dict.fromkeys(runs(text)) if run in theirs]


def language(text: str) -> str:
    """'es' when the prose has more Spanish function words than English ones, else 'en'."""
    found = [w.lower() for w in WORD.findall(prose(text))]
    counts = {lang: sum(w in own for w in found) for lang, own in FUNCTION_WORDS.items()}
    return "es" if counts["es"] > counts["en"] else "en"


def sections(text: str) -> list[tuple[str, str]]:
    """(heading, prose under it) for each section; the text before the first heading has heading ''."""
    parts = re.split(r"^(#+ .*)$", strip(text), flags=re.M)
    return list(zip(["", *parts[1::2]], [prose(body) for body in parts[::2]], strict=True))


def sentences(text: str) -> list[tuple[str, str]]:
    """(heading, sentence) for each sentence of prose (a list item is a paragraph of its own)."""
    return [
        (heading, s)
        for heading, body in sections(text)
        for paragraph in re.split(r"\n\s*\n|\n\s*[-*] ", body)
        for s in SENTENCE_END.split(" ".join(paragraph.split()))
        if s.strip()
    ]
