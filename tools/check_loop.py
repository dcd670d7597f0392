"""The learner's loop, timed (issue 27): `python -m workshop check LAB EXERCISE` for each exercise of some labs,
each a few times, wall and CPU seconds side by side with the exercise's target, written to a folder under
benchmarks/ (record.json and README.md).

Each lab gets a fresh workspace (`exercises init`) to whose file every exercise's reference is appended as a
learner writes it: a function as its own source, with the definitions of its module that it uses (the
workspace's header imports the rest); a constant (ANSWERS, PREDICTIONS) as its value. An import of the reference
would be refused (the worker runs no workshop code as the learner's), so every check passes and grades the whole
of its exercise, as a learner's finished code does. A constant whose reference is a function is bound to its
value for what the lab's grading calls it with (the lab's `given`): distributed's, N ranks; compile's, the folder
of the run it is graded against, so compile's lab runs once first (timed, no target) and its constants are bound
to that run.

An exercise graded from a run's files (Exercise.from_run) is checked first with --rerun (the lab runs for it:
an earlier check of another exercise may not have run what it is graded on), then re-graded against that run
(but compile's, bound to their run): each timing says which it was, and a target is for the one its issue names.
The machine's load average is recorded beside each check: on a shared machine the wall time is the load's as
much as the loop's (CPU seconds say what the loop cost).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import resource
import statistics
import subprocess
import symtable
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from workshop import labs
from workshop.declarations.exercise import Exercise
from workshop.foundations.run_options import RunOptions
from workshop.grading import check_report

RUNS, REGRADED = "runs the lab", "re-graded"


@dataclass(frozen=True)
class Target:
    """Issue 27's target for a lab: seconds of wall time per `check LAB EXERCISE` on a 2-core machine, for the
    exercises it names (None: every one) checked the way it names (None: either way)."""

    wall_s: float
    exercises: tuple[str, ...] | None = None
    how: str | None = None

    def applies(self, exercise: str, how: str) -> bool:
        return (self.exercises is None or exercise in self.exercises) and self.how in (None, how)


TARGETS = {
    "autograd": Target(5.0),
    "tensor": Target(5.0),
    "dispatcher": Target(5.0),
    "custom_op": Target(20.0, ("forward_kernel", "backward_kernel")),
    "compile": Target(10.0, how=REGRADED),
    "distributed": Target(60.0, ("predictions",), RUNS),
}
# The labs whose constants' references are functions of the run graded against (see the module's docstring).
BOUND_TO_A_RUN = {"compile"}


@dataclass
class Timing:
    lab: str
    exercise: str
    how: str  # RUNS or REGRADED
    target_s: float | None  # None: no target for this exercise checked this way
    wall_s: list[float]  # one per repetition
    cpu_s: list[float]  # the check's processes' user + system time, per repetition
    load: list[float]  # the 1-minute load average as each repetition began
    passed: bool  # every repetition's check exited 0

    @property
    def median_wall_s(self) -> float:
        return statistics.median(self.wall_s)

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(self.cpu_s)

    @property
    def met(self) -> bool | None:
        return None if self.target_s is None else self.median_wall_s <= self.target_s


def bound_names(tree: ast.Module) -> dict[str, ast.stmt]:
    """A module's top-level definitions (def, class, assignment) by the name they bind."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update({t.id: node for t in targets if isinstance(t, ast.Name)})
    return found


def global_names(source: str) -> set[str]:
    """The module-level names a top-level statement's code reads: a name a function binds for itself (a nested
    def, a parameter) is not one, even where the module binds the same name."""
    found, tables = set(), [symtable.symtable(source, "<reference>", "exec")]
    while tables:
        table = tables.pop()
        tables += table.get_children()
        module = table.get_type() == "module"
        found |= {
            s.get_name()
            for s in table.get_symbols()
            if s.is_referenced() and (s.is_global() or (module and not s.is_imported()))
        }
    return found


def segment(text: str, node: ast.stmt) -> str:
    """A top-level statement's source, with its decorators (@triton.jit, @dataclass)."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    return "\n".join(text.splitlines()[first - 1 : node.end_lineno])


def from_imports(tree: ast.Module) -> dict[str, str]:
    """The names a module's `from X import Y [as Z]` statements bind: Z -> "X.Y"."""
    return {
        a.asname or a.name: f"{n.module}.{a.name}"
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.level == 0
        for a in n.names
    }


