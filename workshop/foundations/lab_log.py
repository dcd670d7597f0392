"""The lab log protocol: the lines a lab's process prints as it grades each exercise, and how they are read back.

The child prints `[lab] grading <id> ...` when a grading block starts and `[lab] graded <id>: <status>` when it
ends (LabContext.grading). Python's faulthandler (on in the child: harness.child) prints the stack of a fatal
signal to the same log.txt. harness.runner's post-mortem reads them back when the process died: which exercise
was running, and where in the learner's file it was; never a status (learner code that runs in the lab's
process prints into the same log).

A long part of a lab prints `[lab:step] <done>/<total> <what>` as it goes (LabContext.step): the screen of a run
(cli.runs) shows the last one as a live line, log.txt keeps them all.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path

from workshop.i18n import _

_MARKER = re.compile(
    r"^\[(?P<lab>[\w-]+)\] (?:grading (?P<started>\S+) \.\.\.|graded (?P<ended>\S+): (?P<status>.+))$"
)
_STEP = re.compile(r"^\[(?P<lab>[\w-]+):step\] (?P<done>\d+)/(?P<total>\d+) (?P<what>.*)$")
# faulthandler's frame lines: `  File "/abs/path.py", line 12 in function` (most recent call first); in a worker's
# log the file is the name the learner knows it by: `  File "my-work/custom_op.py", line 12 in function`
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in ')


def started(lab: str, exercise_id: str) -> str:
    return f"[{lab}] grading {exercise_id} ..."


def ended(lab: str, exercise_id: str, status: str) -> str:
    return f"[{lab}] graded {exercise_id}: {status}"


def step(lab: str, what: str, done: int, total: int) -> str:
    return f"[{lab}:step] {done}/{total} {what}"


def read_step(line: str) -> tuple[str, int, int] | None:
    """(what, done, total) of a step line, else None."""
    m = _STEP.match(line.rstrip("\n"))
    return (m["what"], int(m["done"]), int(m["total"])) if m else None


def is_marker(line: str) -> bool:
    """A protocol line (grading started or ended): for the post-mortem in log.txt, not for the learner's screen,
    where each check's line and the report say the same in the learner's language."""
    return _MARKER.match(line.rstrip("\n")) is not None


def running(lines: list[str]) -> str | None:
    """The exercise whose grading started but never ended."""
    markers = [m for line in lines if (m := _MARKER.match(line.rstrip("\n")))]
    return markers[-1]["started"] if markers else None  # None for an end marker


def log_lines(lab_dir: Path) -> list[str]:
    try:
        return (
            (Path(lab_dir) / "log.txt").read_text(encoding="utf-8", errors="replace").splitlines()
        )
    except OSError:
        return []


def last_frame(lines: list[str], ours: Callable[[str], bool]) -> tuple[str, int] | None:
    """(file, line) of the innermost frame whose file is `ours` in the last stack faulthandler printed (a lab's
    log.txt, a worker's log)."""
    found = None
    for line in lines:
        if line.startswith(("Fatal Python error", "Current thread", "Thread ")):
            found = None  # a new dump: only the last one counts
        m = _FRAME.match(line)
        if m and found is None and ours(m["file"]):
            found = (m["file"], int(m["line"]))
    return found


def how_it_ended(returncode: int) -> str:
    """'exit code 3', or 'killed by SIGSEGV' for a signal."""
    if returncode < 0:
        try:
            return _("killed by {signal}").format(signal=signal.Signals(-returncode).name)
        except ValueError:
            pass
    return _("exit code {code}").format(code=returncode)
