"""`grade` of one class in containers and natively, timed side by side (issue 40 wants containers within 2x of
native): a benchmark, not a test.

    python -m tools grade-timing [--workspaces 10] [--lab autograd] [--keep DIR]

It makes N honest workspaces of the lab (`exercises init`, every exercise's reference written in as a learner's
code: tools/check_loop.reference_workspace), then grades the whole class twice, `grade --sandbox docker` (the
learner image: `docker compose build learner-edition`; WORKSHOP_LEARNER_IMAGE names another) and
`grade --sandbox native`, one after the other in this run, and prints both wall times, their ratio, the load
average at each start (on a shared machine the wall time is the load's as much as grade's) and whether the two
tables agree on every learner's every exercise. Time it on a quiet machine.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tools.check_loop import reference_workspace

SANDBOXES = ("docker", "native")


def honest_class(lab: str, root: Path, size: int) -> list[Path]:
    """`size` workspaces of `lab`, each holding the lab's references as a learner's code, named learner-01..."""
    class_dir = root / "class"
    class_dir.mkdir(parents=True)
    works = []
    for i in range(1, size + 1):
        work = reference_workspace(lab, root / f"making-{i:02}")
        works.append(work.rename(class_dir / f"learner-{i:02}"))
    return works


def timed_grade(lab: str, works: list[Path], sandbox: str, root: Path) -> tuple[float, float, Path]:
    """`grade WORKS --lab LAB --sandbox SANDBOX`: wall seconds, the load average as it began, its grades.csv."""
    table = root / f"grades-{sandbox}"
    command = [sys.executable, "-m", "workshop", "grade", *map(str, works), "--lab", lab]
    command += ["--device", "cpu", "--sandbox", sandbox, "--out", str(root / "results")]
    command += ["--to", str(table)]
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(
            f"grade --sandbox {sandbox} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )
    return wall, load, table / "grades.csv"


def statuses(grades: Path) -> dict[str, dict[str, str]]:
    """learner -> exercise id -> status, from a grades.csv (its notes and totals left out)."""
    rows = list(csv.DictReader(grades.open(encoding="utf-8")))
    return {row["learner"]: {k: v for k, v in row.items() if "." in k} for row in rows}


def main(args) -> int:
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="grade-timing-"))
    works = honest_class(args.lab, root, args.workspaces)
    timed = {sandbox: timed_grade(args.lab, works, sandbox, root) for sandbox in SANDBOXES}
    print(f"grade of {len(works)} honest {args.lab} workspaces, {os.cpu_count()} CPUs:")
    for sandbox, (wall, load, _) in timed.items():
        print(
            f"  --sandbox {sandbox:<6}  {wall:8.1f} s wall  (load average {load:.2f} at its start)"
        )
    ratio = timed["docker"][0] / timed["native"][0]
    print(f"  containers / native: {ratio:.2f}x (the target: at most 2x)")
    same = statuses(timed["docker"][2]) == statuses(timed["native"][2])
    print(f"  the two tables agree on every exercise: {'yes' if same else 'NO'}  ({root})")
    return 0 if same else 1
