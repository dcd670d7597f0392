"""python -m workshop: list | run | report | train | bench; exercises | check | grade (learner_cli)."""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from pathlib import Path

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from workshop import device as devices
from workshop import i18n, interrupt, labs, learner_cli, results, workspace
from workshop.i18n import _
from workshop.workspace import display

console = Console()


def cmd_list(_args) -> int:
    for spec in labs.all_labs().values():
        bench = (
            "  " + _("(bench: {command})").format(command=f"python -m workshop bench {spec.name}")
            if spec.bench
            else ""
        )
        console.print(f"[bold]{spec.name:<12}[/bold] {_(spec.title)}{bench}", soft_wrap=True)
    return 0


def fail(message: str) -> SystemExit:
    """The one line a command stops with: 'error: MESSAGE' (translated), exit status 1."""
    return SystemExit(_("error: {message}").format(message=message))


def _check_lab_names(names: list[str]) -> list[str]:
    known = labs.all_labs()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise fail(
            _("unknown lab(s) {labs}; the labs are: {known}").format(
                labs=", ".join(unknown), known=", ".join(known)
            )
        )
    return names or list(known)


def add_language_option(parser: argparse.ArgumentParser) -> None:
    """--lang, on every command that prints or writes what the learner reads."""
    parser.add_argument(
        "--lang",
        choices=i18n.LANGUAGES,
        default=None,
        help=_(
            "the language of messages, summaries and reports: es (Spanish) or en (English); "
            "default: WORKSHOP_LANG, else the locale (LANG=es_ES.UTF-8 gives Spanish), else English"
        ),
    )


def language_asked(argv: list[str]) -> str | None:
    """The --lang of a command line, read before its parser is built so that its help is in that language."""
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_language_option(early)
    return early.parse_known_args(argv)[0].lang


def language_after_the_command(argv: list[str]) -> list[str]:
    """`--lang es run ...` read as `run ... --lang es`: --lang is every command's option, and a learner may well
    put it first. Before a `--` (whatever follows it is a lab name)."""
    if argv[:1] == ["--lang"]:
        option, rest = argv[:2], argv[2:]
    elif argv[:1] and argv[0].startswith("--lang="):
        option, rest = argv[:1], argv[1:]
    else:
        return argv
    end = rest.index("--") if "--" in rest else len(rest)
    return rest[:end] + option + rest[end:]


def add_results_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out", default=str(results.DEFAULT_ROOT), help=_("results root (default ./results)")
    )


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of every command that runs labs (run, and check for a learner's work)."""
    parser.add_argument(
        "--n", type=int, default=2, help=_("processes for the distributed demos (default 2)")
    )
    parser.add_argument(
        "--device",
        choices=devices.CHOICES,
        default="auto",
        help=_("auto: CUDA if available, else CPU"),
    )
    add_results_option(parser)
    add_language_option(parser)
    parser.add_argument("--seed", type=int, default=0, help=_("seed for the labs' random inputs"))
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help=_("your MiniGPT (a state dict: vocabulary 600, d_model 64); default: the shipped one"),
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help=_("stop a lab after this long (default: each lab's own limit)"),
    )


def run_options(args, names: list[str]):
    """RunOptions from the common options, each checked before anything starts (one line on failure)."""
    from workshop.labs.distributed.launch import capacity_problem
    from workshop.minigpt import checkpoint
    from workshop.runner import RunOptions

    if args.n < 1:
        raise fail(_("--n must be at least 1 (got {n})").format(n=args.n))
    if args.time_limit is not None and not args.time_limit > 0:
        raise fail(
            _("--time-limit must be a positive number of seconds (got {value})").format(
                value=args.time_limit
            )
        )
    try:
        device = devices.resolve(args.device)
    except devices.DeviceError as e:
        raise fail(str(e)) from None
    if "distributed" in names and (why := capacity_problem(args.n, device)):
        raise fail(why)
    try:
        checkpoint.load(args.checkpoint)
    except checkpoint.CheckpointError as e:
        raise fail(str(e)) from None
    return RunOptions(device, args.n, args.seed, args.checkpoint, args.time_limit)


def cmd_run(args) -> int:
    if args.resume:
        if args.labs:
            raise fail(_("--resume runs the labs its run did not finish; name no labs"))
        return _resume(args)
    names = _check_lab_names(args.labs)
    options = run_options(args, names)
    root = Path(args.out)
    _note_incomplete_runs(root)
    run_dir = _new_run(root, names, options)
    return _execute(run_dir, names, options, args.device == "auto")


def _new_run(root: Path, names: list[str], options) -> Path:
    from workshop.minigpt import checkpoint
    from workshop.runner import sweep_stale_caches

    sweep_stale_caches()
    model = options.checkpoint or checkpoint.SHIPPED
    try:
        return results.new_run(
            root,
            results.python_command(),
            options.device,
            seeds={"workshop": options.seed},
            n_procs=options.n_procs,
            labs_planned=names,
            checkpoint={"path": display(model), "sha256": workspace.file_sha256(model)},
            time_limit_s=options.time_limit_s,
            implementation=options.implementation(names),
            lang=options.lang,
        )
    except results.RunFolderError as e:
        raise fail(str(e)) from None


