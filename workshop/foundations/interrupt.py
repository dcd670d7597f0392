"""Signals that stop a run: SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed) and, in a lab's process, its
time limit (SIGALRM: lab_limit, below). Each raises `Stopped` in the main thread, so that every `finally`
runs: the lab's process tree is stopped, its temporary folders removed, and the run's manifest says what
happened.

`Stopped` is a BaseException, like KeyboardInterrupt: a lab's `except Exception` does not swallow it.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from workshop.i18n import _

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    def __init__(self, signum: int, why: str):
        super().__init__(why)
        self.signum = signum
        self.why = why

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


def describe(signum: int) -> str:
    said = {
        signal.SIGINT: _("interrupted (SIGINT, Ctrl-C)"),
        signal.SIGHUP: _("stopped: its terminal closed (SIGHUP)"),
    }
    return said.get(signum) or _("stopped by {signal}").format(signal=signal.Signals(signum).name)


def _raise(signum, _frame):
    raise Stopped(signum, describe(signum))


@contextlib.contextmanager
def handling(handlers: dict):
    """Within: these signal handlers; the previous ones afterwards."""
    previous = {s: signal.signal(s, handler) for s, handler in handlers.items()}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def raising_on_signals():
    """Within: a stop signal raises Stopped. A SIGINT ignored by whoever started us stays ignored (the shell
    does that for a background job, which Ctrl-C must not reach)."""
    return handling({s: _raise for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN})


def quiet_until_handled() -> None:
    """A lab's process, from its start: a Ctrl-C that the run passes on (harness.runner.stop) before the lab's
    code runs, or after, ends it quietly as SIGTERM would, not with a KeyboardInterrupt's traceback; within
    raising_on_signals it raises Stopped."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignoring_signals():
    """Within: stop signals are ignored, so that a second Ctrl-C cannot cut short the clean-up of the first.
    The clean-up is bounded (proctree.stop_tree's grace period), so nothing waits for long."""
    return handling(dict.fromkeys(STOP_SIGNALS, signal.SIG_IGN))


# Time limits: a whole lab's, on the wall clock, and one exercise's, on the CPU time of the learner's code.
#
# - `lab_limit(seconds)`, in a lab's process (harness.child): after `seconds` of wall-clock time (ITIMER_REAL,
#   SIGALRM) it raises interrupt.Stopped, "ran out of time (limit 120 s)", and the lab stops as if signalled. What it
#   cannot stop (native code that never returns to Python) the parent's backstop kills (harness.runner).
# - `exercise_limit(seconds)`, around one exercise's grading (LabContext.grading): after `seconds` of the
#   process's CPU time (ITIMER_VIRTUAL, SIGVTALRM) it raises TimeLimitExceeded. An endless loop burns CPU, and the
#   lab's wall-clock limit stays untouched. The signal interrupts Python code between two bytecodes, so the
#   exception rises inside the learner's own frame and its traceback names their file and line; a sleep, or native
#   code that never returns, is left to the lab's limit, and harness.runner's post-mortem names the exercise.
#
# Python runs signal handlers in the main thread only: off it, neither limit applies.


class TimeLimitExceeded(BaseException):
    """Raised in the learner's code when its time is up. A BaseException, so that a learner's
    `except Exception:` inside the loop cannot swallow it."""

    def __init__(self, seconds: float):
        super().__init__(_("still running after {seconds:g} s of CPU time").format(seconds=seconds))
        self.seconds = seconds


def ran_out_of_time(seconds: float) -> str:
    return _("ran out of time (limit {seconds:g} s)").format(seconds=seconds)


@contextlib.contextmanager
def _alarm(timer: int, signum: int, seconds: float | None, raised):
    """Within: after `seconds` on `timer` (None or 0: never), raise raised(signum) in the running code. Yields a
    list that holds the signal once the time has run out: the exception can rise inside a library that turns it
    into another one (an import cut short leaves a half-made module behind), and the time ran out all the same."""
    fired: list[int] = []
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield fired
        return

    def expire(signum, _frame):
        fired.append(signum)
        raise raised(signum)

    with handling({signum: expire}):
        signal.setitimer(timer, seconds)
        try:
            yield fired
        finally:
            signal.setitimer(timer, 0)


def lab_limit(seconds: float | None):
    """Within: after `seconds` of wall-clock time, raise interrupt.Stopped saying that the time ran out."""
    return _alarm(
        signal.ITIMER_REAL,
        signal.SIGALRM,
        seconds,
        lambda signum: Stopped(signum, ran_out_of_time(seconds)),
    )


def exercise_limit(seconds: float | None):
    """Within: after `seconds` of the process's CPU time, raise TimeLimitExceeded in the running code."""
    return _alarm(
        signal.ITIMER_VIRTUAL, signal.SIGVTALRM, seconds, lambda _: TimeLimitExceeded(seconds)
    )
