"""The custom_op lab's planted solutions graded as a learner's code is (the worker protocol):
custom_op/wrong_solutions.py loaded as a learner's file in a worker process, and any of its functions graded as the
learner's piece of an exercise, the lab's own grading function judging what the worker sends back."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from pathlib import Path

import pytest
import torch

from tests.custom_op import wrong_solutions as w
from workshop.foundations.run_options import RunOptions
from workshop.foundations.worker_process import NativeWorker
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import exercise_grading
from workshop.learner.learner_code import LearnerFile, Worker, solution_for

# the name the worker compiles it under: messages name it
SHOWN_AS = "tests/custom_op/wrong_solutions.py"
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def planted_worker(device: str, log: Path) -> Worker:
    """A worker holding custom_op/wrong_solutions.py as the learner's file (its imports its header)."""
    source = Path(w.__file__).read_text(encoding="utf-8")
    return Worker(NativeWorker(device, log), device, LearnerFile(source, SHOWN_AS, source))


def graded(tmp_path, worker: Worker, name: str, piece, device: str) -> LabContext:
    """Exercise `name` graded as lab.grade_pieces grades it, with `piece` (a function of the planted file, or
    its name) as the learner's."""
    ctx = LabContext("custom_op", tmp_path, RunOptions(device, 1, 0, work=tmp_path))
    attribute = piece if isinstance(piece, str) else piece.__name__
    impl = solution_for(
        worker, [dataclasses.replace(ctx.exercise(name), attribute=attribute)], True
    )
    with contextlib.redirect_stdout(io.StringIO()), ctx.grading(name):
        exercise_grading.GRADERS[name](ctx, impl)
    return ctx


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """One worker for a test module, holding the planted file."""
    worker = planted_worker(DEVICE, tmp_path_factory.mktemp("worker") / "log")
    yield worker
    worker.stop()


@pytest.fixture
def grade(tmp_path, planted):
    """grade(name, piece): exercise `name` graded with the planted file's `piece` as the learner's."""
    return lambda name, piece: graded(tmp_path, planted, name, piece, DEVICE)
