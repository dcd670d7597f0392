"""Where LabContext meets the worker: which worker a lab's process starts, the Solution a grading block yields,
and the failed check that says how the learner's code failed there.

Which worker: for the learner's code, WORKSHOP_SANDBOX in the lab process's environment (its parent sets it:
`grade` asks for `docker` where Docker works), else a native worker process; for the reference, the lab's own
process (solution.LocalWorker). One per lab process, stopped when the lab ends.
"""

from __future__ import annotations

import os

from workshop import exercise, grading_markers, workspace
from workshop.grading.solution import (
    LearnerCodeFailed,
    LearnerFile,
    LocalWorker,
    Solution,
    Worker,
    solution_for,
)
from workshop.i18n import _

SANDBOX = (
    "WORKSHOP_SANDBOX"  # "native" (default) or "docker"; WORKSHOP_WORKER_IMAGE names the image
)
WORKER_LOG = "worker.log"


def launcher(ctx):
    from workshop.harness.worker_container import ContainerWorker
    from workshop.harness.worker_process import NativeWorker

    log = ctx.path(WORKER_LOG)
    if os.environ.get(SANDBOX) == "docker":
        return ContainerWorker(ctx.device, log, image=os.environ.get("WORKSHOP_WORKER_IMAGE"))
    return NativeWorker(ctx.device, log)


def learner_file(ctx) -> LearnerFile | None:
    """The learner's <lab>.py as text (None when a reference run, or when the lab grades documents only)."""
    if not ctx.graded:
        return None
    path = workspace.lab_file(ctx.work, ctx.name)
    header = exercise.lab_header(ctx.name)
    if not path.is_file():
        return None  # its absence is said when an exercise asks for it (solution)
    return LearnerFile.read(path, workspace.display(path), header)


def worker(ctx) -> Worker | LocalWorker:
    """The lab's worker: a process for the learner's code, the lab's own process for the reference."""
    if ctx._worker is None:
        graded = ctx.graded
        ctx._worker = (
            Worker(launcher(ctx), ctx.device, learner_file(ctx))
            if graded
            else LocalWorker(ctx.device)
        )
    return ctx._worker


def solution(ctx, ex: exercise.Exercise, watch: str | None) -> Solution:
    """What `with ctx.grading(name, worker=True) as impl:` yields (see solution.py)."""
    path = workspace.lab_file(ctx.work, ctx.name) if ctx.graded else None
    if path is not None and not path.is_file():
        raise workspace.LearnerError(
            _("{file} does not exist: run `{command}`").format(
                file=workspace.display(path),
                command=f"python -m workshop exercises init {workspace.display(ctx.work)}",
            )
        )
    return solution_for(worker(ctx), ex, ctx.graded, watch)


def stop(ctx) -> None:
    if ctx._worker is not None:
        ctx._worker.stop()


def failure_check(ex: exercise.Exercise, e: LearnerCodeFailed):
    """The failed check that records how the learner's code failed in the worker."""
    from workshop.lab import Check

    value = f"{e.where}: {e.error}" if e.where else e.error
    if e.kind == "not_started":
        message = e.error or ex.not_started_message()
        name = _("{id}: implemented").format(id=ex.id)
        return Check(name, False, _(exercise.NOT_STARTED), _("implemented"), message=message)
    if e.kind in ("load", "missing", "refused"):
        name = _("{id}: your code loads").format(id=ex.id)
        return Check(name, False, refusal(ex, e), _("no error"), message=ex.hint)
    if e.kind == "time":
        name = _("{id}: finishes in time").format(id=ex.id)
        message = _("An endless loop, or far more work than the exercise needs: see where it was.")
        return Check(
            name,
            False,
            value,
            _("{seconds:g} s of CPU time").format(seconds=ex.time_limit_s),
            message=message,
        )
    if e.kind == "died":
        died = grading_markers.died_check(ex.id, value)
        return Check(died["name"], False, died["value"], died["threshold"], message=died["message"])
    name = _("{id}: runs without an error").format(id=ex.id)
    return Check(name, False, value, _("no error"), message=ex.hint)


def refusal(ex: exercise.Exercise, e: LearnerCodeFailed) -> str:
    """Why the learner's code was not run, in one line that names the file and line."""
    where = e.where or ""
    if e.kind == "missing":
        return _("your file defines no `{name}` (exercise {id})").format(
            name=ex.attribute, id=ex.id
        )
    if e.kind == "refused" and e.error.endswith(" is imported"):
        return _(
            "{where}: `{name}` is imported, not written in your file: the workshop's own code is not an answer"
        ).format(where=where, name=ex.attribute)
    if e.kind == "refused" and " is defined in " in e.error:
        return _(
            "`{name}` is not your own code ({what}): the workshop's own code is not an answer"
        ).format(name=ex.attribute, what=e.error)
    if e.kind == "refused":
        return _(
            "{where}: {what} is not allowed in your file: it may import only what its header imports, "
            "and nothing that reaches past the exercise (eval, getattr, __globals__, sys, ...)"
        ).format(where=where, what=e.error)
    return f"{where}: {e.error}" if where else e.error
