"""The learner edition: the workshop as learners get it, without the answers.

    python -m workshop edition learner --out DIR      (the image's EDITION=learner build runs this)

It copies the repository's workshop (not its tests, CI or run folders) to DIR, then:
- replaces every exercised reference (each Exercise's `reference`) with its stub: a function keeps its name,
  decorators and signature and gets the exercise's statement as its docstring and `raise NotImplementedError`
  as its body; a constant (ANSWERS, PREDICTIONS) gets the exercise's stub value (None for every answer);
  a document's reference (the survey's model answer) is deleted, translations included;
- deletes the model answers (workshop/labs/<lab>/model_answers*.md);
- deletes the private helpers that only a reference used (a `_name` no other code of the edition mentions);
- checks the result: no reference's body is left anywhere in the edition's code, and the handouts quoting
  lines of a reference are listed (prose is the lab owner's to change);
- writes DIR/workshop/EDITION.json: what it changed and what it found.
Every check still grades there, because no check takes its truth from a reference (the labs measure it); where
a lab's demonstration uses a reference (a kernel that is also an exercise), that lab fails there, and the
edition's report names it.
"""

from __future__ import annotations

import ast
import collections
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

from workshop.foundations.worker_process import scratch_root
from workshop.learner import source_check

ROOT = Path(__file__).resolve().parents[2]
KEPT = ("workshop", "theory", "survey", "docker", "slurm", "benchmarks")
KEPT_FILES = (
    "README.md",
    "README.es.md",
    "pyproject.toml",
    "requirements-pinned.txt",
    "compose.yaml",
    "tasks.py",
    ".dockerignore",
    ".gitignore",
)
SKIPPED = ("__pycache__", ".pytest_cache", "*.pyc", "*.egg-info")
MODEL_ANSWERS = "model_answers*.md"
QUOTE_MIN = 30  # characters: a reference's line this long, found in a handout, is quoted there


def replace_definition(path: Path, node: ast.stmt, text: str) -> None:
    """Replace the module-level definition `node` (of `path`'s source as it is now) with `text`."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) - 1
    path.write_text(
        "".join(lines[:start]) + text.rstrip("\n") + "\n" + "".join(lines[node.end_lineno :])
    )


def stub_reference(ex, out: Path, report, bodies: dict[str, str], sources: dict[str, str]) -> Path:
    """Replace ex's reference (a function's or a constant's: a document's is deleted, build_learner) in the
    edition with its stub; the source file edited, with the reference's body (`bodies`, for find_leftovers) and
    its source (`sources`: what a handout may quote)."""
    module, _, name = ex.reference.partition(":")
    # the edition's copy of the module's source file
    path = out / Path(importlib.util.find_spec(module).origin).resolve().relative_to(ROOT)
    source = path.read_text(encoding="utf-8")
    # its first module-level binding: the def, or the assignment of a constant (KeyError: none)
    node = source_check.top_level(ast.parse(source))[name][0]
    sources[ex.reference] = ast.get_source_segment(source, node)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        # the learner's stub of it under the reference's name: its decorators and signature, the exercise's
        # statement as its docstring, a body that raises
        text = ex.function_stub(node, node.name)
        bodies[ex.reference] = body_source(node)
    else:  # a constant of the exercise's name (every one is: a test reads each as a stub there)
        text = ex.stub_code().strip()  # the learner's stub: the questions as comments
    replace_definition(path, node, text)
    report.stubbed.append(f"{ex.id}: {ex.reference}")
    return path


def body_source(node: ast.FunctionDef) -> str:
    """The function's body without its docstring, as ast.unparse writes it: formatting and comments aside."""
    body = (
        node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
    )
    return ast.unparse(ast.Module(body, []))


def python_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*.py") if "__pycache__" not in p.parts)


def remove_orphans(out: Path, edited: set[Path], report) -> None:
    """Delete the private module-level functions of the edited modules that nothing mentions any more (that only
    their `def` names), one at a time (a helper that only a removed one used is the next)."""
    while True:
        # how often each word (a run of \w, as `\bname\b` finds it whole) occurs in the edition's code: a name
        # found once is only its `def`
        words = collections.Counter(
            word
            for p in python_files(out)
            for word in re.findall(r"\w+", p.read_text(encoding="utf-8"))
        )
        orphans = (
            (path, node)
            for path in sorted(edited)
            for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.FunctionDef)
            and node.name.startswith("_")
            and words[node.name] == 1
        )
        if (orphan := next(orphans, None)) is None:
            return
        path, node = orphan
        replace_definition(path, node, "")
        report.helpers_removed.append(f"{path.relative_to(out)}:{node.name}")


