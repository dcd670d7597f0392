"""The autograd lab's probes: trusted code that runs in the worker, beside the learner's function (the worker
protocol; workshop/learner/worker.py), for what only that process can do; it returns wire values only.

The lab's other probes sit beside the grading that asks for them: replay_grading's order_indices and
leaf_grads."""

from __future__ import annotations

from workshop.labs.autograd.grading.no_autograd import HAND_RULES, watched_call
from workshop.labs.autograd.hand_grads import tf32


def watched_by_hand(function, *args):
    """function(*args) watched for everything "no autograd" forbids (no_autograd.HAND_RULES): (its result, what
    the watch saw). The hand exercises' call probe (engine.grade's call=)."""
    return watched_call(function, HAND_RULES, *args)


def tf32_call(function, on: bool, *args):
    """function(*args) with TF32 matmuls `on` (a setting of the process that runs it)."""
    with tf32(on):
        return function(*args)
