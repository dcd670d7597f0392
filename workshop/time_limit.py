"""A time limit on the learner's code for one exercise: an endless loop ends that exercise, not the lab.

The limit is on CPU time (ITIMER_VIRTUAL, SIGVTALRM): an endless loop burns CPU, and the lab's own wall-clock
limit (SIGALRM, in the runner) stays untouched. Its signal interrupts Python code between two bytecodes, so the
exception rises inside the learner's own frame and its traceback names their file and line. What this cannot
stop (a sleep, native code that never returns to Python) the runner's per-lab limit stops, and
grading_markers names the exercise.
"""

from __future__ import annotations

import contextlib
import signal
import threading

from workshop.i18n import _


class TimeLimitExceeded(BaseException):
    """Raised in the learner's code when its time is up. A BaseException, so that a learner's
    `except Exception:` inside the loop cannot swallow it."""

    def __init__(self, seconds: float):
        super().__init__(_("still running after {seconds:g} s of CPU time").format(seconds=seconds))
        self.seconds = seconds


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise TimeLimitExceeded in the running code after `seconds` of the process's CPU time (None: no
    limit; off the main thread, where Python runs no signal handler: no limit)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum, _frame):
        raise TimeLimitExceeded(seconds)

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, previous)