def _resume(args) -> int:
    from workshop.runner import RunOptions

    try:
        run_dir = results.resolve_run(args.resume, Path(args.out))
        manifest = results.read_manifest(run_dir)
    except (FileNotFoundError, results.CorruptFile) as e:
        raise fail(str(e)) from None
    state = results.run_state(manifest)
    if state.status in ("finished", "running"):
        raise fail(
            _("run {run} is {state}: nothing to resume").format(
                run=display(run_dir), state=state.detail
            )
        )
    model = manifest.get("checkpoint", {}).get("path")
    options = RunOptions(
        devices.resolve(manifest["device"]),
        manifest["n_procs"],
        manifest["seeds"]["workshop"],
        Path(model) if model else None,
        manifest.get("time_limit_s"),
        lang=results.run_language(
            manifest
        ),  # a run keeps its language: its labs' summaries share it
    )
    names = results.resume_run(run_dir)
    console.print(_("resuming {run}: {labs}").format(run=display(run_dir), labs=", ".join(names)))
    return _execute(run_dir, names, options, False)


def _execute(run_dir: Path, names: list[str], options, auto: bool) -> int:
    """Run the labs into run_dir, showing progress; the exit code (130/143 when a signal stopped it)."""
    from workshop.runner import run_labs

    device = f"[bold]{devices.describe(options.device)}[/bold]"
    console.print(
        _("device: {device} (picked by --device auto)").format(device=device)
        if auto
        else _("device: {device}").format(device=device)
    )
    console.print(
        _("labs: {labs}; --n {n}; results under {folder}/").format(
            labs=", ".join(names), n=options.n_procs, folder=display(run_dir.parent)
        )
    )
    try:
        with _progress(names) as on_line:
            status = run_labs(run_dir, names, options, on_line)
    except interrupt.Stopped as e:
        console.print(_incomplete_line(run_dir), soft_wrap=True)
        return e.exit_code
    except results.RunFolderError as e:
        console.print(_("error: {message}").format(message=e), soft_wrap=True)
        console.print(_incomplete_line(run_dir), soft_wrap=True)
        return 1
    _print_checks(run_dir, names)
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
    console.print("[green]" + _("all {n} lab(s) passed").format(n=len(names)) + "[/green]")
    return 0


def _incomplete_line(run_dir: Path, state: results.RunState | None = None) -> str:
    state = state or results.run_state(results.read_manifest(run_dir))
    return _(
        "run {run} is incomplete: {state}; resume it: python -m workshop run --resume {id}"
    ).format(run=display(run_dir), state=state.detail, id=run_dir.name)


def _note_incomplete_runs(root: Path) -> None:
    """Say which earlier runs never finished (interrupted, or killed with their process)."""
    for run_dir, state in results.incomplete_runs(root):
        console.print(
            _("note: {line}").format(line=_incomplete_line(run_dir, state)), soft_wrap=True
        )


@contextlib.contextmanager
def _progress(names: list[str]):
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
    ) as progress:
        yield LabProgress(progress, names)


class LabProgress:
    """on_line for the progress bar: it advances when a new lab starts; a lab's checks print above it."""

    def __init__(self, progress: Progress, names: list[str]):
        self.progress = progress
        self.lab = names[0]
        self.task = progress.add_task("labs", total=len(names), lab=self.lab, line="")

    def __call__(self, lab: str, line: str) -> None:
        if lab != self.lab:
            self.progress.advance(self.task)
            self.lab = lab
        if line.startswith(f"[{lab}]"):  # a check: print it above the bar
            self.progress.console.print(line, markup=False, highlight=False)
        self.progress.update(self.task, lab=lab, line=line[:80])


def _print_checks(run_dir: Path, names: list[str]) -> None:
    console.print(checks_table(run_dir, names))


def checks_table(run_dir: Path, names: list[str]) -> Table:
    """Every check of the run, sized for an 80-column terminal: each lab a section, check names wrap, long
    values and thresholds are cut short with an ellipsis (result.json has them whole)."""
    table = Table(
        title=_("checks of {run}").format(run=run_dir.name), box=box.SIMPLE_HEAD, pad_edge=False
    )
    table.add_column("", no_wrap=True)
    table.add_column(_("check"), overflow="fold", ratio=1)
    table.add_column(_("value"), no_wrap=True, overflow="ellipsis", max_width=28)
    table.add_column(_("threshold"), no_wrap=True, overflow="ellipsis", max_width=12)
    # (messages are marked outside f-strings: Babel extracts only plain calls)
    passed = "[green]" + escape(_("pass")) + "[/green]"
    failed = "[red]" + escape(_("FAIL")) + "[/red]"
    for name in names:
        table.add_row("", f"[bold]{escape(name)}[/bold]")
        for c in results.read_result(run_dir / name)["checks"]:
            mark = passed if c["passed"] else failed
            table.add_row(mark, escape(c["name"]), _cell(c["value"]), _cell(c["threshold"]))
        table.add_section()
    return table


