"""The learner's code as the lab's process sees it: a handle on something that lives in the worker.

Inside `with ctx.grading(name) as impl:` a lab uses
    impl(*args)                          call the learner's function there; args and result are wire values
    impl.value                           a constant's value (ANSWERS, predictions), as wire data
    impl.probe(function, *args)          run a trusted probe of the workshop package there, called as
                                         function(learner_attribute, *args); it crosses as its name
                                         (module:qualname, imported there) and returns wire values only;
                                         a call and a value are probes too (operator.call, None)
                                         (what a probe reports is said where the learner's code runs: a
                                         hostile learner can forge it; back verdicts by what the lab can
                                         recompute)
    impl.autograd_named()                autograd as the learner's source spells it (read here)
and every verdict is the lab's, made here from the values that came back. An error of the learner's code comes
back as LearnerCodeFailed (kind, the error, file:line), which LabContext.grading turns into the exercise's
failed check; the worker's death or silence past the wall limit likewise, after which a fresh worker answers
the next exercise.

One Worker per lab process: started at the first use, it loads the learner's file once (the text, checked here
first: source_check.py) and is started again after it died or was stopped.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workshop.foundations import lab_log
from workshop.foundations.worker_process import WorkerFault
from workshop.i18n import _
from workshop.learner import source_check

READY_S = 300.0  # seconds a fresh worker may take to start (a container, then `import torch`, on a busy host)
MAX_SOURCE = 2**20  # bytes of the learner's file read
LOAD_S = 120.0  # CPU seconds the learner's file may take to import


def said(text, limit: int = 2000) -> str:
    """What the worker said, as text fit for a check, a summary and a table: one line, printable, capped."""
    line = " ".join(str(text).split())
    line = "".join(c if c.isprintable() else "?" for c in line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


class LearnerCodeFailed(Exception):
    """The learner's code failed in the worker. kind: load (the file does not load), missing (it defines no such
    name), refused (the name is not the learner's own code, or the file breaks source_check's rules),
    not_started (a stub), error (an exception; or a value that cannot cross the wire), time, died; and workshop:
    the worker could not start or prepare (WorkerFault), before any of the learner's code ran: the workshop's own
    failure, which the exercise's check says is not theirs (failures.py). Its text (str: where, then error) is
    finished where it is raised: why the learner's code was not run, in one line that names the file and line,
    is the value of the exercise's failed check."""

    def __init__(self, kind: str, error: str, where: str | None = None):
        super().__init__(f"{where}: {error}" if where else error)
        self.kind, self.error, self.where = kind, error, where


def failed(reply: dict) -> LearnerCodeFailed:
    """The failure a worker's reply reports, its texts made safe to show (said); a name refused as code from
    elsewhere (kind refused: the name, and the file that defines it) said in the learner's words here, where it
    enters the lab's process: the worker speaks no language."""
    kind, error = said(reply.get("kind"), 20), said(reply.get("error"))
    where = said(reply["where"], 300) if reply.get("where") else None
    if kind == "refused":
        foreign = _(
            "`{name}` is not your own code ({what}): the workshop's own code is not an answer"
        )
        error, where = foreign.format(name=error, what=f"{error} is defined in {where}"), None
    return LearnerCodeFailed(kind, error, where)


@dataclass
class LearnerFile:
    """The learner's <lab>.py as the lab's process read it: its text, the name it is shown by, its header."""

    source: str
    filename: str  # as the learner knows it: my-work/autograd.py
    header: str  # the imports it may make: the header `exercises init` wrote

    @classmethod
    def read(cls, path: Path, shown_as: str, header: str) -> LearnerFile:
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE + 1)
        if len(data) > MAX_SOURCE:
            raise LearnerCodeFailed("load", f"the file is over {MAX_SOURCE} bytes")
        return cls(data.decode("utf-8", "replace"), shown_as, header)

    def refusals(self) -> list[source_check.Finding]:
        """What in the text keeps it from running (source_check.file_findings; SyntaxError propagates)."""
        return source_check.file_findings(self.source, self.header)


