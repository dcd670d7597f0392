"""A dead lab's post-mortem: what the parent makes of a lab process that died before writing its result.json
(a crash in native code, a kernel writing out of bounds, a kill at the lab's time limit).

From the lab's log.txt (foundations.lab_log) it knows which exercise was being graded when the process died, and
where in the learner's file it was. The runner then fails that exercise (learner.failures.died_check) and runs
the lab again without it. It never takes a status from the log: a lab whose grading still runs the learner's
code in its own process shares its output with that code, which can print any line it likes (issue 22).
"""

from __future__ import annotations

from pathlib import Path

from workshop import labs
from workshop.declarations import checks
from workshop.foundations import lab_log
from workshop.i18n import _
from workshop.learner import failures, workspace


def died_in(lab_dir: Path, work: Path | None, skip: dict[str, str]) -> str | None:
    """The learner's exercise whose grading the lab's process died in (it wrote no result.json), unless it
    is one the process was told to skip; None when it finished, or died elsewhere."""
    if work is None or (Path(lab_dir) / "result.json").is_file():
        return None
    running = lab_log.running(lab_log.log_lines(lab_dir))
    return running if running not in skip else None


def how_it_died(lab_dir: Path, returncode: int, work: Path | None) -> str:
    """'killed by SIGSEGV at my-work/custom_op.py:41': how the process ended, and where in the learner's file."""
    frame = lab_log.learner_frame(lab_log.log_lines(lab_dir), work) if work else None
    where = f"{workspace.display(frame[0])}:{frame[1]}" if frame else None
    return lab_log.how_it_ended(returncode) + (
        _(" at {where}").format(where=where) if where else ""
    )


def dead_process_exercises(
    lab: str, lab_dir: Path, returncode: int, work: Path | None
) -> dict[str, dict]:
    """result.json's "exercises" for a lab whose process died: the one being graded failing with how the process
    ended and where, the others not graded (what they printed on their way is no verdict)."""
    running = lab_log.running(lab_log.log_lines(lab_dir))
    out = {}
    for ex in labs.exercises(lab):
        status, failed = checks.NOT_GRADED, None
        if ex.id == running:
            status = checks.FAILING
            note = how_it_died(lab_dir, returncode, work) + _(" (log.txt)")
            failed = failures.died_check(ex.id, note)
        out[ex.id] = ex.result(status, [failed.name] if failed else [], failed)
    return out
