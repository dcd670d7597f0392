"""learner.sandbox: which worker a lab's process uses: the lab's own process for the reference, a worker
process for a learner's code, a container of the run's image where one is asked for (grade's sandbox); a
workspace without the lab's file is one line saying how to make it, before any worker starts."""

from __future__ import annotations

import pytest

from workshop import labs
from workshop.foundations.run_options import RunOptions
from workshop.foundations.worker_container import ContainerWorker
from workshop.foundations.worker_process import NativeWorker
from workshop.lab_api import LabContext
from workshop.learner import learner_code, sandbox
from workshop.learner.workspace import LearnerError

EX = next(e for e in labs.exercises("autograd") if e.attribute == "linear_grads")


def context(tmp_path, **options) -> LabContext:
    return LabContext("autograd", tmp_path, RunOptions("cpu", **options))


def test_the_reference_runs_in_the_labs_own_process(tmp_path):
    ctx = context(tmp_path)
    assert isinstance(sandbox.worker(ctx), learner_code.LocalWorker)
    assert sandbox.worker(ctx) is sandbox.worker(ctx)  # one per lab process


def test_a_learners_code_gets_a_worker_process_or_the_asked_container(tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    (work / "autograd.py").write_text(labs.workspace_header("autograd"))
    native = sandbox.worker(context(tmp_path, work=work))
    assert isinstance(native, learner_code.Worker) and isinstance(native.launcher, NativeWorker)
    assert native.learner.filename.endswith("my-work/autograd.py")
    contained = sandbox.launcher(context(tmp_path, work=work, worker_image="workshop-learner"))
    assert isinstance(contained, ContainerWorker)


def test_a_missing_lab_file_says_how_to_make_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    ctx = context(tmp_path, work=tmp_path / "my-work")
    with pytest.raises(
        LearnerError, match=r"my-work/autograd.py does not exist: run `python -m workshop"
    ):
        ctx.solution(EX)
    assert ctx._worker is None  # nothing started
