"""The GPU record: every lab run on this machine's GPU, then the GPU tests on that very run, and what happened,
written to a folder under benchmarks/. Run it on a GPU host before a change to GPU code lands (README, "For
developers"); it needs only what the GPU hosts have (torch, triton, pytest, jinja2; no invoke, no Docker).

1. `python -m workshop run --device cuda --n N` (N: the GPUs here, at most 2) and `python -m workshop report`;
2. `python -m pytest -m gpu` (or the whole suite) with WORKSHOP_RUN_DIR set to that run, so the tests check the
   run just made and the tests that run labs of their own run them on the GPU (tests/conftest.py's default).

The record (record.json, and README.md from record.md.j2): the command, the machine (GPUs, torch, triton, CUDA,
Python, the code's git revision), each step's command, exit status and time, each lab's pass or fail, each test's
outcome; beside them, in the run's own layout, the run's manifest and REPORT.md, each lab's summary, result,
pictures and log, and the files those pages link; not the rest of its traces or generated code (their size).
Exit status: 0 when every lab and every test passed, 1 when one failed, 2 when it could not start, 130/143 when
interrupted (what ran so far is recorded, marked so).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import jinja2

from workshop.foundations.interrupt import Stopped, raising_on_signals
from workshop.foundations.results import (
    git_revision,
)  # WORKSHOP_GIT_REVISION names the code of a copy (a GPU host)

HERE = Path(__file__).resolve().parent
KEPT = ("summary.md", "result.json", "log.txt", "*.png")  # of each lab's folder
LINK = re.compile(r"\]\(([^)#\s]+)")  # a Markdown link's or picture's target, without its anchor
SCHEME = re.compile(r"[a-z]+:")
SUITES = {"gpu": ["-m", "gpu"], "all": []}


@dataclass
class Step:
    name: str
    command: list[str]
    exit_code: int | None = None  # None: never finished
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return self.exit_code == 0


@dataclass
class Record:
    command: str
    started: str
    machine: dict
    steps: list[Step] = field(default_factory=list)
    labs: dict[str, bool] = field(default_factory=dict)
    tests: dict = field(default_factory=dict)
    seconds: float = 0.0
    stopped: str | None = None  # why it stopped early (a signal), else None

    @property
    def passed(self) -> bool:
        return (
            self.stopped is None
            and len(self.steps) == 3
            and all(s.passed for s in self.steps)
            and bool(self.labs)
            and all(self.labs.values())
        )


def machine() -> dict:
    import torch

    try:
        from importlib.metadata import version

        triton = version("triton")
    except Exception:  # noqa: BLE001 - no triton installed: say so in the record
        triton = "not installed"
    gpus = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    return {
        "gpus": gpus,
        "torch": torch.__version__,
        "triton": triton,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "git_revision": git_revision(),
    }


def run_step(step: Step, env: dict) -> Step:
    """Run the step in the foreground. On SIGINT/SIGTERM the signal is passed on (the workshop and pytest stop
    their own process trees on it), the step is waited for, and Stopped is raised again."""
    start = time.monotonic()
    print(f"gpu-record: {step.name}: {' '.join(step.command)}", flush=True)
    proc = subprocess.Popen(step.command, env=env)
    try:
        step.exit_code = proc.wait()
    except Stopped as stop:
        proc.send_signal(stop.signum)
        try:
            step.exit_code = proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    finally:
        step.seconds = round(time.monotonic() - start, 1)
    return step


def lab_outcomes(run_dir: Path) -> dict[str, bool]:
    """Each lab the run's manifest names: did it pass."""
    try:
        labs = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))["labs"]
    except (OSError, ValueError, KeyError):
        return {}
    return {lab: bool(entry.get("passed")) for lab, entry in labs.items()}


def pytest_outcomes(junit: Path) -> dict:
    """pytest's JUnit XML as counts and each test's outcome (passed, failed, error, skipped)."""
    try:
        cases = ET.parse(junit).getroot().iter("testcase")
    except (OSError, ET.ParseError):
        return {}
    outcomes = {}
    for case in cases:
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(
            min(kinds, default="")
        )
        outcomes[f"{case.get('classname')}::{case.get('name')}"] = outcome or "passed"
    counts = {
        k: sum(v == k for v in outcomes.values()) for k in ("passed", "failed", "error", "skipped")
    }
    return {**counts, "outcomes": outcomes}


