"""A run on the screen: its folder made, its labs run with a line as each starts and ends (LabScreen), REPORT.md
written at the end (write_report: `report` writes it too), and the one line an incomplete run ends with. Used by
run (commands.py), check and grade (learner.py)."""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Column, Table

from workshop import i18n, labs
from workshop.cli.options import stop_on
from workshop.declarations import checks
from workshop.foundations import atomic, interrupt, lab_log, results
from workshop.foundations.run_options import RunOptions
from workshop.harness.runner import run_labs, sweep_stale_caches
from workshop.i18n import _, ngettext
from workshop.learner import workspace
from workshop.minigpt import SHIPPED_CHECKPOINT

# soft_wrap: a line longer than the terminal is not broken by us: a path in it stays copyable
console = Console(soft_wrap=True)


def new_run(root: Path, names: list[str], options: RunOptions) -> Path:
    """A new run folder under root for the labs `names`, its manifest and options.json written (results.new_run)."""
    sweep_stale_caches()
    model = options.checkpoint or SHIPPED_CHECKPOINT
    with stop_on(results.RunFolderError):
        return results.new_run(
            root,
            [sys.executable, "-m", "workshop", *sys.argv[1:]],
            options,
            labs_planned=names,
            checkpoint={"path": workspace.display(model), "sha256": workspace.file_sha256(model)},
            implementation=workspace.implementation(options.work, names),
        )


def execute(run_dir: Path, names: list[str], options: RunOptions, auto: bool) -> int:
    """Run the labs into run_dir, showing progress; write REPORT.md; the exit code (run_or_stop's when it
    stops)."""
    # the machine as the run's manifest records it (foundations.device.device_facts): a CPU run's parent never
    # imports torch
    manifest = results.read_manifest(run_dir)
    shown = "[bold]{}[/bold]".format(
        ngettext(
            "cuda ({name}, {n} visible)", "cuda ({name}, {n} visible)", manifest["gpu_count"]
        ).format(name=manifest["device_name"], n=manifest["gpu_count"])
        if options.device == "cuda"
        else "cpu"
    )
    console.print(
        _("device: {device} (picked by --device auto)").format(device=shown)
        if auto
        else _("device: {device}").format(device=shown)
    )
    console.print(
        _("labs: {labs}; --n {n}; results under {folder}/").format(
            labs=", ".join(names), n=options.n_procs, folder=workspace.display(run_dir.parent)
        )
    )
    labs_shown = LabScreen(run_dir, names)
    with labs_shown.live:
        status = run_or_stop(
            run_dir,
            names,
            options,
            labs_shown.line,
            on_start=labs_shown.started,
            on_end=labs_shown.ended,
        )
    failed = [n for n, s in status.items() if not s["passed"]]
    console.print(_("run folder: {run}").format(run=workspace.display(run_dir)))
    if failed:
        console.print(
            "[red]"
            + _("FAILED: {labs}").format(labs=", ".join(failed))
            + "[/red] "
            + _("(see each lab's summary.md and log.txt)")
        )
    else:
        passed = ngettext("the lab passed", "all {n} labs passed", len(names)).format(n=len(names))
        console.print("[green]" + passed + "[/green]")
        with_exercises = (n for n in [*names, *labs.all_exercises()] if labs.exercises(n))
        console.print(
            _("next: `{init}` (your exercises), then `{check}`").format(
                init="python -m workshop exercises init",
                check=f"python -m workshop check {next(with_exercises)}",
            ),
            markup=False,
        )
    # a problem is a damaged file: the report names it
    report, problems = write_report(run_dir)
    for problem in problems:
        console.print(_("error: {message}").format(message=problem), markup=False)
    console.print(_("report: {file}").format(file=workspace.display(report)), markup=False)
    return 1 if failed else 0


def run_or_stop(run_dir: Path, names: list[str], options: RunOptions, on_line=None, **on_labs):
    """runner.run_labs's statuses; a stop (Ctrl-C, a signal) or a results folder it cannot write ends the command
    (exit status 130/143, or 1 after the error) with the line that says how to resume the run."""
    try:
        return run_labs(run_dir, names, options, on_line, **on_labs)
    except interrupt.Stopped as e:
        console.print(incomplete_line(run_dir))
        raise SystemExit(e.exit_code) from None
    except results.RunFolderError as e:
        console.print(_("error: {message}").format(message=e))
        console.print(incomplete_line(run_dir))
        raise SystemExit(1) from None


def incomplete_line(run_dir: Path, state: results.RunState | None = None) -> str:
    state = state or results.run_state(results.read_manifest(run_dir))
    return _(
        "run {run} is incomplete: {state}; resume it: python -m workshop run --resume {id}"
    ).format(run=workspace.display(run_dir), state=state.detail, id=run_dir.name)


