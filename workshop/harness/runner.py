"""Runs labs, each in its own Python process, and records what they found (the parent side of a run).

Why a process per lab: some settings only act before an import (TRITON_INTERPRET=1 must be set before triton
is imported), and compile caches live in a process and on disk; a fresh process with its own cache folders
means no lab sees another's state.

`run_labs` writes each lab's options to <lab>/options.json (foundations.run_options, with the exercises to skip) and
starts `python -m workshop.harness.child <lab folder> <lab>` in a session of its own (so a Ctrl-C in the terminal
reaches only the parent, which then stops the lab's whole process tree: see proctree.py), streams its output to
<lab>/log.txt and to the caller (which picks what the screen shows: cli.runs), enforces the lab's time limit,
and records each lab in the manifest as soon as it ends. The child (harness.child) runs the lab and writes its
result.json and summary.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import importlib.metadata
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from workshop import labs
from workshop.declarations import checks
from workshop.foundations import (
    interrupt,
    lab_log,
    proctree,
    results,
    worker_container,
    worker_process,
)
from workshop.foundations.device import use_triton_interpreter
from workshop.foundations.run_options import RunOptions
from workshop.harness.child import stopped_check, write_result
from workshop.i18n import _
from workshop.learner import failures, workspace

# A lab stops itself at its time limit (an alarm in its own process); the parent kills it BACKSTOP_S later if it
# could not (stuck in C code, or stopped). Generous: the lab's clock starts after Python's start-up.
BACKSTOP_S = 30.0
CACHE_PREFIX = "workshop-cache-"  # + the parent's pid + the lab: see sweep_stale_caches
TAIL_LINES = 20  # the last lines of a lab that died, in its summary


def build_cache(results_root: Path) -> Path:
    """The Inductor cache a lab with LabSpec.build_cache keeps between its runs: under the results root (the
    learner's own folder, never passed to a learner's worker), one per torch version, whose builds it holds."""
    return (
        Path(results_root) / ".cache" / f"torch-{importlib.metadata.version('torch')}" / "inductor"
    )


def lab_environment(
    device: str, cache_dir: Path, kept: Path | None = None, threads: int | None = None
) -> dict[str, str]:
    """The lab process's environment: fresh cache and temporary folders under cache_dir, Inductor's in `kept`
    where the lab keeps its builds (build_cache), `threads` CPU threads where the lab asks (cpu_threads)."""
    env = {
        **os.environ,
        # the learner's worker inherits it (foundations.worker_process)
        **({"OMP_NUM_THREADS": str(threads)} if threads else {}),
        "PYTHONUNBUFFERED": "1",
        # the parent reads the lab's output as UTF-8, whatever the locale
        "PYTHONIOENCODING": "utf-8",
        # Each lab compiles into its own, initially empty, cache folders, and keeps every temporary file
        # (torchrun's torchelastic_* logs included) under the same folder, which is removed when the lab ends.
        "TORCHINDUCTOR_CACHE_DIR": str(kept or cache_dir / "inductor"),
        "TRITON_CACHE_DIR": str(cache_dir / "triton"),
        "TMPDIR": str(cache_dir / "tmp"),
    }
    (cache_dir / "tmp").mkdir()
    use_triton_interpreter(env, device)  # on the CPU, Triton kernels run in its interpreter
    return env


def run_labs(
    run_dir: Path,
    names: list[str],
    options: RunOptions,
    on_line=None,
    on_start=lambda lab: None,
    on_end=lambda lab, status, checks: None,
) -> dict:
    """Run the labs in order into run_dir; returns {lab: {"passed", "duration_s", "returncode"}}. on_line(lab,
    line) gets the lines of the labs' output (lab_process); on_start(lab) is called as each lab starts, and
    on_end(lab, status, checks) when it ends (its status, and its checks as its result.json has them).

    A stop signal (interrupt.raising_on_signals) stops the current lab, marks the run interrupted and
    propagates; a full disk after a lab marks it interrupted and raises results.RunFolderError. Otherwise the run is
    marked finished and results/latest points at it."""
    status = {}
    name = None
    try:
        with interrupt.raising_on_signals():  # Ctrl-C and SIGTERM become Stopped, caught below
            for name in names:
                on_start(name)
                status[name], result = run_lab(run_dir, name, options, on_line)
                if results.disk_full(run_dir):
                    # mark the lab stopped (it most likely failed for it: --resume runs it again) and the run
                    # interrupted
                    why = _("the disk under {root} is full").format(
                        root=workspace.display(run_dir.parent)
                    )
                    results.end_run(run_dir, why, name, {name: {**status[name], "stopped": why}})
                    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                    raise results.RunFolderError(results.unusable(run_dir.parent, full))
                # (its result.json is written: the disk was not full)
                on_end(name, status[name], result["checks"])
    except interrupt.Stopped as e:
        with interrupt.ignoring_signals():
            results.end_run(run_dir, e.why, name)
        raise
    results.end_run(run_dir)
    return status


def run_lab(run_dir: Path, name: str, options: RunOptions, on_line=None) -> tuple[dict, dict]:
    """Run one lab in its own process; returns its status, also recorded in the manifest, and its result.json
    (settle). When the process
    dies while grading a learner's exercise (a crash in native code, a kill at the time limit), that attempt's
    folder is kept as <lab>.attempt-K/ and the lab runs again skipping the exercises that killed it, so that
    the others are graded."""
    lab_dir = run_dir / name
    limit = labs.get(name).limit_s(options)
    start = time.monotonic()
    skip: dict[str, str] = {}  # exercise id -> how the process died in it
    while True:
        lab_dir.mkdir()
        dataclasses.replace(options, skip=dict(skip)).write(lab_dir)
        kept = build_cache(run_dir.parent) if labs.get(name).build_cache else None
        with lab_process(name, lab_dir, options, on_line, kept) as (proc, output):
            why = None
            try:
                proc.wait(limit + BACKSTOP_S if limit else None)
            except subprocess.TimeoutExpired:
                # it could not stop itself (stuck outside Python): leaving the `with` stops it
                why = interrupt.ran_out_of_time(limit)
            except interrupt.Stopped as e:
                with interrupt.ignoring_signals():
                    # the user's signal: the lab records SIGINT, not our SIGTERM
                    stop(proc, e.signum)
                    settle(
                        run_dir, name, options, proc, output, time.monotonic() - start, e.why, True
                    )
                raise
        # the learner's exercise whose grading the process died in (it wrote no result.json), unless it is one
        # the process was told to skip; none for the reference, a lab that finished, or one that died elsewhere
        killed_by, how = (
            post_mortem(lab_dir, proc.returncode, options.work)
            if options.work and not (lab_dir / "result.json").is_file()
            else (None, "")
        )
        if killed_by is None or killed_by in skip:
            return settle(run_dir, name, options, proc, output, time.monotonic() - start, why)
        attempt = run_dir / f"{name}.attempt-{len(skip) + 1}"
        skip[killed_by] = f"{why or how} ({workspace.display(attempt / 'log.txt')})"
        lab_dir.rename(attempt)


def settle(run_dir, name, options, proc, output, duration, why, stopped=False) -> tuple[dict, dict]:
    """Make sure the lab has a result.json (the parent writes one if the lab could not), and record it; returns
    the lab's status (as the manifest records it) and its result.json, read once here."""
    lab_dir = run_dir / name
    try:
        result = results.read_result(lab_dir)
    except results.CorruptFile:  # the process died before writing its result, or was killed
        why = why or _("its process exited with code {code} before writing its result").format(
            code=proc.returncode
        )
        if results.disk_full(run_dir):
            why += _(" (the disk is full)")
        tail = "\n".join(list(output.tail)[-TAIL_LINES:])
        # the exercise being graded fails with how the process ended and where; the others are not graded (what
        # they printed on their way is no verdict)
        running, how = post_mortem(lab_dir, proc.returncode, options.work)
        failed = failures.failed_check("died", running, how + _(" (log.txt)")) if running else None
        summary = _(
            "The lab did not finish: {why}. The end of its output (all of it: log.txt):"
        ).format(why=why)
        result = results.write_record(
            run_dir,
            lambda: write_result(
                lab_dir,
                name,
                options.device,
                [stopped_check(why)],
                duration,
                f"{summary}\n\n```\n{tail}\n```",
                {
                    "implementation": workspace.implementation(options.work, [name]),
                    "exercises": {
                        ex.id: ex.result(checks.FAILING, [failed.name], failed)
                        if ex.id == running
                        else ex.result(checks.NOT_GRADED, [], None)
                        for ex in labs.exercises(name)
                    },
                    # a re-grade's, as harness.child.regrade records it: never taken for a run of the lab
                    **(
                        {"graded_against": workspace.display(Path(options.against[name]).parent)}
                        if name in options.against
                        else {}
                    ),
                },
            ),
        )
    status = {
        "passed": result["passed"],
        "duration_s": round(duration, 1),
        "returncode": proc.returncode,
        **({"stopped": why} if stopped else {}),
    }
    results.update_manifest(run_dir, {name: status})
    return status, result


