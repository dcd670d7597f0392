"""`exercises init`: the learner's starting files, written from the labs' exercise declarations.

One `<lab>.py` per lab with code exercises: the lab's header (workshop.labs.workspace_header), then each
exercise's stub (Exercise.stub_code: its statement, interface and handout section once, in its docstring). One file per
document exercise, from its template (which may need a run of the lab first: then `check` writes it).
A learner's file is never overwritten: init refuses, naming the files; with force it first copies them to
`<workspace>/.backup-<time>/`.
"""

from __future__ import annotations

import secrets
import shutil
import time
from pathlib import Path

from workshop import labs
from workshop.declarations.exercise import Exercise
from workshop.foundations import atomic, results
from workshop.learner import workspace


class WorkspaceExists(Exception):
    """Init would overwrite the learner's files (listed)."""

    def __init__(self, files: list[Path]):
        super().__init__(", ".join(workspace.display(f) for f in files))
        self.files = files


def lab_source(lab: str) -> str:
    """The learner's <lab>.py as init writes it."""
    blocks = [ex.stub_code() for ex in labs.exercises(lab) if ex.attribute]
    return "\n\n".join([labs.workspace_header(lab), *blocks])


def planned_files(
    lab_names: list[str], results_root: Path, work: Path
) -> tuple[dict[str, str], list[Exercise]]:
    """File name -> text for the labs' workspace files in `work`, and the documents that must wait for a run."""
    files, waiting = {}, []
    for lab in lab_names:
        exercises = labs.exercises(lab)
        if any(ex.attribute for ex in exercises):
            files[f"{lab}.py"] = lab_source(lab)
        for ex in (ex for ex in exercises if ex.document):
            ran = (
                r / lab for r in results.runs(results_root) if (r / lab / "result.json").is_file()
            )
            text = ex.document_text(next(ran, None), work)  # the newest run of the lab
            if text is None:
                waiting.append(ex)
            else:
                files[ex.document] = text
    return files, waiting


def init(
    work: Path,
    lab_names: list[str],
    results_root: Path,
    force: bool = False,
    learner: str | None = None,
) -> tuple[list[Path], list[Exercise], Path | None]:
    """Write the labs' starting files into `work`; WorkspaceExists if one is there and not `force`. Returns the
    files written, the documents whose template needs a run first, and where the files init replaced were copied
    (None: none were)."""
    files, waiting = planned_files(lab_names, results_root, work)
    existing = [work / name for name in files if (work / name).exists()]
    if existing and not force:
        raise WorkspaceExists(existing)
    backup = back_up(work, existing) if existing else None  # before any of them is replaced
    written = [atomic.write_text(work / name, text) for name, text in files.items()]
    record(work, {name: workspace.file_sha256(work / name) for name in files}, learner)
    return written, waiting, backup


def back_up(work: Path, files: list[Path]) -> Path:
    """Copy `files` into a new <work>/.backup-<UTC time>-<hex>/ folder; returns it."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    backup = work / f".backup-{stamp}-{secrets.token_hex(2)}"
    backup.mkdir()  # never an existing folder
    for f in files:
        shutil.copy2(f, backup / f.name)
    return backup


def record(work: Path, written: dict[str, str], learner: str | None) -> None:
    """Update the workspace's record: its id (kept), the learner's name (kept unless given), files as written, the
    counts of hints and `check --show` runs (kept; none at first: a record without them lost them)."""
    old = workspace.read_record(work)
    atomic.write_json(
        work / workspace.RECORD,
        {
            "id": old.get("id") or secrets.token_hex(8),
            "learner": learner or old.get("learner"),
            "files": {**old.get("files", {}), **written},
            "hints": old.get("hints", {}),
            "shown": old.get("shown", {}),
        },
    )


def write_waiting_document(work: Path, ex: Exercise, lab_dir: Path) -> Path | None:
    """After a run of the lab: write a document that init left for later, if it is still missing."""
    path = Path(work) / ex.document
    if path.exists() or (text := ex.document_text(lab_dir, work)) is None:
        return None
    atomic.write_text(path, text)
    record(work, {ex.document: workspace.file_sha256(path)}, None)
    return path