def note_incomplete_runs(root: Path) -> None:
    """Say which earlier runs never finished (interrupted, or killed with their process), newest first: once each
    (a manifest's "noted"), with how to resume or dismiss it. A corrupt one is skipped."""
    for run_dir in results.runs(root):
        try:
            manifest = results.read_manifest(run_dir)
        except results.CorruptFile:
            continue
        state = results.run_state(manifest)
        if state.status not in ("interrupted", "abandoned") or manifest.get("noted"):
            continue
        note = _(
            "note: {line}; or dismiss it: python -m workshop clean {id} (deletes it; this note is not "
            "shown again)"
        ).format(line=incomplete_line(run_dir, state), id=run_dir.name)
        console.print(note, markup=False)
        # told once: the next commands need not say it again; a results folder we may not write: the note comes
        # again
        with contextlib.suppress(OSError):
            results.update_manifest(run_dir, noted=True)


# A lab's failing checks shown on the screen at most; the others are in its summary.md (and result.json)
SHOWN_FAILURES = 10


class LabScreen:
    """What a run shows of its labs: a line as each one starts, and as it ends its verdict, time and failing
    checks (its result.json's, as the runner read it), and, when libraries wrote to its log (Dynamo's graph
    breaks, the profiler, Triton's warnings), one line that says where. On a terminal a live line shows the
    lab's last step (LabContext.step). Every line of the lab's output goes to its log.txt (harness.runner), its
    passing checks too; none of it reaches the screen."""

    def __init__(self, run_dir: Path, names: list[str]):
        self.run_dir, self.names = run_dir, names
        # the live line, drawn while `with self.live:` runs, on a terminal only (elsewhere the progress is kept,
        # never drawn: disable)
        self.live = Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[lab]}"),
            TextColumn("{task.description}", markup=False),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self.task = None
        # lines of the running lab's output that are not its own: libraries' logs, warnings
        self.others = 0

    def started(self, lab: str) -> None:
        """runner.run_labs's on_start."""
        self.others = 0
        console.print(
            _("{lab}: started (lab {k} of {n})").format(
                lab=lab, k=self.names.index(lab) + 1, n=len(self.names)
            ),
            markup=False,
        )
        self.task = self.live.add_task("", total=None, lab=lab, count="")

    def ended(self, lab: str, status: dict, checks: list[dict]) -> None:
        """runner.run_labs's on_end: the lab's status and its checks, as its result.json has them."""
        self.live.remove_task(self.task)
        failing = [c for c in checks if not c["passed"]]
        line = (
            ngettext(
                "{lab}: passed, {n} check, {seconds} s",
                "{lab}: passed, {n} checks, {seconds} s",
                len(checks),
            )
            if status["passed"]
            else ngettext(
                "{lab}: FAILED, {failed} of {n} check failing, {seconds} s",
                "{lab}: FAILED, {failed} of {n} checks failing, {seconds} s",
                len(checks),
            )
        )
        console.print(
            line.format(lab=lab, n=len(checks), failed=len(failing), seconds=status["duration_s"]),
            style="green" if status["passed"] else "red",
            markup=False,
        )
        if failing:
            console.print(failing_checks(failing[:SHOWN_FAILURES]))
        if len(failing) > SHOWN_FAILURES:
            console.print(
                "  "
                + _("and {n} more failing checks: {summary}").format(
                    n=len(failing) - SHOWN_FAILURES,
                    summary=workspace.display(self.run_dir / lab / "summary.md"),
                ),
                markup=False,
            )
        if self.others:
            console.print(
                "  "
                + ngettext(
                    "{n} line of library output (logs, warnings) in {log}",
                    "{n} lines of library output (logs, warnings) in {log}",
                    self.others,
                ).format(n=self.others, log=workspace.display(self.run_dir / lab / "log.txt")),
                markup=False,
            )

    def line(self, lab: str, line: str) -> None:
        """runner.run_labs's on_line: a step moves the live line; a line not of the lab's own is counted."""
        if step := lab_log.read_step(line):
            what, done, total = step
            self.live.update(
                self.task, description=what, completed=done, total=total, count=f"{done}/{total}"
            )
        elif not line.startswith(f"[{lab}]"):
            self.others += 1


