"""python -m workshop: list | run | report | train | bench | clean (commands.py); exercises | check (learner.py);
grade | edition (instructor.py)."""

from __future__ import annotations

import argparse
import sys

from workshop import i18n
from workshop.cli import commands, instructor, learner
from workshop.cli.options import UsageError, language_after_the_command, language_asked
from workshop.i18n import _


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m workshop", description=_("The PyTorch Internals Workshop.")
    )
    sub = p.add_subparsers(dest="command", required=True)
    commands.add_commands(sub)
    learner.add_commands(sub)
    instructor.add_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    # An ASCII-only terminal gets '?' for what it cannot show, never a UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(errors="replace")
    argv = language_after_the_command(sys.argv[1:] if argv is None else argv)
    i18n.set_language(language_asked(argv))  # before the parser: its help is in that language too
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
