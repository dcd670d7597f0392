"""What a lab is (LabSpec), and what it gets when it runs (LabContext): checks, exercises, artifacts, summary.

A lab is one package under workshop/labs/ whose __init__.py defines `LAB = LabSpec(...)`. The spec is cheap to
import (no torch); `entry` is the function that does the work: a small function of the lab's __init__.py that
imports the lab's module inside it, so that the module (and torch) is imported only in the lab's own process.
It takes a LabContext, records checks with ctx.check_*(), grades the learner's exercises with the one engine
(`engine.grade(ctx, name, truth)`, workshop/engine.py, which opens `with ctx.grading(name) as impl:`), writes
artifacts with ctx.write_*(), and renders its summary from the template beside its code with
ctx.render_summary(...); the lab's process (harness.child) turns that into
result.json and summary.md. The run's options are ctx.options (foundations.run_options.RunOptions): its device
("cpu" or "cuda"), n_procs (--n), seed, work (the learner's workspace; None runs the reference), lang,
checkpoint (--checkpoint: the learner's MiniGPT; None: the shipped one), ...

A lab that cannot run on some machines says why before anything starts: `precondition`, a function called as
function(n_procs, device) by the command that starts a run, returns one line (the problem and the
fix) or None.

Grading only some exercises (`check LAB EXERCISE`, `--only`): the run's options name them, ctx.wants(name)
says whether this run grades an exercise, and the grading block of one it does not grade records nothing
(its first use of the implementation ends it). A lab skips the work that serves only unwanted exercises:

    if ctx.wants("answers"):
        facts = measure_facts(cases)            # needed by the answers alone
        engine.grade(ctx, "answers", asdict(facts))

Re-grading from a run (an Exercise declared `from_run=True`): when every exercise `check LAB EXERCISE` names
is graded from a run's artifacts and the lab declares `regrade`, the learner's latest run of the lab is graded
again instead of running the lab (harness.child.regrade; the output names the run). `regrade` is a function,
called as function(ctx, lab_dir) with the earlier run's lab folder: it measures the truths
from the files that run wrote for the learner to read (never from a file keyed by question: that would be an
answer key) and grades the wanted exercises as the lab does:

    def regrade(ctx: LabContext, lab_dir: Path) -> None:
        facts = facts_from(lab_dir / "graph.json")          # the run's own artifact
        engine.grade(ctx, "answers", asdict(facts))
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workshop import labs
from workshop.declarations.checks import (
    Check,
    all_passed,
    exercise_status,
    masked,
    outcome,
    reported,
)
from workshop.declarations.exercise import Exercise, SkipGrading, StandIn
from workshop.foundations import atomic, lab_log, worker_container, worker_process
from workshop.foundations.interrupt import exercise_limit
from workshop.foundations.run_options import RunOptions
from workshop.i18n import N_, _, templates
from workshop.learner import failures, learner_code, workspace

__all__ = ["Check", "LabContext", "LabSpec", "StandIn"]

# Why a module that a lab needs can be missing, said when it is (LabSpec.needs).
WHY_MISSING = {"triton": N_("Triton has builds for Linux only, none for macOS or native Windows")}
# in the lab's folder: what the learner's worker printed (capped, never parsed)
WORKER_LOG = "worker.log"


@dataclass(frozen=True)
class LabSpec:
    name: str
    order: int  # position in a full run
    title: str  # one line for `python -m workshop list`
    entry: Callable[[LabContext], None]  # imports the lab's module inside it (see above)
    # optional, for `python -m workshop bench NAME`: bench(out_dir) -> exit status or None
    bench: Callable[[Path], int | None] | None = None
    # the runner stops a lab that runs longer (an endless loop in learner code)
    time_limit_s: float = 900.0

    # Modules the lab cannot run without that a platform may lack (keys of WHY_MISSING): where one is missing,
    # the runner fails the lab with one line that says so and points to Docker, instead of a traceback.
    needs: tuple[str, ...] = ()
    # function(n_procs, device) -> why this machine cannot run the lab, or None (see above)
    precondition: Callable[[int, str], str | None] | None = None
    # function(ctx, lab_dir) grades the from_run exercises against an earlier run's lab folder, from its files
    # (see above)
    regrade: Callable[[LabContext, Path], None] | None = None
    # Inductor's cache kept between runs (harness.runner.build_cache): the C++ build products of the lab's own,
    # trusted compiles (a lab that wants fresh generated code turns Inductor's FX-graph and AOT caches off)
    build_cache: bool = False
    # torch's CPU threads in the lab's process and its learner's worker (OMP_NUM_THREADS), or None: torch's own
    # count, one per core. 1 for a lab whose tensors are tiny: a second thread buys nothing there, and on a small
    # shared machine its hand-offs cost more than the work (harness.runner.lab_environment)
    cpu_threads: int | None = None

    def missing(self) -> list[str]:
        """The modules of `needs` that this Python cannot import (looked up, not imported)."""
        return [module for module in self.needs if importlib.util.find_spec(module) is None]

    def problem(self, options: RunOptions) -> str | None:
        """Why this machine cannot run the lab with these options (its precondition), or None."""
        return self.precondition(options.n_procs, options.device) if self.precondition else None

    def limit_s(self, options: RunOptions) -> float:
        """The lab's time limit in this run: --time-limit, else the lab's own."""
        return options.time_limit_s or self.time_limit_s


@dataclass
class LabContext:
    name: str
    out_dir: Path  # results/<run-id>/<lab>/, already created and empty
    options: RunOptions
    checks: list[Check] = field(default_factory=list)
    summary: str = ""  # Markdown: what this run found; the runner appends the checks table
    extra: dict = field(default_factory=dict)  # merged into result.json
    # the exercise whose grading block is running, whose checks are being recorded (None outside one)
    current_exercise: Exercise | None = None
    # the process the learner's code runs in (worker, below), or the lab's own for the reference
    _worker: object | None = None

    # ---- checks: each compares a measured value with a threshold, so each one can fail ----
    def check_max(self, name: str, value: float, threshold: float, message=None, **marks) -> Check:
        """Passes when value <= threshold (errors, times). NaN fails. marks: diagnosis=, secret= (Check)."""
        value = float(value)
        return self.record(
            Check(
                name, value <= threshold, value, threshold, message=message, relation="<=", **marks
            )
        )

    def check_min(self, name: str, value: float, threshold: float, message=None, **marks) -> Check:
        """Passes when value >= threshold (accuracies, bandwidths). NaN fails."""
        value = float(value)
        return self.record(
            Check(
                name, value >= threshold, value, threshold, message=message, relation=">=", **marks
            )
        )

    def check_equal(self, name: str, value, expected, message=None, **marks) -> Check:
        return self.record(
            Check(name, value == expected, value, expected, message=message, **marks)
        )

    def record(self, check: Check) -> Check:
        """Record a check made elsewhere (engine.grade_answers), for the exercise being graded; print its line (to
        log.txt: the screen of a run shows the failing ones from result.json, cli.runs). A failing secret check is
        recorded as its miss (declarations.checks.masked) unless the run shows secrets."""
        if self.current_exercise is not None and not self.wants(self.current_exercise.name):
            raise SkipGrading
        if not self.options.show:
            check = masked(check)
        check.exercise = self.current_exercise.id if self.current_exercise else None
        self.checks.append(check)
        width = max(len(_("ok")), len(_("FAIL")))
        mark = (_("ok") if check.passed else _("FAIL")).ljust(width)
        print(f"[{self.name}] {mark} {outcome(check.as_dict())}", flush=True)
        if check.message and not check.passed:
            print(f"[{self.name}]      {check.message}", flush=True)
        return check

    def step(self, what: str, done: int, total: int) -> None:
        """Say how far a long part of the lab is (`done` of `total` of `what`): the screen of a run shows it as a
        live line (foundations.lab_log)."""
        print(lab_log.step(self.name, what, done, total), flush=True)

    @property
    def passed(self) -> bool:
        return all_passed(self.checks)

    # ---- exercises: the learner's code (or the reference) graded by the checks recorded in a block ----
    def exercise(self, name: str) -> Exercise:
        for ex in labs.exercises(self.name):
            if ex.name == name:
                return ex
        raise KeyError(f"lab {self.name} declares no exercise {name!r} (see its exercises.py)")

    @property
    def graded(self) -> bool:
        """True when the learner's workspace is being graded (not the reference)."""
        return self.options.work is not None

    def wants(self, name: str) -> bool:
        """Whether this run grades exercise `name` (`check LAB EXERCISE`, --only: the others are skipped). A lab
        may skip work that serves only exercises it does not want: `if ctx.wants("answers"): ...`."""
        return not self.options.only or f"{self.name}.{name}" in self.options.only

    def solution(self, ex: Exercise):
        """The learner's version of the exercise when grading a workspace, else the reference: for code, a handle
        on it in the worker (learner/learner_code.py; the worker protocol), which runs the reference too; for a
        document, its path (read here, as text). Tests that plant a learner's solution replace it."""
        # an exercise that killed an earlier attempt of the lab (harness.runner.run_lab): failed, not run again
        if ex.id in self.options.skip:
            raise failures.ProcessDied(self.options.skip[ex.id])
        if ex.document is None:
            return learner_code.solution_for(self.worker(), [ex], self.graded)
        return (
            workspace.document(self.options.work, self.name, ex)
            if self.graded
            else ex.load_reference()
        )

    @contextlib.contextmanager
    def grading(self, exercise_or_name: Exercise | str):
        """Grade one exercise: yields its implementation; every check recorded inside counts for it.

        For code, the implementation is a handle on the learner's code in the worker process (the worker protocol:
        wire values, probes; learner/learner_code.py, worker below): none of it runs in this process. For a
        document, its path.

        With the learner's code, an exception ends only this exercise, recorded as a failed check that names
        the file and line (a stub's NotImplementedError: "not started"; an endless loop: the exercise's time
        limit); the lab goes on with the next one. With the reference, an exception is the lab's own bug and
        propagates. The block's start and end are printed (foundations.lab_log), so that the runner can name the
        exercise if the process dies inside it. An exercise this run does not grade (wants) yields a stand-in
        (declarations.exercise.StandIn) that raises SkipGrading: the block ends at its first use, and nothing is
        recorded.
        """
        ex = (
            exercise_or_name
            if isinstance(exercise_or_name, Exercise)
            else self.exercise(exercise_or_name)
        )
        if self.current_exercise is not None:
            raise RuntimeError(
                f"grading {ex.id} inside {self.current_exercise.id}: grade one exercise at a time"
            )
        self.current_exercise = ex
        try:
            if not self.wants(ex.name):
                with contextlib.suppress(SkipGrading):
                    yield StandIn(SkipGrading())
                return
            print(lab_log.started(self.name, ex.id), flush=True)
            # the screen's live line: which exercise, of how many
            ids = [e.id for e in labs.exercises(self.name)]
            if ex.id in ids:
                self.step(
                    _("grading {exercise}").format(exercise=ex.id), ids.index(ex.id) + 1, len(ids)
                )
            # the workspace file the learner writes the exercise in (None for the reference)
            path = (
                None
                if not self.graded
                else workspace.lab_file(self.options.work, self.name)
                if ex.attribute
                else self.options.work / ex.document
            )
            try:
                # a document is read here, under the exercise's limit; in the worker the learner's code has
                # limits of its own, and here this would time the lab's own work
                with exercise_limit(ex.time_limit_s if self.graded and ex.document else None):
                    try:
                        impl = self.solution(ex)
                    except failures.UNAVAILABLE as e:
                        impl = StandIn(e)  # the block runs; its first use of impl ends the exercise
                    yield impl
            except BaseException as e:
                failed = failures.learner_failure(ex, e, self.graded, path)
                if failed is None:
                    if self.graded and not isinstance(e, GeneratorExit):
                        # stopped from outside (the lab's time limit, a signal): where the learner's code was
                        self.record(
                            failures.failed_check(
                                "stopped",
                                ex.id,
                                f"{workspace.where(e, path)}: {workspace.describe(e)}",
                            )
                        )
                    raise
                self.record(failed)
            finally:
                status = exercise_status([c for c in self.checks if c.exercise == ex.id])
                print(lab_log.ended(self.name, ex.id, status), flush=True)
        finally:
            self.current_exercise = None

    def probe(self, function: Callable, *args, attributes: tuple[str, ...]):
        """The worker protocol over several pieces at once, outside any one exercise's block: the trusted probe
        `function` (a module-level function of the workshop) runs in the worker as function({attribute: piece},
        *args), the pieces the learner's (the references' when no workspace is graded), and returns wire values.
        Raises LearnerCodeFailed: kind "missing" names every missing piece ("a, b"), "not_started" a stub, the
        rest as a block's."""
        exercises = [
            ex for name in attributes for ex in labs.exercises(self.name) if ex.attribute == name
        ]
        try:
            found = self.worker()
        except workspace.LearnerError:  # no <lab>.py: every piece is missing
            path = workspace.display(workspace.lab_file(self.options.work, self.name))
            raise learner_code.LearnerCodeFailed("missing", ", ".join(attributes), path) from None
        return learner_code.solution_for(found, exercises, self.graded, one=False).probe(
            function, *args
        )

    # ---- the worker: the one process where the learner's code runs (learner/learner_code.py) ----
    def worker(self) -> learner_code.Worker | learner_code.LocalWorker:
        """The lab's worker, one per lab process: a process for the learner's code (given their <lab>.py as text),
        the lab's own process for the reference (learner_code.LocalWorker). LearnerError, before any worker
        starts, when a graded workspace has no <lab>.py."""
        if self._worker is None and not self.graded:
            self._worker = learner_code.LocalWorker(self.options.device)
        elif self._worker is None:
            path = workspace.lab_file(self.options.work, self.name)
            if not path.is_file():
                raise workspace.LearnerError(
                    _("{file} does not exist: run `{command}`").format(
                        file=workspace.display(path),
                        command=f"python -m workshop exercises init {workspace.display(self.options.work)}",
                    )
                )
            # the file's header: the imports it may make
            learner = learner_code.LearnerFile.read(
                path, workspace.display(path), labs.workspace_header(self.name)
            )
            self._worker = learner_code.Worker(self.launcher(), self.options.device, learner)
        return self._worker

    def launcher(self) -> worker_container.ContainerWorker | worker_process.NativeWorker:
        """Which worker process runs the learner's code: a container of the run's worker_image (`grade` asks for
        the learner edition's image where Docker works), else a process of this machine, in the namespace
        sandbox where `grade` asks for it (the learner edition's code, the hand-ins and results hidden), on the
        learner edition's code where the run names it (check), else on this one's."""
        log = self.path(WORKER_LOG)
        if self.options.worker_image:
            return worker_container.ContainerWorker(
                self.options.device, log, image=self.options.worker_image
            )
        box = self.options.namespace_sandbox or {}
        root = box.get("code") or self.options.learner_edition
        hidden = tuple(box["hidden"]) if box else None
        return worker_process.NativeWorker(
            self.options.device, log, root=Path(root) if root else None, hidden=hidden
        )

    def stop_worker(self) -> None:
        """Stop the worker (and whatever the learner's code left running), when the lab ends."""
        if self._worker is not None:
            self._worker.stop()

    def exercise_results(self) -> dict[str, dict]:
        """Exercise id -> its entry in result.json (Exercise.result), for every exercise of the lab: its status,
        its checks, the check it reports (checks.reported: a diagnosis first), and the hints the learner took
        (`check LAB EXERCISE --hint`, counted in the workspace's record)."""
        taken = (workspace.uses(self.options.work, "hints") or {}) if self.graded else {}
        out = {}
        for ex in labs.exercises(self.name):
            mine = [c for c in self.checks if c.exercise == ex.id]
            out[ex.id] = ex.result(
                exercise_status(mine), [c.name for c in mine], reported(mine), taken.get(ex.id, 0)
            )
        return out

    # ---- the summary: the lab's template filled with this run's values ----
    @property
    def templates_folder(self) -> Path:
        """The lab's templates/ (in its folder): its summary and any other page it renders."""
        return labs.folder(self.name) / "templates"

    def render_summary(self, **values) -> str:
        """Render the lab's summary.md.j2 (or its translation) with `values`; sets ctx.summary."""
        values.setdefault("device", self.options.device)
        self.summary = templates.render(self.templates_folder, self.options.lang, values)
        return self.summary

    # ---- artifacts, all written atomically under out_dir ----
    def path(self, name: str) -> Path:
        return self.out_dir / name

    def write_json(self, name: str, obj) -> Path:
        return atomic.write_json(self.path(name), obj)

    def write_text(self, name: str, text: str) -> Path:
        return atomic.write_text(self.path(name), text)

    def save_figure(self, name: str, fig) -> Path:
        return atomic.save_figure(self.path(name), fig)