class Worker:
    """The lab process's side of the worker: `ask` one request, get one reply; restarts a dead worker. A file
    the lab's reading refuses (source_check) never reaches a worker: none is started for it."""

    def __init__(self, launcher, device: str, learner: LearnerFile):
        self.launcher, self.device, self.learner = launcher, device, learner
        self.channel = None  # a wire.Channel while the worker runs
        self.loaded = False  # it said it was ready and has the learner's file
        # why every request fails, each time as a failure of its own: the file refused by the lab's reading (no
        # worker is started for it), failing to load in the worker, or a worker that could not start (the
        # workshop's failure, kind workshop)
        self.refused = self._refused()

    def _refused(self) -> LearnerCodeFailed | None:
        try:
            refusals = self.learner.refusals()
        except SyntaxError as e:  # a failure to load, at its line
            return LearnerCodeFailed(
                "load", f"SyntaxError: {e.msg}", f"{self.learner.filename}:{e.lineno}"
            )
        if not refusals:
            return None
        why = _(
            "{what} is not allowed in your file: it may import only what its header imports, "
            "and nothing that reaches past the exercise (eval, getattr, __globals__, sys, ...)"
        )
        where = f"{self.learner.filename}:{refusals[0].line}"
        return LearnerCodeFailed("refused", why.format(what=refusals[0].what), where)

    def refuse_imported(self, names: list[str]) -> None:
        """LearnerCodeFailed ("refused") when the learner's file binds one of `names` by an import: the workshop's
        own code is not an answer (a file refused already is not read again)."""
        for name in names if self.refused is None else ():
            statement = source_check.imported_as(self.learner.source, name)
            if statement is not None:
                where = f"{self.learner.filename}:{statement.lineno}"
                why = _(
                    "`{name}` is imported, not written in your file: the workshop's own code is not an answer"
                )
                raise LearnerCodeFailed("refused", why.format(name=name), where)

    def begin(self) -> None:
        """Start the worker without waiting for it: its interpreter and torch load while the lab prepares (a
        container's start and `import torch` take seconds). The launcher starts it before this process imports
        torch (wire does): the two imports then run at once, on two cores."""
        if self.channel is None and self.refused is None:
            try:
                read_fd, write_fd = self.launcher.start()
            except WorkerFault as e:
                self.refused = LearnerCodeFailed("workshop", f"the worker: {e}")
                return
            # torch: imported where a lab runs, never by `workshop list`
            from workshop.learner import wire

            self.channel = wire.Channel(read_fd, write_fd, self.device)

    def _start(self) -> None:
        """Start the worker, wait for its first word (ready, or why it cannot work: its folders, see
        worker.scratch_problem), then give it the device and the learner's file (read here and found runnable).
        A worker that fails before it is ready has run none of the learner's code: the fault is the workshop's
        (kind workshop)."""
        from workshop.learner import wire

        self.begin()
        if self.refused is not None:  # it could not even start
            return
        try:
            hello = self.channel.receive(time.monotonic() + READY_S)
            why = None if hello.get("ok") else said(hello.get("error"))
        except wire.WireError as e:
            how = self.launcher.ended() or str(e)
            tail = " | ".join(said(line, 300) for line in self.launcher.tail()[-3:])
            why = f"it ended before it was ready ({how}): {tail}"
        if why is not None:
            self.stop()
            raise LearnerCodeFailed("workshop", f"the worker: {why}")
        allowed = sorted(source_check.allowed_imports(self.learner.header), key=str)
        request = {
            "op": "load",
            "device": self.device,
            "source": self.learner.source,
            "filename": self.learner.filename,
            "allowed": [list(pair) for pair in allowed],
            "limit_s": LOAD_S,
        }
        reply = self._exchange(request, LOAD_S)
        self.refused = None if reply.get("ok") else failed(reply)
        self.loaded = True

    def ask(self, request: dict, limit_s: float | None) -> dict:
        """One request's reply ({"ok": ...}); LearnerCodeFailed where the worker failed it: a file refused or
        failing to load fails every request for it, each time as a failure of its own."""
        if not self.loaded and self.refused is None:
            self._start()
        if self.refused is not None:
            raise LearnerCodeFailed(self.refused.kind, self.refused.error, self.refused.where)
        return self._exchange(request, limit_s)

    def _exchange(self, request: dict, limit_s: float | None) -> dict:
        """The reply to one request, waited for at most its wall limit: the worker's own CPU-time limit
        (limit_s) ends an honest endless loop first; this one ends a sleep, a disabled timer, a stuck native
        call."""
        from workshop.learner import wire

        wall_s = None if limit_s is None else 2 * limit_s + 15
        deadline = None if wall_s is None else time.monotonic() + wall_s
        try:
            self.channel.send(request, deadline)
            return self.channel.receive(deadline)
        except wire.ChannelTimeout:
            self.stop()
            raise LearnerCodeFailed("time", f"no answer after {wall_s:g} s (wall clock)") from None
        except wire.WireError as e:
            how = self.launcher.ended()
            self.stop()
            if how is None:
                raise LearnerCodeFailed("error", f"the worker broke the protocol: {e}") from None
            # file:line in the learner's file of the last stack the dead worker printed (faulthandler)
            found = lab_log.last_frame(
                self.launcher.tail(), lambda file: file == self.learner.filename
            )
            raise LearnerCodeFailed(
                "died", how, f"{found[0]}:{found[1]}" if found else None
            ) from None

    def stop(self) -> None:
        self.launcher.stop()
        self.channel, self.loaded = None, False


