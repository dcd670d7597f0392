"""learner.failures: how a learner's exercise went wrong becomes the one failed check that says so, named for
the exercise and pointing at the learner's line: a file that will not load, a stub, an endless loop, an
exception, sys.exit(), a process that died; the reference's own error and an interrupt are not the learner's
and propagate (None)."""

from __future__ import annotations

import pytest

from workshop import labs
from workshop.declarations import checks
from workshop.foundations.interrupt import Stopped, TimeLimitExceeded
from workshop.learner import failures
from workshop.learner.learner_code import LearnerCodeFailed
from workshop.learner.workspace import LearnerError

EX = next(e for e in labs.exercises("autograd") if e.id == "autograd.linear_grads")


def raised_in(path, error: BaseException) -> BaseException:
    """`error` raised from code compiled as `path`'s line 2, as the learner's file raises it."""
    code = compile("\nraise error\n", str(path), "exec")
    try:
        exec(code, {"error": error})
    except BaseException as e:
        return e
    raise AssertionError("not raised")


@pytest.mark.parametrize(
    "error, name, value",
    [
        (
            ValueError("shapes differ"),
            "runs without an error",
            "autograd.py:2: ValueError: shapes differ",
        ),
        (SystemExit(0), "runs without an error", "autograd.py:2: SystemExit"),
        (TimeLimitExceeded(5), "finishes in time", "autograd.py:2: still running after 5 s"),
        (NotImplementedError(EX.id), "implemented", checks.NOT_STARTED),
    ],
)
def test_a_learners_error_is_one_failed_check_at_their_line(tmp_path, error, name, value):
    path = tmp_path / "autograd.py"
    check = failures.learner_failure(EX, raised_in(path, error), graded=True, path=path)
    assert check.name == f"{EX.id}: {name}" and not check.passed
    assert value in str(check.value)


def test_a_file_that_will_not_load_names_it():
    check = failures.learner_failure(EX, LearnerError("autograd.py:1: SyntaxError"), True, None)
    assert check.name == f"{EX.id}: your code loads" and check.value == "autograd.py:1: SyntaxError"


def test_the_references_error_and_an_interrupt_are_not_the_learners(tmp_path):
    assert failures.learner_failure(EX, ValueError("lab bug"), graded=False, path=None) is None
    stopped = Stopped(2, "interrupted")
    assert failures.learner_failure(EX, stopped, graded=True, path=tmp_path / "autograd.py") is None


@pytest.mark.parametrize(
    "kind, name",
    [
        ("load", "your code loads"),
        ("missing", "your code loads"),
        ("not_started", "implemented"),
        ("time", "finishes in time"),
        ("died", "the lab's process survives it"),
        ("error", "runs without an error"),
    ],
)
def test_each_way_the_worker_reports_a_failure_is_its_check(kind, name):
    check = failures.worker_failure(
        EX, LearnerCodeFailed(kind, "what happened", "my-work/autograd.py:7")
    )
    assert check.name == f"{EX.id}: {name}" and not check.passed
