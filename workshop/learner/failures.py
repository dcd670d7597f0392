"""What went wrong in a learner's exercise, as the failed check that says so: a file that will not load, a stub
not started yet, an endless loop, an exception, sys.exit(), a lab stopped while grading it, or a lab process that
died in it on an earlier attempt. LabContext.grading (workshop/lab_api.py) records these; harness.runner's
post-mortem uses failed_check("died", ...) for an exercise that killed the lab's process.
"""

from __future__ import annotations

from pathlib import Path

from workshop.declarations.checks import NOT_STARTED, Check
from workshop.declarations.exercise import Exercise
from workshop.foundations.interrupt import TimeLimitExceeded
from workshop.i18n import N_, _
from workshop.learner import workspace
from workshop.learner.learner_code import LearnerCodeFailed

# Whether this is the learner edition (grading/edition.py): its references are stubs, so a reference run finds
# each exercise not started, and goes on with the lab's demonstrations.
LEARNER_EDITION = (Path(__file__).resolve().parents[1] / "EDITION.json").is_file()


class ProcessDied(Exception):
    """An exercise that killed an earlier attempt of the lab: it is failed, its code not run again."""


# What the learner's solution may raise before its grading block even starts (LabContext.solution).
UNAVAILABLE = (workspace.LearnerError, LearnerCodeFailed, ProcessDied, NotImplementedError)


# Each way an exercise fails, as its check says it: (the check's name, what was expected, the message; None:
# the value says it all). "{seconds:g}" is the exercise's CPU time limit.
FAILED = {
    "not_started": (N_("{id}: implemented"), N_("implemented"), None),
    "load": (N_("{id}: your code loads"), N_("no error"), None),
    "time": (
        N_("{id}: finishes in time"),
        N_("{seconds:g} s of CPU time"),
        N_("An endless loop, or far more work than the exercise needs: see where it was."),
    ),
    "error": (N_("{id}: runs without an error"), N_("no error"), None),
    "died": (
        N_("{id}: the lab's process survives it"),
        N_("exit code 0"),
        N_(
            "The lab's process died while grading this exercise: a crash in native code (a kernel writing "
            "out of bounds, say) or the lab's time limit. The log named shows the last lines it printed."
        ),
    ),
    "workshop": (
        N_("{id}: the workshop starts the process that runs your code"),
        N_("a worker that starts"),
        N_(
            "Not your code: the workshop could not start or prepare the process that runs it, so none of "
            "your code ran. What to do: the README's Troubleshooting says (as root, that process runs as a "
            "uid of its own and needs a temporary folder every user can enter); then check again."
        ),
    ),
    "stopped": (
        N_("{id}: graded to the end"),
        N_("not stopped"),
        N_("The lab was stopped while grading this exercise: an endless loop? See where it was."),
    ),
}


def failed_check(kind: str, exercise_id: str, value, seconds: float | None = None) -> Check:
    """The failed check that says an exercise failed in this way (FAILED[kind]), with this value."""
    name, expected, message = FAILED[kind]
    threshold = _(expected).format(seconds=seconds)
    return Check(
        _(name).format(id=exercise_id), False, value, threshold, message=message and _(message)
    )


def learner_failure(ex: Exercise, e: BaseException, graded: bool, path: Path) -> Check | None:
    """The failed check that records `e`, raised in ex's grading block by the learner's work (in `path`); None
    when it is not theirs to answer for (the reference's own error, an interrupt): then it propagates. In the
    learner edition the reference is a stub: its NotImplementedError is "not started", not the lab's bug."""
    if isinstance(e, LearnerCodeFailed):
        return worker_failure(ex, e) if graded else None
    if isinstance(e, workspace.LearnerError | ProcessDied):
        return failed_check(
            "load" if isinstance(e, workspace.LearnerError) else "died", ex.id, str(e)
        )
    if not graded and not (LEARNER_EDITION and isinstance(e, NotImplementedError)):
        return None
    where = workspace.where(e, path) if graded else ""
    if isinstance(e, NotImplementedError):
        return not_started(ex, str(e))
    if isinstance(e, TimeLimitExceeded):
        return failed_check("time", ex.id, f"{where}: {e}", e.seconds)
    if isinstance(e, Exception | SystemExit):  # sys.exit() in the learner's code ends only this
        return failed_check("error", ex.id, f"{where}: {workspace.describe(e)}")
    return None


# The worker's failure kinds (learner_code.LearnerCodeFailed.kind) that are a way of failing of their own in FAILED.
WORKER_KINDS = {
    "load": "load",
    "refused": "load",
    "time": "time",
    "died": "died",
    "workshop": "workshop",
}


def worker_failure(ex: Exercise, e: LearnerCodeFailed) -> Check:
    """The failed check that records how the learner's code failed in the worker (learner/learner_code.py); its
    text is finished where it was raised, but a missing name's, which names the exercise."""
    if e.kind == "not_started":
        return not_started(ex, e.error)
    if e.kind == "missing":
        missing = _("{file} defines no `{name}` (exercise {id})")
        return failed_check(
            "load", ex.id, missing.format(file=e.where, name=ex.attribute, id=ex.id)
        )
    # a name refused loads no code; any other kind (a value the wire refuses, the worker's own bug) is an error
    return failed_check(WORKER_KINDS.get(e.kind, "error"), ex.id, str(e), ex.time_limit_s)


def not_started(ex: Exercise, error: str) -> Check:
    """The failed check of a stub not written yet: a stub raises its exercise's id, said as what to write."""
    check = failed_check("not_started", ex.id, _(NOT_STARTED))
    check.message = ex.not_started_message() if error in ("", ex.id) else error
    return check
