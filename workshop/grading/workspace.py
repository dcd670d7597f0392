"""The learner's workspace: a folder with one Python file per lab (`<lab>.py`) and any documents they write.

This module finds and loads those files for grading, and says precisely where a learner's code went wrong
(file:line), so that one broken exercise never hides the others. `exercises init` also leaves a record,
`.workspace.json`: the workspace's id (runs name it, so that a run is found again even when the folder is
mounted elsewhere, as in the container), the learner's name, each file's hash as written, and how many hints
the learner took per exercise (`check LAB EXERCISE --hint`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

from workshop import labs
from workshop.harness import atomic
from workshop.i18n import _

DEFAULT_DIR = Path("my-work")  # in the repository root; .gitignore keeps it out of git
# {"id", "learner", "files": {name: sha256 as written by init}, "hints": {exercise id: hints taken}}
RECORD = ".workspace.json"


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


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def lab_files(lab: str) -> list[str]:
    """The workspace files a lab grades: <lab>.py when it has code exercises, and its documents."""
    exercises = labs.exercises(lab)
    code = [f"{lab}.py"] if any(ex.attribute for ex in exercises) else []
    return code + [ex.document for ex in exercises if ex.document]


def read_record(work_dir: Path) -> dict:
    """The workspace's record ({} when it has none, or it is not readable JSON)."""
    try:
        record = json.loads((Path(work_dir) / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def hints_taken(work_dir: Path) -> dict[str, int]:
    """Exercise id -> the hints the learner asked for (`check LAB EXERCISE --hint`): the level they are at."""
    taken = read_record(work_dir).get("hints")
    return {k: v for k, v in taken.items() if type(v) is int} if isinstance(taken, dict) else {}


def take_hint(work_dir: Path, exercise_id: str, levels: int) -> int:
    """Record one more hint taken for the exercise, up to its `levels`; the count."""
    record = read_record(work_dir)
    taken = hints_taken(work_dir)
    taken[exercise_id] = min(taken.get(exercise_id, 0) + 1, levels)
    atomic.write_json(Path(work_dir) / RECORD, {**record, "hints": taken})
    return taken[exercise_id]


def learner_name(work_dir: Path) -> str:
    """The name the workspace gives (its record's "learner"), else the folder's name."""
    return read_record(work_dir).get("learner") or Path(work_dir).resolve().name


def implementation(work_dir: Path | None, lab_names: list[str]) -> dict:
    """What a run records of the code it ran: the reference ({"kind": "reference"}, work_dir None), or the
    workspace it graded: where, whose, and each of its files' hash (None: missing)."""
    if work_dir is None:
        return {"kind": "reference"}
    work_dir = Path(work_dir)
    names = [name for lab in lab_names for name in lab_files(lab)]
    files = {name: work_dir / name for name in names}
    return {
        "kind": "workspace",
        "work": str(work_dir.resolve()),
        "workspace_id": read_record(work_dir).get("id"),
        # None unless the workspace names its learner
        "learner": read_record(work_dir).get("learner"),
        "sha256": {n: file_sha256(p) if p.is_file() else None for n, p in files.items()},
    }


def load_lab_module(work_dir: Path, lab: str) -> ModuleType:
    """Import the learner's <lab>.py as a module of its own; LearnerError says why it cannot be imported."""
    path = lab_file(work_dir, lab)
    if not path.is_file():
        raise LearnerError(
            _("{file} does not exist: run `{command}`").format(
                file=display(path), command=f"python -m workshop exercises init {display(work_dir)}"
            )
        )
    name = f"workshop_work_{lab}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look modules up by name
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        del sys.modules[name]
        raise LearnerError(f"{display(path)}:{e.lineno}: SyntaxError: {e.msg}") from None
    except Exception as e:
        del sys.modules[name]
        raise LearnerError(
            _("{where}: {error} (while importing the file)").format(
                where=where(e, path), error=describe(e)
            )
        ) from None
    return module


def describe(error: BaseException) -> str:
    """'TypeError: message', on one line."""
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def where(error: BaseException, path: Path) -> str:
    """file:line of the innermost frame of `error` in the learner's file, else the file alone."""
    path = Path(path).resolve()
    line = None
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename and os.path.realpath(frame.filename) == str(path):
            line = frame.lineno
    return f"{display(path)}:{line}" if line else display(path)
