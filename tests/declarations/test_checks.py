"""declarations.checks: a check reads as what it is ("0.0003 (at most 0.0001)"); a lab with no checks has not
passed; an exercise reports a failing diagnosis before a raw comparison; a failing secret check says how far
off the value is (direction and size), never the truth it is compared with."""

from __future__ import annotations

import math

import pytest

from workshop.declarations import checks
from workshop.declarations.checks import Check


@pytest.mark.parametrize(
    "value, truth, says",
    [
        (5, 6, "off by one, too low"),
        (24, 12, "about 2x too high"),
        (1.1, 1.0, "about 10% too high"),
        (-3.0, 2.0, "the wrong sign"),
        (math.nan, 2.0, "not a finite number"),
        ("ddp", "fsdp", "wrong choice"),
        (0.1, 0, "too high"),
    ],
)
def test_a_miss_says_direction_and_size_never_the_truth(value, truth, says):
    assert checks.miss(value, truth) == says
    assert not gives_the_truth(checks.miss, value, truth)


def gives_the_truth(miss, value, truth) -> bool:
    return truth != 0 and str(truth) in miss(value, truth)


def test_the_check_catches_a_miss_that_names_the_truth():
    assert gives_the_truth(lambda value, truth: f"expected {truth}", 24, 12)  # planted


def test_a_failing_secret_check_is_masked_and_a_passing_one_is_not():
    failing = checks.masked(Check("prediction", False, 24, 12, secret=True))
    assert failing.value == "about 2x too high" and "12" not in str(failing.as_dict())
    passing = Check("prediction", True, 12, 12, secret=True)
    assert checks.masked(passing) is passing


def test_a_check_reads_as_what_it_is():
    assert checks.outcome(Check("error", False, 3e-4, 1e-4, relation="<=").as_dict()) == (
        "error: 0.0003 (at most 0.0001)"
    )
    assert checks.outcome(Check("ok", True, True, True).as_dict()) == "ok: True (expected True)"
    assert checks.bound(Check("speed", True, 2.0, 1.5, relation=">=").as_dict()) == ">= 1.5"
    assert checks.written(None) == "none"
    assert Check("x", False, math.inf, {"b", "a"}).as_dict()["threshold"] == ["a", "b"]
    assert Check("x", False, math.inf, 1).as_dict()["value"] == "inf"  # JSON has no infinity


def test_verdicts():
    assert not checks.all_passed([])  # a lab that recorded nothing has not passed
    assert checks.exercise_status([]) == checks.NOT_GRADED
    raw, diagnosis = Check("raw", False, 1, 2), Check("names it", False, 1, 2, diagnosis=True)
    assert checks.reported([raw, diagnosis]) is diagnosis
    assert checks.exercise_status([Check("ok", True, 1, 1), raw]) == checks.FAILING
    stub = Check("implemented", False, "not started", "implemented")
    assert checks.exercise_status([stub]) == checks.NOT_STARTED
