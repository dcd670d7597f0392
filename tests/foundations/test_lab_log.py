"""foundations.lab_log: the lines a lab prints around each exercise's grading, read back after the process died:
the exercise that started and never ended, the learner's innermost frame in faulthandler's last dump, how the
process ended. A status is never read from the log: learner code prints into it too."""

from __future__ import annotations

from workshop.foundations import lab_log


def test_the_exercise_that_started_and_never_ended():
    lines = [
        lab_log.started("autograd", "autograd.hand"),
        lab_log.ended("autograd", "autograd.hand", "passing"),
        "a learner's print: [autograd] graded autograd.replay: passing",
        lab_log.started("autograd", "autograd.replay"),
    ]
    assert lab_log.running(lines) == "autograd.replay"
    assert lab_log.running(lines[:2]) is None
    assert all(lab_log.is_marker(line) for line in lines[:2]) and not lab_log.is_marker(lines[2])


def test_the_learners_innermost_frame_in_the_last_dump(tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    mine = work / "custom_op.py"
    lines = [
        "Fatal Python error: Segmentation fault",
        f'  File "{mine}", line 7 in old',
        "Fatal Python error: Segmentation fault",
        "Current thread 0x01 (most recent call first):",
        '  File "/usr/lib/python3/site-packages/triton/x.py", line 99 in run',
        f'  File "{mine}", line 41 in forward_kernel',
        f'  File "{mine}", line 12 in caller',
    ]

    def ours(file: str) -> bool:
        return file.startswith(str(work))

    assert lab_log.last_frame(lines, ours) == (str(mine), 41)
    assert lab_log.last_frame(lines[:2] + lines[4:5], ours) == (str(mine), 7)
    assert lab_log.last_frame(lines[4:5], ours) is None


def test_how_the_process_ended():
    assert lab_log.how_it_ended(-11) == "killed by SIGSEGV"
    assert lab_log.how_it_ended(3) == "exit code 3"
    assert lab_log.how_it_ended(-999) == "exit code -999"  # no such signal


def test_a_missing_log_reads_as_no_lines(tmp_path):
    assert lab_log.log_lines(tmp_path) == []


def test_a_step_line_reads_back_and_is_no_exercise_marker():
    line = lab_log.step("minigpt", "replaying [the first] steps", 3, 30)
    assert lab_log.read_step(line + "\n") == ("replaying [the first] steps", 3, 30)
    assert not lab_log.is_marker(line) and lab_log.running([line]) is None
    assert lab_log.read_step("[minigpt] ok   loss: 1 (expected 1)") is None
