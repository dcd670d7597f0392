"""What `grade` checks beyond each hand-in's own row: that grading one hand-in changed nothing it should not, that
nothing was handed in twice, and which of a hand-in's files it must not read.

- A hand-in's files are untrusted: every one is looked at (lstat, links not followed) before any is read, and
  one that leads out of the hand-in, is not a regular file (a FIFO, a device, a socket) or is over
  workspace.FILE_MAX is a note on its row, never read; a workspace whose record or lab files are among them is
  not graded.
- Before and after each hand-in is graded, every hand-in folder, the workshop's own code (the package, its
  __pycache__ included; `grade` writes no .pyc of its own; natively, the learner edition the hand-ins' code
  imports too) and its Python environment (the venv, site-packages, the top of each folder on sys.path) are
  fingerprinted (each entry's lstat): a change is a note on the row that was being graded and on the row it
  touched. In Docker's sandbox the learner's code can reach none of them; natively it can, and this is how the
  instructor hears of it.
- A run id, a manifest, or a workspace file that appears in two rows is flagged on both (a copied run folder
  renamed, a solution shared); a workspace file still as `exercises init` wrote it is everyone's, not a copy."""

from __future__ import annotations

import hashlib
import itertools
import os
import site
import stat
import sys
from collections import defaultdict
from pathlib import Path

from workshop import labs
from workshop.grading import check_report
from workshop.i18n import _
from workshop.learner import workspace

CODE = Path(__file__).resolve().parents[1]  # the workshop package: the code every lab's checks are
# files fingerprinted in one folder (a hand-in is a handful; the package a few hundred; a venv with torch about
# 30,000: ENVIRONMENT_FILES)
MAX_FILES, ENVIRONMENT_FILES = 20_000, 200_000


def entries(folder: Path, skip: Path | None = None, whole: bool = True):
    """(relative path, path, lstat) of every entry under `folder` (only those in it: not `whole`) but folders,
    links not followed, none under `skip` (the results root, which grading writes). Strings, not Paths: a venv's
    30,000 files are walked after every hand-in. Its callers take at most MAX_FILES (ENVIRONMENT_FILES)."""
    skip_at = str(skip.resolve()) if skip else ""
    start = len(str(folder)) + 1
    for top, dirs, files in os.walk(folder):
        names = dirs + files
        dirs[:] = [
            d
            for d in dirs
            if whole and not (skip_at and os.path.realpath(os.path.join(top, d)) == skip_at)
        ]
        for name in names:
            path = os.path.join(top, name)
            try:
                found = os.lstat(path)
            except OSError:
                continue  # gone since it was listed
            if not stat.S_ISDIR(found.st_mode):
                yield path[start:], path, found


def fingerprint(
    folder: Path, skip: Path | None = None, most: int = MAX_FILES, whole: bool = True
) -> dict[str, str]:
    """Relative path -> what it is, from its lstat alone (a link's own, not its target's): its type, size, inode
    and times (ctime: a process cannot set it back), for at most `most` entries. Nothing is read: a hand-in's
    file may be 40 GB of nothing, or a FIFO. {} when it is no folder (os.walk finds nothing in it). `whole`:
    entries'."""
    return {
        name: f"{st.st_mode:o} {st.st_size} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns}"
        for name, _path, st in itertools.islice(entries(folder, skip, whole), most)
    }


def not_read(path: Path, root: Path) -> str | None:
    """Why grade must not read the hand-in file `path` (None: it may): a link out of the hand-in `root`, not a
    regular file, or over workspace.FILE_MAX."""
    shown = path.relative_to(root)
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(root.resolve()):
        return _("{file} leads out of the hand-in (to {target}): not followed").format(
            file=shown, target=real
        )
    try:
        return workspace.unsafe_reason(shown, os.stat(real))
    except OSError:
        return None  # missing (a dangling link): what reads it says so


def unsafe_files(root: Path) -> list[str]:
    """One note for each file of the hand-in `root` that grade does not read (none when it is no folder)."""
    # a regular file (lstat: no link) is in the hand-in, since no link leads to it: only the others are looked at
    return [
        reason
        for name, path, st in itertools.islice(entries(root), MAX_FILES)
        if workspace.unsafe_reason(Path(name), st) is not None
        and (reason := not_read(Path(path), root))
    ]


