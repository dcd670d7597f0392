"""`grade PATH...`: the instructor's table of learners x exercises, from learners' workspaces (or runs).

Each PATH is one learner's hand-in: a workspace (or a folder holding one as my-work/), whose checks run here,
into the results root: those statuses are verified. Run folders handed in beside it are not graded again: the
workspace files their manifests name are compared with the handed-in ones. A PATH of run folders alone (a
learner's results/) is self-reported: its statuses are shown, marked so, and never counted as passing (a
result.json is a file anyone can edit). Only the exercises the workshop declares are columns; only runs that
graded a workspace count. Each row also carries its runs' manifest facts (git revision, whether the tree was
modified, versions, device), and notes: what failed and why, what could not be read, and what grade_integrity
found. A PATH that cannot be graded becomes a row that says why, never a crash. The learner's name is the
instructor's: the roster's for the hand-in's folder, else the folder's name; the names the hand-in gives (its
.workspace.json, its runs) are shown beside it, and grade_integrity flags a mismatch or a name twice. Hints and
`check --show` runs are the hand-in record's counts: self-reported. Learner-supplied text is escaped in both
tables.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workshop import labs
from workshop.declarations import checks
from workshop.foundations import results
from workshop.grading import grade_integrity
from workshop.grading.grade_table import FACTS, NOT_ISOLATED, TableFiles, declared
from workshop.i18n import _
from workshop.learner import workspace


@dataclass
class Row:
    """One learner's line of the table."""

    learner: str  # the instructor's name for it: the roster's, else its folder's
    source: str  # the PATH as given
    # the names the hand-in gives (its record, its runs)
    claimed: set[str] = field(default_factory=set)
    statuses: dict[str, str] = field(default_factory=dict)  # exercise id -> status
    # exercise id -> hints taken beyond the first; `check --show` runs (self-reported: the hand-in's record)
    hints: dict[str, int] = field(default_factory=dict)
    shown: dict[str, int] = field(default_factory=dict)
    # manifest fact -> the values its runs had
    facts: dict[str, set[str]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)  # run ids, newest first
    notes: list[str] = field(default_factory=list)
    verified: bool = False  # its statuses come from this grade's own run of the workspace
    # its runs, manifests and workspace files, as a note names them: what grade_integrity.handed_twice looks for
    # in other rows
    fingerprints: list[str] = field(default_factory=list)


def handed_in(path: Path) -> tuple[Path | None, list[Path]]:
    """A hand-in's workspace (the PATH itself, or its my-work/: a folder with a workspace record, or with any
    lab's workspace file) and its run folders (the PATH, the runs in it, or in its results/)."""
    names = [workspace.RECORD, *grade_integrity.lab_file_names()]
    work = next(
        (
            p
            for p in (path, path / workspace.DEFAULT_DIR)
            if p.is_dir() and any((p / n).is_file() for n in names)
        ),
        None,
    )
    if (path / "manifest.json").is_file():
        return work, [path]
    return work, results.runs(path) or results.runs(path / results.DEFAULT_ROOT.name)


def read_roster(path: Path) -> dict[str, str]:
    """A roster: a CSV of `folder,name` lines (the hand-in's folder's name, the learner's name)."""
    lines = csv.reader(workspace.read_capped(path).decode("utf-8-sig").splitlines())  # a BOM: Excel
    return {line[0].strip(): line[1].strip() for line in lines if len(line) >= 2}


def grade_path(
    path: Path, check_workspace: Callable[[Path], Path], roster: dict[str, str] | None = None
) -> Row:
    """The row for one PATH; `check_workspace(work)` runs a workspace's checks and returns the run folder. Its
    name is the instructor's (the roster's, else the folder's), never the hand-in's own."""
    # the hand-in's folder's name: the PATH's, or the one holding it when it is a my-work/ or a results/
    resolved = path.resolve()
    held = (workspace.DEFAULT_DIR.name, results.DEFAULT_ROOT.name)
    folder = resolved.parent.name if resolved.name in held else resolved.name
    row = Row(learner=(roster or {}).get(folder, folder), source=str(path))
    if roster is not None and folder not in roster:
        row.notes.append(_("{folder} is not on the roster").format(folder=folder))
    try:
        row.notes += grade_integrity.unsafe_files(path)
        work, run_dirs = handed_in(path)
        if work is not None and (refused := unreadable_workspace(path, work)):
            row.notes.append(
                _("its workspace is not graded: grade does not read {files}").format(files=refused)
            )
        elif work is not None:
            # its `check --show` runs, from its record (its hints come with its statuses, from the run; the name it
            # gives, from the run's manifest, which records the record's), and whether the record lost its counts
            row.verified = True
            row.shown = workspace.uses(work, "shown") or {}
            if workspace.uses(work, "hints") is None or workspace.uses(work, "shown") is None:
                row.notes.append(
                    _(
                        "its workspace record keeps no count of hints or of `check --show` runs (lost, or older "
                        "than the counts): none are shown"
                    )
                )
            row.fingerprints += grade_integrity.workspace_files(work)
            add_run(row, check_workspace(work))
            compare_runs(row, run_dirs, work)
        elif run_dirs:
            row.notes.append(
                _(
                    "self-reported, unverified: run folders without their workspace; their statuses are shown, "
                    "not counted (hand in the workspace to be graded)"
                )
            )
            for run_dir in run_dirs:
                add_run(row, run_dir)
        else:
            row.notes.append(_("not a run folder, a folder of runs, or a workspace"))
    except Exception as e:  # one learner's broken folder must not stop the class's table
        row.notes.append(_("could not be graded: {error}").format(error=workspace.describe(e)))
    return row


