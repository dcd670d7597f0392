"""foundations.interrupt's time limits: an exercise's limit counts the CPU time of the learner's code and cannot
be swallowed by its `except Exception`; a sleep is the lab's limit's (wall clock), which stops the lab as a signal
does."""

from __future__ import annotations

import contextlib
import signal
import threading
import time

import pytest

from workshop.foundations import interrupt
from workshop.foundations.interrupt import TimeLimitExceeded


def endless_learner_loop():
    """A learner's loop that never ends and catches every Exception it meets."""
    while True:
        with contextlib.suppress(Exception):
            sum(range(1000))


def wall_clock_exercise_limit(seconds):
    """Planted: an exercise limit on the wall clock, which also stops a learner's code that only waits."""
    return interrupt._alarm(
        signal.ITIMER_REAL, signal.SIGALRM, seconds, lambda _: TimeLimitExceeded(seconds)
    )


def sleeps_through(limit) -> bool:
    """Whether 0.3 s asleep (no CPU time) passes under a 0.1 s exercise limit."""
    try:
        with limit(0.1):
            time.sleep(0.3)
    except TimeLimitExceeded:
        return False
    return True


def test_an_endless_loop_is_stopped_in_the_learner_code_despite_its_except_exception():
    start = time.process_time()
    message = "still running after 0.2 s of CPU time"
    with pytest.raises(TimeLimitExceeded, match=message), interrupt.exercise_limit(0.2):
        endless_learner_loop()
    assert time.process_time() - start < 5


def test_an_exercise_limit_counts_cpu_time_not_waiting():
    assert sleeps_through(interrupt.exercise_limit)
    assert not sleeps_through(wall_clock_exercise_limit)  # the check catches a wall-clock limit


def test_the_lab_limit_stops_a_sleep_as_a_signal_does_and_says_why():
    with pytest.raises(interrupt.Stopped) as stopped, interrupt.lab_limit(0.1):
        time.sleep(2)
    assert "ran out of time (limit 0.1 s)" in str(stopped.value)


def test_no_limit_or_another_thread_sets_no_timer():
    with interrupt.exercise_limit(None):
        assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)
    finished = []

    def off_the_main_thread():
        with interrupt.lab_limit(0.01):
            time.sleep(0.05)
        finished.append(True)

    worker = threading.Thread(target=off_the_main_thread)
    worker.start()
    worker.join()
    assert finished == [True]  # Python runs signal handlers in the main thread only: no limit there
    with interrupt.lab_limit(5):
        pass
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the timer is off after the block
