"""What went wrong in a learner's exercise, as the failed check that says so: a file that will not load, a stub
not started yet, an endless loop, an exception, sys.exit(), a lab stopped while grading it, or a lab process that
died in it on an earlier attempt. LabContext.grading (workshop/lab_api.py) records these; harness.runner's
post-mortem uses died_check for an exercise that killed the lab's process.
"""

from __future__ import annotations

from pathlib import Path

from workshop.declarations import checks
from workshop.declarations.checks import Check
from workshop.declarations.exercise import Exercise
from workshop.foundations.time_limit import TimeLimitExceeded
from workshop.i18n import N_, _
from workshop.learner import workspace
from workshop.learner.learner_code import LearnerCodeFailed, learner_edition
from workshop.learner.workspace import LearnerError


class ProcessDied(Exception):
    """An exercise that killed an earlier attempt of the lab: it is failed, its code not run again."""


# What the learner's solution may raise before its grading block even starts (LabContext.solution).
UNAVAILABLE = (LearnerError, LearnerCodeFailed, ProcessDied, NotImplementedError)


WORKSHOP_FAULT = N_(
    "Not your code: the workshop could not start or prepare the process that runs it, so none of your code "
    "ran. What to do: the README's Troubleshooting says (as root, that process runs as a uid of its own and "
    "needs a temporary folder every user can enter); then check again."
)


def died_check(exercise_id: str, note: str) -> Check:
    """The failed check of an exercise whose grading killed the lab's process."""
    return Check(
        _("{id}: the lab's process survives it").format(id=exercise_id),
        False,
        note,
        _("exit code 0"),
        message=_(
            "The lab's process died while grading this exercise: a crash in native code (a kernel writing "
            "out of bounds, say) or the lab's time limit. The log named shows the last lines it printed."
        ),
    )


def learner_failure(ex: Exercise, e: BaseException, graded: bool, path: Path) -> Check | None:
    """The failed check that records `e`, raised in ex's grading block by the learner's work (in `path`); None
    when it is not theirs to answer for (the reference's own error, an interrupt): then it propagates. In the
    learner edition the reference is a stub: its NotImplementedError is "not started", not the lab's bug."""
    if isinstance(e, LearnerCodeFailed):
        return worker_failure(ex, e) if graded else None
    if isinstance(e, LearnerError):
        return does_not_load(ex, str(e))
    if isinstance(e, ProcessDied):
        return died_check(ex.id, str(e))
    if not graded and not (learner_edition() and isinstance(e, NotImplementedError)):
        return None
    where = workspace.where(e, path) if graded else ""
    if isinstance(e, NotImplementedError):
        return not_started(ex, str(e))
    if isinstance(e, TimeLimitExceeded):
        return out_of_time(ex, f"{where}: {e}", e.seconds)
    if isinstance(e, Exception | SystemExit):  # sys.exit() in the learner's code ends only this
        return errored(ex, f"{where}: {workspace.describe(e)}")
    return None


def worker_failure(ex: Exercise, e: LearnerCodeFailed) -> Check:
    """The failed check that records how the learner's code failed in the worker (learner/learner_code.py); its
    text is finished where it was raised, but a missing name's, which names the exercise."""
    if e.kind == "not_started":
        return not_started(ex, e.error)
    if e.kind == "missing":
        missing = _("{file} defines no `{name}` (exercise {id})")
        return does_not_load(ex, missing.format(file=e.where, name=ex.attribute, id=ex.id))
    if e.kind in ("load", "refused"):
        return does_not_load(ex, str(e))
    if e.kind == "time":
        return out_of_time(ex, str(e), ex.time_limit_s)
    if e.kind == "died":
        return died_check(ex.id, str(e))
    if e.kind == "workshop":
        name = _("{id}: the workshop starts the process that runs your code").format(id=ex.id)
        return Check(name, False, str(e), _("a worker that starts"), message=_(WORKSHOP_FAULT))
    return errored(ex, str(e))


def not_started(ex: Exercise, error: str) -> Check:
    """The failed check of a stub not written yet: a stub raises its exercise's id, said as what to write."""
    message = ex.not_started_message() if error in ("", ex.id) else error
    name = _("{id}: implemented").format(id=ex.id)
    return Check(name, False, _(checks.NOT_STARTED), _("implemented"), message=message)


def does_not_load(ex: Exercise, why: str) -> Check:
    return Check(_("{id}: your code loads").format(id=ex.id), False, why, _("no error"))


def out_of_time(ex: Exercise, value: str, seconds: float) -> Check:
    message = _("An endless loop, or far more work than the exercise needs: see where it was.")
    limit = _("{seconds:g} s of CPU time").format(seconds=seconds)
    return Check(_("{id}: finishes in time").format(id=ex.id), False, value, limit, message=message)


def errored(ex: Exercise, value: str) -> Check:
    return Check(_("{id}: runs without an error").format(id=ex.id), False, value, _("no error"))


def cut_short(ex: Exercise, e: BaseException, path: Path) -> Check:
    """The failed check of an exercise whose grading was stopped from outside (the lab's time limit, a
    signal): where the learner's code was when it happened."""
    value = f"{workspace.where(e, path)}: {workspace.describe(e)}"
    message = _(
        "The lab was stopped while grading this exercise: an endless loop? See where it was."
    )
    name = _("{id}: graded to the end").format(id=ex.id)
    return Check(name, False, value, _("not stopped"), message=message)