def unreadable_workspace(path: Path, work: Path) -> str:
    """The files of the workspace that grading reads (its record, each lab's files) that grade_integrity.not_read
    refuses, by name ("" when none): a run of its checks would read them."""
    names = [workspace.RECORD, *grade_integrity.lab_file_names()]
    return ", ".join(
        n for n in names if os.path.lexists(work / n) and grade_integrity.not_read(work / n, path)
    )


def read_json(path: Path):
    """A handed-in JSON file, read no further than workspace.FILE_MAX, never from a FIFO or a device."""
    return json.loads(workspace.read_capped(path).decode("utf-8"))


def compare_runs(row: Row, run_dirs: list[Path], work: Path) -> None:
    """Note a handed-in run whose manifest names other workspace files than the ones handed in, and the exercises
    whose handed-in runs count more hints, or more `check --show` runs, than the workspace's record does now: a
    record that lost some (each run's result.json has the hints taken by then, its options.json whether it
    showed). What cannot be read is said where the run is read."""
    hints, shown = workspace.uses(work, "hints") or {}, workspace.uses(work, "shown") or {}
    more_hints, show_runs = set(), collections.Counter()
    for run_dir in run_dirs:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            manifest = read_json(run_dir / "manifest.json")
            recorded = (manifest.get("implementation") or {}).get("sha256") or {}
            differ = [
                name
                for name, digest in recorded.items()
                if (work / name).is_file() and digest != workspace.file_sha256(work / name)
            ]
            if differ:
                row.notes.append(
                    _("{run} graded other files than the ones handed in: {files}").format(
                        run=run_dir.name, files=", ".join(differ)
                    )
                )
        try:
            showed = read_json(run_dir / "options.json").get("show") is True
            results_of = [read_json(run_dir / lab / "result.json") for lab in labs_in(run_dir)]
        except (OSError, ValueError, AttributeError):
            continue
        for result in results_of:
            for ex_id, entry in (result.get("exercises") or {}).items():
                taken = entry.get("hints_taken")
                if type(taken) is int and taken > hints.get(ex_id, 0):
                    more_hints.add(ex_id)
                show_runs[ex_id] += showed and entry.get("status") != checks.NOT_GRADED
    lost = more_hints | {ex_id for ex_id, n in show_runs.items() if n > shown.get(ex_id, 0)}
    if lost:
        row.notes.append(
            _(
                "its handed-in runs count more hints or `check --show` runs than its workspace record: {ids}"
            ).format(ids=", ".join(sorted(lost)))
        )


def add_run(row: Row, run_dir: Path) -> None:
    """Fold one run folder into the row: statuses it is the newest for, its manifest facts, its problems."""
    try:
        manifest_bytes = workspace.read_capped(run_dir / "manifest.json")
        manifest = json.loads(manifest_bytes.decode("utf-8"))
    except (OSError, ValueError) as e:
        row.notes.append(
            _("{file} cannot be read: {error}").format(
                file=f"{run_dir.name}/manifest.json", error=workspace.describe(e)
            )
        )
        return
    impl = manifest.get("implementation") or {}
    if impl.get("kind") != "workspace":
        row.notes.append(
            _("{run}: ran the reference, not the learner's code: not counted").format(
                run=run_dir.name
            )
        )
        return
    if isinstance(impl.get("learner"), str) and impl["learner"]:
        row.claimed.add(impl["learner"])
    row.runs.append(run_dir.name)
    if not row.verified:  # a run this grade made is new; a handed-in one may be a copy of another's
        row.fingerprints += [
            _("run {run}").format(run=manifest.get("run_id") or run_dir.name),
            _("a run's manifest (sha256 {digest})").format(
                digest=hashlib.sha256(manifest_bytes).hexdigest()[:12]
            ),
        ]
    revision = str(manifest.get("git_revision", "unknown"))
    dirty = _("yes") if revision.endswith("+dirty") else _("no")
    facts = {name: manifest.get(name) for name in FACTS} | {
        "git_revision": revision.removesuffix("+dirty"),
        "tree_modified": _("unknown") if revision in ("", "unknown", "None") else dirty,
    }
    for name, value in facts.items():
        row.facts.setdefault(name, set()).add(str(value))
    for lab in manifest.get("labs") or {name: None for name in labs_in(run_dir)}:
        add_lab_result(row, run_dir, lab)


