"""Signals that stop a run: SIGINT (Ctrl-C), SIGTERM, SIGHUP (the terminal closed) and, in a lab's process, its
time limit (SIGALRM: time_limit.lab_limit). Each raises `Stopped` in the main thread, so that every `finally`
runs: the lab's process tree is stopped, its temporary folders removed, and the run's manifest says what
happened.

`Stopped` is a BaseException, like KeyboardInterrupt: a lab's `except Exception` does not swallow it.
"""

from __future__ import annotations

import contextlib
import signal

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
    """A lab's process, from its start: a Ctrl-C that the run passes on (runner.LabProcess.stop) before the lab's
    code runs, or after, ends it quietly as SIGTERM would, not with a KeyboardInterrupt's traceback; within
    raising_on_signals it raises Stopped."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignoring_signals():
    """Within: stop signals are ignored, so that a second Ctrl-C cannot cut short the clean-up of the first.
    The clean-up is bounded (proctree.stop_tree's grace period), so nothing waits for long."""
    return handling(dict.fromkeys(STOP_SIGNALS, signal.SIG_IGN))
