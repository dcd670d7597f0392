"""The lab registry: every sub-package of workshop.labs that defines LAB is a lab. Adding a lab = adding one.

The core finds a lab only through here, by its name: its spec (`LAB`, workshop/lab_api.py's LabSpec), its folder,
and its exercises (`EXERCISES` in its exercises.py). Nothing here imports a lab until it is asked for, and this
module imports no lab by itself (workshop.lab_api imports it for a lab's exercises).
"""

from __future__ import annotations

import importlib
import pkgutil
import textwrap
from pathlib import Path
from typing import Protocol

from workshop.declarations.exercise import Exercise, wrapped
from workshop.declarations.questions import WIDTH
from workshop.i18n import _


class Lab(Protocol):
    """A lab as the registry sees it: its LAB, a LabSpec (workshop/lab_api.py, in a layer above)."""

    name: str
    order: int  # position in a full run
    needs: tuple[str, ...]  # the modules it cannot run without ("triton")


def all_labs() -> dict[str, Lab]:
    """Name -> spec, in run order."""
    packages = (
        importlib.import_module(f"{__name__}.{info.name}")
        for info in pkgutil.iter_modules(__path__)
        if info.ispkg
    )
    specs = [spec for package in packages if (spec := getattr(package, "LAB", None)) is not None]
    return {s.name: s for s in sorted(specs, key=lambda s: s.order)}


def folder(name: str) -> Path:
    """The lab's folder: its code, handout and summary template."""
    return Path(__file__).resolve().parent / name


def get(name: str) -> Lab:
    labs = all_labs()
    if name not in labs:
        raise KeyError(f"unknown lab {name!r}; the labs are: {', '.join(labs)}")
    return labs[name]


def _exercises_module(lab: str):
    """The lab's grading/exercises.py, or None for a lab without (an error inside it is raised)."""
    if not (folder(lab) / "grading" / "exercises.py").is_file():
        return None
    return importlib.import_module(f"{__name__}.{lab}.grading.exercises")


def exercises(lab: str) -> list[Exercise]:
    """The exercises a lab declares, in the language in use (an empty list for a lab without grading/exercises.py)."""
    module = _exercises_module(lab)
    found = list(module.EXERCISES) if module else []
    if strays := [ex.id for ex in found if ex.lab != lab]:
        raise ValueError(f"{strays[0]} is declared in lab {lab}'s exercises.py")
    return [ex.localized() for ex in found]


def workspace_header(lab: str) -> str:
    """The top of the learner's <lab>.py: a docstring from the lab's WORKSPACE_DOC (prose, marked N_(): what the
    file is and how it is graded), then its WORKSPACE_IMPORTS (code, never translated)."""
    module = _exercises_module(lab)
    doc = getattr(module, "WORKSPACE_DOC", None)
    # each paragraph refilled: a translation's lines need not match the source's
    paragraphs = (
        [" ".join(p.split()) for p in _(doc).strip().split("\n\n")]
        if doc
        else [
            _("Your solutions to the {lab} lab's exercises: {command}.").format(
                lab=lab, command=f"python -m workshop check {lab}"
            )
        ]
    )
    lines = wrapped(paragraphs, WIDTH, reserve=3)
    docstring = '"""' + "\n".join(lines) + ("\n" if len(lines) > 1 else "") + '"""\n'
    imports = textwrap.dedent(getattr(module, "WORKSPACE_IMPORTS", "")).strip()
    return docstring + (f"\n{imports}\n" if imports else "")


def all_exercises() -> dict[str, list[Exercise]]:
    """Lab name -> its exercises, in run order, for every lab that has any."""
    found = {name: exercises(name) for name in all_labs()}
    return {name: declared for name, declared in found.items() if declared}
