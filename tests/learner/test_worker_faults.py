"""The workshop's own failures around the worker are said as the workshop's, never as the learner's code failing
to load: a scratch folder a worker of its own uid cannot enter, a folder it cannot write, a worker
that cannot start or ends before it is ready. And on a GPU host, as root with a Python every user can run (the
cloud machines' case, where the worker takes a uid of its own), a correct custom_op workspace passes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from workshop import labs
from workshop.foundations import worker_process
from workshop.foundations.worker_process import NativeWorker
from workshop.learner import failures, worker
from workshop.learner.learner_code import LearnerCodeFailed, LearnerFile, Solution, Worker

SOURCE = "def double(x):\n    return 2 * x\n"
EXERCISE = labs.exercises("autograd")[0]


class Unread(LearnerFile):
    """A learner file the lab's process does not read for refusals (these tests are about the worker)."""

    def refusals(self):
        return []


def fault_of(launcher) -> LearnerCodeFailed:
    """The failure of the first call of the learner's `double` through a worker started by `launcher`."""
    found = Worker(launcher, "cpu", Unread(SOURCE, "my-work/toy.py", SOURCE))
    try:
        with pytest.raises(LearnerCodeFailed) as e:
            Solution(found, {"attributes": ["double"], "one": True}, 20)(1.0)
    finally:
        found.stop()
    return e.value


def said_as_the_workshops(e: LearnerCodeFailed) -> bool:
    """Whether the exercise's failed check says the workshop failed, and not that the learner's code did."""
    check = failures.worker_failure(EXERCISE, e)
    return (
        e.kind == "workshop"
        and "the workshop starts the process that runs your code" in check.name
        and "your code loads" not in check.name
        and check.message.startswith("Not your code")
    )


def planted_environment(monkeypatch, **changes: str) -> None:
    """The worker's environment (worker_environment) with `changes` on top."""
    real = worker_process.worker_environment

    def environment(scratch, device, root):
        return {**real(scratch, device, root), **changes}

    monkeypatch.setattr(worker_process, "worker_environment", environment)


def test_a_worker_of_its_own_uid_gets_a_scratch_folder_every_uid_can_enter(tmp_path, monkeypatch):
    """The lab's TMPDIR is a 0700 folder of the lab's user (runner.lab_environment): a worker of another uid can
    enter nothing under it. Planted: the scratch under the lab's TMPDIR, where it was when a correct custom_op
    workspace failed every exercise on a GPU host as root."""
    private = tmp_path / "workshop-cache-1-custom_op-x" / "tmp"
    private.mkdir(parents=True)
    private.parent.chmod(0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    assert worker_process.searchable_by_others(worker_process.scratch_root())
    assert not worker_process.searchable_by_others(Path(tempfile.gettempdir()))  # planted


def test_the_worker_names_a_folder_it_cannot_write(tmp_path, monkeypatch):
    for name in worker.SCRATCH_VARIABLES:
        monkeypatch.setenv(name, str(tmp_path / name.lower()))
    assert worker.scratch_problem() is None
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(a_file / "triton"))  # not a folder, even for root
    assert "TRITON_CACHE_DIR" in worker.scratch_problem()


def test_a_worker_that_cannot_write_its_cache_is_the_workshops_fault(tmp_path, monkeypatch):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    planted_environment(monkeypatch, TRITON_CACHE_DIR=str(a_file / "triton"))
    e = fault_of(NativeWorker("cpu", tmp_path / "worker.log"))
    assert said_as_the_workshops(e) and "TRITON_CACHE_DIR" in e.error


def test_a_worker_that_ends_before_it_is_ready_is_the_workshops_fault(tmp_path, monkeypatch):
    planted_environment(monkeypatch, PYTHONHOME=str(tmp_path / "no-python-here"))
    e = fault_of(NativeWorker("cpu", tmp_path / "worker.log"))
    assert said_as_the_workshops(e) and "ended before it was ready" in e.error


def test_a_worker_that_cannot_start_is_the_workshops_fault(tmp_path, monkeypatch):
    monkeypatch.setattr(worker_process.sys, "executable", str(tmp_path / "no-python"))
    e = fault_of(NativeWorker("cpu", tmp_path / "worker.log"))
    assert said_as_the_workshops(e) and "no-python" in e.error


def test_the_learners_own_load_error_is_still_theirs():
    """Planted: the check of a file that does not load is not taken for the workshop's."""
    e = LearnerCodeFailed("load", "ImportError: no module named x", "my-work/toy.py:1")
    assert not said_as_the_workshops(e)
    assert "your code loads" in failures.worker_failure(EXERCISE, e).name


@pytest.mark.gpu
@pytest.mark.slow
def test_as_root_a_correct_custom_op_workspace_passes_in_a_worker_of_its_own_uid(tmp_path):
    """As root with a Python that other users can run (a system or /opt Python), the worker takes a uid
    of its own; Triton then compiles on the GPU into the worker's cache, which must be its own to write."""
    from tools.check_loop import reference_workspace

    if os.geteuid() != 0 or NativeWorker("cuda", None).uid is None:
        pytest.skip(
            "needs root with a Python every user can run (the worker then takes a uid of its own)"
        )
    work, out = reference_workspace("custom_op", tmp_path), tmp_path / "results"
    command = [sys.executable, "-m", "workshop", "check", "custom_op", "--work", str(work)]
    done = subprocess.run(
        [*command, "--device", "cuda", "--out", str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads(next(out.glob("*/custom_op/result.json")).read_text())
    passed = {ex: entry["passed"] for ex, entry in result["exercises"].items()}
    assert passed and all(passed.values()), passed
