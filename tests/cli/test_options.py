"""cli.options: the options every command shares, each bad value stopped before anything starts with one line
("error: ..."): an unknown lab (with the list of labs), --n below 1, a time limit that is not positive, a device
this machine lacks; --lang read wherever the learner puts it (before the command: cli.main.build_parser's)."""

from __future__ import annotations

import argparse

import pytest

from workshop.cli import options
from workshop.cli.main import build_parser
from workshop.labs import all_labs


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    for add in options.RUN_OPTIONS:
        add(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--n", "0"], "--n must be at least 1 (got 0)"),
        (["--time-limit", "0"], "--time-limit must be a positive number of seconds (got 0"),
        (["--time-limit", "nan"], "--time-limit must be a positive number of seconds (got nan"),
        (["--device", "cuda"], "use --device cpu"),
    ],
)
def test_a_bad_run_option_is_one_line_before_anything_starts(monkeypatch, argv, says):
    monkeypatch.setattr(options.device, "cuda_available", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        options.run_options(parsed(*argv), [])
    assert str(stopped.value).startswith("error: ") and says in str(stopped.value)
    assert "\n" not in str(stopped.value)


def test_good_options_come_back_with_the_device_resolved(monkeypatch):
    monkeypatch.setattr(options.device, "cuda_available", lambda: False)
    asked = options.run_options(parsed("--n", "3", "--time-limit", "60"), ["minigpt"])
    assert (asked.device, asked.n_procs, asked.time_limit_s) == ("cpu", 3, 60)


def test_an_unknown_lab_is_named_with_the_labs_there_are():
    assert options.check_lab_names([]) == list(all_labs())
    with pytest.raises(SystemExit, match="no lab named autgrad; the labs are: minigpt, "):
        options.check_lab_names(["autgrad"])


@pytest.mark.parametrize(
    "argv, labs",
    [
        (["--lang", "es", "run", "minigpt"], ["minigpt"]),
        (["--lang=es", "check", "autograd"], ["autograd"]),
        (["--lang", "es", "run", "--", "x"], ["x"]),
        (["run", "--lang", "es"], []),
    ],
)
def test_lang_first_is_read_as_the_commands_option(argv, labs):
    args = build_parser().parse_args(argv)
    assert (args.lang, args.labs) == ("es", labs)
    assert options.language_asked(argv) == "es"


def test_a_command_without_lang_leaves_it_unset():
    assert build_parser().parse_args(["report"]).lang is None