def reference_source(reference: str, attribute: str, header: str) -> str:
    """The reference's source bound to `attribute`, after the definitions of its module it uses (transitively),
    less the names the workspace's header imports. A name its module imports from a package the header imports
    whole (wrap_triton, from torch.library) is bound to its full name (wrap_triton = torch.library.wrap_triton):
    the header's imports are the only ones a learner's file may make."""
    module, _, name = reference.partition(":")
    text = Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")
    tree = ast.parse(text)
    defined, elsewhere = bound_names(tree), from_imports(tree)
    header_tree = ast.parse(header)
    imported = {
        a.asname or a.name
        for n in header_tree.body
        if isinstance(n, ast.ImportFrom | ast.Import)
        for a in n.names
    }
    whole = {
        a.name
        for n in header_tree.body
        if isinstance(n, ast.Import)
        for a in n.names
        if not a.asname
    }
    wanted, todo, aliases = {name}, [defined[name]], {}
    while todo:
        used = global_names(segment(text, todo.pop())) - imported
        for helper in sorted(used & defined.keys() - wanted):
            wanted.add(helper)
            todo.append(defined[helper])
        aliases |= {n: elsewhere[n] for n in used - defined.keys() if n in elsewhere}
    nodes = dict.fromkeys(defined[n] for n in wanted)
    parts = [f"{n} = {full}" for n, full in sorted(aliases.items()) if full.split(".")[0] in whole]
    parts += [
        renamed(segment(text, node), node, name, attribute)
        for node in sorted(nodes, key=lambda n: n.lineno)
    ]
    return "\n\n".join(parts) + (f"\n\n{name} = {attribute}" if attribute != name else "") + "\n"


def renamed(source: str, node: ast.stmt, name: str, attribute: str) -> str:
    """The reference's own definition under the exercise's name, as the learner's is written (the lab reads a
    kernel's name in its launch records: softmax_fwd_kernel, not _fwd_one_pass); other statements as they are."""
    if (
        attribute == name
        or not isinstance(node, ast.FunctionDef | ast.ClassDef)
        or node.name != name
    ):
        return source
    keyword = "class" if isinstance(node, ast.ClassDef) else "def"
    return re.sub(rf"\b{keyword} {name}\b", f"{keyword} {attribute}", source, count=1)


# What a constant's reference that is a function is called with, as the lab's grading calls it (its `given`),
# from the lab folder of the run graded against: N, the ranks a check runs (--n's default); that run's folder.
REFERENCE_ARGUMENT = {
    "distributed": lambda run: RunOptions("cpu").n_procs,
    "compile": str,
}


def constant(ex: Exercise) -> bool:
    """Whether the learner writes the exercise as a constant (ANSWERS, KERNEL_EXPLAINED), not a function."""
    return ex.attribute.isupper()


def exercise_source(ex: Exercise, header: str, run: Path | None) -> str:
    """The exercise's reference as a learner's file holds it (see the module's docstring)."""
    if not constant(ex):
        return reference_source(ex.reference, ex.attribute, header)
    value = ex.load_reference()
    if callable(value):
        value = value(REFERENCE_ARGUMENT[ex.lab](run))
    return f"{ex.attribute} = {value!r}\n"


def append(work: Path, lab: str, sources: list[str]) -> None:
    """Add code to the workspace's file: a later binding of a name wins over the stub's."""
    with (work / f"{lab}.py").open("a", encoding="utf-8") as f:
        f.write("\n\n" + "\n\n".join(sources))


def reference_workspace(lab: str, root: Path) -> Path:
    """A workspace for `lab` whose exercises are the lab's references, written in it as a learner's code; for a
    lab in BOUND_TO_A_RUN, its constants are left to bind_to_run."""
    work = root / "work"
    init = [sys.executable, "-m", "workshop", "exercises", "init", str(work), "--lab", lab]
    subprocess.run([*init, "--out", str(root / "results")], check=True, capture_output=True)
    header = labs.workspace_header(lab)
    later = lab in BOUND_TO_A_RUN
    exercises = [ex for ex in labs.exercises(lab) if ex.attribute and not (later and constant(ex))]
    append(work, lab, [exercise_source(ex, header, None) for ex in exercises])
    return work


def bind_to_run(lab: str, work: Path, run: Path) -> None:
    """Give the workspace the constants of `lab` that are the answers of its run whose lab folder is `run`."""
    header = labs.workspace_header(lab)
    exercises = [ex for ex in labs.exercises(lab) if ex.attribute and constant(ex)]
    append(work, lab, [exercise_source(ex, header, run) for ex in exercises])


def time_check(
    lab: str, exercise: str | None, work: Path, out: Path, rerun: bool = False
) -> tuple[str, float, float, bool, float]:
    """One `check LAB [EXERCISE] [--rerun]`: how it checked (RUNS or REGRADED), wall seconds, CPU seconds of its
    processes, whether it passed, and the load average as it began."""
    ids = (f"{lab}.{exercise}",) if exercise else ()
    regraded = ids and not rerun and check_report.regrade_sources(out, work, ids)
    how = REGRADED if regraded else RUNS
    command = [sys.executable, "-m", "workshop", "check", lab, *ids, "--work", str(work)]
    command += ["--rerun"] if rerun else []
    load = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*command, "--out", str(out)], capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return how, wall, cpu, done.returncode == 0, load


