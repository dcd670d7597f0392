"""harness.runner's post-mortem: a lab process that died before its result.json fails the exercise it was grading, with
how it died and where in the learner's file; the others are not graded (what they printed is no verdict), and
an exercise the run was told to skip is not blamed again."""

from __future__ import annotations

from workshop.declarations import checks
from workshop.foundations import lab_log
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


def test_the_exercise_being_graded_fails_with_how_and_where_it_died(tmp_path):
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    assert runner.died_in(lab_dir, work, skip={}) == "autograd.linear_grads"
    exercises = runner.dead_process_exercises("autograd", lab_dir, -11, work)
    died = exercises["autograd.linear_grads"]
    assert died["status"] == checks.FAILING
    assert "killed by SIGSEGV at " in died["failed_check"]["value"]
    assert "autograd.py:12 (log.txt)" in died["failed_check"]["value"]
    others = [r["status"] for ex, r in exercises.items() if ex != "autograd.linear_grads"]
    assert others and set(others) == {
        checks.NOT_GRADED
    }  # cross_entropy_grad's printed status: no verdict


def test_a_lab_that_finished_or_a_skipped_exercise_is_not_blamed(tmp_path):
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    assert runner.died_in(lab_dir, work, skip={"autograd.linear_grads": "died"}) is None
    assert runner.died_in(lab_dir, None, skip={}) is None  # the reference: no learner to blame
    (lab_dir / "result.json").write_text("{}")
    assert runner.died_in(lab_dir, work, skip={}) is None


def test_without_a_frame_in_the_learners_file_it_says_how_only(tmp_path):
    lab_dir, work = died_grading(tmp_path, "autograd.linear_grads", 12)
    assert runner.how_it_died(lab_dir, 3, None) == "exit code 3"
