"""A mistake as data (declarations/diagnosis.py): a Diagnosis speaks where its output is the evidence's and its
condition shows, formatted with its values and the evidence's; diagnose picks the first that speaks. Each test
plants evidence that one diagnosis must (or must not) read."""

from __future__ import annotations

from workshop.declarations.diagnosis import Diagnosis, Evidence, diagnose

HALVED = Diagnosis(
    "halved",
    lambda e: {"r": e.got / e.want} if e.got * 2 == e.want else None,
    "{name} is {r} of the reference's ({label}, {n} rows)",
    output="y",
)
ANY = Diagnosis(None, lambda e: {}, "{name} is off")


def test_a_diagnosis_speaks_where_its_condition_shows_with_every_value():
    evidence = Evidence("y", 1.0, 2.0, "small", {"n": 3})
    assert HALVED.explain(evidence) == "y is 0.5 of the reference's (small, 3 rows)"


def test_a_diagnosis_is_silent_where_its_condition_does_not_show():
    assert HALVED.explain(Evidence("y", 3.0, 2.0, "small", {"n": 3})) is None


def test_a_diagnosis_of_one_output_does_not_read_another():
    """Planted: z halved; HALVED is y's only."""
    assert HALVED.explain(Evidence("z", 1.0, 2.0, "small", {"n": 3})) is None


def test_the_first_diagnosis_that_speaks_wins_and_none_when_none_does():
    halved = Evidence("y", 1.0, 2.0, "small", {"n": 3})
    assert diagnose((HALVED, ANY), halved) == (
        HALVED,
        "y is 0.5 of the reference's (small, 3 rows)",
    )
    assert diagnose((ANY, HALVED), halved) == (ANY, "y is off")
    assert diagnose((HALVED,), Evidence("y", 3.0, 2.0)) is None


def test_an_output_a_condition_cannot_read_shows_nothing_and_the_next_is_asked():
    """The learner's function may return anything (None where a list was due): a condition that fails on it is
    not the lab's crash."""
    reads_a_list = Diagnosis("a skipped slot", lambda e: {} if e.got[0] == "x" else None, "skipped")
    anything = Diagnosis(None, lambda e: {}, "{name} differs")
    assert diagnose((reads_a_list, anything), Evidence("db", None, ["x"], "float32")) == (
        anything,
        "db differs",
    )
