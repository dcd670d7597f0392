"""The learner's workspace: a folder with one Python file per lab (`<lab>.py`) and any documents they write.

This module writes those files (`exercises init`: below), finds them for grading, and says precisely where a
learner's code went wrong (file:line), so that one broken exercise never hides the others. `exercises init` also
leaves a record, `.workspace.json`, which this module writes and reads: the workspace's id (runs name it, so that
a run is found again even when the folder is mounted elsewhere, as in the container), the learner's name, each
file's hash as written, and how many hints the learner took per exercise (`check LAB EXERCISE --hint`).

`exercises init` writes the learner's starting files from the labs' exercise declarations: one `<lab>.py` per lab
with code exercises, the lab's header (workshop.labs.workspace_header), then each exercise's stub
(Exercise.stub_code: its statement, interface and handout section once, in its docstring); one file per document
exercise, from its template (which may need a run of the lab first: then `check` writes it). A learner's file is
never overwritten: init refuses, naming the files; with force it first copies them to
`<workspace>/.backup-<time>/`.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
import time
import traceback
from pathlib import Path

from workshop import labs
from workshop.declarations.exercise import Exercise
from workshop.foundations import atomic, results
from workshop.i18n import N_, _

DEFAULT_DIR = Path("my-work")  # in the repository root; .gitignore keeps it out of git
# {"id", "learner", "files": {name: sha256 as written by init}, "hints": {exercise id: hints taken},
#  "shown": {exercise id: `check --show` runs}}
RECORD = ".workspace.json"
# bytes: the most of one file that is read or hashed (a workspace file, a run's record), far above any honest
# one; a hand-in's file is untrusted: a 40 GB sparse file costs it nothing
FILE_MAX = 64 * 2**20


class UnsafeFile(OSError):
    """A file that is not read: not a regular file (a FIFO, a device, a socket), or over FILE_MAX."""


class LearnerError(Exception):
    """A problem in the learner's files, said in one line that names the file (and line where there is one)."""


def lab_file(work_dir: Path, lab: str) -> Path:
    return Path(work_dir) / f"{lab}.py"