def find_leftovers(out: Path, bodies: dict[str, str], sources: dict[str, str], report) -> None:
    """References whose body is still in the edition's code; handouts that quote a reference's lines."""
    # a function holds a reference's body only with as many statements (its docstring aside): only those are
    # written out and compared
    sizes = {len(ast.parse(body).body) for body in bodies.values()}
    found = {
        body_source(node)
        for path in python_files(out)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and {len(node.body), len(node.body) - 1} & sizes
    }
    report.left_bodies = sorted(ref for ref, body in bodies.items() if body in found)
    handouts = {
        h: h.read_text(encoding="utf-8") for h in sorted(out.glob("workshop/labs/*/README*.md"))
    }
    for reference, source in sources.items():
        # its long lines but its signature, decorators, docstring's opening and comments
        lines = {
            stripped
            for line in source.splitlines()
            if len(stripped := line.strip()) >= QUOTE_MIN
            and not stripped.startswith(("def ", "@", '"""', "#"))
        }
        for handout, text in handouts.items():
            if quoted := sum(line in text for line in lines):
                report.quoted_in.append(f"{handout.relative_to(out)}: {reference} ({quoted} lines)")


def build_learner(out: Path) -> SimpleNamespace:
    """The edition in `out`, and its report (EDITION.json's content)."""
    from workshop.labs import all_exercises

    report = SimpleNamespace(
        edition="learner",
        stubbed=[],  # "exercise id: its reference", now a stub
        deleted=[],  # files
        helpers_removed=[],  # module:name
        left_bodies=[],  # references whose body is still in the code
        quoted_in=[],  # "handout: reference (k lines)" where a handout quotes one
    )
    # a copy of the workshop's tree, without caches, into an empty `out`
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty")
    out.mkdir(parents=True, exist_ok=True)
    for name in (*KEPT, *KEPT_FILES):  # folders, then files
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, out / name, ignore=shutil.ignore_patterns(*SKIPPED))
        elif (ROOT / name).is_file():
            shutil.copy2(ROOT / name, out / name)
    (out / "results").mkdir(exist_ok=True)
    exercises = [ex for lab_exercises in all_exercises().values() for ex in lab_exercises]
    bodies, sources = {}, {}  # reference -> its body, its source (stub_reference)
    edited = {
        stub_reference(ex, out, report, bodies, sources) for ex in exercises if not ex.document
    }
    # the model answers (in a lab folder or its grading/), and each document's reference (the survey's model
    # answer) with its translations
    deleted = set(out.glob(f"workshop/labs/*/**/{MODEL_ANSWERS}"))
    for model in (Path(ex.load_reference()).resolve() for ex in exercises if ex.document):
        deleted |= set((out / model.parent.relative_to(ROOT)).glob(f"{model.stem}*{model.suffix}"))
    for path in sorted(deleted):
        path.unlink()
        report.deleted.append(str(path.relative_to(out)))
    remove_orphans(out, edited, report)
    find_leftovers(out, bodies, sources, report)
    (out / "workshop" / "EDITION.json").write_text(json.dumps(vars(report), indent=2) + "\n")
    return report


def cached_learner(building) -> Path:
    """The folder whose `workshop` package is the learner edition, for the worker of native `check`: this code
    where it is that edition already (the learner image), else the edition built once per content of this package
    (a hash of workshop/**/*.py; `building` is called first) under the scratch root, in a folder of this user's
    that no other can write, and moved into place whole: two commands at once each build one, and the first in
    place is the one both use. Not for `grade`: a worker of this user's (the learner's code) can write the cache,
    so grade builds an edition of its own for each class (cli/instructor.py namespace_sandbox)."""
    if (ROOT / "workshop" / "EDITION.json").is_file():
        return ROOT
    # each source file's name, then its bytes
    digest = hashlib.sha256(
        b"".join(
            f"{path.relative_to(ROOT)}\n".encode() + path.read_bytes()
            for path in sorted((ROOT / "workshop").rglob("*.py"))
        )
    )
    cache = scratch_root() / f"workshop-learner-edition-{os.geteuid()}"
    cache.mkdir(mode=0o755, exist_ok=True)
    # the scratch root is shared: a folder of that name made by another user could hold code of theirs
    if cache.lstat().st_uid != os.geteuid() or cache.lstat().st_mode & 0o022:
        raise OSError(f"{cache} is not a folder of this user's alone: remove it")
    built = cache / digest.hexdigest()[:20]
    if not built.is_dir():
        building()
        folder = Path(tempfile.mkdtemp(dir=cache))
        build_apart(folder)
        folder.chmod(0o755)  # a worker of its own uid reads it
        try:
            folder.rename(built)
        except OSError:  # another command's build came first
            shutil.rmtree(folder)
    return built


def build_apart(out: Path) -> None:
    """`edition learner --out OUT` in a Python of its own that imports this package alone (PYTHONPATH: its root):
    the edition of the labs this package declares, whatever stands in for them in this process (a test's toy
    lab, whose references are no part of it), so that what is cached under this package's hash is its edition."""
    command = [sys.executable, "-m", "workshop", "edition", "learner", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["?"])[-1]
        raise OSError(f"the learner edition could not be built in {out}: {why}")
