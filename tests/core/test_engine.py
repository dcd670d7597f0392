"""The one exercise engine (engine.py) on a tiny exercise of its own, through a fake LabContext: each test
plants a wrong implementation and shows the check, the diagnosis and the message the engine gives it.

The tiny exercise: halve_and_negate(x) returns (x / 2, -x); its outputs "half" and "neg" are compared by max abs
error. Its diagnoses: "doubled" (half is 4 times the reference's, a mistake), "sign" (neg has the wrong sign, a
mistake), and a description that names no mistake.
"""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import pytest

from workshop.declarations import checks
from workshop.declarations.checks import Check
from workshop.declarations.diagnosis import Diagnosis, Evidence
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.engine import Case, grade


def max_abs_error(e: Evidence) -> tuple[float, float]:
    return max(abs(g - w) for g, w in zip(e.got, e.want, strict=True)), 1e-9


def times(e: Evidence, factor: float) -> bool:
    return all(g == factor * w for g, w in zip(e.got, e.want, strict=True))


DIAGNOSES = (
    Diagnosis(
        "doubled",
        lambda e: {} if times(e, 4.0) else None,
        "{name} is 4 times the reference's ({label}, n = {n})",
        output="half",
    ),
    Diagnosis(
        "sign",
        lambda e: {"first": e.got[0]} if times(e, -1.0) else None,
        "{name} has the wrong sign: it starts {first}",
        output="neg",
    ),
    Diagnosis(None, lambda e: {}, "{name} is off ({label})"),
)


def exercise(**changes) -> Exercise:
    fields = {
        "lab": "tiny",
        "name": "halve_and_negate",
        "title": "halve and negate",
        "statement": "Return (x / 2, -x).",
        "hints": ("halve it, negate it",),
        "handout": "README.md#tiny",
        "reference": "tests.core.test_engine:halve_and_negate",
        "attribute": "halve_and_negate",
        "outputs": ("half", "neg"),
        "compare": max_abs_error,
        "diagnoses": DIAGNOSES,
    }
    return Exercise(**(fields | changes))


def halve_and_negate(x):
    return [v / 2 for v in x], [-v for v in x]


class Implementation:
    """What a grading block yields: the function (called directly, or through the lab's call probe), the value
    of a constant."""

    def __init__(self, function=None, value=None):
        self.function, self.value = function, value

    def __call__(self, *args):
        return self.function(*args)

    def probe(self, call, *args):
        return call(self.function, *args)


