"""python -m workshop: list | run | report | train | bench; exercises | check | grade (learner_cli)."""

from __future__ import annotations

import argparse
import sys
from collections import deque
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from workshop import device as devices
from workshop import labs, learner_cli, results

console = Console()


def cmd_list(_args) -> int:
    for spec in labs.all_labs().values():
        bench = "  (bench: python -m workshop bench " + spec.name + ")" if spec.bench else ""
        console.print(f"[bold]{spec.name:<12}[/bold] {spec.title}{bench}", soft_wrap=True)
    return 0


def _check_lab_names(names: list[str]) -> list[str]:
    known = labs.all_labs()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(
            f"error: unknown lab(s) {', '.join(unknown)}; the labs are: {', '.join(known)}"
        )
    return names or list(known)


def cmd_run(args) -> int:
    names = _check_lab_names(args.labs)
    if args.n < 1:
        raise SystemExit(f"error: --n must be at least 1 (got {args.n})")
    try:
        device = devices.resolve(args.device)
    except devices.DeviceError as e:
        raise SystemExit(f"error: {e}") from None
    console.print(
        f"device: [bold]{devices.describe(device)}[/bold]"
        + (" (picked by --device auto)" if args.device == "auto" else "")
    )
    console.print(f"labs: {', '.join(names)}; --n {args.n}; results under {args.out}/")

    if console.is_terminal:
        last_lines: deque[str] = deque(maxlen=1)
        with Progress(
            SpinnerColumn(),
            TextColumn("[bold]{task.fields[lab]}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} labs"),
            TimeElapsedColumn(),
            TextColumn("[dim]{task.fields[line]}"),
            console=console,
            transient=True,
        ) as progress:
            task = progress.add_task("labs", total=len(names), lab=names[0], line="")
            state = {"lab": names[0]}

            def on_line(lab: str, line: str) -> None:
                if lab != state["lab"]:
                    progress.advance(task)
                    state["lab"] = lab
                if line.startswith(f"[{lab}]"):  # a check: print it above the bar
                    progress.console.print(line)
                last_lines.append(line[:80])
                progress.update(task, lab=lab, line=last_lines[-1])

            run_dir, status = _run(names, device, args, on_line)
    else:  # a log (CI, a container): print every line, prefixed by its lab
        run_dir, status = _run(
            names, device, args, lambda lab, line: print(f"{lab:>12} | {line}", flush=True)
        )

    _print_checks(run_dir, names)
    failed = [n for n, s in status.items() if not s["passed"]]
    console.print(f"run folder: {run_dir}")
    if failed:
        console.print(
            f"[red]FAILED: {', '.join(failed)}[/red] (see each lab's summary.md and log.txt)"
        )
        return 1
    console.print(f"[green]all {len(names)} lab(s) passed[/green]")
    return 0


def _run(names, device, args, on_line):
    from workshop.runner import run_labs

    return run_labs(names, device, args.n, args.seed, Path(args.out), on_line)


def _print_checks(run_dir: Path, names: list[str]) -> None:
    table = Table(title=f"checks of {run_dir.name}")
    for col in ("lab", "check", "value", "threshold", ""):
        table.add_column(col)
    for name in names:
        result = results.read_json(run_dir / name / "result.json")
        for c in result["checks"]:
            value = f"{c['value']:.3g}" if isinstance(c["value"], float) else str(c["value"])
            mark = "[green]pass[/green]" if c["passed"] else "[red]FAIL[/red]"
            table.add_row(name, c["name"], value[:60], str(c["threshold"])[:30], mark)
    console.print(table)


def cmd_report(args) -> int:
    from workshop.report import write_report

    try:
        run_dir = results.resolve_run(args.run, Path(args.out))
    except FileNotFoundError as e:
        raise SystemExit(f"error: {e}") from None
    console.print(f"wrote {write_report(run_dir)}")
    return 0


def cmd_train(args) -> int:
    from workshop.minigpt import checkpoint
    from workshop.minigpt.train import TrainArgs, train, train_args_dict

    out = Path(args.out)
    if out.exists() and not args.force:
        raise SystemExit(f"error: {out} exists; pass --force to replace it")
    train_args = TrainArgs(steps=args.steps, seed=args.seed)
    with Progress(
        SpinnerColumn(),
        TextColumn("training"),
        BarColumn(),
        TextColumn("step {task.completed}/{task.total}"),
        TextColumn("loss {task.fields[loss]:.4f}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("train", total=train_args.steps, loss=float("nan"))
        model, history = train(
            train_args,
            on_step=lambda step, loss: progress.update(task, completed=step + 1, loss=loss),
        )
    checkpoint.save(out, model, history, train_args_dict(train_args))
    console.print(f"saved {out} (final loss {history['loss'][-1]:.4f})")
    return 0


def cmd_bench(args) -> int:
    spec = labs.get(args.lab) if args.lab in labs.all_labs() else None
    if spec is None or not spec.bench:
        with_bench = [s.name for s in labs.all_labs().values() if s.bench]
        raise SystemExit(
            f"error: no benchmark for {args.lab!r}; labs with one: {', '.join(with_bench) or 'none'}"
        )
    return spec.load("bench")(Path(args.out)) or 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m workshop", description="The PyTorch Internals Workshop."
    )
    sub = p.add_subparsers(dest="command", required=True)

    sub.add_parser("list", help="the labs, one line each").set_defaults(fn=cmd_list)

    run = sub.add_parser("run", help="run labs (all by default) into results/<run-id>/")
    run.add_argument("labs", nargs="*", metavar="LAB", help="labs to run, in order (default: all)")
    run.add_argument(
        "--n", type=int, default=2, help="processes for the distributed demos (default 2)"
    )
    run.add_argument(
        "--device",
        choices=devices.CHOICES,
        default="auto",
        help="auto: CUDA if available, else CPU",
    )
    run.add_argument(
        "--out", default=str(results.DEFAULT_ROOT), help="results root (default ./results)"
    )
    run.add_argument("--seed", type=int, default=0, help="seed for the labs' random inputs")
    run.set_defaults(fn=cmd_run)

    report = sub.add_parser("report", help="collect a run's summaries and pictures into REPORT.md")
    report.add_argument("run", nargs="?", help="run folder or id (default: results/latest)")
    report.add_argument(
        "--out", default=str(results.DEFAULT_ROOT), help="results root (default ./results)"
    )
    report.set_defaults(fn=cmd_report)

    train = sub.add_parser(
        "train", help="train the MiniGPT from its seed (reproduces the shipped checkpoint)"
    )
    train.add_argument("--out", required=True, help="where to write the checkpoint")
    train.add_argument("--steps", type=int, default=1500)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--force", action="store_true", help="replace an existing file")
    train.set_defaults(fn=cmd_train)

    bench = sub.add_parser("bench", help="run a lab's benchmark (GPU)")
    bench.add_argument("lab")
    bench.add_argument(
        "--out", default="benchmarks", help="folder for the JSON and chart (default ./benchmarks)"
    )
    bench.set_defaults(fn=cmd_bench)
    learner_cli.add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
