"""A lab's own process: `python -m workshop.harness.child LAB_DIR LAB`, started by harness.runner.

It reads LAB_DIR/options.json (foundations.run_options.RunOptions: the run's options, the exercises to skip), builds
the lab's LabContext, calls the lab's entry, and writes result.json and summary.md (also when the lab raised, was
stopped, or ran out of time). It dies with its parent and leaves no process of its own behind.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import os
import sys
import time
import traceback
from pathlib import Path

from workshop import i18n, labs
from workshop.declarations.checks import all_passed, bound, outcome, written
from workshop.foundations import atomic, device, interrupt, proctree, run_options
from workshop.i18n import _
from workshop.lab_api import WHY_MISSING, Check, LabContext
from workshop.learner import workspace
from workshop.minigpt import CHECKPOINT_ENVIRONMENT


def main(lab_dir: Path, lab: str) -> int:
    """Run the lab `lab` with LAB_DIR/options.json into LAB_DIR, an existing folder without results."""
    options = run_options.RunOptions.read(lab_dir)
    faulthandler.enable()  # a fatal signal prints the Python stack: log.txt then shows where it died
    i18n.set_language(options.lang)
    # the processes the lab starts (torchrun's ranks) get what they need of the options through their
    # environment: the language they speak, and --checkpoint
    os.environ["WORKSHOP_LANG"] = options.lang
    if options.checkpoint:
        os.environ[CHECKPOINT_ENVIRONMENT] = str(options.checkpoint.resolve())
    else:
        os.environ.pop(CHECKPOINT_ENVIRONMENT, None)
    ctx = LabContext(lab, Path(lab_dir), options)
    start = time.monotonic()
    # the learner's worker, where a workspace with code exercises is graded, loads while the lab prepares its cases
    if (
        ctx.graded
        and any(ex.attribute for ex in labs.exercises(ctx.name))
        and workspace.lab_file(ctx.options.work, ctx.name).is_file()
    ):
        ctx.worker().begin()
    # before the lab's time limit starts: torch's import is not the lab's time, and a limit that fires inside its
    # native start-up can abort the process before it writes its result
    device.import_torch()
    try:
        stopped = run_lab_code(ctx, labs.get(ctx.name).limit_s(ctx.options))
    finally:
        # a signal now (the parent's death just after the lab's code ended) would kill the process before its
        # record is written: it is ignored, and the process exits right after
        with interrupt.ignoring_signals():
            ctx.stop_worker()  # the worker, and whatever the learner's code left running
            exercises = ctx.exercise_results()
            write_result(
                ctx.out_dir,
                ctx.name,
                ctx.options.device,
                ctx.checks,
                time.monotonic() - start,
                ctx.summary,
                # what ran, and what it made of each exercise it graded
                {
                    **ctx.extra,
                    "lang": ctx.options.lang,
                    "implementation": workspace.implementation(ctx.options.work, [ctx.name]),
                    **({"exercises": exercises} if exercises else {}),
                },
            )
    if stopped:
        with contextlib.suppress(OSError):  # the parent, and so our stdout, may be gone
            print(f"[{ctx.name}] {stopped.why}", file=sys.stderr, flush=True)
        return stopped.exit_code
    return 0 if ctx.passed else 1


def run_lab_code(ctx: LabContext, time_limit: float | None) -> interrupt.Stopped | None:
    """Run the lab's code on `ctx`. An exception becomes a failed check (the checks so far are kept); a signal or
    the time limit stops it and is returned."""
    spec = labs.get(ctx.name)
    expired: list[int] = []
    try:
        # the signal handlers span the error's record too: the parent's death can break the lab's stdout (an
        # error) a moment before its SIGTERM arrives
        with interrupt.raising_on_signals():
            try:
                with interrupt.lab_limit(time_limit) as expired:
                    if missing := spec.missing():
                        cannot_run_here(ctx, missing)
                    elif against := ctx.options.against.get(ctx.name):
                        regrade(ctx, Path(against))
                    else:
                        spec.entry(ctx)
            except Exception:
                # the lab failed: keep its checks so far, record the error as a failed check
                if expired:  # the limit's exception came out as another one (a library's import it cut short)
                    raise interrupt.Stopped(
                        expired[0], interrupt.ran_out_of_time(time_limit)
                    ) from None
                error = traceback.format_exc()
                with contextlib.suppress(OSError):  # the parent, and so our stdout, may be gone
                    print(error, file=sys.stderr, flush=True)
                ctx.checks.append(
                    Check(
                        _("lab ran to completion"),
                        False,
                        error.strip().splitlines()[-1],
                        _("no exception"),
                    )
                )
                ctx.summary += "\n\n## " + _("Error") + f"\n\n```\n{error}```\n"
    except interrupt.Stopped as e:  # a signal or its time limit: keep its checks so far, and why
        ctx.checks.append(stopped_check(e.why))
        return e
    return None


def regrade(ctx: LabContext, lab_dir: Path) -> None:
    """Grade the exercises this run wants against an earlier run of the lab (its folder `lab_dir`), without
    running the lab: the lab's LabSpec.regrade measures the truths from that run's files."""
    run = workspace.display(lab_dir.parent)
    # first: a re-grade that raises says what it was graded against too
    ctx.extra["graded_against"] = run
    labs.get(ctx.name).regrade(ctx, lab_dir)
    ctx.summary = ctx.summary or _(
        "Re-graded against your run {run}, without running the lab again: its figures, your new answers."
    ).format(run=run)


def cannot_run_here(ctx: LabContext, missing: list[str]) -> None:
    """A lab that needs a module this platform lacks (Triton on macOS): one failed check whose message is the one
    line that says why and where the lab does run."""
    modules = ", ".join(missing)
    why = "; ".join(
        _(WHY_MISSING[m]) if m in WHY_MISSING else _("{module} is not installed").format(module=m)
        for m in missing
    )
    line = _(
        "{lab} cannot run here: it needs {modules} ({why}). Run it in Docker: "
        "docker compose run --rm workshop-cpu workshop-session {lab}"
    ).format(lab=ctx.name, modules=modules, why=why)
    name = _("{modules} installed").format(modules=modules)
    ctx.check_equal(name, _("missing"), _("installed"), line)
    ctx.summary = line


# A lab's record of one run: result.json (every check, each exercise's entry) and summary.md (the verdict, the
# lab's own summary, the exercises and the checks table). Written by the lab's process (main, above), or by the
# parent when that process died before it could (harness.runner.settle).


def write_result(
    out_dir: Path,
    name: str,
    device: str,
    checks: list[Check],
    duration: float,
    summary: str,
    extra: dict | None = None,
) -> dict:
    """Write summary.md (the verdict, the lab's own summary: its template's, the exercises, one row each with the
    failed check and the hint, and the checks table) and result.json; returns what result.json holds (its
    writer's caller need not read it)."""
    result = {
        "lab": name,
        "passed": all_passed(checks),
        "device": device,
        "duration_s": round(duration, 2),
        "checks": [c.as_dict() for c in checks],
        **(extra or {}),
    }
    verdict = _("Lab `{lab}`: passed") if result["passed"] else _("Lab `{lab}`: FAILED")
    # (Babel extracts no call in an f-string)
    marks = {True: _("pass"), False: "**" + _("FAIL") + "**"}
    rows = "\n".join(
        f"| {marks[bool(c.passed)]} | {c.name} | {written(c.as_dict()['value'])} | {bound(c.as_dict(), written)} |"
        for c in checks
    )
    header = "| | {} | {} | {} |\n|---|---|---|---|\n".format(_("check"), _("value"), _("expected"))
    exercise_rows = [
        f"| {ex_id} | {_(r['status'])} | {outcome(r['failed_check']) if r['failed_check'] else ''} "
        f"| {r['hint'] or ''} |\n"
        for ex_id, r in result.get("exercises", {}).items()
    ]
    exercise_header = "## {}\n\n| {} | {} | {} | {} |\n|---|---|---|---|\n".format(
        _("Exercises"), _("exercise"), _("status"), _("failed check"), _("hint")
    )
    exercises = exercise_header + "".join(exercise_rows) + "\n" if exercise_rows else ""
    checks_heading = _("Checks")
    atomic.write_text(
        out_dir / "summary.md",
        f"# {verdict.format(lab=name)}\n\n{summary.strip()}\n\n{exercises}"
        f"## {checks_heading}\n\n{header}{rows}\n",
    )
    atomic.write_json(out_dir / "result.json", result)
    return result


def stopped_check(why: str) -> Check:
    """The failed check of a lab that was stopped (a signal, its time limit) or whose process died."""
    return Check(_("lab ran to completion"), False, why, _("not stopped"))


def as_lab_process(lab_dir: Path, lab: str) -> int:
    """`main` as the parent's child: it dies with the parent, and leaves no process of its own behind."""
    interrupt.quiet_until_handled()
    # it dies with its parent; a process whose parent died comes to it, so the sweep below finds it; the learner's
    # worker cannot read its memory or files
    proctree.tie_to_parent(os.getppid())
    try:
        return main(lab_dir, lab)
    finally:
        proctree.stop_tree(os.getpid(), proctree.GRACE_S, include_root=False)
        # Python's last garbage collection walks every object torch's modules made: 0.6-0.9 s of the learner's
        # wait after the verdict is written. Frozen objects are left to the exit, which frees them at once.
        gc.freeze()


if __name__ == "__main__":
    sys.exit(as_lab_process(Path(sys.argv[1]), sys.argv[2]))
