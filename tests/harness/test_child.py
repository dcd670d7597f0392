"""harness.child, a lab's own process: the lab's error becomes a failed check with the checks so far kept; its
time limit stops it with a check saying why; a lab whose module this platform lacks is one line saying where it
runs; result.json is written whatever happened, and the exit status says which (0, 1, 128 + signal)."""

from __future__ import annotations

import json
import os
import signal
import time
import traceback

import pytest

from workshop import labs
from workshop.foundations import interrupt
from workshop.foundations.run_options import RunOptions
from workshop.harness import child
from workshop.lab_api import LabContext, LabSpec


def measures_then_fails(ctx):
    ctx.check_max("error", 1e-7, 1e-5)
    raise ZeroDivisionError("the lab's own bug")


def passes(ctx):
    ctx.check_equal("value", 2, 2)


def sleeps(ctx):
    ctx.check_equal("value", 2, 2)
    time.sleep(5)


def sleeps_in_an_import_that_swallows_the_stop(ctx):
    """A library's import that the time limit cuts short and that turns the stop into an error of its own (numpy
    half made: "module 'numpy' has no attribute 'matrix'")."""
    try:
        time.sleep(5)
    except BaseException as cut_short:
        raise AttributeError("module 'numpy' has no attribute 'matrix'") from cut_short


@pytest.fixture
def toy(monkeypatch):
    """The toy lab with entry `entry` (a function of this module), needing `needs`."""

    def use(entry, needs: tuple[str, ...] = ()):
        spec = LabSpec("toy", 1, "a toy", entry, needs=needs, time_limit_s=0.3)
        monkeypatch.setattr(labs, "get", lambda lab: spec)
        monkeypatch.setattr(labs, "exercises", lambda lab: [])
        return spec

    return use


def ran(tmp_path) -> tuple[int, dict]:
    RunOptions("cpu", lang="en").write(tmp_path)
    code = child.main(tmp_path, "toy")
    return code, json.loads((tmp_path / "result.json").read_text())


def test_a_lab_that_passes_exits_0(tmp_path, toy):
    toy(passes)
    code, result = ran(tmp_path)
    assert code == 0 and result["passed"] and result["implementation"] == {"kind": "reference"}


def test_the_labs_error_is_a_failed_check_after_the_checks_so_far(tmp_path, toy, capfd):
    toy(measures_then_fails)
    code, result = ran(tmp_path)
    names = [(c["name"], c["passed"]) for c in result["checks"]]
    assert code == 1 and names == [("error", True), ("lab ran to completion", False)]
    assert result["checks"][1]["value"] == "ZeroDivisionError: the lab's own bug"
    assert "Traceback" in capfd.readouterr().err


def test_the_time_limit_stops_the_lab_and_says_so(tmp_path, toy):
    toy(sleeps)
    start = time.monotonic()
    code, result = ran(tmp_path)
    assert time.monotonic() - start < 4 and code == 128 + 14  # SIGALRM
    assert result["checks"][-1]["value"] == "ran out of time (limit 0.3 s)" and not result["passed"]


def test_the_time_limit_cut_short_inside_a_library_still_says_it_ran_out_of_time(tmp_path, toy):
    toy(sleeps_in_an_import_that_swallows_the_stop)
    code, result = ran(tmp_path)
    assert code == 128 + 14  # SIGALRM
    assert result["checks"][-1]["value"] == "ran out of time (limit 0.3 s)" and not result["passed"]


def test_a_missing_module_is_one_line_pointing_to_docker(tmp_path, toy):
    toy(passes, needs=("no_such_module_here",))
    ctx = LabContext("toy", tmp_path, RunOptions("cpu"))
    assert child.run_lab_code(ctx, None) is None
    assert ctx.summary.startswith("toy cannot run here: it needs no_such_module_here")
    assert "docker compose run --rm workshop-cpu" in ctx.summary and not ctx.passed


# The parent's death (its PDEATHSIG, a SIGTERM) can come at any moment of the lab's process. Outside the lab's
# code a signal would end the process before its record is written; in these tests the caller's handlers raise, as
# a planted "the process ended here" that fails the test where the old child let a signal through.


def test_a_signal_while_the_labs_error_is_recorded_stops_the_lab_and_says_so(
    tmp_path, toy, monkeypatch
):
    """The parent's death breaks the lab's stdout (an error) a moment before its SIGTERM arrives."""
    toy(measures_then_fails)
    format_exc = traceback.format_exc

    def signalled():
        os.kill(os.getpid(), signal.SIGTERM)
        return format_exc()

    monkeypatch.setattr(traceback, "format_exc", signalled)
    with interrupt.raising_on_signals():
        code, result = ran(tmp_path)
    assert code == 128 + signal.SIGTERM
    assert [c["value"] for c in result["checks"]][1:] == ["stopped by SIGTERM"]


def test_a_signal_after_the_labs_code_waits_for_the_record(tmp_path, toy, monkeypatch):
    """The parent dies while the lab's process stops the learner's worker: the result is written all the same."""
    toy(passes)
    monkeypatch.setattr(LabContext, "stop_worker", lambda ctx: os.kill(os.getpid(), signal.SIGTERM))
    with interrupt.raising_on_signals():
        code, result = ran(tmp_path)
    assert code == 0 and result["passed"]
