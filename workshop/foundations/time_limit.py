"""Time limits: a whole lab's, on the wall clock, and one exercise's, on the CPU time of the learner's code.

- `lab_limit(seconds)`, in a lab's process (harness.child): after `seconds` of wall-clock time (ITIMER_REAL,
  SIGALRM) it raises interrupt.Stopped, "ran out of time (limit 120 s)", and the lab stops as if signalled. What it
  cannot stop (native code that never returns to Python) the parent's backstop kills (harness.runner).
- `exercise_limit(seconds)`, around one exercise's grading (LabContext.grading): after `seconds` of the
  process's CPU time (ITIMER_VIRTUAL, SIGVTALRM) it raises TimeLimitExceeded. An endless loop burns CPU, and the
  lab's wall-clock limit stays untouched. The signal interrupts Python code between two bytecodes, so the
  exception rises inside the learner's own frame and its traceback names their file and line; a sleep, or native
  code that never returns, is left to the lab's limit, and harness.runner's post-mortem names the exercise.

Python runs signal handlers in the main thread only: off it, neither limit applies.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from workshop.foundations import interrupt
from workshop.i18n import _


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

    with interrupt.handling({signum: expire}):
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
        lambda signum: interrupt.Stopped(signum, ran_out_of_time(seconds)),
    )


def exercise_limit(seconds: float | None):
    """Within: after `seconds` of the process's CPU time, raise TimeLimitExceeded in the running code."""
    return _alarm(
        signal.ITIMER_VIRTUAL, signal.SIGVTALRM, seconds, lambda _: TimeLimitExceeded(seconds)
    )
