"""python -m workshop: list | run | report | train | bench | clean (commands.py); exercises | check (learner.py);
grade | edition (instructor.py). The parser is here, every command one row of its table: those modules run the
commands, this one reads their arguments."""

from __future__ import annotations

import argparse
import sys

from workshop import i18n
from workshop.cli import commands, instructor, learner
from workshop.cli.options import (
    RESULTS_OPTIONS,
    RUN_OPTIONS,
    UsageError,
    add_language_option,
    arg,
    language_asked,
)
from workshop.i18n import _
from workshop.learner import workspace


def build_parser() -> argparse.ArgumentParser:
    """`python -m workshop` and its commands, in the language in use. Each row of the table: where the command
    hangs (the top's commands, or a group's: `exercises`), its name, the function that runs it (None: a group of
    commands), its help, the options it shares with other commands (each adds its own: --lang on every command,
    which prints, and on the top's, before any command; RESULTS_OPTIONS on those that read a results root;
    RUN_OPTIONS on those that run labs), then its own arguments (arg())."""
    p = argparse.ArgumentParser(
        prog="python -m workshop", description=_("The PyTorch Internals Workshop.")
    )
    add_language_option(p, None)
    groups = {"": p.add_subparsers(dest="command", required=True)}
    default_work = str(workspace.DEFAULT_DIR)
    work_option = arg(
        "--work",
        default=default_work,
        metavar=_("FOLDER"),
        help=_("your workspace (default {work})").format(work=default_work),
    )
    language = (add_language_option,)
    for group, name, fn, text, shared, *arguments in (
        ("", "list", commands.cmd_list, _("the labs, one line each"), language),
        (
            "",
            "run",
            commands.cmd_run,
            _("run labs (all by default) into results/<run-id>/"),
            RUN_OPTIONS,
            arg("labs", nargs="*", metavar="LAB", help=_("labs to run, in order (default: all)")),
            arg(
                "--resume",
                metavar=_("RUN"),
                help=_(
                    "finish an interrupted run (its folder or id): its labs that did not finish, its "
                    "options"
                ),
            ),
        ),
        (
            "",
            "report",
            commands.cmd_report,
            _("collect a run's summaries and pictures into REPORT.md"),
            RESULTS_OPTIONS,
            arg(
                "run",
                nargs="?",
                metavar=_("RUN"),
                help=_("run folder or id (default: results/latest)"),
            ),
        ),
        (
            "",
            "train",
            commands.cmd_train,
            _("train the MiniGPT from its seed (reproduces the shipped checkpoint)"),
            language,
            arg("--out", required=True, metavar=_("FILE"), help=_("where to write the checkpoint")),
            arg(
                "--steps",
                type=int,
                default=1500,
                metavar=_("STEPS"),
                help=_("training steps (default 1500)"),
            ),
            arg(
                "--seed",
                type=int,
                default=0,
                metavar=_("SEED"),
                help=_("the training's seed (default 0)"),
            ),
            arg("--force", action="store_true", help=_("replace an existing file")),
        ),
        (
            "",
            "bench",
            commands.cmd_bench,
            _("run a lab's benchmark (GPU)"),
            language,
            arg("lab", metavar="LAB"),
            arg(
                "--out",
                default="benchmarks",
                metavar=_("FOLDER"),
                help=_("folder for the JSON and chart (default ./benchmarks)"),
            ),
        ),
        (
            "",
            "clean",
            commands.cmd_clean,
            _(
                "delete old run folders: all but the newest {keep} of run and of check, those latest and "
                "latest-check point at, each exercise's last grading, and running ones"
            ).format(keep=commands.KEEP),
            RESULTS_OPTIONS,
            arg(
                "runs", nargs="*", metavar=_("RUN"), help=_("delete only these runs (folder or id)")
            ),
            arg(
                "--keep",
                type=int,
                default=commands.KEEP,
                metavar="N",
                help=_("runs of each kind kept (default {keep})").format(keep=commands.KEEP),
            ),
        ),
        # the learner's commands
        (
            "",
            "exercises",
            None,
            _("your workspace: write the exercises' files, see where you stand"),
            (),
        ),
        (
            "exercises",
            "init",
            learner.cmd_init,
            _("write one file per lab with exercises (never over yours)"),
            RESULTS_OPTIONS,
            arg(
                "dir",
                nargs="?",
                default=default_work,
                metavar=_("FOLDER"),
                help=_("default {work}/").format(work=default_work),
            ),
            arg("--lab", action="append", dest="labs", metavar="LAB", help=_("only this lab")),
            arg("--force", action="store_true", help=_("replace your files, backed up first")),
            arg(
                "--learner",
                metavar=_("NAME"),
                help=_("your name, as the instructor's table shows it"),
            ),
        ),
        (
            "exercises",
            "list",
            learner.cmd_list,
            _("every exercise and where you stand on it"),
            RESULTS_OPTIONS,
            work_option,
        ),
        (
            "",
            "check",
            learner.cmd_check,
            _("grade your workspace with the labs' own checks"),
            RUN_OPTIONS,
            arg(
                "labs",
                nargs="*",
                metavar=_("LAB [EXERCISE]"),
                help=_(
                    "labs to check (default: all with exercises), each optionally with exercises of its "
                    "own"
                ),
            ),
            arg(
                "--only",
                action="append",
                metavar=_("EXERCISE"),
                help=_("grade only this exercise (LAB.NAME; repeatable)"),
            ),
            arg("--hint", action="store_true", help=_("show the next hint of the exercise named")),
            arg(
                "--show",
                action="store_true",
                help=_("show the values that failing predictions and answers keep hidden"),
            ),
            arg(
                "--rerun",
                action="store_true",
                help=_("run the lab even where your latest run could grade the exercise again"),
            ),
            work_option,
        ),
        # the instructor's commands
        (
            "",
            "grade",
            instructor.cmd_grade,
            _("instructors: a table of learners x exercises (CSV, Markdown)"),
            RUN_OPTIONS,
            arg(
                "paths",
                nargs="+",
                metavar=_("PATH"),
                help=_("run folders, folders of runs, workspaces"),
            ),
            arg("--lab", action="append", dest="labs", metavar="LAB", help=_("labs to check")),
            arg(
                "--to",
                metavar=_("FOLDER"),
                help=_("folder for grades.csv and grades.md (default results/grades-<time>)"),
            ),
            arg(
                "--sandbox",
                choices=("auto", "docker", "bwrap", "native"),
                default="auto",
                help=_(
                    "where each hand-in's code runs: a container of its own (docker), a namespace sandbox "
                    "of its own (bwrap: bubblewrap, the learner edition's code), or, unisolated, a process "
                    "of this machine (native); auto: the first of docker and bwrap that works here"
                ),
            ),
            arg(
                "--roster",
                metavar=_("FILE"),
                help=_(
                    "a CSV of `folder,name` lines: each hand-in's learner by its folder's name (default: "
                    "the folder's name is the learner's)"
                ),
            ),
        ),
        (
            "",
            "edition",
            instructor.cmd_edition,
            _("instructors: the workshop as learners get it, without the answers, in a new folder"),
            language,
            arg("kind", choices=("learner",), help=_("learner: every exercised reference a stub")),
            arg("--out", required=True, help=_("a new (or empty) folder")),
        ),
    ):
        parser = groups[group].add_parser(name, help=text)
        for names, settings in arguments:
            parser.add_argument(*names, **settings)
        for add in shared:
            add(parser)
        if fn is None:
            groups[name] = parser.add_subparsers(dest="action", required=True)
        parser.set_defaults(fn=fn)
    return p


def main(argv: list[str] | None = None) -> int:
    # An ASCII-only terminal gets '?' for what it cannot show, never a UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="replace")
    argv = sys.argv[1:] if argv is None else argv
    i18n.set_language(language_asked(argv))  # before the parser: its help is in that language too
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
