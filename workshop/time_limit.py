"""A time limit on the learner's code for one exercise: an endless loop ends that exercise, not the lab.

SIGALRM interrupts Python code between two bytecodes, so the exception rises inside the learner's own frame
and its traceback names their file and line. Native code that never returns to Python (a kernel that hangs)
is beyond it: the runner's per-lab limit stops the whole process then (grading_markers names the exercise).
"""

from __future__ import annotations

import contextlib
import signal
import threading


class TimeLimitExceeded(BaseException):
    """Raised in the learner's code when its time is up. A BaseException, so that a learner's
    `except Exception:` inside the loop cannot swallow it."""

    def __init__(self, seconds: float):
        super().__init__(f"still running after {seconds:g} s")
        self.seconds = seconds


@contextlib.contextmanager
def time_limit(seconds: float | None):
    """Raise TimeLimitExceeded in the running code after `seconds` (None: no limit; off the main thread,
    where signals cannot be delivered: no limit)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(_signum, _frame):
        raise TimeLimitExceeded(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
