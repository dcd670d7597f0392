"""A run on the screen: its folder made, its labs run with a progress bar (or every line, in a log), the checks
table, and the one line an incomplete run ends with. Used by run (commands.py), check and grade (learner.py)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from workshop.cli.options import fail
from workshop.grading import checks, workspace
from workshop.grading.workspace import display
from workshop.harness import device, interrupt, results
from workshop.harness.run_options import RunOptions
from workshop.harness.runner import run_labs, sweep_stale_caches
from workshop.i18n import _, ngettext
from workshop.minigpt import SHIPPED_CHECKPOINT

# soft_wrap: a line longer than the terminal is not broken by us: a path in it stays copyable
console = Console(soft_wrap=True)


def new_run(root: Path, names: list[str], options: RunOptions) -> Path:
    """A new run folder under root for the labs `names`, its manifest and options.json written."""
    sweep_stale_caches()
    model = options.checkpoint or SHIPPED_CHECKPOINT
    try:
        run_dir = results.new_run(
            root,
            results.python_command(),
            options.device,
            seeds={"workshop": options.seed},
            n_procs=options.n_procs,
            labs_planned=names,
            checkpoint={"path": display(model), "sha256": workspace.file_sha256(model)},
            time_limit_s=options.time_limit_s,
            implementation=workspace.implementation(options.work, names),
            lang=options.lang,
        )
        options.write(run_dir)
    except results.RunFolderError as e:
        raise fail(str(e)) from None
    return run_dir


def execute(run_dir: Path, names: list[str], options: RunOptions, auto: bool) -> int:
    """Run the labs into run_dir, showing progress; the exit code (130/143 when a signal stopped it)."""
    shown = f"[bold]{device.describe(options.device)}[/bold]"
    console.print(
        _("device: {device} (picked by --device auto)").format(device=shown)
        if auto
        else _("device: {device}").format(device=shown)
    )
    console.print(
        _("labs: {labs}; --n {n}; results under {folder}/").format(
            labs=", ".join(names), n=options.n_procs, folder=display(run_dir.parent)
        )
    )
    try:
        with progress(names) as on_line:
            status = run_labs(run_dir, names, options, on_line)
    except interrupt.Stopped as e:
        console.print(incomplete_line(run_dir))
        return e.exit_code
    except results.RunFolderError as e:
        console.print(_("error: {message}").format(message=e))
        console.print(incomplete_line(run_dir))
        return 1
    console.print(checks_table(run_dir, names))
    failed = [n for n, s in status.items() if not s["passed"]]
    console.print(_("run folder: {run}").format(run=display(run_dir)))
    if failed:
        console.print(
            "[red]"
            + _("FAILED: {labs}").format(labs=", ".join(failed))
            + "[/red] "
            + _("(see each lab's summary.md and log.txt)")
        )
        return 1
    passed = ngettext("the lab passed", "all {n} labs passed", len(names)).format(n=len(names))
    console.print("[green]" + passed + "[/green]")
    return 0


def incomplete_line(run_dir: Path, state: results.RunState | None = None) -> str:
    state = state or results.run_state(results.read_manifest(run_dir))
    return _(
        "run {run} is incomplete: {state}; resume it: python -m workshop run --resume {id}"
    ).format(run=display(run_dir), state=state.detail, id=run_dir.name)


def note_incomplete_runs(root: Path) -> None:
    """Say which earlier runs never finished (interrupted, or killed with their process): once each, with how to
    resume or dismiss it."""
    for run_dir, state in results.incomplete_runs(root, unnoted=True):
        note = _(
            "note: {line}; or dismiss it: python -m workshop clean {id} (deletes it; this note is not "
            "shown again)"
        ).format(line=incomplete_line(run_dir, state), id=run_dir.name)
        console.print(note, markup=False)
        with contextlib.suppress(
            OSError
        ):  # a results folder we may not write: the note comes again
            results.mark_noted(run_dir)


@contextlib.contextmanager
def progress(names: list[str]):
    """Yields on_line(lab, line): on a terminal a progress bar with each check printed above it; in a log
    (CI, a container) every line, prefixed by its lab."""
    if not console.is_terminal:
        yield lambda lab, line: print(f"{lab:>12} | {line}", flush=True)
        return
    with Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.fields[lab]}"),
        BarColumn(),
        TextColumn(_("{task.completed}/{task.total} labs")),
        TimeElapsedColumn(),
        TextColumn("[dim]{task.fields[line]}"),
        console=console,
        transient=True,
    ) as bar:
        yield LabProgress(bar, names)


class LabProgress:
    """on_line for the progress bar: it advances when a new lab starts; a lab's checks print above it."""

    def __init__(self, bar: Progress, names: list[str]):
        self.bar = bar
        self.lab = names[0]
        self.task = bar.add_task("labs", total=len(names), lab=self.lab, line="")

    def __call__(self, lab: str, line: str) -> None:
        if lab != self.lab:
            self.bar.advance(self.task)
            self.lab = lab
        if line.startswith(f"[{lab}]"):  # a check: print it above the bar
            self.bar.console.print(line, markup=False, highlight=False)
        self.bar.update(self.task, lab=lab, line=line[:80])


def checks_table(run_dir: Path, names: list[str]) -> Table:
    """Every check of the run, sized for an 80-column terminal: each lab a section, check names wrap, long
    values and thresholds are cut short with an ellipsis (result.json has them whole)."""
    table = Table(
        title=_("checks of {run}").format(run=run_dir.name), box=box.SIMPLE_HEAD, pad_edge=False
    )
    table.add_column("", no_wrap=True)
    table.add_column(_("check"), overflow="fold", ratio=1)
    table.add_column(_("value"), no_wrap=True, overflow="ellipsis", max_width=28)
    table.add_column(_("expected"), no_wrap=True, overflow="ellipsis", max_width=12)
    # (messages are marked outside f-strings: Babel extracts only plain calls)
    passed = "[green]" + escape(_("pass")) + "[/green]"
    failed = "[red]" + escape(_("FAIL")) + "[/red]"
    for name in names:
        table.add_row("", f"[bold]{escape(name)}[/bold]")
        for c in results.read_result(run_dir / name)["checks"]:
            mark = passed if c["passed"] else failed
            table.add_row(mark, escape(c["name"]), _cell(c["value"]), escape(checks.bound(c)))
        table.add_section()
    return table


def _cell(value) -> str:
    return escape(checks.value_text(value))
