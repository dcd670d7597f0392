"""The options the commands share: --lang (every command), --out, and the run options (run, check, grade),
derived from foundations.run_options.RunOptions and checked here before anything starts: one line on a bad value."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses

from workshop import i18n, labs
from workshop.foundations import device, results
from workshop.foundations.run_options import RunOptions, add_arguments, from_arguments
from workshop.i18n import _, ngettext


def fail(message: str) -> SystemExit:
    """The one line a command stops with: 'error: MESSAGE' (translated), exit status 1."""
    return SystemExit(_("error: {message}").format(message=message))


@contextlib.contextmanager
def stop_on(*errors: type[BaseException]):
    """Within: one of these errors (a command's expected ones: a missing run, a damaged file, a folder it cannot
    write) stops the command with its message as the one line (fail)."""
    try:
        yield
    except errors as e:
        raise fail(str(e)) from None


class UsageError(SystemExit):
    """A command line that names what is not there (an unknown lab): its one line, 'error: MESSAGE', which main
    prints before it exits with status 2, as argparse's own errors."""


def add_language_option(parser: argparse.ArgumentParser, default=argparse.SUPPRESS) -> None:
    """--lang, on every command that prints or writes what the learner reads, and before the command (`--lang es
    run ...`: a learner may well put it first), where its default is None: a command's own, absent, is left out
    (SUPPRESS), so that it keeps the one given before the command."""
    parser.add_argument(
        "--lang",
        choices=i18n.LANGUAGES,
        default=default,
        help=_(
            "the language of messages, summaries and reports: es (Spanish) or en (English); "
            "default: WORKSHOP_LANG, else the locale (LANG=es_ES.UTF-8 gives Spanish), else English"
        ),
    )


def language_asked(argv: list[str]) -> str | None:
    """The --lang of a command line, read before its parser is built so that its help is in that language."""
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_language_option(early, None)
    return early.parse_known_args(argv)[0].lang


def add_results_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--out",
        default=str(results.DEFAULT_ROOT),
        metavar=_("FOLDER"),
        help=_("results root (default ./results)"),
    )


def arg(*names: str, **settings) -> tuple[tuple[str, ...], dict]:
    """One argument of a command, as argparse's add_argument takes it (a row of cli.main.build_parser's table)."""
    return names, settings


RESULTS_OPTIONS = (add_results_option, add_language_option)  # the commands that read a results root
# the commands that run labs (run, check, grade): RunOptions' options, --out and --lang
RUN_OPTIONS = (add_arguments, *RESULTS_OPTIONS)


def check_lab_names(names: list[str]) -> list[str]:
    """The labs named (default: all); an unknown name stops with the list of labs (UsageError)."""
    known = labs.all_labs()
    unknown = [n for n in names if n not in known]
    if unknown:
        message = ngettext(
            "no lab named {labs}; the labs are: {known}",
            "no labs named {labs}; the labs are: {known}",
            len(unknown),
        ).format(labs=", ".join(unknown), known=", ".join(known))
        raise UsageError(_("error: {message}").format(message=message))
    return names or list(known)


def run_options(args, names: list[str], **others) -> RunOptions:
    """RunOptions from the command line (plus `others`), each checked before anything starts, the device
    resolved (--device auto), and each lab's own precondition asked (LabSpec.precondition)."""
    asked = from_arguments(args, **others)
    if asked.n_procs < 1:
        raise fail(_("--n must be at least 1 (got {n})").format(n=asked.n_procs))
    if asked.time_limit_s is not None and not asked.time_limit_s > 0:
        raise fail(
            _("--time-limit must be a positive number of seconds (got {value})").format(
                value=asked.time_limit_s
            )
        )
    with stop_on(device.DeviceError):
        checked = dataclasses.replace(asked, device=device.resolve(asked.device))
    for name in names:
        if why := labs.get(name).problem(checked):
            raise fail(why)
    # --checkpoint: the learner's MiniGPT loads, or the command stops before anything starts. It costs torch's
    # import, so only when given: the shipped one is loaded (and any fault in it said) by the labs that use it.
    if checked.checkpoint is not None:
        from workshop.minigpt import checkpoint

        with stop_on(checkpoint.CheckpointError):
            checkpoint.load(checked.checkpoint)
    return checked
