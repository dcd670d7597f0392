"""A lab's checked questions, declared once, and how an answers dict (ANSWERS, PREDICTIONS) is read and judged.

An exercise lists its questions (`Exercise(..., attribute="ANSWERS", questions=QUESTIONS)`): each a key of the
learner's dict, the question as the learner's file states it, where the run shows the answer, and the kind of
value. The learner's stub is generated from them (`stub`), and the lab grades the dict against the truths it
measured with the one engine (workshop/engine.py, whose grade_answers judges each question: its answer read as
its kind here, `as_kind`, and compared with the truth, `right`):

    engine.grade(ctx, "answers", truths)          # truths: {key: value}; None = not measured here

The exercise's `diagnoses` name a wrong answer's mistake (declarations/diagnosis.py: the message then outranks
the generic one), reading the answer, the truth and `facts`, whatever more they need. Every question is a secret
check: while it fails, what is shown is the direction and size of the miss, never this run's value
(LabContext.record). A plain run grades the reference's answers, and its folder becomes a committed record that
every learner clones: there a passing answer is shown as True, not as its value (`check --show` shows it).
Nothing keyed by question is written to the run folder (it would be an answer key): a lab
that re-grades an answer without running again (LabSpec.regrade) measures the truths from its run's own files.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from workshop.declarations.diagnosis import Evidence
from workshop.i18n import N_, _

WIDTH = 100  # the project's line length: no stub line is longer
# A stub's placeholder, which the learner replaces: None, a wire value (learner/wire.py), so that a fresh or half
# filled dict crosses from the learner's worker as it is written; no question's answer can be None.
UNFILLED = "None"
MISSING = object()  # lookup's answer where the learner's dict lacks the question's key
KINDS = {
    "int": N_("a whole number (an int)"),
    "number": N_("a number"),
    "str": N_("a name (a str)"),
    "bool": N_("True or False"),
    "list": N_("a list"),
    "names": N_("a name, or a list of names"),
}


@dataclass(frozen=True)
class Question:
    key: str  # the answer's key in the learner's dict; "a.b": key b of the dict under key a
    text: str  # N_(): the question as the stub's comment states it ("" for none)
    look: str = ""  # N_(): where this run shows the answer, said when an answer is wrong
    kind: str = "int"  # one of KINDS: how an answer is read and compared
    tolerance: float = 0.0  # numbers: how far from the truth a right answer may be
    # the tolerance is a fraction of the truth (sizes), not an absolute amount
    relative: bool = False
    # the stub's starting value, as code: the placeholder, or a value given ("2")
    start: str = UNFILLED
    # matches(evidence) -> whether the answer, as given, is right, where that is no equality of one kind (a list
    # that may leave some ops out, an int for a list of one); its diagnoses say what a value of another kind is
    matches: Callable[[Evidence], bool] | None = None
    # False: its check records whether the answer matches, never the answer (a truth read off the learner's own
    # pick, a kernel's bytes, would hand it out even as the size of a miss)
    reveals: bool = True

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"question {self.key}: kind must be one of {', '.join(KINDS)}")

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.key.split("."))

    def label(self, name: str) -> str:
        """ANSWERS['graph_nodes'], PREDICTIONS['ddp']['held_bytes']."""
        return name + "".join(f"[{part!r}]" for part in self.path)


# ---- the stub ----
def stub(name: str, questions: tuple[Question, ...]) -> str:
    """`NAME = {...}` with one line per question, each under its question's comment, nested where keys nest;
    wrapped so that no line is longer than WIDTH."""
    return f"{name} = {{\n{_entries(questions, 1)}}}\n"


def _entries(questions: tuple[Question, ...], depth: int) -> str:
    indent = "    " * depth
    groups: dict[str, list[Question]] = {}
    for q in questions:
        groups.setdefault(q.path[depth - 1], []).append(q)
    lines = []
    for key, members in groups.items():
        if len(members) == 1 and len(members[0].path) == depth:
            lines += _comment(members[0].text, indent) + [
                f"{indent}{_key(key)}: {members[0].start},"
            ]
            continue
        inline = ", ".join(f"{_key(q.path[depth])}: {q.start}" for q in members)
        one_line = f"{indent}{_key(key)}: {{{inline}}},"
        if len(one_line) <= WIDTH and all(not q.text and len(q.path) == depth + 1 for q in members):
            lines.append(one_line)
        else:
            lines.append(
                f"{indent}{_key(key)}: {{\n{_entries(tuple(members), depth + 1)}{indent}}},"
            )
    return "".join(f"{line}\n" for line in lines)


def _key(key: str) -> str:
    """A key as the formatter writes a string: in double quotes."""
    return json.dumps(key)


def _comment(text: str, indent: str) -> list[str]:
    if not text:
        return []
    width = WIDTH - len(indent) - 2
    return [f"{indent}# {line}" for line in textwrap.wrap(_(text), width, break_long_words=False)]


# ---- the grader ----
def lookup(answers: dict, question: Question, default=None):
    """The learner's answer to `question`; `default` when the dict (or a nested one) lacks its key."""
    value = answers
    for part in question.path:
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def unknown_keys(answers: dict, questions: tuple[Question, ...], depth: int = 0) -> list[str]:
    """The keys of `answers` that no question asks for (nested dicts included), as written: 'ddp.held_byte'."""
    found = []
    for key, value in answers.items():
        inner = tuple(q for q in questions if len(q.path) > depth and q.path[depth] == key)
        if not inner:
            found.append(str(key))
        elif isinstance(value, dict) and all(len(q.path) > depth + 1 for q in inner):
            found += [f"{key}.{k}" for k in unknown_keys(value, inner, depth + 1)]
    return found


# kind -> (whether a value is of that kind, the value read as it)
READ_AS = {
    "int": (lambda value: type(value) is int, lambda value: value),
    "number": (
        lambda value: (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        ),
        lambda value: value,
    ),
    "str": (lambda value: isinstance(value, str), str.strip),
    "bool": (lambda value: isinstance(value, bool), lambda value: value),
    "list": (lambda value: isinstance(value, list | tuple), list),
    "names": (
        lambda value: (
            isinstance(value, str)
            or isinstance(value, list | tuple | set | frozenset)
            and all(isinstance(v, str) for v in value)
        ),
        # a name, or a collection of names, as a set of names
        lambda value: frozenset(
            [value.strip()] if isinstance(value, str) else (v.strip() for v in value)
        ),
    ),
}


def as_kind(value, kind: str):
    """The answer read as `kind` (a list of names as a set, ...); ValueError when it is not of that kind."""
    of_kind, read = READ_AS[kind]
    if not of_kind(value):
        raise ValueError(kind)
    return read(value)


def right(question: Question, given, truth) -> bool:
    if question.kind != "number":
        return given == truth
    if question.relative:
        return given == truth if truth == 0 else abs(given / truth - 1) <= question.tolerance
    return abs(given - truth) <= question.tolerance


def truth_of(truths: dict, question: Question):
    """The question's truth, from truths keyed like the questions ("ddp.held_bytes") or nested like the
    answers ({"ddp": {"held_bytes": ...}}), read as its kind; None when this run did not measure it."""
    truth = truths[question.key] if question.key in truths else lookup(truths, question)
    if truth is None or question.kind not in ("names", "list"):
        return truth
    return as_kind(truth, question.kind)
