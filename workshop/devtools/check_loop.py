"""The learner's loop, timed (issue 27): `python -m workshop check LAB EXERCISE` for each exercise of some labs,
each a few times, wall and CPU seconds side by side with the exercise's target, written to a folder under
benchmarks/ (record.json and README.md).

Each lab gets a fresh workspace (`exercises init`) to whose file every exercise's reference is appended as a
learner writes it: its own source, with the definitions of its module that it uses (the workspace's header
imports the rest). An import of the reference would be refused (the worker runs no workshop code as the
learner's), so every check passes and grades the whole of its exercise, as a learner's finished code does. The
machine's load average is recorded before each lab: on a shared machine the wall time is the load's as much as
the loop's (CPU seconds say what the loop cost).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from workshop import labs

# The targets, seconds of wall time per `check LAB EXERCISE` on a 2-core machine (issue 27, item 1).
TARGETS = {
    "autograd": 5.0,
    "dispatcher": 5.0,
    "custom_op": 20.0,
    "compile": 10.0,
    "distributed": 60.0,
}


@dataclass
class Timing:
    lab: str
    exercise: str
    target_s: float | None
    wall_s: list[float]  # one per repetition
    cpu_s: list[float]  # the check's processes' user + system time, per repetition
    passed: bool  # every repetition's check exited 0
    load_before: float  # the 1-minute load average when the lab's timings began

    @property
    def median_wall_s(self) -> float:
        return statistics.median(self.wall_s)

    @property
    def median_cpu_s(self) -> float:
        return statistics.median(self.cpu_s)


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


def reference_source(reference: str, attribute: str, header: str) -> str:
    """The reference's source bound to `attribute`, after the definitions of its module it uses (transitively),
    less the names the workspace's header imports."""
    module, _, name = reference.partition(":")
    text = Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")
    defined = bound_names(ast.parse(text))
    imported = {
        a.asname or a.name
        for n in ast.walk(ast.parse(header))
        if isinstance(n, ast.ImportFrom | ast.Import)
        for a in n.names
    }
    wanted, todo = {name}, [defined[name]]
    while todo:
        used = {n.id for n in ast.walk(todo.pop()) if isinstance(n, ast.Name)}
        for helper in sorted(used & defined.keys() - wanted - imported):
            wanted.add(helper)
            todo.append(defined[helper])
    nodes = dict.fromkeys(defined[n] for n in wanted)
    parts = [ast.get_source_segment(text, node) for node in sorted(nodes, key=lambda n: n.lineno)]
    return "\n\n".join(parts) + (f"\n\n{attribute} = {name}" if attribute != name else "") + "\n"


def reference_workspace(lab: str, root: Path) -> Path:
    """A workspace for `lab` whose exercises are the lab's references, written in it as a learner's code."""
    work = root / "work"
    init = [sys.executable, "-m", "workshop", "exercises", "init", str(work), "--lab", lab]
    subprocess.run([*init, "--out", str(root / "results")], check=True, capture_output=True)
    header = labs.workspace_header(lab)
    sources = [
        reference_source(ex.reference, ex.attribute, header)
        for ex in labs.exercises(lab)
        if ex.attribute
    ]
    with (work / f"{lab}.py").open("a", encoding="utf-8") as f:
        f.write("\n\n" + "\n\n".join(sources))
    return work


def time_check(lab: str, exercise: str, work: Path, out: Path) -> tuple[float, float, bool]:
    """One `check LAB EXERCISE`: wall seconds, CPU seconds of its processes, and whether it passed."""
    command = [sys.executable, "-m", "workshop", "check", lab, exercise, "--work", str(work)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*command, "--out", str(out)], capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode == 0


def time_lab(lab: str, repeat: int) -> list[Timing]:
    with tempfile.TemporaryDirectory(prefix=f"check-loop-{lab}-") as tmp:
        work = reference_workspace(lab, Path(tmp))
        load = os.getloadavg()[0]
        timings = []
        for ex in labs.exercises(lab):
            runs = [time_check(lab, ex.name, work, Path(tmp) / "results") for _ in range(repeat)]
            timings.append(
                Timing(
                    lab,
                    ex.name,
                    TARGETS.get(lab),
                    [round(w, 2) for w, _, _ in runs],
                    [round(c, 2) for _, c, _ in runs],
                    all(ok for _, _, ok in runs),
                    load,
                )
            )
        return timings


def table(timings: list[Timing]) -> str:
    rows = [
        "| exercise | target (s) | wall, median (s) | CPU, median (s) | every run (s) | passed | load |",
        "|---|---|---|---|---|---|---|",
    ]
    for t in timings:
        met = "" if t.target_s is None else (" ok" if t.median_wall_s <= t.target_s else " MISS")
        rows.append(
            f"| {t.lab}.{t.exercise} | {t.target_s} | {t.median_wall_s:.1f}{met} | {t.median_cpu_s:.1f} "
            f"| {', '.join(f'{w:.1f}' for w in t.wall_s)} | {t.passed} | {t.load_before:.1f} |"
        )
    return "\n".join(rows)


def main(args) -> int:
    chosen = args.labs or list(TARGETS)
    timings = [t for lab in chosen for t in time_lab(lab, args.repeat)]
    out = Path(args.out or f"benchmarks/check-loop/{datetime.now(UTC):%Y%m%d-%H%M%S}")
    out.mkdir(parents=True, exist_ok=True)
    record = {
        "command": args.command_line,
        "cpus": os.cpu_count(),
        "timings": [asdict(t) | {"median_wall_s": t.median_wall_s} for t in timings],
    }
    (out / "record.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    text = table(timings)
    head = f"# `check LAB EXERCISE`, timed\n\n`{args.command_line}` on {os.cpu_count()} CPUs.\n\n"
    (out / "README.md").write_text(head + text + "\n", encoding="utf-8")
    print(text)
    print(f"record: {out}")
    return 0 if all(t.passed for t in timings) else 1
