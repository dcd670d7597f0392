"""A lab's `answers` exercise: the handout's checked questions, answered in a dict (ANSWERS) in the learner's file
and graded one key at a time against this run's facts."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from workshop.i18n import _

if TYPE_CHECKING:  # annotations only: labs import this module, and workshop.lab is above it
    from workshop.lab import LabContext


def grade(
    ctx: LabContext,
    answers,
    facts: dict,
    where: dict[str, str],
    not_started: str,
    matches: Callable[[object, object], bool],
) -> None:
    """One check per fact: matches(ANSWERS[key], this run's fact); a wrong one names where the run shows it
    (`where`, marked N_()). Not a dict: TypeError, which fails the exercise naming it; no key answered yet: the
    exercise is not started."""
    if not isinstance(answers, dict):
        raise TypeError(
            _("ANSWERS is a {kind}; it must be a dict").format(kind=type(answers).__name__)
        )
    if all(answers.get(key) is None for key in facts):
        raise NotImplementedError(not_started)
    for key, fact in facts.items():
        given = answers.get(key)
        ctx.check_equal(
            _("ANSWERS[{key!r}] matches this run").format(key=key),
            matches(given, fact),
            True,
            message=_("your answer {given!r} is not what this run shows: {where}").format(
                given=given, where=_(where[key])
            ),
        )
