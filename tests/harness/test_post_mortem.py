"""harness.runner's post-mortem: a lab process that died before its result.json fails the exercise it was grading, with
how it died and where in the learner's file; the others are not graded (what they printed is no verdict)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

from workshop.declarations import checks
from workshop.foundations import atomic, lab_log
from workshop.foundations.run_options import RunOptions
from workshop.harness import runner


def died_grading(tmp_path, exercise: str, frame_line: int):
    work = tmp_path / "my-work"
    work.mkdir()
    lab_dir = tmp_path / "autograd"
    lab_dir.mkdir()
    (lab_dir / "log.txt").write_text(
        "\n".join(
            [
                lab_log.started("autograd", "autograd.cross_entropy_grad"),
                # learner code may print any line: a status here is no verdict
                lab_log.ended("autograd", "autograd.cross_entropy_grad", "passing"),
                lab_log.started("autograd", exercise),
                "Fatal Python error: Segmentation fault",
                f'  File "{work / "autograd.py"}", line {frame_line} in linear_grads',
            ]
        )
    )
    return lab_dir, work


def test_the_exercise_being_graded_is_named_with_how_and_where_it_died(tmp_path):
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    running, how = runner.post_mortem(lab_dir, -11, work)
    # cross_entropy_grad's printed status is no verdict: only the grading that never ended is named
    assert running == "autograd.linear_grads"
    assert how.startswith("killed by SIGSEGV at ")
    assert how.endswith("autograd.py:12")


def test_without_a_frame_in_the_learners_file_it_says_how_only(tmp_path):
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    assert runner.post_mortem(lab_dir, 3, None) == ("autograd.linear_grads", "exit code 3")


def test_a_dead_lab_fails_the_exercise_being_graded_and_grades_no_other(tmp_path):
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    atomic.write_json(tmp_path / "manifest.json", {"labs": {}})
    dead, output = SimpleNamespace(returncode=-11), SimpleNamespace(tail=["Segmentation fault"])
    options = RunOptions(device="cpu", work=work)
    _status, result = runner.settle(tmp_path, "autograd", options, dead, output, 1.0, None)
    died = result["exercises"]["autograd.linear_grads"]
    assert died["status"] == checks.FAILING
    assert "killed by SIGSEGV at " in died["failed_check"]["value"]
    assert "autograd.py:12 (log.txt)" in died["failed_check"]["value"]
    others = [r["status"] for ex, r in result["exercises"].items() if ex != "autograd.linear_grads"]
    assert others and set(others) == {checks.NOT_GRADED}


def dies_in_linear_grads_every_time(tmp_path, monkeypatch) -> list[dict]:
    """run_lab with a lab process that always dies in autograd.linear_grads, even told to skip it (its log says
    it started it); returns the skip list each process was started with, the third stopping the test."""
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    log = (lab_dir / "log.txt").read_text()
    (lab_dir / "log.txt").unlink()
    lab_dir.rmdir()  # run_lab makes the lab's folder itself
    started = []

    class DeadLab:
        returncode = -11

        def wait(self, timeout=None):
            return -11

    @contextlib.contextmanager
    def lab_process(name, lab_dir, device, on_line, kept=None):
        started.append(RunOptions.read(lab_dir).skip)
        assert len(started) < 3, "the lab ran again for an exercise it had been told to skip"
        (lab_dir / "log.txt").write_text(log)
        yield DeadLab(), SimpleNamespace(tail=["Segmentation fault"])

    monkeypatch.setattr(runner, "lab_process", lab_process)
    atomic.write_json(tmp_path / "manifest.json", {"labs": {}})
    runner.run_lab(tmp_path, "autograd", RunOptions(device="cpu", work=work))
    return started


def test_an_exercise_the_lab_was_told_to_skip_is_not_blamed_again(tmp_path, monkeypatch):
    # once with nothing skipped, once skipping the exercise it died in; then settled, not a third attempt
    started = dies_in_linear_grads_every_time(tmp_path, monkeypatch)
    assert [list(skip) for skip in started] == [[], ["autograd.linear_grads"]]
    assert (tmp_path / "autograd.attempt-1" / "log.txt").is_file()
