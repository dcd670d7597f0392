"""What a grading block gets instead of an implementation (LabContext.grading): a stand-in that raises on any
use, so that the block's first use of it ends the exercise. What it raises says why:

- the learner's solution could not be loaded (the file will not import, lacks the name, killed an earlier
  attempt): any use raises that reason, which the block records as the exercise's failure;
- this run does not grade the exercise (`check LAB EXERCISE`): any use raises SkipGrading, and the block
  records nothing.
Code that inspects an implementation before using it (isinstance(answers, dict)) calls `real` first.
"""

from __future__ import annotations


class SkipGrading(BaseException):
    """Ends the grading block of an exercise this run does not grade: nothing is recorded for it."""


class StandIn:
    """Any use (a call, an item, iteration, len(), a path, an attribute) raises `error`."""

    def __init__(self, error: BaseException):
        self.error = error

    def _used(self, *args, **kwargs):
        raise self.error

    # every way a grading block uses an implementation is one use
    __call__ = __getitem__ = __iter__ = __len__ = __fspath__ = __getattr__ = _used


def real(impl):
    """impl itself; for a stand-in, what it stands for is raised."""
    if isinstance(impl, StandIn):
        raise impl.error
    return impl
