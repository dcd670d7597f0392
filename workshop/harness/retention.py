"""Which run folders `python -m workshop clean` removes: the retention rule the README states.

Kept: the newest KEEP runs of the reference (`run`) and the newest KEEP runs of a workspace (`check`, `grade`);
the runs results/latest and results/latest-check point at; for each workspace and exercise, the newest run that
graded it (`exercises list` reads where the learner stands from it); and any run still running. Every other run
folder goes, an incomplete one too (`clean RUN` removes one run by name: an incomplete run dismissed). Only run
folders (a folder with a manifest.json) are ever removed: grade's tables and the build cache stay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from workshop.declarations import checks
from workshop.foundations import results

KEEP = 5  # runs of each kind kept, newest first: a morning's checks, and what to compare with


def kept(root: Path, keep: int = KEEP) -> set[Path]:
    """The run folders under root that the rule keeps."""
    newest = {results.LATEST: [], results.LATEST_CHECK: []}
    keeping = set()
    for run_dir in results.runs(root):  # newest first
        try:
            manifest = results.read_manifest(run_dir)
        except results.CorruptFile:
            continue  # not a run to keep: its record is lost
        same_kind = newest[results.latest_name(manifest)]
        same_kind.append(run_dir)
        if len(same_kind) <= keep or results.run_state(manifest).status == "running":
            keeping.add(run_dir)
    pointed = (Path(root) / name for name in (results.LATEST, results.LATEST_CHECK))
    keeping |= {p.resolve() for p in pointed if p.is_symlink() and p.resolve().is_dir()}
    return {p.resolve() for p in keeping} | last_graded(newest[results.LATEST_CHECK])


def last_graded(check_runs: list[Path]) -> set[Path]:
    """For each workspace and exercise, the newest of these runs (newest first) that graded it."""
    newest: dict[tuple, Path] = {}  # (workspace, exercise id) -> the newest run that graded it
    for run_dir in check_runs:
        for result_path in run_dir.glob("*/result.json"):
            try:
                result = results.read_json(result_path)
                work = (result.get("implementation") or {}).get("work")
                graded = result.get("exercises", {}).items()
            except (OSError, ValueError, AttributeError):
                continue
            for ex_id, entry in graded:
                if entry.get("status", checks.NOT_GRADED) != checks.NOT_GRADED:
                    newest.setdefault((work, ex_id), run_dir.resolve())
    return set(newest.values())


def removable(root: Path, keep: int = KEEP) -> list[Path]:
    """The run folders under root that the rule removes, newest first."""
    keeping = kept(root, keep)
    return [r for r in results.runs(root) if r.resolve() not in keeping]


def remove(root: Path, run_dirs: list[Path]) -> int:
    """Delete these run folders under root, and a pointer (results/latest) left pointing at none; the bytes
    they held."""
    files = (f for r in run_dirs for f in r.rglob("*") if f.is_file() and not f.is_symlink())
    freed = sum(f.stat().st_size for f in files)
    for run_dir in run_dirs:
        shutil.rmtree(run_dir)
    for name in (results.LATEST, results.LATEST_CHECK):
        pointer = Path(root) / name
        if pointer.is_symlink() and not pointer.exists():
            pointer.unlink()
    return freed