class LocalWorker:
    """The reference's worker: the lab's own process answers, with the worker's own code (worker.Session) and
    every request and reply through the wire's encoding, so that a lab's grading that works on the reference
    works on the learner's code in a worker process. No process of its own: the reference is the lab's own
    code, and a worker process costs seconds per lab (measured: a run of the autograd lab took 7-17 s more).
    It never runs the learner's code."""

    learner = None

    def __init__(self, device: str):
        from workshop.learner.worker import Session

        self.device, self.session = device, Session(device, reraise=True)

    def ask(self, request: dict, limit_s: float | None) -> dict:
        from workshop.learner import wire

        if "attributes" in request["target"]:
            raise ValueError("the learner's code runs in a worker process, never in the lab's")
        reply = self.session.handle(wire.loads(wire.dumps(request), self.device))
        return wire.loads(wire.dumps(reply), self.device)

    def stop(self) -> None:
        """Nothing runs apart from the lab's process."""


@dataclass
class Solution:
    """One exercise's implementation in the worker (the learner's attribute, or the reference), or the pieces of
    a lab that one probe builds on (LabContext.probe)."""

    worker: Worker | LocalWorker
    # the learner's {"attributes": [NAME, ...]}, or {"references": {NAME: "module:attr"}}; "one": True where it is
    # one exercise's (a probe then gets the piece itself, not {NAME: piece})
    target: dict
    limit_s: float | None = None  # CPU seconds per call (the exercise's)

    def probe(self, function: Callable | None, *args):
        """function(the target, *args) in the worker: a module-level function, sent by name; None: the target's
        value itself."""
        # data only, made a wire value as it is sent (wire.dumps)
        request = {
            "op": "probe",
            "target": self.target,
            "args": list(args),
            "limit_s": self.limit_s,
            "probe": None if function is None else f"{function.__module__}:{function.__qualname__}",
        }
        reply = self.worker.ask(request, self.limit_s)
        if not reply.get(
            "ok"
        ):  # the reference's own failure is the lab's bug, said as the learner's would be
            raise failed(reply)
        return reply.get("value")

    def __call__(self, *args):
        return self.probe(operator.call, *args)

    @property
    def value(self):
        return self.probe(None)

    def autograd_named(self) -> list[source_check.Finding]:
        """Autograd as the learner's source spells it in this function and what it uses (read here, in the
        lab's process: source_check.autograd_uses); nothing for the reference."""
        learner = getattr(self.worker, "learner", None)
        if learner is None or "attributes" not in self.target:
            return []
        return source_check.autograd_uses(learner.source, self.target["attributes"][0])


def solution_for(
    worker: Worker | LocalWorker, exercises: list, graded: bool, one: bool = True
) -> Solution:
    """The Solution of `exercises` (a grading block's: one; a probe's over several pieces: one=False): the
    learner's attributes when a workspace is graded (refused here when the file binds one by an import: the
    workshop's own code), under the longest of their time limits; else the references."""
    if not graded:
        return Solution(
            worker, {"references": {ex.attribute: ex.reference for ex in exercises}, "one": one}
        )
    attributes = [ex.attribute for ex in exercises]
    worker.refuse_imported(attributes)
    return Solution(
        worker, {"attributes": attributes, "one": one}, max(ex.time_limit_s for ex in exercises)
    )