def labs_in(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.iterdir() if (p / "result.json").is_file())


def add_lab_result(row: Row, run_dir: Path, lab: str) -> None:
    try:
        result = read_json(run_dir / lab / "result.json")
    except (OSError, ValueError) as e:
        row.notes.append(
            _("{file} cannot be read: {error}").format(
                file=f"{run_dir.name}/{lab}/result.json", error=workspace.describe(e)
            )
        )
        return
    known = declared()
    # Triton's interpreter runs a kernel as Python beside its data (x.handle.data is the block's memory): a
    # kernel can hand it to numpy and pass, in every sandbox; only a GPU's compiled kernel holds no Python
    if (
        (spec := labs.all_labs().get(lab))
        and "triton" in spec.needs
        and result.get("device") == "cpu"
        and result.get("exercises")
    ):
        row.notes.append(
            _(
                "{lab}: its Triton kernels ran under Triton's interpreter (CPU), where a kernel's Python can "
                "reach the data it is given: their marks are no proof that the kernels compute them (grade on "
                "a GPU for that)"
            ).format(lab=lab)
        )
    for ex_id, entry in (result.get("exercises") or {}).items():
        if ex_id not in known:
            row.notes.append(
                _("{run}: exercise {id} is not one the workshop declares: ignored").format(
                    run=run_dir.name, id=ex_id
                )
            )
            continue
        if row.statuses.get(ex_id, checks.NOT_GRADED) != checks.NOT_GRADED:
            continue  # a newer run graded it already (a run of some exercises leaves the others ungraded)
        row.statuses[ex_id] = str(entry.get("status"))
        taken = entry.get("hints_taken", 0)  # a handed-in result.json says anything
        row.hints[ex_id] = taken if type(taken) is int and taken >= 0 else 0
        failed = entry.get("failed_check")
        if failed and entry["status"] != checks.NOT_STARTED:
            name = str(failed["name"])  # the core's own checks name their exercise already
            named = name if name.startswith(f"{ex_id}:") else f"{ex_id}: {name}"
            row.notes.append(f"{named}: {checks.value_text(failed['value'])}")


def grade_all(
    paths: list[Path],
    check_workspace,
    files: TableFiles,
    say,
    results_root: Path,
    roster: dict[str, str] | None = None,
    editions: tuple[Path, ...] = (),
) -> tuple[Path, Path]:
    """One row per PATH, the table files rewritten after each (`say(path)` before it is graded), with what
    grade_integrity saw changing around each hand-in (in the code, `editions` included: the learner editions the
    hand-ins' code imports) and what was handed in twice noted on the rows; the final table's files."""
    watch = grade_integrity.Watch(paths, results_root, editions)
    rows: list[Row] = []
    # hand-in -> its row's notes: those of a hand-in not graded yet wait here for its row
    notes_of: dict[Path, list[str]] = {}
    changed_code_during = None  # the learner whose grading changed the workshop's code
    for path in paths:
        say(path)
        row = grade_path(path, check_workspace, roster)
        if not files.isolated:
            row.notes.insert(0, _(NOT_ISOLATED))
        row.notes += notes_of.get(path, [])
        notes_of[path] = row.notes
        if changed_code_during:
            row.notes.append(
                _(
                    "graded after the workshop's code or its Python environment changed (while {learner}'s "
                    "hand-in was graded)"
                ).format(learner=changed_code_during)
            )
        touched, code_files = watch.after(path)
        # a hand-in folder that changed while this one was graded: noted on this row, and on the other's
        for other, names in touched.items():
            shown = grade_integrity.shown(names)
            if other == path:
                row.notes.append(
                    _("its hand-in changed while it was graded: {files}").format(files=shown)
                )
                continue
            row.notes.append(
                _("another hand-in changed while this one was graded: {other} ({files})").format(
                    other=other, files=shown
                )
            )
            notes_of.setdefault(other, []).append(
                _("changed while {learner}'s hand-in was graded: {files}").format(
                    learner=row.learner, files=shown
                )
            )
        if code_files:
            row.notes.append(
                _(
                    "the workshop's code or its Python environment changed while this hand-in was graded: "
                    "{files}"
                ).format(files=grade_integrity.shown(code_files))
            )
            changed_code_during = row.learner
        rows.append(row)
        files.update(rows)
    grade_integrity.handed_twice(rows)
    grade_integrity.same_names(rows)
    return files.update(rows, done=True)
