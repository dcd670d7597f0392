"""Where LabContext meets the worker: which worker a lab's process starts (the Solution a grading block yields
on it: learner_code.solution_for; learner/failures.py says how the learner's code failed there).

Which worker: for the learner's code, a container of the run's worker_image (`grade` asks for the learner
edition's image where Docker works), else a worker process of this machine, in the namespace sandbox where `grade`
asks for it (the learner edition's code, the hand-ins and results hidden), natively on the learner edition's
code where the run names it (check); for the reference, the lab's own
process (learner_code.LocalWorker). One per lab process, stopped when the lab ends.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from workshop import labs
from workshop.foundations.worker_container import ContainerWorker
from workshop.foundations.worker_process import NativeWorker
from workshop.i18n import _
from workshop.learner import learner_code, workspace

WORKER_LOG = "worker.log"


def launcher(ctx) -> ContainerWorker | NativeWorker:
    log = ctx.path(WORKER_LOG)
    if ctx.options.worker_image:
        return ContainerWorker(ctx.device, log, image=ctx.options.worker_image)
    # the namespace sandbox runs the learner edition's code with some paths hidden; natively, the learner
    # edition's code where the run names it, else this one's
    box = ctx.options.namespace_sandbox or {}
    root = box.get("code") or ctx.options.learner_edition
    hidden = tuple(box["hidden"]) if box else None
    return NativeWorker(ctx.device, log, root=Path(root) if root else None, hidden=hidden)


def worker(ctx) -> learner_code.Worker | learner_code.LocalWorker:
    """The lab's worker: a process for the learner's code (given their <lab>.py as text), the lab's own process
    for the reference. LearnerError, before any worker starts, when a graded workspace has no <lab>.py."""
    if ctx._worker is None and not ctx.graded:
        ctx._worker = learner_code.LocalWorker(ctx.device)
    elif ctx._worker is None:
        path = workspace.lab_file(ctx.work, ctx.name)
        if not path.is_file():
            raise workspace.LearnerError(
                _("{file} does not exist: run `{command}`").format(
                    file=workspace.display(path),
                    command=f"python -m workshop exercises init {workspace.display(ctx.work)}",
                )
            )
        # the file's header: the imports it may make
        learner = learner_code.LearnerFile.read(
            path, workspace.display(path), labs.workspace_header(ctx.name)
        )
        ctx._worker = learner_code.Worker(launcher(ctx), ctx.device, learner)
    return ctx._worker


def begin(ctx) -> None:
    """Start the learner's worker as the lab starts, when it grades a workspace with code exercises: it loads
    while the lab prepares its cases."""
    code = ctx.graded and any(ex.attribute for ex in labs.exercises(ctx.name))
    if code and workspace.lab_file(ctx.work, ctx.name).is_file():
        worker(ctx).begin()


def probe(ctx, function: Callable, args: tuple, attributes: tuple[str, ...]):
    """function({attribute: piece}, *args) in the worker, over several of the lab's exercises' pieces at once
    (the learner's when a workspace is graded, else the references): LabContext.probe."""
    exercises = [ex for ex in labs.exercises(ctx.name) if ex.attribute in attributes]
    if not ctx.graded:
        target = {"references": {ex.attribute: ex.reference for ex in exercises}}
        return learner_code.Solution(worker(ctx), target).probe(function, *args)
    try:
        found = worker(ctx)
    except workspace.LearnerError:  # no <lab>.py: every piece is missing
        path = workspace.display(workspace.lab_file(ctx.work, ctx.name))
        raise learner_code.LearnerCodeFailed("missing", ", ".join(attributes), path) from None
    found.refuse_imported(list(attributes))
    limit = max((ex.time_limit_s for ex in exercises), default=None)
    return learner_code.Solution(found, {"attributes": list(attributes)}, limit).probe(
        function, *args
    )


def stop(ctx) -> None:
    if ctx._worker is not None:
        ctx._worker.stop()
