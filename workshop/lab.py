"""What a lab is (LabSpec), and what it gets when it runs (LabContext): checks, exercises, artifacts, summary.

A lab is one package under workshop/labs/ whose __init__.py defines `LAB = LabSpec(...)`. The spec is cheap to
import (no torch); `entry` names the function that does the work, imported only in the lab's own process.
That function takes a LabContext, records checks with ctx.check_*(), grades the learner's exercises inside
`with ctx.grading(name) as impl:`, writes artifacts with ctx.write_*(), and renders its summary from the
template beside its code with ctx.render_summary(...); the lab's process (harness.child) turns that into
result.json and summary.md. The run's options (device, --n, seed, workspace, ...) are ctx.options
(harness.options.RunOptions); ctx.device, ctx.n_procs, ... read them.

A lab that cannot run on some machines says why before anything starts: `precondition`, "module:function"
called as function(n_procs, device) by the command that starts a run, returns one line (the problem and the
fix) or None.
"""

from __future__ import annotations

import contextlib
import importlib.util
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from workshop import labs
from workshop.grading import failures, sandbox, workspace
from workshop.grading.checks import Check, all_passed, exercise_status
from workshop.grading.exercise import Exercise
from workshop.harness import atomic, lab_log
from workshop.harness.options import RunOptions
from workshop.harness.time_limit import exercise_limit
from workshop.i18n import N_, _, templates

__all__ = ["Check", "LabContext", "LabSpec", "Unavailable"]

# Why a module that a lab needs can be missing, said when it is (LabSpec.needs).
WHY_MISSING = {"triton": N_("Triton has builds for Linux only, none for macOS or native Windows")}


@dataclass(frozen=True)
class LabSpec:
    name: str
    order: int  # position in a full run
    title: str  # one line for `python -m workshop list`
    entry: str  # "module:function", called with a LabContext
    bench: str | None = None  # optional "module:function" for `python -m workshop bench NAME`
    # the runner stops a lab that runs longer (an endless loop in learner code)
    time_limit_s: float = 900.0

    # Modules the lab cannot run without that a platform may lack (keys of WHY_MISSING): where one is missing,
    # the runner fails the lab with one line that says so and points to Docker, instead of a traceback.
    needs: tuple[str, ...] = ()
    # "module:function": function(n_procs, device) -> why this machine cannot run the lab, or None (see above)
    precondition: str | None = None

    def load(self, what: str = "entry"):
        return pkgutil.resolve_name(getattr(self, what))

    def missing(self) -> list[str]:
        """The modules of `needs` that this Python cannot import (looked up, not imported)."""
        return [module for module in self.needs if importlib.util.find_spec(module) is None]

    def problem(self, options: RunOptions) -> str | None:
        """Why this machine cannot run the lab with these options (its precondition), or None."""
        return (
            self.load("precondition")(options.n_procs, options.device)
            if self.precondition
            else None
        )

    def limit_s(self, options: RunOptions) -> float:
        """The lab's time limit in this run: --time-limit, else the lab's own."""
        return options.time_limit_s or self.time_limit_s


class Unavailable:
    """Stands for a learner's solution that could not be loaded: any use raises the reason."""

    def __init__(self, error: Exception):
        self.error = error

    def _raise(self, *args, **kwargs):
        raise self.error

    __call__ = __getitem__ = __iter__ = __len__ = __fspath__ = __getattr__ = _raise