def timings_of(lab: str, exercise: str, runs: list) -> list[Timing]:
    """The repetitions of one exercise's check, one Timing per way it was checked (RUNS first, as they ran)."""
    found = []
    for how in dict.fromkeys(r[0] for r in runs):
        mine = [r for r in runs if r[0] == how]
        target = TARGETS.get(lab)
        found.append(
            Timing(
                lab,
                exercise,
                how,
                target.wall_s if target and target.applies(exercise, how) else None,
                [round(r[1], 2) for r in mine],
                [round(r[2], 2) for r in mine],
                [round(r[4], 2) for r in mine],
                all(r[3] for r in mine),
            )
        )
    return found


def time_lab(lab: str, repeat: int) -> list[Timing]:
    with tempfile.TemporaryDirectory(prefix=f"check-loop-{lab}-") as tmp:
        work, results = reference_workspace(lab, Path(tmp)), Path(tmp) / "results"
        timings = []
        if lab in BOUND_TO_A_RUN:  # the run its constants are the answers of: the whole lab, once
            timings += timings_of(lab, "(whole lab)", [time_check(lab, None, work, results)])
            from_run = tuple(ex.id for ex in labs.exercises(lab) if ex.from_run)
            bind_to_run(lab, work, Path(check_report.regrade_sources(results, work, from_run)[lab]))
        for ex in labs.exercises(lab):
            if ex.attribute:  # a document (the distributed survey) is not timed: see README's note
                # an exercise graded from a run's files: first graded on a run of its own (an earlier check
                # of another exercise may not have run what it needs), then re-graded against that run
                rerun = ex.from_run and lab not in BOUND_TO_A_RUN
                runs = [
                    time_check(lab, ex.name, work, results, rerun and i == 0) for i in range(repeat)
                ]
                timings += timings_of(lab, ex.name, runs)
        return timings


def table(timings: list[Timing]) -> str:
    rows = [
        "| exercise | checked | target (s) | wall, median (s) | met | CPU, median (s) | every run, wall (s) "
        "| load | passed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in timings:
        met = {None: "", True: "met", False: "MISSED"}[t.met]
        rows.append(
            f"| {t.lab}.{t.exercise} | {t.how} | {t.target_s or ''} | {t.median_wall_s:.1f} | {met} "
            f"| {t.median_cpu_s:.1f} | {', '.join(f'{w:.1f}' for w in t.wall_s)} "
            f"| {', '.join(f'{x:.1f}' for x in t.load)} | {t.passed} |"
        )
    return "\n".join(rows)


def lab_table(timings: list[Timing]) -> str:
    """Per lab, its target beside the slowest check it applies to (median of its repetitions)."""
    rows = [
        "| lab | target | wall, slowest median (s) | its CPU (s) | load | met |",
        "|---|---|---|---|---|---|",
    ]
    for lab in dict.fromkeys(t.lab for t in timings):
        aimed = [t for t in timings if t.lab == lab and t.target_s is not None]
        if lab not in TARGETS or not aimed:
            continue
        target, worst = TARGETS[lab], max(aimed, key=lambda t: t.median_wall_s)
        which = ", ".join(target.exercises or ("any exercise",)) + (
            f" ({target.how})" if target.how else ""
        )
        met = "met" if all(t.met for t in aimed) else "MISSED"
        rows.append(
            f"| {lab} | {which} <= {target.wall_s:g} s | {worst.median_wall_s:.1f} ({worst.exercise}) "
            f"| {worst.median_cpu_s:.1f} | {statistics.median(worst.load):.1f} | {met} |"
        )
    return "\n".join(rows)


NOTE = (
    "Each row: `check LAB EXERCISE` on a workspace holding the references, so every check passes and grades the "
    "whole exercise. checked: whether the check ran the lab or re-graded the exercise against the workspace's "
    "latest run. CPU: user + system seconds of the check's processes (the command, the lab's process, the "
    "worker). load: the 1-minute load average as each check began; the targets are for a quiet 2-core machine. "
    "An exercise graded from a document (distributed.survey) is not timed."
)


def main(args) -> int:
    chosen = args.labs or list(TARGETS)
    timings = [t for lab in chosen for t in time_lab(lab, args.repeat)]
    out = Path(args.out or f"benchmarks/check-loop/{datetime.now(UTC):%Y%m%d-%H%M%S}")
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "command": args.command_line,
        "cpus": os.cpu_count(),
        "when": f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC",
        "timings": [asdict(t) | {"median_wall_s": t.median_wall_s, "met": t.met} for t in timings],
    }
    (out / "record.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    text = lab_table(timings) + "\n\n" + table(timings)
    head = (
        f"# `check LAB EXERCISE`, timed\n\n`{args.command_line}` on {os.cpu_count()} CPUs, "
        f"{record['when']}.\n\n{NOTE}\n\n"
    )
    (out / "README.md").write_text(head + text + "\n", encoding="utf-8")
    print(text)
    print(f"record: {out}")
    return 0 if all(t.passed for t in timings) else 1
