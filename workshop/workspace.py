"""The learner's workspace: a folder with one Python file per lab (`<lab>.py`) and any documents they write.

This module finds and loads those files for grading, and says precisely where a learner's code went wrong
(file:line), so that one broken exercise never hides the others.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType

DEFAULT_DIR = Path("my-work")  # in the repository root; .gitignore keeps it out of git


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


def load_lab_module(work_dir: Path, lab: str) -> ModuleType:
    """Import the learner's <lab>.py as a module of its own; LearnerError says why it cannot be imported."""
    path = lab_file(work_dir, lab)
    if not path.is_file():
        raise LearnerError(
            f"{display(path)} does not exist: run `python -m workshop exercises init {display(work_dir)}`"
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
        raise LearnerError(f"{where(e, path)}: {describe(e)} (while importing the file)") from None
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
