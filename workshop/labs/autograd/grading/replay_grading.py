"""The graphs the hand-made engine is checked on, and the cases the exercise engine grades its two halves on (its
order: order_cases; the sums at fan-in: replay_cases). How each is compared and what its mistakes show is
declared in replay_diagnosis.py. The facts of these graphs that the handout's questions ask about
(measure_facts) are at the end.

Two graphs, in float32 and float64: the LM head under lm_loss, and the same plus weight decay (lambda/2)||W||^2.
The second has fan-in: W is used twice in the forward, so two gradients reach W's AccumulateGrad and must be
summed; an engine that overwrites instead passes the first graph and fails this one. Each graph is run once by
the real engine (.backward(), pre-hooks recording its order, the graph retained) before any replay.

Nodes cannot cross the wire: the learner's engine runs in the worker on the same graph rebuilt there, by this
module's probes (order_indices, leaf_grads: the engine's call=), and the verdicts are made in the lab's process.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.autograd.graph import Node

from workshop.engine import Case, Graded
from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaf_tensors
from workshop.labs.autograd.grading.hand_cases import DTYPES, dtype_name
from workshop.labs.autograd.grading.no_autograd import ENGINE_RULES, watched_call
from workshop.labs.autograd.grading.replay_diagnosis import node_name
from workshop.labs.autograd.graph_walk import saved_values, walk
from workshop.labs.autograd.replay import is_topological, record_engine_order
from workshop.minigpt.model import lm_loss

# The penalty's gradient lambda * W peaks at 0.038 against dL/dW's 0.108: either half alone is far off the sum.
WEIGHT_DECAY = 0.1
# The graphs' names: identifiers in result.json, translated where the learner reads them.
HEAD, DECAY = N_("LM head"), N_("LM head + weight decay")


def head_loss(
    t: dict[str, torch.Tensor], targets: torch.Tensor, weight_decay: float
) -> torch.Tensor:
    loss = lm_loss(F.linear(t["x"], t["W"], t["b"]), targets)
    return loss + (weight_decay / 2) * t["W"].pow(2).sum() if weight_decay else loss


def build_graph(inputs: tuple, dtype: torch.dtype, weight_decay: float):
    """The loss (its graph recorded) and its leaves x, W, b, from (hidden, targets, W, b): the same graph
    wherever it is built, node for node in walk() order (the lab's process, or a worker's probe)."""
    hidden, targets, W, b = inputs
    t = leaf_tensors(hidden, W, b, dtype)
    return head_loss(t, targets, weight_decay), t


def graph_cases(batch: HeadBatch) -> list[dict]:
    inputs = (batch.hidden, batch.targets, batch.head.weight.detach(), batch.head.bias.detach())
    cases = []
    for dtype in DTYPES:
        for graph, decay in ((HEAD, 0.0), (DECAY, WEIGHT_DECAY)):
            loss, t = build_graph(inputs, dtype, decay)
            real = record_engine_order(loss, retain_graph=True)
            expected = {name: leaf.grad for name, leaf in t.items()}
            for leaf in t.values():
                leaf.grad = None
            cases.append(
                {
                    "graph": graph,  # HEAD or DECAY
                    "dtype": dtype,
                    "label": f"{graph}, {dtype_name(dtype)}",  # 'LM head, float32': the case in result.json
                    "shown": f"{_(graph)}, {dtype_name(dtype)}",  # the label in the learner's language
                    "loss": loss,  # () its graph retained, ready to be replayed
                    "root": loss.grad_fn,
                    "leaves": t,  # "x", "W", "b"
                    "real_order": real,  # the nodes in the order .backward() ran them
                    # walk(root): every node once, root first; an order crosses the wire as positions in it
                    "nodes": walk(loss.grad_fn),
                    "expected": expected,  # .backward()'s leaf gradients
                    # what a worker rebuilds the same graph from (order_indices, leaf_grads):
                    # (hidden, targets, W, b), the weight decay
                    "inputs": inputs,
                    "weight_decay": decay,
                    "parts": {},  # leaf -> {source: its gradient}
                }
            )
        head, decayed = cases[-2:]
        decayed["parts"]["W"] = {
            N_("the LM head's (through TBackward0)"): head["expected"]["W"],
            N_("the weight decay's (through PowBackward0)"): WEIGHT_DECAY
            * decayed["leaves"]["W"].detach(),
        }
    return cases


def check_graphs(ctx: LabContext, cases: list[dict], w_fan_in: int) -> None:
    """What the lab claims of the real engine: its order is topological, and W's fan-in in the second graph
    (measure_facts' w_fan_in)."""
    for case in cases:
        ctx.check_equal(
            _("the real engine ran the nodes in a topological order ({label})").format(
                label=case["shown"]
            ),
            is_topological(case["real_order"], case["root"]),
            True,
        )
    ctx.check_equal(_("weight decay adds fan-in: edges into AccumulateGrad(W)"), w_fan_in, 2)


def order_indices(order_of, hidden, targets, W, b, dtype: str, weight_decay: float):
    """order_of(root) (the learner's engine order) on the graph built here from the lab's inputs, watched for
    the engine: (each returned entry's position in walk(root), -1 for what is no node of it; what the watch
    saw)."""
    loss, _leaves = build_graph((hidden, targets, W, b), getattr(torch, dtype), weight_decay)
    position = {node: i for i, node in enumerate(walk(loss.grad_fn))}
    order, seen = watched_call(order_of, loss.grad_fn, rules=ENGINE_RULES)
    indices = [position.get(n, -1) if isinstance(n, Node) else -1 for n in order]
    return (indices, indices), seen  # one per check: is it topological, is it .backward()'s order


def leaf_grads(run_nodes, hidden, targets, W, b, dtype: str, weight_decay, order):
    """run_nodes(nodes in `order`, ones) (the learner's backward pass) on the graph built here, `order` given as
    positions in walk(root): (the gradient the learner's dict holds for each very leaf, x, W, b: a wire value,
    None where it holds none; what the watch saw)."""
    loss, leaves = build_graph((hidden, targets, W, b), getattr(torch, dtype), weight_decay)
    nodes = walk(loss.grad_fn)
    with torch.no_grad():  # as the real engine runs without create_graph
        grads, seen = watched_call(
            run_nodes, [nodes[i] for i in order], torch.ones_like(loss), rules=ENGINE_RULES
        )
    if not isinstance(grads, dict):
        raise TypeError(
            _("{function} returned {what}; return a dict leaf tensor -> gradient").format(
                function=run_nodes.__name__, what=type(grads).__name__
            )
        )
    # by identity: the keys may be anything, and a tensor's == is elementwise
    found = (next((g for key, g in grads.items() if key is leaf), None) for leaf in leaves.values())
    return tuple(wire_value(g) for g in found), seen


def wire_value(g):
    """A learner's gradient as it may cross the wire: a tensor without its graph, None, or its type's name."""
    if isinstance(g, torch.Tensor):
        return g.detach()
    return None if g is None else type(g).__name__


def engine_positions(case: dict) -> list[int]:
    """The order .backward() ran the nodes in, as positions in walk(root): how an order crosses the wire."""
    ids = {node: i for i, node in enumerate(case["nodes"])}
    return [ids[n] for n in case["real_order"]]


def order_cases(cases: list[dict]) -> list[Case]:
    """What the learner's engine order is graded on: each graph in float32 (its name the case's label), the
    worker's arguments (order_indices'), the order .backward() ran, and the graph for the diagnoses
    (replay_diagnosis)."""
    return [
        Case(
            _(case["graph"]),
            (*case["inputs"], dtype_name(case["dtype"]), case["weight_decay"]),
            {"topological": True, "order": engine_positions(case)},
            {"graph_case": case},
        )
        for case in cases
        if case["dtype"] == torch.float32
    ]


def replay_cases(cases: list[dict]) -> list[Case]:
    """What the learner's backward pass is graded on: every graph, given the order .backward() ran (torch's
    order, not a reference), each leaf against .backward()'s gradient."""
    return [
        Case(
            case["shown"],
            (
                *case["inputs"],
                dtype_name(case["dtype"]),
                case["weight_decay"],
                engine_positions(case),
            ),
            case["expected"],
            {"parts": case["parts"]},
        )
        for case in cases
    ]


def replay_results(cases: list[dict], graded: Graded) -> list[dict]:
    """What grading the backward pass measured, per graph, as result.json keeps it (the learner's, or the
    reference's, backward pass against .backward()); none unless it ran on every graph."""
    if len(graded.returned) != len(cases):
        return []
    errors = {(c.label, c.output): c.error for c in graded.comparisons}
    return [
        {
            "label": case["label"],  # graph_cases' label
            "graph": case["graph"],  # HEAD or DECAY
            "dtype": dtype_name(case["dtype"]),  # "float32", "float64"
            "max_abs_difference": {leaf: errors[case["shown"], leaf] for leaf in case["leaves"]},
            "bit_identical": {
                leaf: isinstance(got, torch.Tensor) and torch.equal(got, case["expected"][leaf])
                for leaf, got in graded.returned[case["shown"]].items()
            },
        }
        for case in cases
    ]


# Facts of this run's graphs that the handout asks about: the truths the learner's ANSWERS are graded against
# (engine.grade_answers; the questions are declared in exercises.py). Each fact is measured from the graphs the
# lab built (not copied from the handout): a count of nodes, which node saved its own output, the shape a node's
# backward really returns, the order leaves got their gradients.

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


def measure_facts(cases: list[dict]) -> dict:
    """The facts ANSWERS states, by its keys, measured from this run's graphs."""
    head = next(c for c in cases if c["graph"] == HEAD and c["dtype"] == torch.float32)
    head64 = next(c for c in cases if c["graph"] == HEAD and c["dtype"] == torch.float64)
    decayed = next(c for c in cases if c["graph"] == DECAY)
    nodes = head["nodes"]
    by_name = {type(n).__name__: n for n in nodes}
    addmm = by_name["AddmmBackward0"]
    # the gradient AddmmBackward0 takes: its output's shape and dtype
    meta = addmm._input_metadata[0]
    bias_grad = addmm(torch.ones(meta.shape, dtype=meta.dtype, device=head["loss"].device))[0]
    leaves_first = [
        node_name(head["leaves"], n) for n in head["real_order"] if hasattr(n, "variable")
    ]
    fan_in = [
        nxt
        for node in decayed["nodes"]
        for nxt, _nr in node.next_functions
        if nxt is not None and node_name(decayed["leaves"], nxt) == "AccumulateGrad(W)"
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
        "db_sum": float(
            head64["expected"]["b"].sum()
        ),  # sum over the 600 classes of dL/db (float64)
    }