# A dead lab's post-mortem: what the parent makes of a lab process that died before writing its result.json (a
# crash in native code, a kernel writing out of bounds, a kill at the lab's time limit). From the lab's log.txt
# (foundations.lab_log) it knows which exercise was being graded when the process died, and where in the
# learner's file it was. run_lab then fails that exercise (learner.failures.failed_check, "died") and runs the lab again
# without it. It never takes a status from the log: a lab whose grading still runs the learner's code in its own
# process shares its output with that code, which can print any line it likes (issue 22).


def post_mortem(lab_dir: Path, returncode: int, work: Path | None) -> tuple[str | None, str]:
    """(the exercise whose grading started in the lab's log.txt and never ended, else None; how the process ended
    and where in the learner's file: 'killed by SIGSEGV at my-work/custom_op.py:41')."""
    lines = lab_log.log_lines(lab_dir)
    # the innermost frame in the learner's workspace, in the last stack faulthandler printed
    frame = (
        lab_log.last_frame(lines, lambda file: Path(file).resolve().is_relative_to(work.resolve()))
        if work
        else None
    )
    where = (
        _(" at {where}").format(where=f"{workspace.display(frame[0])}:{frame[1]}") if frame else ""
    )
    return lab_log.running(lines), lab_log.how_it_ended(returncode) + where


