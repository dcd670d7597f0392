"""workshop/lab_api.py: a lab's declaration (LabSpec: its functions, the modules it needs, its preconditions, its
time limit) and the context a lab records its checks in (LabContext: each check compares a value with a
threshold, NaN fails, a failing secret check shows only its miss, the lab passes when every check does); and
which worker a lab's process uses (LabContext.worker): the lab's own process for the reference, a worker process for
a learner's code, a container of the run's image where one is asked for (grade's sandbox); a workspace without the
lab's file is one line saying how to make it, before any worker starts."""

from __future__ import annotations

import math

import pytest

from workshop import labs
from workshop.foundations.run_options import RunOptions
from workshop.foundations.worker_container import ContainerWorker
from workshop.foundations.worker_process import NativeWorker
from workshop.lab_api import LabContext, LabSpec
from workshop.learner import learner_code
from workshop.learner.workspace import LearnerError


def more_than_two(n_procs: int, device: str) -> str | None:
    """A lab's precondition: why this machine cannot run it, or None."""
    return f"{n_procs} processes on {device}: at most 2" if n_procs > 2 else None


SPEC = LabSpec("toy", 9, "a toy", print, precondition=more_than_two)


def context(tmp_path, **options) -> LabContext:
    return LabContext("toy", tmp_path, RunOptions("cpu", **options))


def test_a_spec_names_the_modules_this_python_lacks():
    assert LabSpec("t", 1, "t", print, needs=("json", "no_such_module_here")).missing() == [
        "no_such_module_here"
    ]


def test_a_spec_asks_its_precondition_and_the_run_may_shorten_its_limit():
    assert SPEC.problem(RunOptions("cpu", n_procs=3)) == "3 processes on cpu: at most 2"
    assert SPEC.problem(RunOptions("cpu", n_procs=2)) is None
    assert LabSpec("t", 1, "t", print).problem(RunOptions("cpu")) is None
    assert SPEC.limit_s(RunOptions("cpu")) == 900.0
    assert SPEC.limit_s(RunOptions("cpu", time_limit_s=5)) == 5


@pytest.mark.parametrize(
    "check, value, threshold, passed",
    [
        ("check_max", 0.5, 1.0, True),
        ("check_max", 1.5, 1.0, False),
        ("check_max", math.nan, 1.0, False),
        ("check_min", 2.0, 1.0, True),
        ("check_min", 0.5, 1.0, False),
        ("check_min", math.nan, 1.0, False),
        ("check_equal", ["a"], ["a"], True),
        ("check_equal", ["a"], ["b"], False),
    ],
)
def test_each_check_compares_its_value_with_its_threshold(
    tmp_path, capsys, check, value, threshold, passed
):
    ctx = context(tmp_path)
    recorded = getattr(ctx, check)("the value", value, threshold, message="why it failed")
    assert recorded.passed is passed and ctx.checks == [recorded] and ctx.passed is passed
    printed = capsys.readouterr().out
    assert printed.startswith(f"[toy] {'ok' if passed else 'FAIL'}") and "the value" in printed
    assert ("why it failed" in printed) is not passed  # the message only under a failure


def test_a_failing_secret_check_shows_its_miss_not_its_threshold(tmp_path, capsys):
    hidden = context(tmp_path).check_equal("prediction", 10, 12, secret=True)
    assert hidden.threshold != 12 and "12" not in capsys.readouterr().out
    shown = context(tmp_path, show=True).check_equal("prediction", 10, 12, secret=True)
    assert shown.threshold == 12  # --show: the instructor's view


def test_a_lab_passes_only_when_every_check_does(tmp_path):
    ctx = context(tmp_path)
    ctx.check_max("a", 0, 1)
    assert ctx.passed
    ctx.check_min("b", 0, 1)
    assert not ctx.passed


def test_a_graded_exercise_says_which_it_is_of_how_many_as_a_step(tmp_path, capsys):
    """The screen of a run shows it as its live line (cli.runs.LabScreen); log.txt keeps it."""
    from workshop.foundations import lab_log

    ctx = LabContext("dispatcher", tmp_path, RunOptions("cpu"))
    with ctx.grading("answers"):
        ctx.check_equal("c", 1, 1)
    steps = [lab_log.read_step(line) for line in capsys.readouterr().out.splitlines()]
    assert [s for s in steps if s] == [("grading dispatcher.answers", 4, 4)]


LINEAR_GRADS = next(e for e in labs.exercises("autograd") if e.attribute == "linear_grads")


def autograd_context(tmp_path, **options) -> LabContext:
    return LabContext("autograd", tmp_path, RunOptions("cpu", **options))


def test_the_reference_runs_in_the_labs_own_process(tmp_path):
    ctx = autograd_context(tmp_path)
    assert isinstance(ctx.worker(), learner_code.LocalWorker)
    assert ctx.worker() is ctx.worker()  # one per lab process


def test_a_learners_code_gets_a_worker_process_or_the_asked_container(tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    (work / "autograd.py").write_text(labs.workspace_header("autograd"))
    native = autograd_context(tmp_path, work=work).worker()
    assert isinstance(native, learner_code.Worker) and isinstance(native.launcher, NativeWorker)
    assert native.learner.filename.endswith("my-work/autograd.py")
    contained = autograd_context(tmp_path, work=work, worker_image="workshop-learner").launcher()
    assert isinstance(contained, ContainerWorker)


def test_a_missing_lab_file_says_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    ctx = autograd_context(tmp_path, work=tmp_path / "my-work")
    with pytest.raises(
        LearnerError, match=r"my-work/autograd.py does not exist: run `python -m workshop"
    ):
        ctx.solution(LINEAR_GRADS)
    assert ctx._worker is None  # nothing started
