"""`grade PATH...`: the instructor's table of learners x exercises, from learners' runs or workspaces.

Each PATH is one learner: a run folder, a folder of run folders (a learner's results/), or a workspace (then
its checks run here first, into the results root). Only runs that graded a workspace count: a reference run
says nothing of the learner's work. For each exercise the newest run that graded it gives its status. Each row
also carries its runs' manifest facts (git revision, whether the tree was modified, versions, device), and notes:
what failed and why, and anything that could not be read. A PATH that cannot be graded becomes a row that says
why, never a crash. The learner's name: the one their workspace gives (.workspace.json), else the PATH's name.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from workshop import labs
from workshop.grading import checks, workspace
from workshop.harness import atomic, results
from workshop.i18n import N_, _, ngettext

FACTS = ("git_revision", "tree_modified", "torch", "triton", "python", "device", "device_name")
# The facts' column headings (torch, triton, python are names, the same in every language)
FACT_HEADINGS = {
    "git_revision": N_("git revision"),
    "tree_modified": N_("tree modified"),
    "device": N_("device"),
    "device_name": N_("device name"),
}


@dataclass
class Row:
    """One learner's line of the table."""

    learner: str
    source: str  # the PATH as given
    statuses: dict[str, str] = field(default_factory=dict)  # exercise id -> status
    hints: dict[str, int] = field(
        default_factory=dict
    )  # exercise id -> hints taken beyond the first
    # manifest fact -> the values its runs had
    facts: dict[str, set[str]] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)  # run ids, newest first
    notes: list[str] = field(default_factory=list)

    def fact(self, name: str) -> str:
        return " / ".join(sorted(self.facts.get(name, set()))) or "?"


def is_workspace(path: Path) -> bool:
    """A folder with a workspace record, or with any lab's workspace file."""
    if (path / workspace.RECORD).is_file():
        return True
    names = {n for lab in labs.all_exercises() for n in workspace.lab_files(lab)}
    return any((path / n).is_file() for n in names)


def grade_path(path: Path, check_workspace: Callable[[Path], Path]) -> Row:
    """The row for one PATH; `check_workspace(work)` runs a workspace's checks and returns the run folder."""
    row = Row(learner=path.resolve().name, source=str(path))
    try:
        if (path / "manifest.json").is_file():
            run_dirs = [path]
        elif results.runs(path):
            run_dirs = results.runs(path)
        elif path.is_dir() and is_workspace(path):
            row.learner = workspace.learner_name(path)
            run_dirs = [check_workspace(path)]
        else:
            row.notes.append(_("not a run folder, a folder of runs, or a workspace"))
            return row
        for run_dir in run_dirs:
            add_run(row, run_dir)
    except Exception as e:  # one learner's broken folder must not stop the class's table
        row.notes.append(_("could not be graded: {error}").format(error=workspace.describe(e)))
    return row


def add_run(row: Row, run_dir: Path) -> None:
    """Fold one run folder into the row: statuses it is the newest for, its manifest facts, its problems."""
    try:
        manifest = results.read_json(run_dir / "manifest.json")
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
    if impl.get("learner"):
        row.learner = impl["learner"]
    row.runs.append(run_dir.name)
    revision = str(manifest.get("git_revision", "unknown"))
    facts = {name: manifest.get(name) for name in FACTS}
    facts |= {
        "git_revision": revision.removesuffix("+dirty"),
        "tree_modified": tree_modified(revision),
    }
    for name, value in facts.items():
        row.facts.setdefault(name, set()).add(str(value))
    for lab in manifest.get("labs") or {name: None for name in labs_in(run_dir)}:
        add_lab_result(row, run_dir, lab)


def labs_in(run_dir: Path) -> list[str]:
    return sorted(p.name for p in run_dir.iterdir() if (p / "result.json").is_file())


def tree_modified(revision: str) -> str:
    if revision in ("", "unknown", "None"):
        return _("unknown")
    return _("yes") if revision.endswith("+dirty") else _("no")


