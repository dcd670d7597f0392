"""Probes of the autograd lab: trusted code that runs in the worker, beside the learner's function (contract 6;
workshop/grading/solution.py), for what only that process can do. Each returns wire values only."""

from __future__ import annotations

from workshop.labs.autograd.hand_grads import tf32


def tf32_call(function, on: bool, *args):
    """function(*args) with TF32 matmuls `on` (a setting of the process that runs it)."""
    with tf32(on):
        return function(*args)
