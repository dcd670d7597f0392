"""How the two halves of the hand-made backward engine are compared and what their mistakes show, as data (the
exercise engine's Diagnosis): the learner's order against the one .backward() ran, and the leaf gradients their
backward pass sums against .backward()'s. Declared here, read by exercises.py; the graphs and the probes that
run the learner's engine on them are in replay_grading.py.

Cheap to import (the declarations are): torch and the graph helpers are imported inside the functions that read
a case. A case's facts hold its graph (`graph_case`, one of replay_grading.graph_cases: the nodes the order's positions
index, their names) or the parts that meet at fan-in (`parts`: leaf -> {source: its gradient}).
"""

from __future__ import annotations

from workshop.declarations.diagnosis import Diagnosis, Evidence
from workshop.i18n import N_, _

# Stands in the learner's order for an entry that is no node of the graph (order_indices: -1).
NOT_A_NODE = "<not a node of this graph>"


def node_name(leaves: dict, node) -> str:
    """A node as the learner sees it: its class, and for an AccumulateGrad the leaf (of `leaves`, by name) it
    feeds; anything that is no node, as its repr."""
    if not hasattr(node, "next_functions"):
        return repr(node)[:40]
    if hasattr(node, "variable"):
        leaf = next((n for n, t in leaves.items() if t is node.variable), "?")
        return f"AccumulateGrad({leaf})"
    return type(node).__name__


def learners_order(e: Evidence) -> list:
    """The learner's order (positions in walk(root), from the worker) as the lab's own nodes."""
    nodes = e.facts["graph_case"]["nodes"]
    return [nodes[i] if 0 <= i < len(nodes) else NOT_A_NODE for i in e.got]


def compare_order(e: Evidence) -> tuple:
    """The order exercise's two outputs, both the learner's order: is it topological (expected True), and is it the
    order .backward() ran (expected: its positions). Checked for equality."""
    from workshop.labs.autograd.replay import is_topological

    case = e.facts["graph_case"]
    value = (
        is_topological(learners_order(e), case["root"])
        if e.output == "topological"
        else list(e.got)
    )
    return value, e.want, 0.0, "=="


def missing_nodes(e: Evidence) -> dict | None:
    case, order = e.facts["graph_case"], learners_order(e)
    missing = [node_name(case["leaves"], n) for n in case["nodes"] if n not in order]
    return (
        {"k": len(missing), "n": len(case["nodes"]), "names": ", ".join(missing[:3])}
        if missing
        else None
    )


def wrong_count(e: Evidence) -> dict | None:
    order, n = learners_order(e), len(e.facts["graph_case"]["nodes"])
    return {"k": len(order), "n": n} if len(order) != n else None


def ran_too_early(e: Evidence) -> dict | None:
    """The first node that ran before a node that sends it a gradient (every node is in the order once)."""
    case, order = e.facts["graph_case"], learners_order(e)
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for nxt, _nr in node.next_functions:
            if nxt is not None and position[nxt] < position[node]:
                return {
                    "i": position[nxt] + 1,
                    "late": node_name(case["leaves"], nxt),
                    "early": node_name(case["leaves"], node),
                    "j": position[node] + 1,
                }
    return None


def sequence_nr(node) -> str:
    if not hasattr(node, "_sequence_nr"):  # NOT_A_NODE
        return "?"
    return "max" if hasattr(node, "variable") else str(node._sequence_nr())


def first_divergence(e: Evidence) -> dict | None:
    """The first step where the learner's order ran another node than .backward() did."""
    case = e.facts["graph_case"]
    for step, (mine, real) in enumerate(
        zip(learners_order(e), case["real_order"], strict=False), 1
    ):
        if mine is not real:
            return {
                "step": step,
                "real": node_name(case["leaves"], real),
                "real_nr": sequence_nr(real),
                "mine": node_name(case["leaves"], mine),
                "mine_nr": sequence_nr(mine),
            }
    return None