def failing_checks(failing: list[dict]) -> Table:
    """Failing checks (as result.json has them), sized for an 80-column terminal: check names and messages wrap,
    long values and thresholds are cut short with an ellipsis (result.json has them whole)."""
    table = Table(
        Column("", no_wrap=True),
        Column(_("check"), overflow="fold", ratio=1),
        Column(_("value"), no_wrap=True, overflow="ellipsis", max_width=28),
        Column(_("expected"), no_wrap=True, overflow="ellipsis", max_width=12),
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    # (messages are marked outside f-strings: Babel extracts only plain calls)
    mark = "[red]" + escape(_("FAIL")) + "[/red]"
    for c in failing:
        name = escape(c["name"]) + (
            f"\n[dim]{escape(c['message'])}[/dim]" if c.get("message") else ""
        )
        table.add_row(mark, name, escape(checks.value_text(c["value"])), escape(checks.bound(c)))
    return table


# REPORT.md: one page per run, every lab's summary with its pictures, links relative to the run folder (`run` writes
# it at the end, `report` on demand). Every file it reads is validated (results.read_manifest / read_result,
# summaries as UTF-8): a corrupt or missing file is named in the report and returned as a problem, as is a run that
# never finished; the caller exits non-zero then. Only an unreadable manifest stops it (results.CorruptFile):
# without it there is no run to report.


def write_report(run_dir: Path, lang: str | None = None) -> tuple[Path, list[str]]:
    """Write run_dir/REPORT.md in `lang`, else in the run's language (its summaries are; English for a run from
    before runs recorded their language); returns its path and the problems found (empty for a sound, finished
    run)."""
    manifest = results.read_manifest(run_dir)
    recorded = manifest.get("lang")
    with i18n.using(lang or (recorded if recorded in i18n.LANGUAGES else i18n.DEFAULT)):
        state = results.run_state(manifest)
        problems = (
            []
            if state.status == "finished"
            else [
                _("run {run} is incomplete: {state}").format(run=run_dir.name, state=state.detail)
            ]
        )
        lines = [
            "# " + _("Workshop run {run}").format(run=manifest["run_id"]),
            "",
            *([f"> **{problems[0]}**", ""] if problems else []),
            # the run's command, machine and versions, and when it ran
            _("- command: `{command}`").format(command=" ".join(manifest["command"])),
            _(
                "- device: {device} ({name}); torch {torch}, triton {triton}, CUDA {cuda}, Python {python}"
            ).format(
                device=manifest["device"],
                name=manifest.get("device_name"),
                torch=manifest.get("torch"),
                triton=manifest.get("triton"),
                cuda=manifest.get("cuda"),
                python=manifest.get("python"),
            ),
            _("- git revision: {revision}; started {start}, ended {end}").format(
                revision=manifest.get("git_revision"),
                start=manifest["start_time"],
                end=manifest.get("end_time"),
            ),
            "",
            "| {} | {} | {} |".format(_("lab"), _("passed"), _("seconds")),
            "|---|---|---|",
        ]
        sections = []
        for lab, status in manifest["labs"].items():
            passed, summary = _lab(run_dir / lab, problems)
            lines.append(f"| [{lab}](#{lab}) | {passed} | {status.get('duration_s')} |")
            sections += ["", f'<a id="{lab}"></a>', "", summary.strip()]
            # the lab's pictures its summary does not show
            linked = set(re.findall(r"\(" + re.escape(lab) + r"/([^)]+\.png)\)", summary))
            sections += [
                f"\n![{p.name}]({lab}/{p.name})"
                for p in sorted((run_dir / lab).glob("*.png"))
                if p.name not in linked
            ]
        not_run = [lab for lab in manifest.get("labs_planned") or [] if lab not in manifest["labs"]]
        lines += ["| {} | {} | |".format(lab, _("not run")) for lab in not_run]
        path = atomic.write_text(run_dir / "REPORT.md", "\n".join(lines + sections) + "\n")
        return path, problems


def _lab(lab_dir: Path, problems: list[str]) -> tuple[object, str]:
    """(passed: yes/no, its summary re-rooted at the run folder); a corrupt file is added to problems."""
    lab = lab_dir.name
    try:
        passed = _("yes") if results.read_result(lab_dir)["passed"] else _("no")
    except results.CorruptFile as e:
        problems.append(str(e))
        passed = _("unreadable result.json")
    path = lab_dir / "summary.md"
    try:
        summary = path.read_bytes().decode("utf-8") if path.is_file() else _("(no summary)")
    except UnicodeDecodeError as e:
        problems.append(
            _(
                "{path} is not UTF-8 text ({error}); run the lab again: python -m workshop run {lab}"
            ).format(path=path, error=e, lab=lab)
        )
        summary = _("(summary.md is unreadable)")
    # Re-root the summary's relative links (pictures, files) at the run folder, and demote its headings.
    summary = re.sub(r"\]\((?!https?:|#|/)([^)]+)\)", rf"]({lab}/\1)", summary)
    return passed, re.sub(r"^#", "##", summary, flags=re.M)
