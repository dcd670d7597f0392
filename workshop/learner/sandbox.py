"""Where LabContext meets the worker: which worker a lab's process starts (the Solution a grading block yields
on it: learner_code.solution_for; learner/failures.py says how the learner's code failed there).

Which worker: for the learner's code, a container of the run's worker_image (`grade` asks for the learner
edition's image where Docker works), else a worker process of this machine, in the namespace sandbox where `grade`
asks for it (the learner edition's code, the hand-ins and results hidden), natively on the learner edition's
code where the run names it (check); for the reference, the lab's own
process (learner_code.LocalWorker). One per lab process, stopped when the lab ends.
"""

from __future__ import annotations

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
        return ContainerWorker(ctx.options.device, log, image=ctx.options.worker_image)
    # the namespace sandbox runs the learner edition's code with some paths hidden; natively, the learner
    # edition's code where the run names it, else this one's
    box = ctx.options.namespace_sandbox or {}
    root = box.get("code") or ctx.options.learner_edition
    hidden = tuple(box["hidden"]) if box else None
    return NativeWorker(ctx.options.device, log, root=Path(root) if root else None, hidden=hidden)


def worker(ctx) -> learner_code.Worker | learner_code.LocalWorker:
    """The lab's worker: a process for the learner's code (given their <lab>.py as text), the lab's own process
    for the reference. LearnerError, before any worker starts, when a graded workspace has no <lab>.py."""
    if ctx._worker is None and not ctx.graded:
        ctx._worker = learner_code.LocalWorker(ctx.options.device)
    elif ctx._worker is None:
        path = workspace.lab_file(ctx.options.work, ctx.name)
        if not path.is_file():
            raise workspace.LearnerError(
                _("{file} does not exist: run `{command}`").format(
                    file=workspace.display(path),
                    command=f"python -m workshop exercises init {workspace.display(ctx.options.work)}",
                )
            )
        # the file's header: the imports it may make
        learner = learner_code.LearnerFile.read(
            path, workspace.display(path), labs.workspace_header(ctx.name)
        )
        ctx._worker = learner_code.Worker(launcher(ctx), ctx.options.device, learner)
    return ctx._worker


def stop(ctx) -> None:
    if ctx._worker is not None:
        ctx._worker.stop()
