"""A backward engine small enough to read: topological order, one call per node, sums at fan-in, leaf grads.

The real engine (torch/csrc/autograd/engine.cpp) does the same in C++: it counts how many edges point at each
node, keeps a ready queue of nodes whose count reached zero, and always runs the ready node with the highest
sequence number (the op made last in the forward runs first in the backward; AccumulateGrad has the largest
one, so a leaf takes its gradient as soon as it is complete). Each node's incoming gradients are summed in an
input buffer before it runs. This engine follows that rule, so on one device it runs the nodes in the same order.

Its two halves, engine_order and backpropagate, are the instructor's solutions of two of the lab's exercises.

The real engine's own order is recorded two ways: pre-hooks on every node (record_engine_order), and the
autograd profiler (profile_backward: one .backward() written as a Chrome trace, open it in Perfetto). The engine
wraps every node it runs in a profiler range named "autograd::engine::evaluate_function: <Node>", with the aten
ops of that node's backward formula nested inside. That is a third witness of the order the engine ran the nodes
(after our pre-hooks and our own engine), in the tool practitioners use to read a backward pass.
torch.autograd.profiler is used rather than torch.profiler.profile: same Kineto trace, without the ~5 s that
torch.profiler spends importing Inductor on its first use.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter
from pathlib import Path

import torch
from torch.autograd.graph import Node

from workshop.labs.autograd.graph_walk import num_inputs, walk


def dependencies(root: Node) -> Counter:
    """node -> how many edges point at it: how many gradients it waits for before it may run."""
    deps = Counter()
    for node in walk(root):
        deps.update(nxt for nxt, _ in node.next_functions if nxt is not None)
    return deps


def engine_order(root: Node) -> list[Node]:
    """Kahn's algorithm; among the ready nodes the highest sequence number first, as the real engine does."""
    waiting = dependencies(root)
    # the heap's tie-break among equal sequence numbers (AccumulateGrads): the real engine's priority queue keeps
    # no arrival order there; the graded graphs never hold two AccumulateGrads ready at once
    tie = itertools.count()
    ready = [(-root._sequence_nr(), next(tie), root)]
    order = []
    while ready:
        node = heapq.heappop(ready)[2]
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (-nxt._sequence_nr(), next(tie), nxt))
    return order


def is_topological(order: list[Node], root: Node) -> bool:
    """True when order holds every node of the graph once and each one after every node that feeds it."""
    position = {node: i for i, node in enumerate(order)}
    nodes = walk(root)
    if len(order) != len(nodes) or set(position) != set(nodes):
        return False
    return all(
        position[node] < position[nxt]
        for node in nodes
        for nxt, _ in node.next_functions
        if nxt is not None
    )


def backpropagate(order: list[Node], grad_output: torch.Tensor) -> dict[torch.Tensor, torch.Tensor]:
    """Run every node of `order` (order[0] is the root, given grad_output) once; return leaf -> gradient.

    Each node gets one slot per input (num_inputs); a gradient arriving where one already waits is added to it
    (fan-in: the tensor was used more than once in the forward). An AccumulateGrad node hands its summed
    gradient to its leaf (node.variable).
    """
    buffers: dict[Node, list] = {order[0]: [grad_output]}  # node -> one gradient slot per input
    leaf_grads = {}
    for node in order:
        grads = buffers.pop(node)
        if hasattr(node, "variable"):  # AccumulateGrad: this gradient is the leaf's
            leaf_grads[node.variable] = grads[0]
            continue
        outs = node(*grads)  # the backward formula itself, in C++
        outs = (outs,) if isinstance(outs, torch.Tensor) else outs
        for (nxt, input_nr), g in zip(node.next_functions, outs, strict=True):
            if nxt is None or g is None:
                continue
            g = fit_to_input(g, nxt, input_nr)
            slots = buffers.setdefault(nxt, [None] * num_inputs(nxt))
            slots[input_nr] = g if slots[input_nr] is None else slots[input_nr] + g
    return leaf_grads


def fit_to_input(grad: torch.Tensor, node: Node, input_nr: int) -> torch.Tensor:
    """What the engine's validate_outputs does to every gradient before it reaches the next node.

    A node returns the gradient in the shape its forward op saw; where the forward broadcast an input (the bias
    b (V,) added to every row of (M, V) in addmm), the engine sums the gradient back to the input's shape.
    """
    meta = node._input_metadata[input_nr]
    if grad.shape != meta.shape:
        grad = grad.sum_to_size(meta.shape)  # at::sum_to, as the engine calls it
    if grad.dtype != meta.dtype:
        grad = grad.to(meta.dtype)
    return grad


def record_engine_order(output: torch.Tensor, retain_graph: bool = False) -> list[Node]:
    """Run the real output.backward() with a pre-hook on every node; returns the nodes in the order they ran.

    retain_graph=True keeps the saved tensors, so that the same graph can be replayed afterwards."""
    ran = []
    handles = [
        node.register_prehook(lambda grads, node=node: ran.append(node))
        for node in walk(output.grad_fn)
    ]
    try:
        output.backward(retain_graph=retain_graph)
    finally:
        for handle in handles:
            handle.remove()
    return ran


PREFIX = "autograd::engine::evaluate_function: "


def profile_backward(loss: torch.Tensor, trace: Path, device: str) -> list[str]:
    """Run loss.backward() under the profiler, write its Chrome trace to `trace`; the nodes' names in the order
    the engine evaluated them (AccumulateGrad without its C++ namespace)."""
    with torch.autograd.profiler.profile(use_device="cuda" if device == "cuda" else None) as prof:
        loss.backward()
    prof.export_chrome_trace(str(trace))
    ranges = sorted(
        (e for e in prof.function_events if e.name.startswith(PREFIX)),
        key=lambda e: e.time_range.start,
    )
    return [e.name.removeprefix(PREFIX).rsplit("::", 1)[-1] for e in ranges]