@dataclass
class LabContext:
    name: str
    out_dir: Path  # results/<run-id>/<lab>/, already created and empty
    options: RunOptions
    # exercise id -> how it killed an earlier attempt (harness.runner.run_lab): failed, not run again
    skip: dict[str, str] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    summary: str = ""  # Markdown: what this run found; the runner appends the checks table
    extra: dict = field(default_factory=dict)  # merged into result.json
    _grading: Exercise | None = None  # the exercise whose checks are being recorded
    # the loaded <lab>.py, or why it would not load
    _learner: ModuleType | workspace.LearnerError | None = None
    # the process the learner's code runs in (grading/sandbox.py), or the lab's own for the reference
    _worker: object | None = None

    # ---- the run's options (harness.options.RunOptions) ----
    @property
    def device(self) -> str:
        """ "cpu" or "cuda"."""
        return self.options.device

    @property
    def n_procs(self) -> int:
        """--n: processes for the distributed demos."""
        return self.options.n_procs

    @property
    def seed(self) -> int:
        return self.options.seed

    @property
    def work(self) -> Path | None:
        """The learner's workspace, whose <lab>.py is graded; None runs the reference."""
        return self.options.work

    @property
    def lang(self) -> str:
        """The language of the summary and the messages."""
        return self.options.lang

    @property
    def checkpoint(self) -> Path | None:
        """--checkpoint: the learner's MiniGPT; None: the shipped minigpt.pt."""
        return self.options.checkpoint

    # ---- checks: each compares a measured value with a threshold, so each one can fail ----
    def check_max(
        self, name: str, value: float, threshold: float, message: str | None = None
    ) -> Check:
        """Passes when value <= threshold (errors, times). NaN fails."""
        value = float(value)
        return self._add(Check(name, value <= threshold, value, threshold, message=message))

    def check_min(
        self, name: str, value: float, threshold: float, message: str | None = None
    ) -> Check:
        """Passes when value >= threshold (accuracies, bandwidths). NaN fails."""
        value = float(value)
        return self._add(Check(name, value >= threshold, value, threshold, message=message))

    def check_equal(self, name: str, value, expected, message: str | None = None) -> Check:
        return self._add(Check(name, value == expected, value, expected, message=message))

    def _add(self, check: Check) -> Check:
        check.exercise = self._grading.id if self._grading else None
        self.checks.append(check)
        width = max(len(_("ok")), len(_("FAIL")))
        mark = (_("ok") if check.passed else _("FAIL")).ljust(width)
        line = _("{name}: {value} (threshold {threshold})").format(
            name=check.name, value=repr(check.value), threshold=repr(check.threshold)
        )
        print(f"[{self.name}] {mark} {line}", flush=True)
        if check.message and not check.passed:
            print(f"[{self.name}]      {check.message}", flush=True)
        return check

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
        return self.work is not None

    def solution(self, ex: Exercise, worker: bool = False):
        """The learner's version of the exercise when grading a workspace, else the reference. worker=True: a
        handle on it in the worker (grading/solution.py; contract 6), which runs the reference too."""
        if worker and not ex.document:
            if ex.id in self.skip:
                raise failures.ProcessDied(self.skip[ex.id])
            return sandbox.implementation(self, ex)
        if not self.graded:
            return ex.load_reference()
        if self.options.worker_image and not ex.document:
            raise failures.NotIsolated(ex.id)
        if ex.id in self.skip:
            raise failures.ProcessDied(self.skip[ex.id])
        if ex.document:
            return self.document(ex)
        if self._learner is None:
            try:
                self._learner = workspace.load_lab_module(self.work, self.name)
            except workspace.LearnerError as e:
                self._learner = e
        if isinstance(self._learner, workspace.LearnerError):
            raise self._learner
        if not hasattr(self._learner, ex.attribute):
            path = workspace.display(workspace.lab_file(self.work, self.name))
            raise workspace.LearnerError(
                _("{file} defines no `{name}` (exercise {id})").format(
                    file=path, name=ex.attribute, id=ex.id
                )
            )
        return getattr(self._learner, ex.attribute)

    def document(self, ex: Exercise) -> Path:
        """The learner's document; NotImplementedError ("not started") while it is not written."""
        path = self.work / ex.document
        if not path.is_file():
            how = (
                _("`python -m workshop check {lab}` writes its start from this run")
                if ex.template
                else _("`python -m workshop exercises init --lab {lab}` writes its start")
            )
            raise NotImplementedError(
                _("{id}: {file} is not written yet: {how}").format(
                    id=ex.id, file=workspace.display(path), how=how.format(lab=self.name)
                )
            )
        return path

    @contextlib.contextmanager
    def grading(self, exercise_or_name: Exercise | str, worker: bool = False):
        """Grade one exercise: yields its implementation; every check recorded inside counts for it.

        worker=True, for a lab whose grading speaks contract 6 (wire values, probes): the implementation is a
        handle on the learner's code in the worker process (grading/solution.py, grading/sandbox.py). Until
        every lab speaks it, the others get the learner's code in this process (worker=False).

        With the learner's code, an exception ends only this exercise, recorded as a failed check that names
        the file and line (a stub's NotImplementedError: "not started"; an endless loop: the exercise's time
        limit); the lab goes on with the next one. With the reference, an exception is the lab's own bug and
        propagates. The block's start and end are printed (harness.lab_log), so that the runner can name the
        exercise if the process dies inside it.
        """
        ex = (
            exercise_or_name
            if isinstance(exercise_or_name, Exercise)
            else self.exercise(exercise_or_name)
        )
        if self._grading is not None:
            raise RuntimeError(
                f"grading {ex.id} inside {self._grading.id}: grade one exercise at a time"
            )
        self._grading = ex
        print(lab_log.started(self.name, ex.id), flush=True)
        try:
            # in the worker the learner's code has limits of its own; here this would time the lab's own work
            with exercise_limit(ex.time_limit_s if self.graded and not worker else None):
                try:
                    impl = self.solution(ex, worker)
                except failures.UNAVAILABLE as e:
                    impl = Unavailable(e)  # the block runs; its first use of impl ends the exercise
                yield impl
        except failures.NotIsolated:
            self.extra.setdefault("not_isolated", []).append(ex.id)
        except BaseException as e:
            failed = failures.learner_failure(ex, e, self.graded, self._learner_path(ex))
            if failed is None:
                if self.graded and not isinstance(e, GeneratorExit):
                    # the lab's time limit, an interrupt
                    self._add(failures.cut_short(ex, e, self._learner_path(ex)))
                raise
            self._add(failed)
        finally:
            self._grading = None
            status = exercise_status([c for c in self.checks if c.exercise == ex.id])
            print(lab_log.ended(self.name, ex.id, status), flush=True)

    def probe(self, function: str, *args, attributes: tuple[str, ...]):
        """Contract 6 over several pieces at once, outside any one exercise's block: the trusted probe
        "module:function" runs in the worker as function({attribute: piece}, *args), the pieces the learner's
        (the references' when no workspace is graded), and returns wire values. Raises LearnerCodeFailed:
        kind "missing" names every missing piece ("a, b"), "not_started" a stub, the rest as a block's."""
        return sandbox.probe(self, function, args, attributes)

    def _learner_path(self, ex: Exercise) -> Path | None:
        """The workspace file the learner writes this exercise in (None for the reference)."""
        if not self.graded:
            return None
        return workspace.lab_file(self.work, self.name) if ex.attribute else self.work / ex.document

    def exercise_results(self) -> dict[str, dict]:
        """Exercise id -> its entry in result.json (Exercise.result), for every exercise of the lab."""
        out = {}
        for ex in labs.exercises(self.name):
            mine = [c for c in self.checks if c.exercise == ex.id]
            failed = next((c for c in mine if not c.passed), None)
            out[ex.id] = ex.result(exercise_status(mine), [c.name for c in mine], failed)
        return out

    # ---- the summary: the lab's template filled with this run's values ----
    @property
    def lab_folder(self) -> Path:
        return labs.folder(self.name)

    def render_summary(self, **values) -> str:
        """Render summary.md.j2 (or its translation) beside the lab's code with `values`; sets ctx.summary."""
        values.setdefault("device", self.device)
        self.summary = templates.render(self.lab_folder, self.lang, values)
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
