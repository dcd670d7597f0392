"""The stand-ins of declarations/exercise.py: what a grading block gets instead of an implementation raises
on its first use, whatever the use (a call, an item, iteration, len(), a path, an attribute): the reason it
could not be loaded, or, for an exercise this run does not grade, SkipGrading, which `except Exception` in a lab
cannot swallow."""

from __future__ import annotations

import os

import pytest

from workshop.declarations.exercise import SkipGrading, StandIn, real

USES = [
    lambda impl: impl(1),
    lambda impl: impl["key"],
    lambda impl: list(impl),
    lambda impl: len(impl),
    lambda impl: os.fspath(impl),
    lambda impl: impl.attribute,
]


@pytest.mark.parametrize("use", USES)
def test_any_use_of_an_unavailable_solution_raises_its_reason(use):
    reason = ValueError("my-work/autograd.py:3: SyntaxError")
    with pytest.raises(ValueError) as raised:
        use(StandIn(reason))
    assert raised.value is reason


@pytest.mark.parametrize("use", USES)
def test_any_use_of_a_skipped_exercise_ends_its_block_past_except_exception(use):
    def lab_grading_block():
        try:
            use(StandIn(SkipGrading()))
        except Exception:
            return "swallowed"
        return "used"

    with pytest.raises(SkipGrading):
        lab_grading_block()


def test_real_gives_an_implementation_itself_and_raises_for_a_stand_in():
    assert real(len) is len
    with pytest.raises(KeyError):
        real(StandIn(KeyError("ANSWERS")))
