"""Probes of the autograd lab: trusted code that runs in the worker, beside the learner's function (contract 6;
workshop/grading/learner_code.py), for what only that process can do. Each returns wire values only.

watched_call (no_autograd.py: the lab's one watcher) is the hand exercises' probe as it stands: it returns the
function's result and what the watch saw."""

from __future__ import annotations

import torch
from torch.autograd.graph import Node

from workshop.labs.autograd.grading.no_autograd import ENGINE_RULES, watched_call
from workshop.labs.autograd.grading.replay_grading import build_graph
from workshop.labs.autograd.graph_walk import walk
from workshop.labs.autograd.hand_grads import tf32


def tf32_call(function, on: bool, *args):
    """function(*args) with TF32 matmuls `on` (a setting of the process that runs it)."""
    with tf32(on):
        return function(*args)


def engine_order_indices(engine_order, hidden, targets, W, b, dtype: str, weight_decay: float):
    """engine_order(root) on the graph built here from the lab's inputs, watched for the engine: (each returned
    entry's position in walk(root), -1 for what is no node of it; what the watch saw)."""
    loss, _leaves = build_graph((hidden, targets, W, b), getattr(torch, dtype), weight_decay)
    position = {node: i for i, node in enumerate(walk(loss.grad_fn))}
    order, seen = watched_call(engine_order, ENGINE_RULES, loss.grad_fn)
    return [position.get(n, -1) if isinstance(n, Node) else -1 for n in order], seen


def backpropagate_leaf_grads(backpropagate, hidden, targets, W, b, dtype: str, weight_decay, order):
    """backpropagate(nodes in `order`, ones) on the graph built here, `order` given as positions in walk(root):
    ({leaf name: the gradient the learner's dict holds for that very leaf, or None}, what the watch saw); the
    returned value's type name instead of the dict when it is not one."""
    loss, leaves = build_graph((hidden, targets, W, b), getattr(torch, dtype), weight_decay)
    nodes = walk(loss.grad_fn)
    with torch.no_grad():  # as the real engine runs without create_graph
        grads, seen = watched_call(
            backpropagate, ENGINE_RULES, [nodes[i] for i in order], torch.ones_like(loss)
        )
    if not isinstance(grads, dict):
        return type(grads).__name__, seen
    # by identity: the keys may be anything, and a tensor's == is elementwise
    found = {
        name: next((g for key, g in grads.items() if key is leaf), None)
        for name, leaf in leaves.items()
    }
    return {name: wire_value(g) for name, g in found.items()}, seen


def wire_value(g):
    """A learner's gradient as it may cross the wire: a tensor without its graph, None, or its type's name."""
    if isinstance(g, torch.Tensor):
        return g.detach()
    return None if g is None else type(g).__name__
