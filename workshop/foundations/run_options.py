"""The options of a run, declared once: RunOptions. Every other place reads them from here or from its file.

- The commands that run labs (run, check, grade) derive their command-line options from RunOptions' fields
  (add_arguments, from_arguments; cli.options checks the values before anything starts).
- A new run writes them to results/<run-id>/options.json; `run --resume` reads them back from there.
- The runner writes them, with the exercises to skip (`skip`), to results/<run-id>/<lab>/options.json: the lab's
  process (harness.child, told the lab's name) reads nothing else. It hands what its own children (torchrun's
  ranks) need to them through their environment (harness.child.main): one source each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from workshop import i18n
from workshop.foundations import atomic, device
from workshop.i18n import N_, _

FILE = "options.json"


def option(flag: str, help: str, default=dataclasses.MISSING, cli_default=None, **argparse_options):
    """A field that is also a command-line option: `flag`, its help (marked N_()), argparse's own keywords, and
    the command line's default where it differs from the field's (`--device auto`, resolved by cli.options)."""
    cli_default = default if cli_default is None else cli_default
    metadata = {"flag": flag, "help": help, "default": cli_default, **argparse_options}
    return field(default=default, metadata=metadata)


@dataclass
class RunOptions:
    """What every lab of a run gets."""

    # "cpu" or "cuda"
    device: str = option(
        "--device",
        N_("auto: CUDA if available, else CPU"),
        cli_default="auto",
        choices=device.CHOICES,
    )
    n_procs: int = option(
        "--n", N_("processes for the distributed demos (default 2)"), 2, type=int, metavar="N"
    )
    seed: int = option(
        "--seed", N_("seed for the labs' random inputs"), 0, type=int, metavar=N_("SEED")
    )
    # None: the shipped workshop/minigpt/minigpt.pt
    checkpoint: Path | None = option(
        "--checkpoint",
        N_("your MiniGPT (a state dict: vocabulary 600, d_model 64); default: the shipped one"),
        None,
        type=Path,
        metavar=N_("FILE"),
    )
    # None: each lab's own LabSpec.time_limit_s
    time_limit_s: float | None = option(
        "--time-limit",
        N_("stop a lab after this long (default: each lab's own limit)"),
        None,
        type=float,
        metavar=N_("SECONDS"),
    )
    # the learner's workspace to grade (check's --work, grade's PATH); None runs the reference
    work: Path | None = None
    # the image of the container the learner's code runs in (grade's sandbox: foundations/worker_container.py);
    # None: a worker process of this machine (foundations/worker_process.py)
    worker_image: str | None = None
    # grade's namespace sandbox (foundations/worker_process.py: bubblewrap): {"code": the learner edition's folder,
    # which the worker imports instead of this code, "hidden": [the folders it must not see]}; None: none
    namespace_sandbox: dict | None = None
    # the learner edition's folder (grading/edition.py cached_learner), which a worker of this machine imports
    # instead of this code (native `check`: the references are stubs there); None: this code
    learner_edition: str | None = None
    # the language of the labs' summaries and messages (--lang, every command's option: cli.options)
    lang: str = field(default_factory=i18n.language)
    # the exercises to grade ("lab.name": check LAB EXERCISE, --only); empty: all (LabContext.wants)
    only: tuple[str, ...] = ()
    # show the values of failing secret checks (check --show); else only how far off they are
    show: bool = False
    # lab -> the lab folder of an earlier run to re-grade its from_run exercises against, without running the
    # lab (check LAB EXERCISE: harness.child.regrade)
    against: dict[str, str] = field(default_factory=dict)
    # in a lab's own copy (results/<run-id>/<lab>/options.json): the exercises that killed an earlier attempt of
    # it, id -> how (harness.runner.run_lab), failed without running their code again; empty in the run's
    skip: dict[str, str] = field(default_factory=dict)

    def write(self, run_dir: Path) -> Path:
        """results/<run-id>/options.json: what `run --resume` reads back; <lab>/options.json: what the lab's process
        reads (its paths as text: write_json)."""
        return atomic.write_json(Path(run_dir) / FILE, dataclasses.asdict(self))

    @classmethod
    def read(cls, run_dir: Path) -> RunOptions:
        data = json.loads((Path(run_dir) / FILE).read_text(encoding="utf-8"))
        known = {f.name for f in dataclasses.fields(cls)}
        # the fields that are paths, written as text
        values = {
            k: Path(v) if k in ("checkpoint", "work") and v else v
            for k, v in data.items()
            if k in known
        }
        return cls(**{**values, "only": tuple(values.get("only", ()))})  # JSON has lists


def command_line_fields() -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(RunOptions) if "flag" in f.metadata]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """RunOptions' command-line options on `parser` (help and value names in the language in use)."""
    for f in command_line_fields():
        kwargs = {k: v for k, v in f.metadata.items() if k not in ("flag", "help")}
        if "metavar" in kwargs:
            kwargs["metavar"] = _(kwargs["metavar"])
        parser.add_argument(f.metadata["flag"], dest=f.name, help=_(f.metadata["help"]), **kwargs)


def from_arguments(args: argparse.Namespace, **others) -> RunOptions:
    """RunOptions from parsed arguments (add_arguments'), plus the fields given in `others`."""
    return RunOptions(**{f.name: getattr(args, f.name) for f in command_line_fields()}, **others)
