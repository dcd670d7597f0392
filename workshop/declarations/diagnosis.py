"""A mistake learners make, as data (Diagnosis), and what it reads (Evidence): one output of the learner's code, or
one answer, next to the reference's. An exercise declares its diagnoses in order (declarations/exercise.py); the engine
(engine.py) and the grader of answers (declarations/questions.py) read them when an output or an answer is
wrong, and the first that the evidence shows names the mistake.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from workshop.i18n import _


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What a diagnosis reads: one output of the learner's code (or one answer) next to the reference's."""

    output: str  # the output's name ("dW"), or the question's key
    got: object  # what the learner's code returned (or answered)
    want: object  # the reference's value (or this run's fact)
    label: str = ""  # the case it was run on
    facts: dict = dataclasses.field(default_factory=dict)  # the case's facts (engine.Case.facts)


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """A mistake learners make, as data: `shows(evidence)` returns the values its message is formatted with (a
    dict, {} for none) when the learner's output shows the mistake, else None; `message` (N_()) names it and
    says what to do, formatted with those values and the evidence's ({name}: its output, {label}, its facts)."""

    mistake: (
        str | None
    )  # N_() short name; None: the message describes the error and names no mistake
    shows: Callable[[Evidence], dict | None]
    # N_() text; a message that counts: a function of the values that returns it translated, through ngettext
    message: str | Callable[[dict], str]
    # the one output (or question key) it reads, or None: any
    output: str | None = None

    def explain(self, evidence: Evidence) -> str | None:
        """The message, when this diagnosis applies to the evidence and the evidence shows it; else None."""
        if self.output not in (None, evidence.output):
            return None
        try:
            values = self.shows(evidence)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError, RuntimeError):
            # the learner's output is anything a function may return (None, a list of strangers): a condition
            # that cannot read it does not show its mistake, and the next diagnosis is asked
            return None
        # formatted with what a message may name: {name} (the output), {label} and the case's facts, and its own
        # values over those ({name} may be what the learner named, not the output's name)
        return (
            None
            if values is None
            else (self.message(values) if callable(self.message) else _(self.message)).format(
                **{"name": evidence.output, "label": evidence.label, **evidence.facts, **values}
            )
        )


def diagnose(diagnoses: tuple[Diagnosis, ...], evidence: Evidence) -> tuple[Diagnosis, str] | None:
    """The first diagnosis the evidence shows, and its message; None when none does."""
    explained = ((d, d.explain(evidence)) for d in diagnoses)
    return next(((d, text) for d, text in explained if text is not None), None)
