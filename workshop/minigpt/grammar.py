"""The synthetic grammar behind the MiniGPT: vocabulary, sampler and validity oracle from one automaton.

A sentence is

    <bos> NP(subject) [PREP NP] ( TV NP(object) [PREP NP] | IV [PREP NP] ) [ADV] . <eos>
    NP = DET ADJ{0,2} NOUN

with two agreement rules that make the model attend backwards:
- a noun agrees in number with its determiner ("this cat", "these cats"; "the" takes either);
- the verb agrees with the *subject* noun, not with the noun of a prepositional phrase in between
  ("the cat near the dogs sleeps").

One small automaton (`State`, `allowed`, `advance`) defines the language. The sampler walks it with the
weights below; the oracle walks a prefix through it and returns every token that may come next. So the two can
never disagree about what is grammatical.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from enum import StrEnum

from workshop.i18n import _
from workshop.minigpt import words

PAD, BOS, EOS, PERIOD = "<pad>", "<bos>", "<eos>", "."
VOCAB_SIZE = 600


# Part of speech and, where it matters, grammatical number (SG/PL) of a token; each member's value is its name in
# lower case (Cat.DET_SG == "det_sg").
Cat = StrEnum(
    "Cat",
    "PAD BOS EOS PERIOD DET_SG DET_PL DET_ANY ADJ NOUN_SG NOUN_PL PREP TV_SG TV_PL IV_SG IV_PL ADV",
    module=__name__,
)


def add_s(word: str) -> str:
    """English's regular -s suffix: cat -> cats, box -> boxes, fly -> flies."""
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def plural(noun: str) -> str:
    return words.IRREGULAR_PLURALS.get(noun) or add_s(noun)


# The vocabulary, category by category in id order: every word of a category takes the next ids.
LEXICON: tuple[tuple[Cat, list[str]], ...] = (
    (Cat.PAD, [PAD]),
    (Cat.BOS, [BOS]),
    (Cat.EOS, [EOS]),
    (Cat.PERIOD, [PERIOD]),
    (Cat.DET_SG, words.SINGULAR_DETERMINERS),
    (Cat.DET_PL, words.PLURAL_DETERMINERS),
    (Cat.DET_ANY, words.ANY_NUMBER_DETERMINERS),
    (Cat.ADJ, words.ADJECTIVES),
    (Cat.NOUN_SG, words.NOUNS),
    (Cat.NOUN_PL, [plural(w) for w in words.NOUNS]),
    (Cat.PREP, words.PREPOSITIONS),
    # English marks the singular verb, in the third person ("sleeps"); the plural is the bare form ("sleep").
    (Cat.TV_SG, [add_s(w) for w in words.TRANSITIVE_VERBS]),
    (Cat.TV_PL, words.TRANSITIVE_VERBS),
    (Cat.IV_SG, [add_s(w) for w in words.INTRANSITIVE_VERBS]),
    (Cat.IV_PL, words.INTRANSITIVE_VERBS),
    (Cat.ADV, words.ADVERBS),
)


@dataclass(frozen=True)
class Vocabulary:
    tokens: tuple[str, ...]
    categories: tuple[Cat, ...]

    def __post_init__(self):
        index = {t: i for i, t in enumerate(self.tokens)}  # a repeated token keeps its last id
        if len(index) < len(self.tokens):
            t = next(t for i, t in enumerate(self.tokens) if index[t] != i)
            raise ValueError(
                f"token {t!r} appears twice in the vocabulary (ids {self.tokens.index(t)} and {index[t]})"
            )
        object.__setattr__(self, "index", index)
        by_cat = {c: tuple(i for i, k in enumerate(self.categories) if k == c) for c in Cat}
        object.__setattr__(self, "ids_by_category", by_cat)

    def __len__(self) -> int:
        return len(self.tokens)


