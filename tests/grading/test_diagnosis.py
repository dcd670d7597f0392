"""A mistake as data (grading/diagnosis.py): the first diagnosis the evidence shows speaks, its message formatted
with the evidence's values and what its condition found; a diagnosis of another output stays silent."""

from workshop.grading.diagnosis import Diagnosis, Evidence, diagnose

SIGN = Diagnosis(
    "the sign flipped",
    lambda e: {} if e.got == -e.want else None,
    "{name} is minus the reference's ({label}, N = {n})",
)
FACTOR = Diagnosis(
    None,
    lambda e: {"r": e.got / e.want} if e.want else None,
    "{name} is {r:g} times it",
    output="db",
)


def evidence(got, want, output="db"):
    return Evidence(output, got, want, "float32", {"n": 7})


def test_the_first_diagnosis_that_shows_speaks_with_its_values():
    found = diagnose((SIGN, FACTOR), evidence(-2.0, 2.0))
    assert found == (SIGN, "db is minus the reference's (float32, N = 7)")
    assert diagnose((FACTOR, SIGN), evidence(-2.0, 2.0)) == (FACTOR, "db is -1 times it")


def test_a_diagnosis_of_another_output_or_not_shown_is_silent():
    assert diagnose((FACTOR,), evidence(4.0, 2.0, output="dW")) is None
    assert diagnose((SIGN,), evidence(4.0, 2.0)) is None
    # a planted condition that shows everything is caught by the order: SIGN first names its mistake
    always = Diagnosis("anything", lambda e: {}, "always")
    assert diagnose((SIGN, always), evidence(-1.0, 1.0))[0] is SIGN
    assert diagnose((SIGN, always), evidence(3.0, 1.0))[0] is always


def test_an_output_a_condition_cannot_read_shows_nothing_and_the_next_is_asked():
    """The learner's function may return anything (None where a list was due): a condition that fails on it is
    not the lab's crash."""
    reads_a_list = Diagnosis("a skipped slot", lambda e: {} if e.got[0] == "x" else None, "skipped")
    anything = Diagnosis(None, lambda e: {}, "{name} differs")
    assert diagnose((reads_a_list, anything), evidence(None, ["x"])) == (anything, "db differs")