def changed(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The files added, removed or changed between two fingerprints."""
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )


def shown(names: list[str], limit: int = 5) -> str:
    more = len(names) - limit
    return ", ".join(names[:limit]) + (_(" and {n} more").format(n=more) if more > 0 else "")


def environment() -> tuple[list[Path], list[Path]]:
    """Where Python takes code from, in grade and in every process it starts: (folders fingerprinted whole, the
    venv, sys.prefix, or where there is none each site-packages, where a planted .pth runs at every start; folders
    fingerprinted at their top level, the other folders of sys.path, where a sitecustomize.py would run), the
    current folder left out (grading writes there)."""
    venv = sys.prefix != sys.base_prefix
    whole = [Path(sys.prefix)] if venv else [Path(p) for p in site.getsitepackages()]
    here = Path.cwd().resolve()
    top = [
        Path(p)
        for p in dict.fromkeys(sys.path)
        if p
        and Path(p).is_dir()
        and Path(p).resolve() != here
        and not any(Path(p).resolve().is_relative_to(w.resolve()) for w in whole)
    ]
    return whole, top


def code_and_environment(*editions: Path) -> dict[str, str]:
    """The fingerprint of the workshop's code (names relative to it), of its Python environment and of the learner
    `editions` (absolute)."""
    whole, top = environment()
    walks = [(f, {"most": ENVIRONMENT_FILES}) for f in [*whole, *editions]] + [
        (f, {"whole": False}) for f in top
    ]
    found = fingerprint(CODE)
    for folder, walk in walks:
        found |= {f"{folder}/{name}": value for name, value in fingerprint(folder, **walk).items()}
    return found


class Watch:
    """The fingerprints of every hand-in and of the code and its environment, taken again after each hand-in is
    graded."""

    def __init__(self, paths: list[Path], results_root: Path, editions: tuple[Path, ...] = ()):
        self.paths, self.skip, self.editions = paths, results_root, editions
        self.prints = {path: fingerprint(path, results_root) for path in paths}
        self.code = code_and_environment(*editions)

    def after(self, graded: Path) -> tuple[dict[Path, list[str]], list[str]]:
        """What changed while `graded` was graded: {hand-in: files} (its own included) and the files of the code
        and its environment."""
        before, self.prints = (
            self.prints,
            {path: fingerprint(path, self.skip) for path in self.paths},
        )
        touched = {
            path: files
            for path in self.paths
            if (files := changed(before[path], self.prints[path]))
        }
        code_before, self.code = self.code, code_and_environment(*self.editions)
        return touched, changed(code_before, self.code)


def flag_twice(rows, keys, note) -> None:
    """Note, on every row that holds it, a key that another row holds too: `keys(row)` is a row's (a set),
    `note(key, holders, row)` the note on `row`, `holders` the rows that hold the key, in the table's order."""
    holders: dict = defaultdict(list)
    for row in rows:
        for key in keys(row):
            holders[key].append(row)
    for key, holding in holders.items():
        for row in holding if len(holding) > 1 else ():
            row.notes.append(note(key, holding, row))


def handed_twice(rows) -> None:
    """Flag, on every row that holds it, a run id, a manifest or a workspace file that another row holds too."""
    flag_twice(
        rows,
        lambda row: set(row.fingerprints),
        lambda what, holders, row: _(
            "handed in twice: {what} is also in {others}'s hand-in"
        ).format(
            what=what, others=", ".join(other.learner for other in holders if other is not row)
        ),
    )


def name_key(name: str) -> str:
    """A name as compared: letters and digits, case folded ("Ada L." and "ada l" are one)."""
    return "".join(c for c in name.casefold() if c.isalnum())


def same_names(rows) -> None:
    """Flag a name on two rows (the instructor's or one a hand-in gives), and a hand-in that gives a name that is
    not its row's: neither contains the other ("ada" and "Ada L." agree; a folder's name is often short)."""
    for row in rows:
        own = name_key(row.learner)
        for claimed in sorted(row.claimed):
            theirs = name_key(claimed)
            if not (own and theirs and (own in theirs or theirs in own)):
                row.notes.append(
                    _("its hand-in gives the name {claimed}, not {learner}").format(
                        claimed=claimed, learner=row.learner
                    )
                )
    names = lambda row: {row.learner, *row.claimed}  # noqa: E731
    flag_twice(
        rows,
        lambda row: {name_key(n) for n in names(row)},
        # the name as first given
        lambda key, holders, row: _(
            "a name twice: this row and {others} are both named {name}"
        ).format(
            others=", ".join(other.source for other in holders if other is not row),
            name=next(n for n in names(holders[0]) if name_key(n) == key),
        ),
    )


def workspace_files(work: Path) -> list[str]:
    """Each workspace file a lab grades, as a note names it (its name and sha256), but those still as `exercises
    init` wrote them (everyone's: not a copy)."""
    # the sha256 of each lab's workspace file as `exercises init` writes it, in every language
    untouched = check_report.in_every_language(
        lambda: {
            hashlib.sha256(workspace.lab_source(lab).encode("utf-8")).hexdigest()
            for lab, exercises in labs.all_exercises().items()
            if any(ex.attribute for ex in exercises)
        }
    )
    return [
        _("{file} (sha256 {digest})").format(file=name, digest=digest[:12])
        for name in lab_file_names()
        if (work / name).is_file()
        and (digest := workspace.file_sha256(work / name)) not in untouched
    ]


def lab_file_names() -> list[str]:
    """Every lab's workspace files, by name."""
    return [name for lab in labs.all_exercises() for name in workspace.lab_files(lab)]