ORDER_DIAGNOSES = (
    Diagnosis(
        None,
        missing_nodes,
        N_(
            "your order misses {k} of the graph's {n} nodes ({names}): follow next_functions from "
            "the root to every node"
        ),
        output="topological",
    ),
    Diagnosis(
        None,
        wrong_count,
        N_("your order has {k} entries for {n} nodes: run each node exactly once"),
        output="topological",
    ),
    Diagnosis(
        None,
        ran_too_early,
        N_(
            "step {i}: {late} ran before {early} (step {j}), which sends it a gradient: "
            "a node may run only once every node that feeds it has run (count its incoming "
            "edges, and wait for all of them)"
        ),
        output="topological",
    ),
    Diagnosis(
        None,
        first_divergence,
        N_(
            "step {step}: .backward() ran {real} (sequence_nr {real_nr}), yours ran {mine} "
            "({mine_nr}): among the nodes ready to run, the engine picks the highest "
            "sequence_nr, the op made last in the forward"
        ),
        output="order",
    ),
    Diagnosis(
        None,
        lambda e: {"k": len(e.got), "n": len(e.facts["graph_case"]["real_order"])},
        N_("your order has {k} nodes, the engine ran {n}"),
        output="order",
    ),
)


def compare_leaf(e: Evidence) -> tuple[float, float]:
    """One leaf's gradient against .backward()'s: (max abs difference, precision.error_bound)."""
    from workshop.labs.autograd.precision import error_bound, max_abs_error

    return max_abs_error(e.got, e.want), error_bound(e.want)


def wrong_shape(e: Evidence) -> dict | None:
    # a non-tensor comes back from the worker as its type's name (replay_grading.wire_value)
    if isinstance(e.got, str):
        return {"leaf": e.output, "got": e.got, "want": tuple(e.want.shape)}
    if e.got.shape != e.want.shape:
        return {"leaf": e.output, "got": tuple(e.got.shape), "want": tuple(e.want.shape)}
    return None


def one_part_only(e: Evidence) -> dict | None:
    """The gradient equals one of the gradients that meet at the leaf (fan-in): the others were overwritten."""
    from workshop.labs.autograd.precision import error_bound, max_abs_error

    parts = e.facts["parts"].get(e.output, {})
    for source, part in parts.items():
        if max_abs_error(e.got, part) <= max(error_bound(e.want), error_bound(part)):
            sources = ", ".join(map(_, parts))
            return {"leaf": e.output, "n": len(parts), "sources": sources, "source": _(source)}
    return None


def relative_difference(e: Evidence) -> dict:
    from workshop.labs.autograd.precision import max_abs_error

    return {"leaf": e.output, "rel": max_abs_error(e.got, e.want) / float(e.want.abs().max())}


LEAF_DIAGNOSES = (
    Diagnosis(
        N_("a leaf's gradient not stored under the leaf"),
        lambda e: {"leaf": e.output} if e.got is None else None,
        N_(
            "no gradient reached {leaf}: when an AccumulateGrad node runs, store its summed "
            "gradient under its leaf, node.variable (the dict's key is the leaf tensor itself)"
        ),
    ),
    Diagnosis(
        N_("a gradient not summed back to its input's shape"),
        wrong_shape,
        N_(
            "{leaf}'s gradient has shape {got}, the leaf has {want}: pass every gradient through "
            "fit_to_input(grad, next_node, input_nr) before it reaches the next node (the forward "
            "broadcast b over the rows; the engine sums the gradient back)"
        ),
    ),
    Diagnosis(
        N_("overwrite at fan-in"),
        one_part_only,
        N_(
            "{leaf} received {n} gradients (fan-in): {sources}; yours equals only {source}: add a "
            "gradient that arrives at a slot already holding one; do not overwrite it"
        ),
    ),
    Diagnosis(
        None,
        relative_difference,
        N_("dL/d{leaf} differs from .backward()'s by up to {rel:.2g} of its largest entry"),
    ),
)
