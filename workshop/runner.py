"""Runs labs, each in its own Python process, and records what they found.

Why a process per lab: some settings only act before an import (TRITON_INTERPRET=1 must be set before triton
is imported), and compile caches live in a process and on disk; a fresh process with its own cache folders
means no lab sees another's state.

Parent: `run_labs` makes the run folder, starts `python -m workshop.runner LAB ...` for each lab, streams its
output to the screen and to <lab>/log.txt, and collects result.json. Child: `main` builds a LabContext, calls
the lab's entry, and writes result.json and summary.md (also when the lab raised).
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from workshop import atomic, grading_markers, i18n, labs, results, workspace
from workshop.lab import Check, LabContext, all_passed

REFERENCE = {"kind": "reference"}  # result.json's "implementation" when no workspace is graded


def lab_environment(device: str, cache_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONUNBUFFERED"] = "1"
    # Each lab compiles into its own, initially empty, cache folders.
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache_dir / "inductor")
    env["TRITON_CACHE_DIR"] = str(cache_dir / "triton")
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run on the CPU only under its interpreter
    return env


def run_labs(
    names: list[str],
    device: str,
    n_procs: int,
    seed: int,
    root: Path,
    on_line=None,
    work: Path | None = None,
) -> tuple[Path, dict]:
    """Run the labs in order (grading the workspace `work`, if given; else the reference); returns the run
    folder and {lab: {"passed", "duration_s", "returncode"}}."""
    run_dir = results.new_run(
        root,
        results.python_command(),
        device,
        seeds={"workshop": seed},
        n_procs=n_procs,
        implementation=workspace.implementation(work, names) if work else REFERENCE,
    )
    status = {}
    for name in names:
        start = time.monotonic()
        lab_dir, returncode = run_lab(name, run_dir, device, n_procs, seed, work, on_line)
        duration = time.monotonic() - start
        if not (lab_dir / "result.json").is_file():  # the process died before writing its result
            write_result(
                lab_dir,
                name,
                device,
                [Check("lab process finished", False, returncode, 0)],
                duration,
                f"The lab's process exited with code {returncode} before writing its result; see log.txt.",
                {
                    "implementation": workspace.implementation(work, [name]) if work else REFERENCE,
                    "exercises": grading_markers.dead_process_exercises(
                        name, lab_dir, returncode, work
                    ),
                },
            )
        result = results.read_json(lab_dir / "result.json")
        status[name] = {
            "passed": result["passed"],
            "duration_s": round(duration, 1),
            "returncode": returncode,
        }
    results.finish_run(run_dir, status)
    return run_dir, status


def run_lab(
    name: str, run_dir: Path, device: str, n_procs: int, seed: int, work: Path | None, on_line
) -> tuple[Path, int]:
    """One lab in its own process; returns its folder and the process's exit code. When the process dies
    while grading a learner's exercise (a crash in native code), that attempt's folder is kept as
    <lab>.attempt-K/ and the lab runs again skipping the exercises that killed it, so the others are graded."""
    skip: dict[str, str] = {}  # exercise id -> how the process died in it
    while True:
        lab_dir = run_dir / name
        returncode = lab_process(name, lab_dir, device, n_procs, seed, work, skip, on_line)
        died_in = grading_markers.died_in(lab_dir, work, skip)
        if died_in is None:
            return lab_dir, returncode
        attempt = run_dir / f"{name}.attempt-{len(skip) + 1}"
        note = grading_markers.how_it_died(lab_dir, returncode, work)
        skip[died_in] = f"{note} ({workspace.display(attempt / 'log.txt')})"
        lab_dir.rename(attempt)


def lab_process(
    name: str,
    lab_dir: Path,
    device: str,
    n_procs: int,
    seed: int,
    work: Path | None,
    skip: dict[str, str],
    on_line,
) -> int:
    """Run `python -m workshop.runner LAB` into the new folder lab_dir, its output to log.txt and on_line."""
    lab_dir.mkdir()
    with (
        tempfile.TemporaryDirectory(prefix=f"workshop-{name}-cache-") as cache,
        open(lab_dir / "log.txt", "w") as log,
    ):
        cmd = [
            sys.executable,
            "-m",
            "workshop.runner",
            name,
            "--out-dir",
            str(lab_dir),
            "--device",
            device,
            "--n",
            str(n_procs),
            "--seed",
            str(seed),
            *(["--work", str(work)] if work else []),
            *(arg for ex_id, note in skip.items() for arg in ("--skip", f"{ex_id}={note}")),
        ]
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=lab_environment(device, Path(cache)),
            bufsize=1,
        )
        for line in proc.stdout:
            log.write(line)
            log.flush()
            if on_line:
                on_line(name, line.rstrip("\n"))
        return proc.wait()


def write_result(
    out_dir: Path,
    name: str,
    device: str,
    checks: list[Check],
    duration: float,
    summary: str,
    extra: dict | None = None,
) -> None:
    passed = all_passed(checks)
    rows = "\n".join(
        f"| {'pass' if c.passed else '**FAIL**'} | {c.name} | {c.as_dict()['value']} | {c.threshold} |"
        for c in checks
    )
    table = "| | check | value | threshold |\n|---|---|---|---|\n" + rows
    verdict = "passed" if passed else "FAILED"
    graded = exercises_md((extra or {}).get("exercises", {}))
    atomic.write_text(
        out_dir / "summary.md",
        f"# Lab `{name}`: {verdict}\n\n{summary.strip()}\n\n{graded}## Checks\n\n{table}\n",
    )
    atomic.write_json(
        out_dir / "result.json",
        {
            "lab": name,
            "passed": passed,
            "device": device,
            "duration_s": round(duration, 2),
            "checks": [c.as_dict() for c in checks],
            **(extra or {}),
        },
    )


def exercises_md(exercises: dict[str, dict]) -> str:
    """The exercises' section of summary.md: one row each, with the failed check and the hint."""
    if not exercises:
        return ""
    rows = []
    for ex_id, r in exercises.items():
        failed = r["failed_check"]
        why = (
            f"{failed['name']}: {failed['value']} (threshold {failed['threshold']})"
            if failed
            else ""
        )
        rows.append(f"| {ex_id} | {r['status']} | {why} | {r['hint'] or ''} |")
    header = "| exercise | status | failed check | hint |\n|---|---|---|---|\n"
    return "## Exercises\n\n" + header + "\n".join(rows) + "\n\n"


