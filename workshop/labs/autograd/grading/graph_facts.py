"""Facts of this run's graphs that the handout asks about: the truths the learner's ANSWERS are graded against
(engine.grade_answers; the questions are declared in exercises.py).

Each fact is measured from the graphs the lab built (not copied from the handout): a count of nodes, which node
saved its own output, the shape a node's backward really returns, the order leaves got their gradients.
"""

from __future__ import annotations

import torch

from workshop.labs.autograd.grading.replay_grading import DECAY, HEAD, GraphCase
from workshop.labs.autograd.graph_walk import saved_values, walk

# The instructor's ANSWERS for the standard batch: the reference of the checked questions' exercise.
ANSWERS = {
    "graph_nodes": 10,
    "saves_result": "LogSoftmaxBackward0",
    "t_saved_tensors": 0,
    "addmm_bias_grad_shape": [176, 600],
    "first_leaf": "b",
    "w_fan_in": 2,
    "db_sum": 0.0,
}


def measure_facts(cases: list[GraphCase]) -> dict:
    """The facts ANSWERS states, by its keys, measured from this run's graphs."""
    head = next(c for c in cases if c.graph == HEAD and c.dtype == torch.float32)
    head64 = next(c for c in cases if c.graph == HEAD and c.dtype == torch.float64)
    decayed = next(c for c in cases if c.graph == DECAY)
    nodes = walk(head.root)
    by_name = {type(n).__name__: n for n in nodes}
    addmm = by_name["AddmmBackward0"]
    # the gradient AddmmBackward0 takes: its output's shape and dtype
    meta = addmm._input_metadata[0]
    bias_grad = addmm(torch.ones(meta.shape, dtype=meta.dtype, device=head.loss.device))[0]
    leaves_first = [head.node_name(n) for n in head.real_order if hasattr(n, "variable")]
    fan_in = [
        nxt
        for node in walk(decayed.root)
        for nxt, _nr in node.next_functions
        if nxt is not None and decayed.node_name(nxt) == "AccumulateGrad(W)"
    ]
    return {
        "graph_nodes": len(nodes),  # nodes in the LM head's graph, AccumulateGrad included
        # the node of that graph that saved its own output
        "saves_result": ", ".join(type(n).__name__ for n in nodes if "result" in saved_values(n)),
        "t_saved_tensors": sum(  # tensors TBackward0 saved
            s["kind"] == "tensor" for s in saved_values(by_name["TBackward0"]).values()
        ),
        # what AddmmBackward0 returns for b, before the engine sums it
        "addmm_bias_grad_shape": list(bias_grad.shape),
        # the leaf whose AccumulateGrad the engine ran first
        "first_leaf": leaves_first[0].removeprefix("AccumulateGrad(").removesuffix(")"),
        "w_fan_in": len(
            fan_in
        ),  # gradients summed into W's AccumulateGrad in the weight-decay graph
        "db_sum": float(head64.expected["b"].sum()),  # sum over the 600 classes of dL/db (float64)
    }
