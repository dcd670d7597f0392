"""The workshop's own commands: list, run (and --resume), report, train, bench, clean (and its retention rule);
their arguments are rows of cli.main.build_parser's table."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from workshop import labs
from workshop.cli import runs
from workshop.cli.options import check_lab_names, fail, run_options, stop_on
from workshop.declarations import checks
from workshop.foundations import device, results
from workshop.foundations.run_options import RunOptions
from workshop.i18n import _, ngettext
from workshop.learner.workspace import display


def cmd_list(_args) -> int:
    for spec in labs.all_labs().values():
        bench = (
            "  " + _("(bench: {command})").format(command=f"python -m workshop bench {spec.name}")
            if spec.bench
            else ""
        )
        runs.console.print(f"[bold]{spec.name:<12}[/bold] {escape(_(spec.title) + bench)}")
    return 0


def cmd_run(args) -> int:
    if args.resume:
        if args.labs:
            raise fail(_("--resume runs the labs its run did not finish; name no labs"))
        return resume(args)
    names = check_lab_names(args.labs)
    options = run_options(args, names)
    root = Path(args.out)
    runs.note_incomplete_runs(root)
    run_dir = runs.new_run(root, names, options)
    return runs.execute(run_dir, names, options, args.device == "auto")


def resume(args) -> int:
    """Finish an interrupted run in its own folder, with its own options (its options.json)."""
    try:
        run_dir = results.resolve_run(args.resume, Path(args.out))
        manifest = results.read_manifest(run_dir)
        options = RunOptions.read(run_dir)
        device.resolve(options.device)  # a CUDA run resumed where there is no GPU stops here
    except (FileNotFoundError, results.CorruptFile, device.DeviceError) as e:
        raise fail(str(e)) from None
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise fail(
            _("{file} cannot be read ({error}): run its labs again").format(
                file=display(run_dir / "options.json"), error=e
            )
        ) from None
    state = results.run_state(manifest)
    if state.status in ("finished", "running"):
        raise fail(
            _("run {run} is {state}: nothing to resume").format(
                run=display(run_dir), state=state.detail
            )
        )
    names = results.resume_run(run_dir)
    runs.console.print(
        _("resuming {run}: {labs}").format(run=display(run_dir), labs=", ".join(names)),
        markup=False,
    )
    return runs.execute(run_dir, names, options, False)


def cmd_report(args) -> int:
    root = Path(args.out)
    if not args.run:
        runs.note_incomplete_runs(root)
    with stop_on(FileNotFoundError, results.CorruptFile):
        run_dir = results.resolve_run(args.run, root)
        report, problems = runs.write_report(run_dir, args.lang)
    runs.console.print(_("wrote {file}").format(file=display(report)), markup=False)
    for problem in problems:
        runs.console.print(_("error: {message}").format(message=problem), markup=False)
    return 1 if problems else 0


def cmd_train(args) -> int:
    from workshop.minigpt import checkpoint
    from workshop.minigpt.train import TrainArgs, train, train_args_dict

    out = train_output(Path(args.out), args.force)
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
        console=runs.console,
    ) as progress:
        task = progress.add_task("train", total=train_args.steps, loss=float("nan"))
        model, history = train(
            train_args,
            on_step=lambda step, loss: progress.update(task, completed=step + 1, loss=loss),
        )
    checkpoint.save(out, model, history, train_args_dict(train_args))
    runs.console.print(
        _("saved {file} (final loss {loss:.4f})").format(
            file=display(out), loss=history["loss"][-1]
        ),
        markup=False,
    )
    return 0


def train_output(out: Path, force: bool) -> Path:
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
    spec = labs.all_labs().get(args.lab)
    if spec is None or not spec.bench:
        with_bench = [s.name for s in labs.all_labs().values() if s.bench]
        raise fail(
            _("no benchmark for {lab!r}; labs with one: {labs}").format(
                lab=args.lab, labs=", ".join(with_bench) or _("none")
            )
        )
    return spec.bench(Path(args.out)) or 0


# Which run folders `python -m workshop clean` removes: the retention rule the README states.
#
# Kept: the newest KEEP runs of the reference (`run`) and the newest KEEP runs of a workspace (`check`, `grade`);
# the runs results/latest and results/latest-check point at; for each workspace and exercise, the newest run that
# graded it (`exercises list` reads where the learner stands from it); and any run still running. Every other run
# folder goes, an incomplete one too (`clean RUN` removes one run by name: an incomplete run dismissed). Only run
# folders (a folder with a manifest.json) are ever removed: grade's tables and the build cache stay.

KEEP = 5  # runs of each kind kept, newest first: a morning's checks, and what to compare with


def removable(root: Path, keep: int = KEEP) -> list[Path]:
    """The run folders under root that the rule removes, newest first."""
    newest = {results.LATEST: [], results.LATEST_CHECK: []}
    keeping = set()
    for run_dir in results.runs(root):  # newest first
        try:
            manifest = results.read_manifest(run_dir)
        except results.CorruptFile:
            continue  # not a run to keep: its record is lost
        same_kind = newest[results.latest_name(manifest)]
        same_kind.append(run_dir)
        if len(same_kind) <= keep or results.run_state(manifest).status == "running":
            keeping.add(run_dir.resolve())
    pointed = (Path(root) / name for name in (results.LATEST, results.LATEST_CHECK))
    keeping |= {p.resolve() for p in pointed if p.is_symlink() and p.resolve().is_dir()}
    keeping |= last_graded(newest[results.LATEST_CHECK])
    return [r for r in results.runs(root) if r.resolve() not in keeping]


def last_graded(check_runs: list[Path]) -> set[Path]:
    """For each workspace and exercise, the newest of these runs (newest first) that graded it."""
    newest: dict[tuple, Path] = {}  # (workspace, exercise id) -> the newest run that graded it
    for run_dir in check_runs:
        for result_path in run_dir.glob("*/result.json"):
            try:
                result = results.read_json(result_path)
                work = (result.get("implementation") or {}).get("work")
                graded = result.get("exercises", {}).items()
            except (OSError, ValueError, AttributeError):
                continue
            for ex_id, entry in graded:
                if entry.get("status", checks.NOT_GRADED) != checks.NOT_GRADED:
                    newest.setdefault((work, ex_id), run_dir.resolve())
    return set(newest.values())


def cmd_clean(args) -> int:
    """Remove the run folders named, or those the retention rule (above) does not keep, and a pointer
    (results/latest) left pointing at none."""
    root = Path(args.out)
    if args.keep < 0:
        raise fail(_("--keep must be at least 0 (got {keep})").format(keep=args.keep))
    with stop_on(FileNotFoundError, results.CorruptFile):
        named = [results.resolve_run(run, root) for run in args.runs]
        running = [
            r for r in named if results.run_state(results.read_manifest(r)).status == "running"
        ]
    if running:
        raise fail(_("run {run} is still running: stop it first").format(run=display(running[0])))
    gone = named or removable(root, args.keep)
    files = (f for r in gone for f in r.rglob("*") if f.is_file() and not f.is_symlink())
    freed = sum(f.stat().st_size for f in files)
    for run_dir in gone:
        shutil.rmtree(run_dir)
    for name in (results.LATEST, results.LATEST_CHECK):
        pointer = root / name
        if pointer.is_symlink() and not pointer.exists():
            pointer.unlink()
    runs.console.print(
        ngettext(
            "removed {n} run folder ({mb:.1f} MB) under {root}",
            "removed {n} run folders ({mb:.1f} MB) under {root}",
            len(gone),
        ).format(n=len(gone), mb=freed / 1e6, root=display(root)),
        markup=False,
    )
    return 0
