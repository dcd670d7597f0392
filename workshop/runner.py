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
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from workshop import atomic, i18n, labs, results, workspace
from workshop.exercise import lab_exercises
from workshop.i18n import _
from workshop.lab import WHY_MISSING, Check, LabContext, all_passed


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
    names: list[str], device: str, n_procs: int, seed: int, root: Path, on_line=None
) -> tuple[Path, dict]:
    """Run the labs in order; returns the run folder and {lab: {"passed", "duration_s", "returncode"}}."""
    run_dir = results.new_run(
        root, results.python_command(), device, seeds={"workshop": seed}, n_procs=n_procs
    )
    status = {}
    for name in names:
        lab_dir = run_dir / name
        lab_dir.mkdir()
        start = time.monotonic()
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
            returncode = proc.wait()
        duration = time.monotonic() - start
        if not (lab_dir / "result.json").is_file():  # the process died before writing its result
            write_result(
                lab_dir,
                name,
                device,
                [Check("lab process finished", False, returncode, 0)],
                duration,
                f"The lab's process exited with code {returncode} before writing its result; see log.txt.",
            )
        result = results.read_json(lab_dir / "result.json")
        status[name] = {
            "passed": result["passed"],
            "duration_s": round(duration, 1),
            "returncode": returncode,
        }
    results.finish_run(run_dir, status)
    return run_dir, status


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
    a = p.parse_args(argv)
    i18n.set_language(a.lang)
    ctx = LabContext(a.lab, a.out_dir, a.device, a.n, a.seed, work=a.work, lang=a.lang)
    spec = labs.get(a.lab)
    start = time.monotonic()
    try:
        if missing := spec.missing():
            cannot_run_here(ctx, missing)
        else:
            spec.load()(ctx)
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


def cannot_run_here(ctx: LabContext, missing: list[str]) -> None:
    """A lab that needs a module this platform lacks (Triton on macOS): one failed check whose message is the one
    line that says why and where the lab does run."""
    modules = ", ".join(missing)
    why = "; ".join(
        WHY_MISSING.get(m, _("{module} is not installed").format(module=m)) for m in missing
    )
    line = _(
        "{lab} cannot run here: it needs {modules} ({why}). Run it in Docker: "
        "docker compose run --rm workshop-cpu workshop-session {lab}"
    ).format(lab=ctx.name, modules=modules, why=why)
    ctx.check_equal(_("{modules} installed").format(modules=modules), "missing", "installed", line)
    ctx.summary = line


def graded_extra(ctx: LabContext) -> dict:
    """What result.json says of the implementation that ran, and of each exercise it graded."""
    out = {"lang": ctx.lang, "implementation": {"kind": "reference"}}
    if ctx.graded:
        names = [f"{ctx.name}.py"] + [ex.document for ex in lab_exercises(ctx.name) if ex.document]
        files = {name: ctx.work / name for name in names}
        out["implementation"] = {
            "kind": "workspace",
            "work": str(ctx.work.resolve()),
            "sha256": {
                n: workspace.file_sha256(p) if p.is_file() else None for n, p in files.items()
            },
        }
    exercises = ctx.exercise_results()
    if exercises:
        out["exercises"] = exercises
    return out


if __name__ == "__main__":
    sys.exit(main())