def linked_files(page: Path) -> list[Path]:
    """The files a Markdown page links by a relative path (pictures, traces), where they exist."""
    targets = LINK.findall(page.read_text(encoding="utf-8", errors="replace"))
    files = (page.parent / t for t in targets if not SCHEME.match(t))
    return [f for f in files if f.is_file()]


def keep(run_dir: Path, out: Path) -> None:
    """Into out, in the run's own layout (so texts can cite it): the manifest and REPORT.md, each lab's summary,
    result, pictures and log, and every file those pages link."""
    pages = [run_dir / "REPORT.md"] + [
        run_dir / lab / "summary.md" for lab in lab_outcomes(run_dir)
    ]
    kept = [run_dir / "manifest.json"] + [p for p in pages if p.is_file()]
    for lab in lab_outcomes(run_dir):
        kept += [f for pattern in KEPT for f in (run_dir / lab).glob(pattern)]
    kept += [f for page in pages if page.is_file() for f in linked_files(page)]
    for file in kept:
        if file.is_file() and run_dir.resolve() in file.resolve().parents:
            target = out / file.resolve().relative_to(run_dir.resolve())
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, target)


def write(record: Record, out: Path) -> None:
    data = {**asdict(record), "passed": record.passed}
    (out / "record.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    text = env.get_template("record.md.j2").render(record=record, out=out)
    (out / "README.md").write_text(text, encoding="utf-8")


def record_folder(requested: str | None) -> Path:
    """A new or empty folder: a record never overwrites another."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = Path(requested) if requested else Path("benchmarks") / "gpu-records" / stamp
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"{out} exists and is not an empty folder: give --out a new one")
    out.mkdir(parents=True, exist_ok=True)
    return out


def steps(run_out: Path, n: int, suite: str, junit: Path) -> list[Step]:
    py = sys.executable
    return [
        Step(
            "workshop",
            [py, "-m", "workshop", "run", "--device", "cuda", "--n", str(n), "--out", str(run_out)],
        ),
        Step("report", [py, "-m", "workshop", "report", "--out", str(run_out)]),
        Step(
            "tests",
            [py, "-m", "pytest", *SUITES[suite], "-p", "no:cacheprovider", f"--junitxml={junit}"],
        ),
    ]


def record_run(record: Record, out: Path, n: int, suite: str) -> None:
    """The three steps, filling `record` as they go; the run itself in a temporary folder, its kept files in out."""
    with tempfile.TemporaryDirectory(prefix="gpu-record-") as tmp:
        run_out, junit = Path(tmp) / "results", out / "pytest.xml"
        env = {**os.environ}
        try:
            for step in steps(run_out, n, suite, junit):
                record.steps.append(step)
                if step.name == "tests":
                    env["WORKSHOP_RUN_DIR"] = str((run_out / "latest").resolve())
                run_step(step, env)
        finally:
            run_dir = (run_out / "latest").resolve()
            record.labs, record.tests = lab_outcomes(run_dir), pytest_outcomes(junit)
            keep(run_dir, out)


def main(args) -> int:
    import torch

    if not torch.cuda.is_available():
        print("gpu-record: torch sees no CUDA GPU here; run it on a GPU host", file=sys.stderr)
        return 2
    try:
        out = record_folder(args.out)
    except (OSError, ValueError) as e:
        print(f"gpu-record: {e}", file=sys.stderr)
        return 2
    n = args.n or min(2, torch.cuda.device_count())
    record = Record(args.command_line, datetime.now(UTC).isoformat(timespec="seconds"), machine())
    start, status = time.monotonic(), None
    try:
        with raising_on_signals():
            record_run(record, out, n, args.suite)
    except Stopped as stop:
        record.stopped, status = stop.why, stop.exit_code
    finally:
        record.seconds = round(time.monotonic() - start, 1)
        write(record, out)
    verdict = "passed" if record.passed else (record.stopped or "failed")
    print(f"gpu-record: {verdict} in {record.seconds:.0f} s; the record: {out}")
    return status if status is not None else (0 if record.passed else 1)
