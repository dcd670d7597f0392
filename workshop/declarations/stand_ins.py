"""What a grading block gets instead of an implementation (LabContext.grading): a stand-in that raises on any
use, so that the block's first use of it ends the exercise.

- Unavailable: the learner's solution could not be loaded (the file will not import, lacks the name, killed an
  earlier attempt); any use raises that reason, which the block records as the exercise's failure.
- Skipped: this run does not grade the exercise (`check LAB EXERCISE`); any use raises SkipGrading, and the
  block records nothing.
Code that inspects an implementation before using it (isinstance(answers, dict)) calls `real` first.
"""

from __future__ import annotations


class SkipGrading(BaseException):
    """Ends the grading block of an exercise this run does not grade: nothing is recorded for it."""


class StandIn:
    """Any use (a call, an item, iteration, len(), a path, an attribute) raises what `_raise` raises."""

    def _raise(self):
        raise NotImplementedError

    def _used(self, *args, **kwargs):
        self._raise()

    # every way a grading block uses an implementation is one use
    __call__ = __getitem__ = __iter__ = __len__ = __fspath__ = __getattr__ = _used


class Unavailable(StandIn):
    """Stands for a learner's solution that could not be loaded: any use raises the reason."""

    def __init__(self, error: Exception):
        self.error = error

    def _raise(self):
        raise self.error


class Skipped(StandIn):
    """Stands for the implementation of an exercise this run does not grade: any use ends its block."""

    def _raise(self):
        raise SkipGrading


def real(impl):
    """impl itself; for a stand-in, what it stands for is raised."""
    if isinstance(impl, StandIn):
        impl._raise()
    return impl