def main(argv: list[str] | None = None) -> int:
    """The child process: run one lab into an existing, empty folder."""
    p = argparse.ArgumentParser(prog="python -m workshop.runner")
    p.add_argument("lab")
    p.add_argument("--out-dir", type=Path, required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--n", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", type=Path, default=None, help="grade this workspace's <lab>.py")
    p.add_argument("--lang", choices=i18n.LANGUAGES, default=i18n.DEFAULT)
    p.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="ID=NOTE",
        help="an exercise that killed an earlier attempt: failed with NOTE, its code not run",
    )
    a = p.parse_args(argv)
    faulthandler.enable()  # a fatal signal prints the Python stack: log.txt then shows where it died
    i18n.set_language(a.lang)
    skip = dict(item.split("=", 1) for item in a.skip)
    ctx = LabContext(a.lab, a.out_dir, a.device, a.n, a.seed, work=a.work, lang=a.lang, skip=skip)
    start = time.monotonic()
    try:
        labs.get(a.lab).load()(ctx)
    except Exception:  # the lab failed: keep its checks so far, record the error as a failed check
        error = traceback.format_exc()
        print(error, file=sys.stderr, flush=True)
        ctx.checks.append(
            Check("lab ran to completion", False, error.strip().splitlines()[-1], "no exception")
        )
        ctx.summary += f"\n\n## Error\n\n```\n{error}```\n"
    write_result(
        ctx.out_dir,
        ctx.name,
        ctx.device,
        ctx.checks,
        time.monotonic() - start,
        ctx.summary,
        {**ctx.extra, **graded_extra(ctx)},
    )
    return 0 if ctx.passed else 1


def graded_extra(ctx: LabContext) -> dict:
    """What result.json says of the implementation that ran, and of each exercise it graded."""
    out = {"lang": ctx.lang, "implementation": REFERENCE}
    if ctx.graded:
        out["implementation"] = workspace.implementation(ctx.work, [ctx.name])
    exercises = ctx.exercise_results()
    if exercises:
        out["exercises"] = exercises
    return out


if __name__ == "__main__":
    sys.exit(main())