def add_lab_result(row: Row, run_dir: Path, lab: str) -> None:
    try:
        result = results.read_json(run_dir / lab / "result.json")
    except (OSError, ValueError) as e:
        row.notes.append(
            _("{file} cannot be read: {error}").format(
                file=f"{run_dir.name}/{lab}/result.json", error=workspace.describe(e)
            )
        )
        return
    for ex_id, entry in (result.get("exercises") or {}).items():
        if row.statuses.get(ex_id, checks.NOT_GRADED) != checks.NOT_GRADED:
            continue  # a newer run graded it already (a run of some exercises leaves the others ungraded)
        row.statuses[ex_id] = entry["status"]
        row.hints[ex_id] = entry.get("hints_taken", 0)
        failed = entry.get("failed_check")
        if failed and entry["status"] != checks.NOT_STARTED:
            row.notes.append(f"{ex_id}: {failed['name']}: {checks.value_text(failed['value'])}")


def columns(rows: list[Row]) -> list[str]:
    """Every exercise the workshop declares, in lab order, then any other a run graded."""
    known = [ex.id for exercises in labs.all_exercises().values() for ex in exercises]
    seen = [ex_id for row in rows for ex_id in row.statuses if ex_id not in known]
    return known + list(dict.fromkeys(seen))


def table(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    """The header and one line per learner: name, passing count, each exercise, the facts, runs, notes.
    Headings and statuses in the language in use; exercise ids, torch, triton and python as they are."""
    exercise_ids = columns(rows)
    facts = [_(FACT_HEADINGS.get(name, name)) for name in FACTS]
    header = [_("learner"), _("exercises passing"), *exercise_ids, *facts]
    header += [_("runs"), _("source"), _("notes")]
    lines = []
    for row in rows:
        passing = sum(row.statuses.get(e) == checks.PASSING for e in exercise_ids)
        statuses = [cell(row, e) for e in exercise_ids]
        facts = [row.fact(name) for name in FACTS]
        runs = " ".join(row.runs)
        notes = " | ".join(row.notes)
        lines.append(
            [
                row.learner,
                f"{passing}/{len(exercise_ids)}",
                *statuses,
                *facts,
                runs,
                row.source,
                notes,
            ]
        )
    return header, lines


def cell(row: Row, exercise_id: str) -> str:
    """An exercise's cell: its status, and the hints the learner took on it ('passing (2 hints)')."""
    status = _(row.statuses.get(exercise_id, checks.NOT_GRADED))
    taken = row.hints.get(exercise_id, 0)
    return status + (
        " " + ngettext("({n} hint)", "({n} hints)", taken).format(n=taken) if taken else ""
    )


def to_csv(header: list[str], lines: list[list[str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerows([header, *lines])
    return buf.getvalue()


def to_markdown(header: list[str], lines: list[list[str]]) -> str:
    """The table without the notes column, then each learner's notes as a list below it."""

    def cells(values):
        return "| " + " | ".join(str(v).replace("|", "\\|") for v in values) + " |"

    body = [
        cells(header[:-1]),
        "|" + "---|" * (len(header) - 1),
        *(cells(line[:-1]) for line in lines),
    ]
    notes = [f"- **{line[0]}**: {line[-1]}" for line in lines if line[-1]]
    text = "# " + _("Grades") + "\n\n" + "\n".join(body) + "\n"
    return text + ("\n## " + _("Notes") + "\n\n" + "\n".join(notes) + "\n" if notes else "")


def write(rows: list[Row], out_dir: Path) -> tuple[Path, Path]:
    """grades.csv and grades.md in out_dir (a new folder, or one without them: nothing is overwritten)."""
    csv_path, md_path = out_dir / "grades.csv", out_dir / "grades.md"
    existing = [p for p in (csv_path, md_path) if p.exists()]
    if existing:
        raise FileExistsError(
            ngettext(
                "{files} already exists: choose another --to folder",
                "{files} already exist: choose another --to folder",
                len(existing),
            ).format(files=", ".join(str(p) for p in existing))
        )
    header, lines = table(rows)
    atomic.write_text(csv_path, to_csv(header, lines))
    atomic.write_text(md_path, to_markdown(header, lines))
    return csv_path, md_path
