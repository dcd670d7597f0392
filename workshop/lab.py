"""What a lab is (LabSpec), and what it gets when it runs (LabContext): checks, exercises, artifacts, summary.

A lab is one package under workshop/labs/ whose __init__.py defines `LAB = LabSpec(...)`. The spec is cheap to
import (no torch); `entry` names the function that does the work, imported only in the lab's own process.
That function takes a LabContext, records checks with ctx.check_*(), grades the learner's exercises inside
`with ctx.grading(name) as impl:`, writes artifacts with ctx.write_*(), and renders its summary from the
template beside its code with ctx.render_summary(...); the runner turns that into result.json and summary.md.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from workshop import atomic, exercise, grading_markers, templates, workspace
from workshop.exercise import Exercise
from workshop.grading.solution import LearnerCodeFailed, learner_edition
from workshop.grading_markers import ProcessDied
from workshop.i18n import N_, _
from workshop.time_limit import TimeLimitExceeded, time_limit
from workshop.workspace import LearnerError

# Why a module that a lab needs can be missing, said when it is (LabSpec.needs).
WHY_MISSING = {"triton": N_("Triton has builds for Linux only, none for macOS or native Windows")}


@dataclass(frozen=True)
class LabSpec:
    name: str
    order: int  # position in a full run
    title: str  # one line for `python -m workshop list`
    entry: str  # "module:function", called with a LabContext
    bench: str | None = None  # optional "module:function" for `python -m workshop bench NAME`
    time_limit_s: float = (
        900.0  # the runner stops a lab that runs longer (an endless loop in learner code)
    )

    # Modules the lab cannot run without that a platform may lack (keys of WHY_MISSING): where one is missing,
    # the runner fails the lab with one line that says so and points to Docker, instead of a traceback.
    needs: tuple[str, ...] = ()

    def load(self, what: str = "entry"):
        return pkgutil.resolve_name(getattr(self, what))

    def missing(self) -> list[str]:
        """The modules of `needs` that this Python cannot import (looked up, not imported)."""
        return [module for module in self.needs if importlib.util.find_spec(module) is None]


@dataclass
class Check:
    name: str
    passed: bool
    value: object
    threshold: object
    exercise: str | None = None  # the id of the exercise this check grades
    message: str | None = None  # on failure: what the value says about the mistake, and what to do

    def as_dict(self) -> dict:
        value = self.value
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN/inf
        out = {
            "name": self.name,
            "passed": bool(self.passed),
            "value": value,
            "threshold": self.threshold,
        }
        if self.exercise:
            out["exercise"] = self.exercise
        if self.message and not self.passed:
            out["message"] = self.message
        return out


def all_passed(checks: list[Check]) -> bool:
    """A lab (or an exercise) passes when it recorded checks and every one passed."""
    return bool(checks) and all(c.passed for c in checks)


def exercise_status(checks: list[Check]) -> str:
    """How an exercise stands after its checks: not graded, passing, not started (a stub), or failing."""
    failed = next((c for c in checks if not c.passed), None)
    if not checks:
        return exercise.NOT_GRADED
    if failed is None:
        return exercise.PASSING
    # A stub's check records "not started" as its value, in the run's language.
    return exercise.NOT_STARTED if failed.value == _(exercise.NOT_STARTED) else exercise.FAILING


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
    device: str  # "cpu" or "cuda"
    n_procs: int  # --n: processes for the distributed demos
    seed: int
    work: Path | None = (
        None  # the learner's workspace: its <lab>.py is graded; None runs the reference
    )
    lang: str = "en"  # the language of the summary and messages
    checkpoint: Path | None = (
        None  # --checkpoint: the learner's MiniGPT; None: the shipped minigpt.pt
    )
    skip: dict[str, str] = field(
        default_factory=dict
    )  # exercise id -> how it killed an earlier attempt (runner.run_lab): failed, not run again
    checks: list[Check] = field(default_factory=list)
    summary: str = ""  # Markdown: what this run found; the runner appends the checks table
    extra: dict = field(default_factory=dict)  # merged into result.json
    _grading: Exercise | None = None  # the exercise whose checks are being recorded
    _learner: ModuleType | workspace.LearnerError | None = (
        None  # the loaded <lab>.py, or why it would not load
    )
    _worker: object | None = None  # the process the learner's code runs in (grading/sandbox.py)

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
        for ex in exercise.lab_exercises(self.name):
            if ex.name == name:
                return ex
        raise KeyError(f"lab {self.name} declares no exercise {name!r} (see its exercises.py)")

    @property
    def graded(self) -> bool:
        """True when the learner's workspace is being graded (not the reference)."""
        return self.work is not None

    def solution(self, ex: Exercise, worker: bool = False, watch: str | None = None):
        """The learner's version of the exercise when grading a workspace, else the reference. With worker=True
        a handle on it in the worker process (grading/solution.py), which runs the reference too."""
        if worker:
            if ex.id in self.skip:
                raise grading_markers.ProcessDied(self.skip[ex.id])
            from workshop.grading import sandbox  # torch, and the worker: only where a lab runs

            return sandbox.solution(self, ex, watch)
        if not self.graded:
            return ex.load_reference()
        if ex.id in self.skip:
            raise grading_markers.ProcessDied(self.skip[ex.id])
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
    def grading(
        self, exercise_or_name: Exercise | str, worker: bool = False, watch: str | None = None
    ):
        """Grade one exercise: yields its implementation; every check recorded inside counts for it.

        worker=True (the lab's grading speaks contract 6: wire values, probes): the implementation lives in the
        worker process (grading/solution.py), watched there for autograd when watch says so ("autograd": none
        at all; "engine": no engine run, grad_fn nodes called by hand allowed).

        With the learner's code, an exception ends only this exercise, recorded as a failed check that names
        the file and line (a stub's NotImplementedError: "not started"; an endless loop: the exercise's time
        limit); the lab goes on with the next one. With the reference, an exception is the lab's own bug and
        propagates. The block's start and end are printed (grading_markers), so that the runner can name the
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
        print(grading_markers.started(self.name, ex.id), flush=True)
        try:
            # in the worker the learner's code has its own limits; here it would time the lab's own work
            with time_limit(ex.time_limit_s if self.graded and not worker else None):
                try:
                    impl = self.solution(ex, worker, watch)
                except (LearnerError, LearnerCodeFailed, ProcessDied, NotImplementedError) as e:
                    impl = Unavailable(e)  # the block runs; its first use of impl ends the exercise
                yield impl
        except BaseException as e:
            failed = self._learner_failure(ex, e)
            if failed is None:
                if self.graded and not isinstance(e, GeneratorExit):
                    self._add(self._cut_short(ex, e))  # the lab's time limit, an interrupt
                raise
            self._add(failed)
        finally:
            self._grading = None
            status = exercise_status([c for c in self.checks if c.exercise == ex.id])
            print(grading_markers.ended(self.name, ex.id, status), flush=True)

    def _learner_failure(self, ex: Exercise, e: BaseException) -> Check | None:
        """The failed check that records `e`, raised in ex's grading block by the learner's work; None when it
        is not theirs to answer for (the reference's own error, an interrupt): then it propagates."""
        if isinstance(e, LearnerCodeFailed) and self.graded:
            from workshop.grading import sandbox

            return sandbox.failure_check(ex, e)
        if isinstance(e, LearnerError):
            name = _("{id}: your code loads").format(id=ex.id)
            return Check(name, False, str(e), _("no error"), message=ex.hint)
        if isinstance(e, ProcessDied):
            died = grading_markers.died_check(ex.id, str(e))
            return Check(
                died["name"], False, died["value"], died["threshold"], message=died["message"]
            )
        if not self.graded and not (learner_edition() and isinstance(e, NotImplementedError)):
            return None
        where = workspace.where(e, self._learner_path(ex)) if self.graded else ""
        if isinstance(e, NotImplementedError):
            name, value = _("{id}: implemented").format(id=ex.id), _(exercise.NOT_STARTED)
            message = str(e) or ex.not_started_message()
            return Check(name, False, value, _("implemented"), message=message)
        if isinstance(e, TimeLimitExceeded):
            message = _(
                "An endless loop, or far more work than the exercise needs: see where it was."
            )
            value, limit = f"{where}: {e}", _("{seconds:g} s of CPU time").format(seconds=e.seconds)
            name = _("{id}: finishes in time").format(id=ex.id)
            return Check(name, False, value, limit, message=message)
        if isinstance(e, Exception | SystemExit):  # sys.exit() in the learner's code ends only this
            value = f"{where}: {workspace.describe(e)}"
            name = _("{id}: runs without an error").format(id=ex.id)
            return Check(name, False, value, _("no error"), message=ex.hint)
        return None

    def _cut_short(self, ex: Exercise, e: BaseException) -> Check:
        """The failed check of an exercise whose grading was stopped from outside (the lab's time limit, a
        signal): where the learner's code was when it happened."""
        value = f"{workspace.where(e, self._learner_path(ex))}: {workspace.describe(e)}"
        message = _(
            "The lab was stopped while grading this exercise: an endless loop? See where it was."
        )
        name = _("{id}: graded to the end").format(id=ex.id)
        return Check(name, False, value, _("not stopped"), message=message)

    def _learner_path(self, ex: Exercise) -> Path:
        """The workspace file the learner writes this exercise in."""
        return workspace.lab_file(self.work, self.name) if ex.attribute else self.work / ex.document

    def exercise_results(self) -> dict[str, dict]:
        """Exercise id -> its entry in result.json (Exercise.result), for every exercise of the lab."""
        out = {}
        for ex in exercise.lab_exercises(self.name):
            mine = [c for c in self.checks if c.exercise == ex.id]
            failed = next((c for c in mine if not c.passed), None)
            out[ex.id] = ex.result(
                exercise_status(mine), [c.name for c in mine], failed.as_dict() if failed else None
            )
        return out

    # ---- the summary: the lab's template filled with this run's values ----
    @property
    def lab_folder(self) -> Path:
        from workshop import labs

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
