"""A probe of the autograd lab: trusted code that runs in the worker, beside the learner's function (the worker
protocol; workshop/learner/worker.py), for what only that process can do; it returns wire values only.

The lab's other probes sit beside the grading that asks for them: no_autograd.watched_call (the lab's one
watcher, the hand exercises' probe as it stands) and replay_grading's engine_order_indices and
backpropagate_leaf_grads."""

from __future__ import annotations

from workshop.labs.autograd.hand_grads import tf32


def tf32_call(function, on: bool, *args):
    """function(*args) with TF32 matmuls `on` (a setting of the process that runs it)."""
    with tf32(on):
        return function(*args)