VOCAB = Vocabulary(
    tokens=tuple(word for _cat, category_words in LEXICON for word in category_words),
    categories=tuple(cat for cat, category_words in LEXICON for _word in category_words),
)
assert len(VOCAB) == VOCAB_SIZE, f"the lexicon makes {len(VOCAB)} tokens, not {VOCAB_SIZE}"


def decode(ids) -> str:
    """Token ids -> words, whitespace-separated (no subwords): [1, ...] -> '<bos> the cat ...'. Accepts a list of
    ints or a 1-D integer tensor."""
    ids = ids.tolist() if hasattr(ids, "tolist") else list(ids)
    for i in ids:
        if not 0 <= i < len(VOCAB):
            raise ValueError(
                _("token id {id} is outside the vocabulary (0..{last})").format(
                    id=i, last=len(VOCAB) - 1
                )
            )
    return " ".join(VOCAB.tokens[i] for i in ids)


# ---- the automaton -------------------------------------------------------------------------------------------
# Phases: where in the sentence we are. An NP's role says what follows once its noun is read.
SUBJECT, SUBJECT_PP, OBJECT, OBJECT_PP, VERB_PP = (
    "subject",
    "subject_pp",
    "object",
    "object_pp",
    "verb_pp",
)


@dataclass(frozen=True)
class State:
    phase: str = "before_bos"  # before_bos, start, np, after_noun, after_tv, after_iv, after_prep, after_adv, ...
    role: str | None = None  # the NP being read, or just read
    det_number: str | None = None  # "sg", "pl" or "any": the determiner's constraint on the noun
    n_adjectives: int = 0
    subject_number: str | None = None  # "sg" or "pl", fixed by the subject noun


_DETERMINERS = {Cat.DET_SG: 1.0, Cat.DET_PL: 1.0, Cat.DET_ANY: 1.0}


def _verbs(number: str, weight: float) -> dict[Cat, float]:
    tv, iv = (Cat.TV_SG, Cat.IV_SG) if number == "sg" else (Cat.TV_PL, Cat.IV_PL)
    return {tv: 0.6 * weight, iv: 0.4 * weight}


# The phases whose next categories depend on nothing else in the state. "done" (after <eos>) allows nothing:
# the sentence is complete.
_NEXT_IN_PHASE = {
    "before_bos": {Cat.BOS: 1.0},
    "start": _DETERMINERS,
    "after_tv": _DETERMINERS,
    "after_prep": _DETERMINERS,
    "after_iv": {Cat.PREP: 0.3, Cat.ADV: 0.3, Cat.PERIOD: 0.4},
    "after_adv": {Cat.PERIOD: 1.0},
    "after_period": {Cat.EOS: 1.0},
    "done": {},
}


def allowed(state: State) -> dict[Cat, float]:
    """The categories that may come next in this state, with the sampler's (unnormalized) weights."""
    p = state.phase
    if p in _NEXT_IN_PHASE:
        return dict(_NEXT_IN_PHASE[p])
    if p == "np":
        adjective = (0.5, 0.3, 0.0)[state.n_adjectives]
        nouns = {
            "sg": {Cat.NOUN_SG: 1.0},
            "pl": {Cat.NOUN_PL: 1.0},
            "any": {Cat.NOUN_SG: 0.5, Cat.NOUN_PL: 0.5},
        }
        out = {c: w * (1 - adjective) for c, w in nouns[state.det_number].items()}
        if adjective:
            out[Cat.ADJ] = adjective
        return out
    # after_noun: what may follow a noun depends on the role of its NP
    after_noun = {
        SUBJECT: {Cat.PREP: 0.3, **_verbs(state.subject_number, 0.7)},
        SUBJECT_PP: _verbs(state.subject_number, 1.0),
        OBJECT: {Cat.PREP: 0.25, Cat.ADV: 0.25, Cat.PERIOD: 0.5},
    }
    # OBJECT_PP, VERB_PP: no second phrase
    return after_noun.get(state.role, {Cat.ADV: 0.3, Cat.PERIOD: 0.7})