@contextlib.contextmanager
def lab_process(name: str, lab_dir: Path, options: RunOptions, on_line, kept: Path | None = None):
    """A lab's process (its Popen, and its output: OutputLog), started in a session of its own with a fresh
    cache folder (Inductor's in `kept` where the lab keeps its builds: build_cache); its output goes to log.txt
    and, but for the protocol lines (lab_log: the post-mortem's, in English), to on_line(lab, line) (a thread
    reads it, so that the main thread can wait with a time limit and take signals). Leaving the `with` stops
    whatever is left of its process tree, removes the cache, and the container of its worker (grade's sandbox:
    options.worker_image), which a lab process killed outright could not."""

    def shown(line: str) -> None:
        if on_line and not lab_log.is_marker(line):
            on_line(name, line)

    prefix = f"{CACHE_PREFIX}{os.getpid()}-{name}-"
    cache = tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "workshop.harness.child", str(lab_dir), name],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=lab_environment(options.device, Path(cache.name), kept, labs.get(name).cpu_threads),
        start_new_session=True,  # the terminal's Ctrl-C reaches the parent only, which stops this tree
    )
    output = worker_process.OutputLog(proc.stdout, lab_dir / "log.txt", math.inf, shown)
    try:
        yield proc, output
    finally:
        with interrupt.ignoring_signals():
            if proc.poll() is None:
                stop(proc)
            output.join(proctree.GRACE_S)  # EOF, unless a stray process still holds the pipe
            cache.cleanup()
            if options.worker_image:
                worker_container.sweep_stale()


def stop(proc: subprocess.Popen, signum: int = signal.SIGTERM) -> None:
    """Stop a lab's process tree (`signum` to the lab itself: a user's Ctrl-C passed on), and reap it."""
    proctree.stop_tree(proc.pid, proctree.GRACE_S, root_signal=signum)
    proc.wait()


def sweep_stale_caches() -> list[Path]:
    """Remove the cache folders of runs whose process is gone (killed before it could remove them)."""
    stale = [
        folder
        for folder in Path(tempfile.gettempdir()).glob(f"{CACHE_PREFIX}*")
        # its name starts with the pid of the run that made it
        if (pid := folder.name[len(CACHE_PREFIX) :].split("-", 1)[0]).isdigit()
        and not proctree.alive(int(pid))
    ]
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)
    return stale