class FakeContext:
    """The LabContext surface the engine uses: the exercise, its grading block, the checks."""

    def __init__(self, ex: Exercise, impl: Implementation, wanted: bool = True):
        self.ex, self.impl, self.wanted = ex, impl, wanted
        self.checks: list[Check] = []
        self.current_exercise = None
        self.graded, self.options = False, SimpleNamespace(show=True)

    def exercise(self, name: str) -> Exercise:
        assert name == self.ex.name
        return self.ex

    def wants(self, name: str) -> bool:
        return self.wanted

    @contextlib.contextmanager
    def grading(self, ex: Exercise, worker: bool = False):
        self.current_exercise = ex
        yield self.impl

    def record(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def check_max(self, name, value, threshold, message=None, **marks) -> Check:
        return self.record(
            Check(name, value <= threshold, value, threshold, message=message, **marks)
        )

    def check_equal(self, name, value, expected, message=None, **marks) -> Check:
        return self.record(
            Check(name, value == expected, value, expected, message=message, **marks)
        )


CASES = [
    Case("small", ([1.0, 2.0],), {"half": [0.5, 1.0], "neg": [-1.0, -2.0]}, {"n": 2}),
    Case(
        "large",
        ([10.0, 20.0, 30.0],),
        {"half": [5.0, 10.0, 15.0], "neg": [-10.0, -20.0, -30.0]},
        {"n": 3},
    ),
]


def graded(function, ex: Exercise | None = None, **options) -> FakeContext:
    ex = ex or exercise()
    ctx = FakeContext(ex, Implementation(function))
    grade(ctx, ex.name, CASES, **options)
    return ctx


def failed(ctx: FakeContext) -> list[Check]:
    return [c for c in ctx.checks if not c.passed]


def test_the_reference_passes_every_check_in_the_order_a_learner_reads_them():
    ctx = graded(halve_and_negate)
    assert [c.name for c in ctx.checks] == [
        "halve_and_negate: the mistake its results show",
        "halve_and_negate: half = the reference's (small)",
        "halve_and_negate: neg = the reference's (small)",
        "halve_and_negate: half = the reference's (large)",
        "halve_and_negate: neg = the reference's (large)",
    ]
    assert not failed(ctx)


def test_a_wrong_output_is_named_by_the_first_diagnosis_that_shows():
    """Planted: half doubled instead of halved (4 times). "doubled" is declared before the catch-all and shows."""
    ctx = graded(lambda x: ([v * 2 for v in x], [-v for v in x]))
    half = next(
        c for c in failed(ctx) if c.name == "halve_and_negate: half = the reference's (large)"
    )
    # the message formatted with the output's name, the case's label and its facts
    assert half.message == "half is 4 times the reference's (large, n = 3)"


def test_the_mistake_check_comes_first_and_names_the_mistake():
    """Planted: neg's sign flipped. The report leads with the mistake, its value the mistake's name."""
    ctx = graded(lambda x: ([v / 2 for v in x], list(x)))
    first = checks.reported(ctx.checks)
    assert ctx.checks[0] is first and first.diagnosis
    assert (first.value, first.message) == ("sign", "neg has the wrong sign: it starts 1.0")
    assert [c.name for c in failed(ctx)] == [
        "halve_and_negate: the mistake its results show",
        "halve_and_negate: neg = the reference's (small)",
        "halve_and_negate: neg = the reference's (large)",
    ]


def test_a_diagnosis_that_names_no_mistake_explains_but_the_mistake_check_passes():
    """Planted: half off by a constant 1 (no declared mistake): its checks say how, the mistake check passes."""
    ctx = graded(lambda x: ([v / 2 + 1 for v in x], [-v for v in x]))
    assert ctx.checks[0].passed and ctx.checks[0].value is None
    assert [c.message for c in failed(ctx)] == ["half is off (small)", "half is off (large)"]


def test_a_diagnosis_reads_only_its_output():
    """Planted: neg 4 times too large. "doubled" is half's only: neg falls to the catch-all."""
    ctx = graded(lambda x: ([v / 2 for v in x], [-4 * v for v in x]))
    assert {c.message for c in failed(ctx)} == {"neg is off (small)", "neg is off (large)"}
    assert ctx.checks[0].passed


@pytest.mark.parametrize(
    "result, what",
    [(([0.5, 1.0],), "tuple"), ([0.5], "list"), (0.5, "float")],
    ids=["one-of-two", "a-list-of-one", "not-a-tuple"],
)
def test_a_result_of_the_wrong_length_names_the_tuple_to_return(result, what):
    with pytest.raises(TypeError, match=f"returned {what}; return the tuple \\(half, neg\\)"):
        graded(lambda x: result)


def test_a_single_output_is_the_result_itself():
    ex = exercise(outputs=("half",), diagnoses=())
    ctx = FakeContext(ex, Implementation(lambda x: [v / 2 for v in x]))
    found = grade(ctx, ex.name, [Case("small", ([1.0],), {"half": [0.5]})])
    assert found.returned == {"small": {"half": [0.5]}} and not failed(ctx)


def test_the_call_probe_runs_each_case_and_the_rules_read_what_it_saw():
    """The lab's call probe watches each case; a rule (what the exercise may not do) reads graded.seen after
    the cases. Planted: the reference that also prints, which the rule forbids."""

    def watched(function, *args):
        return function(*args), {"printed": function is not halve_and_negate}

    def no_printing(ctx, ex, impl, graded):
        ctx.check_max(f"{ex.attribute}: no printing", sum(s["printed"] for s in graded.seen), 0)

    def printing(x):
        print("debug")
        return halve_and_negate(x)

    ctx = graded(printing, call=watched, rules=(no_printing,))
    assert [c.name for c in failed(ctx)] == ["halve_and_negate: no printing"]
    assert ctx.checks[-1].value == 2  # one per case
    assert not failed(graded(halve_and_negate, call=watched, rules=(no_printing,)))


def test_an_exercise_this_run_does_not_grade_runs_nothing():
    ex = exercise()
    ctx = FakeContext(ex, Implementation(lambda x: pytest.fail("ran")), wanted=False)
    assert grade(ctx, ex.name, CASES).comparisons == [] and ctx.checks == []


def test_an_output_compared_for_equality_is_checked_against_its_value_under_its_own_name():
    """compare's "==": the check holds the output's value against the reference's (an order, a yes/no) under the
    name `check` gives that output; diagnoses that name no mistake add no mistake check. Planted: the halves in
    reverse order."""
    ex = exercise(
        compare=lambda e: (list(e.got), e.want, 0.0, "=="),
        check={
            "half": "{function}: the halves in order ({label})",
            "neg": "{function}: the negatives ({label})",
        },
        diagnoses=(
            Diagnosis(None, lambda e: {"first": e.got[0]}, "{name} starts {first}", output="half"),
        ),
    )
    ctx = graded(lambda x: (halve_and_negate(x)[0][::-1], halve_and_negate(x)[1]), ex)
    assert [(c.name, c.value, c.threshold, c.message) for c in failed(ctx)] == [
        (
            "halve_and_negate: the halves in order (small)",
            [1.0, 0.5],
            [0.5, 1.0],
            "half starts 1.0",
        ),
        (
            "halve_and_negate: the halves in order (large)",
            [15.0, 10.0, 5.0],
            [5.0, 10.0, 15.0],
            "half starts 15.0",
        ),
    ]
    assert len(ctx.checks) == 4  # each output of each case, and no mistake check


QUESTIONS = (
    Question("count", "How many? (int)", "count them"),
    Question("name", "Which one? (str)", "read its name", kind="str"),
)
ANSWER_DIAGNOSES = (
    Diagnosis(
        "off by one",
        lambda e: {"counted": "the root"} if abs(e.got - e.want) == 1 else None,
        "{name}: off by one; the count includes {counted}",
        output="count",
    ),
)


@pytest.mark.parametrize(
    "answers, message",
    [
        ({"count": 4, "name": "b"}, "count: off by one; the count includes the root"),
        ({"count": 9, "name": "b"}, "your answer 9 is not what this run shows: count them"),
    ],
    ids=["diagnosed", "undiagnosed"],
)
def test_questions_are_graded_with_the_exercises_diagnoses(answers, message):
    """A dict of answers: each against this run's fact; a wrong one read by the diagnoses (planted: off by one),
    else told where to look."""
    ex = exercise(
        name="answers",
        attribute="ANSWERS",
        questions=QUESTIONS,
        outputs=(),
        compare=None,
        diagnoses=ANSWER_DIAGNOSES,
    )
    ctx = FakeContext(ex, Implementation(value=answers))
    ctx.graded = True
    grade(ctx, ex.name, {"count": 5, "name": "b"})
    wrong = failed(ctx)
    assert [c.name for c in wrong] == ["ANSWERS['count'] matches this run"]
    assert wrong[0].message == message
    assert wrong[0].diagnosis == (message.startswith("count: off by one"))