def display(path: Path) -> str:
    """A path as the learner typed it: relative to the current folder when it is under it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# what a file that is not a regular one is, by its type (stat.S_IFMT)
NOT_REGULAR = {
    stat.S_IFIFO: N_("a FIFO"),
    stat.S_IFCHR: N_("a device"),
    stat.S_IFBLK: N_("a device"),
    stat.S_IFSOCK: N_("a socket"),
    stat.S_IFDIR: N_("a folder"),
}
ANOTHER_KIND = N_("not a regular file")


def unsafe_reason(path: Path, found: os.stat_result) -> str | None:
    """Why a file of this stat is not read (None: it may be)."""
    if not stat.S_ISREG(found.st_mode):
        kind = _(NOT_REGULAR.get(stat.S_IFMT(found.st_mode), ANOTHER_KIND))
        return _("{file} is {kind}: not read").format(file=path, kind=kind)
    if found.st_size > FILE_MAX:
        return _("{file} has {size} bytes, over the {max} read of one file: not read").format(
            file=path, size=found.st_size, max=FILE_MAX
        )
    return None


def read_capped(path: Path) -> bytes:
    """`path`'s bytes, at most FILE_MAX (a file that grows while it is read stops at the cap), when it is a regular
    file of at most FILE_MAX bytes, else UnsafeFile. Looked at before it is opened (opening a device can do
    something), opened without blocking (a FIFO's open waits for a writer), then looked at again: what is open is
    what is read."""
    if reason := unsafe_reason(Path(path), os.stat(path)):
        raise UnsafeFile(reason)
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as f:
        if reason := unsafe_reason(Path(path), os.fstat(f.fileno())):
            raise UnsafeFile(reason)
        os.set_blocking(f.fileno(), True)
        return f.read(FILE_MAX)


def file_sha256(path: Path) -> str:
    """No further than FILE_MAX (a file that grows while it is hashed)."""
    return hashlib.sha256(read_capped(path)).hexdigest()


def lab_files(lab: str) -> list[str]:
    """The workspace files a lab grades: <lab>.py when it has code exercises, and its documents."""
    exercises = labs.exercises(lab)
    code = [f"{lab}.py"] if any(ex.attribute for ex in exercises) else []
    return code + [ex.document for ex in exercises if ex.document]


def read_record(work_dir: Path) -> dict:
    """The workspace's record ({} when it has none, or it is not readable JSON)."""
    try:
        record = json.loads(read_capped(Path(work_dir) / RECORD).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def uses(work_dir: Path, kind: str) -> dict[str, int] | None:
    """Exercise id -> how often the learner used a help on it, as the record counts: "hints" (hints asked for,
    `check LAB EXERCISE --hint`: the level the learner is at) or "shown" (`check --show` runs that graded it).
    None when the record keeps no such count (init writes both: a record without one lost it, or is older than
    the count)."""
    counted = read_record(work_dir).get(kind)
    if not isinstance(counted, dict):
        return None
    return {k: v for k, v in counted.items() if type(v) is int and v >= 0}


def count_use(work_dir: Path, kind: str, exercise_id: str, most: int | None = None) -> int:
    """Count one more use of `kind` (see uses) on the exercise, up to `most`; the count."""
    counted = uses(work_dir, kind) or {}
    used = counted.get(exercise_id, 0) + 1
    counted[exercise_id] = used if most is None else min(used, most)
    atomic.write_json(Path(work_dir) / RECORD, {**read_record(work_dir), kind: counted})
    return counted[exercise_id]


def implementation(work_dir: Path | None, lab_names: list[str]) -> dict:
    """What a run records of the code it ran: the reference ({"kind": "reference"}, work_dir None), or the
    workspace it graded: where, whose, and each of its files' hash (None: missing)."""
    if work_dir is None:
        return {"kind": "reference"}
    work_dir = Path(work_dir)
    files = {name: work_dir / name for lab in lab_names for name in lab_files(lab)}
    return {
        "kind": "workspace",
        "work": str(work_dir.resolve()),
        "workspace_id": read_record(work_dir).get("id"),
        # None unless the workspace names its learner
        "learner": read_record(work_dir).get("learner"),
        "sha256": {n: file_sha256(p) if p.is_file() else None for n, p in files.items()},
    }


def document(work_dir: Path, lab: str, ex: Exercise) -> Path:
    """The learner's document of `ex`; NotImplementedError ("not started") while it is not written."""
    path = Path(work_dir) / ex.document
    if not path.is_file():
        how = (
            _("`python -m workshop check {lab}` writes its start from this run")
            if ex.template
            else _("`python -m workshop exercises init --lab {lab}` writes its start")
        )
        raise NotImplementedError(
            _("{id}: {file} is not written yet: {how}").format(
                id=ex.id, file=display(path), how=how.format(lab=lab)
            )
        )
    return path


def describe(error: BaseException) -> str:
    """'TypeError: message', on one line."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def where(error: BaseException, path: Path) -> str:
    """file:line of the innermost frame of `error` in the learner's file, else the file alone."""
    path = Path(path).resolve()
    frames = traceback.extract_tb(error.__traceback__)
    lines = [f.lineno for f in frames if f.filename and os.path.realpath(f.filename) == str(path)]
    return f"{display(path)}:{lines[-1]}" if lines else display(path)


# ---- exercises init: the learner's starting files, written from the labs' exercise declarations ----
class WorkspaceExists(Exception):
    """Init would overwrite the learner's files (listed)."""

    def __init__(self, files: list[Path]):
        super().__init__(", ".join(display(f) for f in files))
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
    write_record(work, {name: file_sha256(work / name) for name in files}, learner)
    return written, waiting, backup


def back_up(work: Path, files: list[Path]) -> Path:
    """Copy `files` into a new <work>/.backup-<UTC time>-<hex>/ folder; returns it."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    backup = work / f".backup-{stamp}-{secrets.token_hex(2)}"
    backup.mkdir()  # never an existing folder
    for f in files:
        shutil.copy2(f, backup / f.name)
    return backup


def write_record(work: Path, written: dict[str, str], learner: str | None) -> None:
    """Update the workspace's record: its id (kept), the learner's name (kept unless given), files as written, the
    counts of hints and `check --show` runs (kept; none at first: a record without them lost them)."""
    old = read_record(work)
    atomic.write_json(
        work / RECORD,
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
    write_record(work, {ex.document: file_sha256(path)}, None)
    return path
