"""The lines a lab's process prints as it grades each exercise, and what its parent reads from them after that
process died (a crash in native code, a kernel writing out of bounds, a kill at the lab's time limit).

The child prints `[lab] grading <id> ...` when a grading block starts and `[lab] graded <id>: <status>` when it
ends (LabContext.grading). Python's faulthandler (on in the child: runner.main) prints the stack of a fatal
signal to the same log. From log.txt the parent then knows how the finished exercises ended, which exercise
was running when the process died, and where in the learner's file it was.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

from workshop import exercise, workspace
from workshop.i18n import _

_MARKER = re.compile(
    r"^\[(?P<lab>[\w-]+)\] (?:grading (?P<started>\S+) \.\.\.|graded (?P<ended>\S+): (?P<status>.+))$"
)
# faulthandler's frame lines: `  File "/abs/path.py", line 12 in function` (most recent call first)
_FRAME = re.compile(r'^\s*File "(?P<file>.+)", line (?P<line>\d+) in ')


def started(lab: str, exercise_id: str) -> str:
    return f"[{lab}] grading {exercise_id} ..."


def ended(lab: str, exercise_id: str, status: str) -> str:
    return f"[{lab}] graded {exercise_id}: {status}"


def read(lines: list[str]) -> tuple[dict[str, str], str | None]:
    """The status of each exercise whose grading ended, and the one whose grading started but never ended."""
    finished, running = {}, None
    for line in lines:
        m = _MARKER.match(line.rstrip("\n"))
        if not m:
            continue
        if m["started"]:
            running = m["started"]
        else:
            finished[m["ended"]] = m["status"]
            running = None
    return finished, running


def learner_frame(lines: list[str], work: Path) -> str | None:
    """file:line of the innermost frame in the learner's workspace in the last stack faulthandler printed."""
    root = Path(work).resolve()
    found = None
    for line in lines:
        if line.startswith(("Fatal Python error", "Current thread", "Thread ")):
            found = None  # a new dump: only the last one counts
        m = _FRAME.match(line)
        if m and found is None and Path(m["file"]).resolve().is_relative_to(root):
            found = f"{workspace.display(Path(m['file']))}:{m['line']}"
    return found


def how_it_ended(returncode: int) -> str:
    """'exit code 3', or 'killed by SIGSEGV' for a signal."""
    if returncode < 0:
        try:
            return _("killed by {signal}").format(signal=signal.Signals(-returncode).name)
        except ValueError:
            pass
    return _("exit code {code}").format(code=returncode)


class ProcessDied(Exception):
    """An exercise that killed an earlier attempt of the lab: it is failed, its code not run again."""


def log_lines(lab_dir: Path) -> list[str]:
    try:
        return (
            (Path(lab_dir) / "log.txt").read_text(encoding="utf-8", errors="replace").splitlines()
        )
    except OSError:
        return []


def died_in(lab_dir: Path, work: Path | None, skip: dict[str, str]) -> str | None:
    """The learner's exercise whose grading the lab's process died in (it wrote no result.json), unless it
    is one the process was told to skip; None when it finished, or died elsewhere."""
    if work is None or (Path(lab_dir) / "result.json").is_file():
        return None
    running = read(log_lines(lab_dir))[1]
    return running if running not in skip else None


def how_it_died(lab_dir: Path, returncode: int, work: Path | None) -> str:
    """'killed by SIGSEGV at my-work/custom_op.py:41': how the process ended, and where in the learner's file."""
    where = learner_frame(log_lines(lab_dir), work) if work else None
    return how_it_ended(returncode) + (_(" at {where}").format(where=where) if where else "")


def died_check(exercise_id: str, note: str) -> dict:
    """The failed check of an exercise whose grading killed the lab's process."""
    return {
        "name": _("{id}: the lab's process survives it").format(id=exercise_id),
        "passed": False,
        "value": note,
        "threshold": _("exit code 0"),
        "message": _(
            "The lab's process died while grading this exercise: a crash in native code (a kernel writing "
            "out of bounds, say) or the lab's time limit. The log named shows the last lines it printed."
        ),
    }


def dead_process_exercises(
    lab: str, lab_dir: Path, returncode: int, work: Path | None
) -> dict[str, dict]:
    """result.json's "exercises" for a lab whose process died: the finished ones as they ended, the one being
    graded failing with how the process ended and where, the rest not graded."""
    finished, running = read(log_lines(lab_dir))
    out = {}
    for ex in exercise.lab_exercises(lab):
        status = finished.get(ex.id, exercise.NOT_GRADED)
        failed = None
        if ex.id == running:
            status = exercise.FAILING
            note = how_it_died(lab_dir, returncode, work) + _(" (log.txt)")
            failed = died_check(ex.id, note)
        out[ex.id] = ex.result(status, [failed["name"]] if failed else [], failed)
    return out
