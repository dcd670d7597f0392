"""What `grade` checks beyond each hand-in's own row: that grading one hand-in changed nothing it should not, and
that nothing was handed in twice.

- Before and after each hand-in is graded, every hand-in folder and the workshop's own code (the package,
  its __pycache__ included; `grade` writes no .pyc of its own) are fingerprinted (each file's sha256): a
  change is a note on the row that was being graded and on the row it touched. In Docker's sandbox the
  learner's code can reach none of them; natively it can, and this is how the instructor hears of it.
- A run id, a manifest, or a workspace file that appears in two rows is flagged on both (a copied run folder
  renamed, a solution shared); a workspace file still as `exercises init` wrote it is everyone's, not a copy.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path

from workshop import i18n
from workshop.grading import workspace, workspace_init
from workshop.i18n import _

CODE = Path(__file__).resolve().parents[1]  # the workshop package: the code every lab's checks are
# files fingerprinted in one folder (a hand-in is a handful; the package a few hundred)
MAX_FILES = 20_000


def fingerprint(folder: Path, skip: Path | None = None) -> dict[str, str]:
    """Relative path -> sha256 of every file under `folder` (symlinks not followed), but those under `skip`
    (the results root, which grading writes); {} when it is no folder."""
    found = {}
    if not folder.is_dir():
        return found
    skip = skip.resolve() if skip else None
    for path in sorted(folder.rglob("*"))[:MAX_FILES]:
        if skip and path.resolve().is_relative_to(skip):
            continue
        if path.is_file() and not path.is_symlink():
            try:
                found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
            except OSError:
                found[str(path.relative_to(folder))] = "unreadable"
    return found


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files added, removed or changed between two fingerprints."""
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


def shown(names: list[str], limit: int = 5) -> str:
    more = len(names) - limit
    return ", ".join(names[:limit]) + (_(" and {n} more").format(n=more) if more > 0 else "")


class Watch:
    """The fingerprints of every hand-in and of the code, taken again after each hand-in is graded."""

    def __init__(self, paths: list[Path], results_root: Path):
        self.paths, self.skip = paths, results_root
        self.prints = {path: fingerprint(path, results_root) for path in paths}
        self.code = fingerprint(CODE)

    def after(self, graded: Path) -> tuple[dict[Path, list[str]], list[str]]:
        """What changed while `graded` was graded: {hand-in: files} (its own included) and the code's files."""
        touched = {}
        for path in self.paths:
            now = fingerprint(path, self.skip)
            if files := changed(self.prints[path], now):
                touched[path] = files
            self.prints[path] = now
        code_now = fingerprint(CODE)
        code_files = changed(self.code, code_now)
        self.code = code_now
        return touched, code_files


def stub_hashes() -> set[str]:
    """The sha256 of each lab's workspace file as `exercises init` writes it, in every language (untouched:
    not a copy)."""
    from workshop import labs

    found, current = set(), i18n.language()
    try:
        for lang in i18n.LANGUAGES:
            i18n.set_language(lang)
            for lab in labs.all_exercises():
                if any(ex.attribute for ex in labs.exercises(lab)):
                    text = workspace_init.lab_source(lab).encode("utf-8")
                    found.add(hashlib.sha256(text).hexdigest())
    finally:
        i18n.set_language(current)
    return found


def handed_twice(rows) -> None:
    """Flag, on every row that holds it, a run id, a manifest or a workspace file that another row holds too."""
    holders: dict[tuple[str, str], set[int]] = defaultdict(set)
    untouched = stub_hashes()
    for index, row in enumerate(rows):
        for kind, value in row.fingerprints:
            if not (kind == "file" and value.split(" ", 1)[1] in untouched):
                holders[(kind, value)].add(index)
    for (kind, value), indices in holders.items():
        if len(indices) < 2:
            continue
        for index in sorted(indices):
            others = ", ".join(rows[i].learner for i in sorted(indices) if i != index)
            rows[index].notes.append(
                _("handed in twice: {what} is also in {others}'s hand-in").format(
                    what=described(kind, value), others=others
                )
            )


def described(kind: str, value: str) -> str:
    if kind == "run":
        return _("run {run}").format(run=value)
    if kind == "manifest":
        return _("a run's manifest (sha256 {digest})").format(digest=value[:12])
    name, digest = value.split(" ", 1)
    return _("{file} (sha256 {digest})").format(file=name, digest=digest[:12])


def workspace_files(work: Path) -> list[tuple[str, str]]:
    """("file", "<name> <sha256>") of each workspace file a lab grades."""
    from workshop import labs

    found = []
    for lab in labs.all_exercises():
        for name in workspace.lab_files(lab):
            if (work / name).is_file():
                found.append(("file", f"{name} {workspace.file_sha256(work / name)}"))
    return found