_PP_ROLE = {SUBJECT: SUBJECT_PP, OBJECT: OBJECT_PP, None: VERB_PP}
# The categories that only move to the next phase; a verb also ends the NP that was being read. (<bos> only
# follows the empty state, State().)
_PHASE_AFTER = {
    Cat.BOS: {"phase": "start"},
    Cat.TV_SG: {"phase": "after_tv", "role": None},
    Cat.TV_PL: {"phase": "after_tv", "role": None},
    Cat.IV_SG: {"phase": "after_iv", "role": None},
    Cat.IV_PL: {"phase": "after_iv", "role": None},
    Cat.ADV: {"phase": "after_adv"},
    Cat.PERIOD: {"phase": "after_period"},
    Cat.EOS: {"phase": "done"},
}


def advance(state: State, cat: Cat) -> State:
    """The state after reading a token of category `cat` (which must be allowed)."""
    if cat in _DETERMINERS:
        role = {"start": SUBJECT, "after_tv": OBJECT, "after_prep": state.role}[state.phase]
        number = {Cat.DET_SG: "sg", Cat.DET_PL: "pl", Cat.DET_ANY: "any"}[cat]
        return replace(state, phase="np", role=role, det_number=number, n_adjectives=0)
    if cat == Cat.ADJ:
        return replace(state, n_adjectives=state.n_adjectives + 1)
    if cat in (Cat.NOUN_SG, Cat.NOUN_PL):
        number = "sg" if cat == Cat.NOUN_SG else "pl"
        subject_number = number if state.role == SUBJECT else state.subject_number
        return replace(state, phase="after_noun", det_number=None, subject_number=subject_number)
    if cat == Cat.PREP:
        # The NP after a preposition is a phrase attached to what came before it.
        attached_to = state.role if state.phase == "after_noun" else None
        return replace(state, phase="after_prep", role=_PP_ROLE[attached_to])
    if cat in _PHASE_AFTER:
        return replace(state, **_PHASE_AFTER[cat])
    raise ValueError(f"no transition for category {cat}")


class UngrammaticalPrefix(ValueError):
    pass


def parse(token_ids: list[int]) -> State:
    """Walk a prefix through the automaton; raise UngrammaticalPrefix at the first token that cannot follow."""
    state = State()
    for position, tid in enumerate(token_ids):
        cat = VOCAB.categories[tid]
        if cat not in allowed(state):
            expected = ", ".join(c.value for c in allowed(state)) or _(
                "nothing (the sentence is complete)"
            )
            raise UngrammaticalPrefix(
                _(
                    "token {token!r} ({category}) at position {position} cannot follow; "
                    "expected {expected}"
                ).format(
                    token=VOCAB.tokens[tid],
                    category=cat.value,
                    position=position,
                    expected=expected,
                )
            )
        state = advance(state, cat)
    return state


def grammatical_next_tokens(prefix_ids: list[int]) -> frozenset[int]:
    """The oracle: every token id that may grammatically follow `prefix_ids`."""
    return frozenset(i for cat in allowed(parse(prefix_ids)) for i in VOCAB.ids_by_category[cat])


def sample_sentence(rng: random.Random) -> list[int]:
    """One sentence as token ids, <bos> ... <eos>, drawn by walking the automaton with its weights."""
    state, ids = State(), []
    while options := allowed(state):
        cat = rng.choices(list(options), weights=list(options.values()))[0]
        ids.append(rng.choice(VOCAB.ids_by_category[cat]))
        state = advance(state, cat)
    return ids


# The longest sentence: <bos> NP PP-NP verb NP PP-NP adv . <eos> with 2 adjectives in every NP.
MAX_SENTENCE_LEN = 1 + 4 + 5 + 1 + 4 + 5 + 1 + 1 + 1
