"""The lab registry: every sub-package of workshop.labs that defines LAB is a lab. Adding a lab = adding one."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from workshop.lab import LabSpec


def all_labs() -> dict[str, LabSpec]:
    """Name -> spec, in run order."""
    specs = []
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:
            spec = getattr(importlib.import_module(f"{__name__}.{info.name}"), "LAB", None)
            if isinstance(spec, LabSpec):
                specs.append(spec)
    return {s.name: s for s in sorted(specs, key=lambda s: s.order)}


def folder(name: str) -> Path:
    """The lab's folder: its code, handout and summary template."""
    return Path(__file__).resolve().parent / name


def get(name: str) -> LabSpec:
    labs = all_labs()
    if name not in labs:
        raise KeyError(f"unknown lab {name!r}; the labs are: {', '.join(labs)}")
    return labs[name]
