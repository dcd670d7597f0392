"""Where a learner stands on each exercise (`exercises list`), read from their workspace and their runs.

An exercise whose stub is still in the file as init wrote it (a document: unchanged since init, or not written
yet) is "not started", run or no run. Otherwise the newest graded run of this workspace under results/ says
how it stood at that check (result.json records the workspace and its files' hashes): if the file changed since,
"changed since last check"; with no such run, "not checked yet".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from workshop import i18n, labs
from workshop.declarations import checks
from workshop.declarations.exercise import Exercise
from workshop.foundations import results
from workshop.i18n import N_
from workshop.learner import workspace

# Where a learner stands besides the graded statuses (checks.PASSING, ...); translated where shown.
CHANGED = N_("changed since last check")
NOT_CHECKED = N_("not checked yet")


@dataclass(frozen=True)
class Standing:
    exercise: Exercise
    status: str
    last_status: str | None = None  # the status at the last check, when the file changed since


def graded_runs(results_root: Path, lab: str, work: Path) -> list[tuple[Path, dict]]:
    """(run folder, the lab's result.json) of every run that graded this workspace's lab, newest first."""
    work_id = workspace.read_record(work).get("id")
    found = []
    for run_dir in results.runs(results_root):
        try:
            result = results.read_json(run_dir / lab / "result.json")
        except (OSError, ValueError):
            continue  # no such lab in that run, or a result cut short
        impl = result.get("implementation") or {}
        same_id = work_id is not None and impl.get("workspace_id") == work_id
        if impl.get("kind") == "workspace" and (same_id or impl.get("work") == str(work.resolve())):
            found.append((run_dir, result))
    return found


def untouched(ex: Exercise, work: Path) -> bool:
    """The exercise is as init left it: its stub still in <lab>.py, or its document missing or unchanged."""
    path = work / (ex.document or f"{ex.lab}.py")
    if not path.is_file():
        return True
    if ex.document:
        return workspace.read_record(work).get("files", {}).get(ex.document) == (
            workspace.file_sha256(path)
        )
    text = path.read_text(encoding="utf-8", errors="replace")
    # the exercise's stub as init writes it in each language (its docstring and message are translated): a
    # workspace made in Spanish is still "not started" when listed in English
    stubs = in_every_language(
        lambda: {e.stub_code() for e in labs.exercises(ex.lab) if e.id == ex.id}
    )
    return any(stub in text for stub in stubs)


def in_every_language(made: Callable[[], set[str]]) -> set[str]:
    """What `made()` makes in each language the workshop speaks, together."""
    found = set()
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            found |= made()
    return found


def standing(ex: Exercise, work: Path, last: tuple[Path, dict] | None) -> Standing:
    if untouched(ex, work):
        return Standing(ex, checks.NOT_STARTED)
    if last is None:
        return Standing(ex, NOT_CHECKED)
    result = last[1]
    name = ex.document or f"{ex.lab}.py"
    graded = result.get("exercises", {}).get(ex.id, {}).get("status", checks.NOT_GRADED)
    recorded = result["implementation"].get("sha256", {}).get(name)
    if recorded != workspace.file_sha256(work / name):
        return Standing(ex, CHANGED, graded)
    return Standing(ex, graded)


def workspace_progress(work: Path, results_root: Path) -> list[Standing]:
    """Every exercise of every lab, with where the learner stands on it."""
    out = []
    for lab, exercises in labs.all_exercises().items():
        runs = graded_runs(results_root, lab, work)
        out += [standing(ex, work, last_graded(runs, ex)) for ex in exercises]
    return out


def last_graded(runs: list[tuple[Path, dict]], ex: Exercise) -> tuple[Path, dict] | None:
    """The newest of the runs that graded `ex` (a run of other exercises of the lab left it ungraded), else
    the newest run of the lab."""
    status = lambda result: result.get("exercises", {}).get(ex.id, {}).get("status")  # noqa: E731
    graded = (r for r in runs if status(r[1]) not in (None, checks.NOT_GRADED))
    return next(graded, runs[0] if runs else None)