def _cell(value) -> str:
    return escape(f"{value:.3g}" if isinstance(value, float) else str(value))


def cmd_report(args) -> int:
    from workshop.report import write_report

    root = Path(args.out)
    if not args.run:
        _note_incomplete_runs(root)
    try:
        run_dir = results.resolve_run(args.run, root)
        # REPORT.md in the run's language (its summaries are), unless --lang asks for another.
        lang = args.lang or results.run_language(results.read_manifest(run_dir))
        with i18n.using(lang):
            report, problems = write_report(run_dir)
    except (FileNotFoundError, results.CorruptFile) as e:
        raise fail(str(e)) from None
    console.print(_("wrote {file}").format(file=display(report)))
    for problem in problems:
        console.print(_("error: {message}").format(message=problem), soft_wrap=True)
    return 1 if problems else 0


def cmd_train(args) -> int:
    from workshop.minigpt import checkpoint
    from workshop.minigpt.train import TrainArgs, train, train_args_dict

    out = _train_output(Path(args.out), args.force)
    if args.steps < 1:
        raise fail(_("--steps must be at least 1 (got {steps})").format(steps=args.steps))
    train_args = TrainArgs(steps=args.steps, seed=args.seed)
    with Progress(
        SpinnerColumn(),
        TextColumn(_("training")),
        BarColumn(),
        TextColumn(_("step {task.completed}/{task.total}")),
        TextColumn(_("loss {task.fields[loss]:.4f}")),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("train", total=train_args.steps, loss=float("nan"))
        model, history = train(
            train_args,
            on_step=lambda step, loss: progress.update(task, completed=step + 1, loss=loss),
        )
    checkpoint.save(out, model, history, train_args_dict(train_args))
    console.print(
        _("saved {file} (final loss {loss:.4f})").format(
            file=display(out), loss=history["loss"][-1]
        )
    )
    return 0


def _train_output(out: Path, force: bool) -> Path:
    """`train --out`, checked before a minute of training: a file path we may write (and replace with --force)."""
    if out.is_dir():
        raise fail(
            _("{out} is a folder; pass --out with a file path, e.g. {out}/minigpt.pt").format(
                out=out
            )
        )
    if out.exists() and not force:
        raise fail(_("{out} exists; pass --force to replace it").format(out=out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=out.parent):
            pass
    except OSError as e:
        raise fail(
            _("cannot write {out}: {reason}; pass --out with a path you can write").format(
                out=out, reason=e.strerror or e
            )
        ) from None
    return out


def cmd_bench(args) -> int:
    spec = labs.get(args.lab) if args.lab in labs.all_labs() else None
    if spec is None or not spec.bench:
        with_bench = [s.name for s in labs.all_labs().values() if s.bench]
        raise fail(
            _("no benchmark for {lab!r}; labs with one: {labs}").format(
                lab=args.lab, labs=", ".join(with_bench) or _("none")
            )
        )
    return spec.load("bench")(Path(args.out)) or 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m workshop", description=_("The PyTorch Internals Workshop.")
    )
    sub = p.add_subparsers(dest="command", required=True)

    listing = sub.add_parser("list", help=_("the labs, one line each"))
    add_language_option(listing)
    listing.set_defaults(fn=cmd_list)

    run = sub.add_parser("run", help=_("run labs (all by default) into results/<run-id>/"))
    run.add_argument(
        "labs", nargs="*", metavar="LAB", help=_("labs to run, in order (default: all)")
    )
    add_run_options(run)
    run.add_argument(
        "--resume",
        metavar="RUN",
        help=_(
            "finish an interrupted run (its folder or id): its labs that did not finish, its options"
        ),
    )
    run.set_defaults(fn=cmd_run)

    report = sub.add_parser(
        "report", help=_("collect a run's summaries and pictures into REPORT.md")
    )
    report.add_argument("run", nargs="?", help=_("run folder or id (default: results/latest)"))
    add_results_option(report)
    add_language_option(report)
    report.set_defaults(fn=cmd_report)

    train = sub.add_parser(
        "train", help=_("train the MiniGPT from its seed (reproduces the shipped checkpoint)")
    )
    train.add_argument("--out", required=True, help=_("where to write the checkpoint"))
    train.add_argument("--steps", type=int, default=1500)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--force", action="store_true", help=_("replace an existing file"))
    add_language_option(train)
    train.set_defaults(fn=cmd_train)

    bench = sub.add_parser("bench", help=_("run a lab's benchmark (GPU)"))
    bench.add_argument("lab")
    bench.add_argument(
        "--out",
        default="benchmarks",
        help=_("folder for the JSON and chart (default ./benchmarks)"),
    )
    add_language_option(bench)
    bench.set_defaults(fn=cmd_bench)
    learner_cli.add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    # An ASCII-only terminal gets '?' for what it cannot show, never a UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="replace")
    argv = language_after_the_command(sys.argv[1:] if argv is None else argv)
    i18n.set_language(language_asked(argv))  # before the parser: its help is in that language too
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
