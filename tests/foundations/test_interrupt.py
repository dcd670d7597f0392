"""foundations.interrupt: a stop signal raises Stopped (a BaseException: a lab's `except Exception` cannot swallow
it), with the shell's exit code and one line saying what stopped the run; the previous handlers come back
after the block; a SIGINT ignored by whoever started us stays ignored; clean-up ignores a second signal; a
Ctrl-C passed on to a lab's process before its code runs ends it quietly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from workshop.foundations import interrupt
from workshop.foundations.interrupt import Stopped


def swallowed_by_a_labs_except(stop) -> bool:
    try:
        try:
            stop()
        except Exception:
            return True
    except BaseException:
        return False
    return False


class PlantedStopped(Exception):
    """Planted: a Stopped that a lab's `except Exception` swallows."""


def test_a_signal_raises_stopped_with_the_shells_exit_code_and_why():
    with pytest.raises(Stopped) as stopped, interrupt.raising_on_signals():
        os.kill(os.getpid(), signal.SIGTERM)
    assert stopped.value.exit_code == 143 and stopped.value.why == "stopped by SIGTERM"
    assert interrupt.describe(signal.SIGINT) == "interrupted (SIGINT, Ctrl-C)"
    assert interrupt.describe(signal.SIGHUP) == "stopped: its terminal closed (SIGHUP)"


def test_a_labs_except_exception_does_not_swallow_it():
    def stop():
        raise Stopped(signal.SIGINT, "interrupted")

    def planted():
        raise PlantedStopped

    assert not swallowed_by_a_labs_except(stop)
    assert swallowed_by_a_labs_except(planted)  # the check catches an Exception subclass


def test_the_previous_handlers_come_back_and_an_ignored_sigint_stays_ignored():
    before = signal.getsignal(signal.SIGTERM)
    previous_int = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell's background job
    try:
        with interrupt.raising_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not before
        assert signal.getsignal(signal.SIGTERM) is before
    finally:
        signal.signal(signal.SIGINT, previous_int)


def test_clean_up_ignores_a_second_signal():
    with interrupt.raising_on_signals(), interrupt.ignoring_signals():
        os.kill(os.getpid(), signal.SIGTERM)  # nothing raised: the clean-up goes on


@pytest.mark.parametrize("quiet", [True, False], ids=["quiet", "planted-without"])
def test_a_passed_on_ctrl_c_before_the_labs_code_ends_the_process_quietly(quiet):
    """The run passes a Ctrl-C on to the lab's process: before its code runs, it ends that process as SIGTERM
    would, not with a KeyboardInterrupt's traceback on the learner's screen (planted: without it)."""
    code = (
        "import os, signal, time\n"
        "from workshop.foundations import interrupt\n"
        f"{'interrupt.quiet_until_handled()' if quiet else 'pass'}\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(5)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGINT
    assert ("KeyboardInterrupt" in out.stderr) is not quiet, out.stderr
