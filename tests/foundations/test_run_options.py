"""foundations.run_options: the run options declared once. What a run writes (options.json), `run --resume` and a lab's
process read back unchanged, every field; the command line's options are derived from the same fields."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from workshop.foundations import run_options
from workshop.foundations.run_options import RunOptions

GIVEN = RunOptions(
    "cpu",
    n_procs=4,
    seed=7,
    checkpoint=Path("/tmp/mine.pt"),
    time_limit_s=30.0,
    work=Path("/tmp/my-work"),
    lang="es",
    only=("autograd.linear_grads",),
    show=True,
    against={"compile": "/tmp/run/compile"},
)


def from_json_dropping_paths(data: dict) -> RunOptions:
    """Planted: reads options.json back with the paths left as strings and only as a list."""
    return RunOptions(**data)


def test_every_option_survives_the_runs_file(tmp_path):
    GIVEN.write(tmp_path)
    assert RunOptions.read(tmp_path) == GIVEN
    assert json.loads((tmp_path / run_options.FILE).read_text())["work"] == "/tmp/my-work"


def test_the_check_catches_a_reader_that_keeps_json_types(tmp_path):
    GIVEN.write(tmp_path)
    data = json.loads((tmp_path / run_options.FILE).read_text())
    assert from_json_dropping_paths(data) != GIVEN


def test_a_labs_options_carry_the_exercises_to_skip(tmp_path):
    given = dataclasses.replace(GIVEN, skip={"autograd.replay": "killed by SIGSEGV"})
    given.write(tmp_path)
    assert RunOptions.read(tmp_path) == given


def test_the_command_line_is_derived_from_the_fields():
    parser = argparse.ArgumentParser()
    run_options.add_arguments(parser)
    args = parser.parse_args(["--n", "3", "--seed", "5", "--time-limit", "9"])
    asked = run_options.from_arguments(args, lang="en")
    flags = {f.metadata["flag"] for f in run_options.command_line_fields()}
    assert {"--device", "--n", "--seed", "--checkpoint", "--time-limit"} <= flags
    assert (asked.device, asked.n_procs, asked.seed, asked.time_limit_s) == ("auto", 3, 5, 9.0)
    assert (
        dataclasses.replace(asked, device="cpu").work is None
    )  # not an option: check's --work, grade's PATH
