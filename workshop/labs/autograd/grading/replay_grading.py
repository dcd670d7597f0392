"""The graphs the hand-made engine is checked on, and the grading of its two halves (its order, and the sums at
fan-in: grade_order and grade_backpropagate, each inside its exercise's grading block, whose exercise names
its checks).

Two graphs, in float32 and float64: the LM head under lm_loss, and the same plus weight decay (lambda/2)||W||^2.
The second has fan-in: W is used twice in the forward, so two gradients reach W's AccumulateGrad and must be
summed; an engine that overwrites instead passes the first graph and fails this one. Each graph is run once by
the real engine (.backward(), pre-hooks recording its order, the graph retained) before any replay.

Nodes cannot cross the wire: the learner's engine runs in the worker on the same graph rebuilt there, by this
module's probes (order_indices, leaf_grads), and the verdicts are made here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch.autograd.graph import Node

from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaf_tensors
from workshop.labs.autograd.grading.hand_cases import DTYPES, dtype_name
from workshop.labs.autograd.grading.no_autograd import (
    ENGINE_RULES,
    add_seen,
    check_no_autograd,
    watched_call,
)
from workshop.labs.autograd.graph_walk import walk
from workshop.labs.autograd.precision import error_bound, max_abs_error
from workshop.labs.autograd.replay import is_topological, record_engine_order
from workshop.minigpt.model import lm_loss

# The penalty's gradient lambda * W peaks at 0.038 against dL/dW's 0.108: either half alone is far off the sum.
WEIGHT_DECAY = 0.1
# Stands in the learner's order for an entry that is no node of the graph (order_indices: -1).
NOT_A_NODE = "<not a node of this graph>"
# The graphs' names: identifiers in result.json, translated where the learner reads them.
HEAD, DECAY = N_("LM head"), N_("LM head + weight decay")


@dataclass
class GraphCase:
    graph: str  # HEAD or DECAY
    dtype: torch.dtype
    loss: torch.Tensor  # () its graph retained, ready to be replayed
    leaves: dict[str, torch.Tensor]  # "x", "W", "b"
    real_order: list[Node]  # the nodes in the order .backward() ran them
    expected: dict[str, torch.Tensor]  # .backward()'s leaf gradients
    # what a worker rebuilds the same graph from (order_indices, leaf_grads):
    # (hidden, targets, W, b), the weight decay
    inputs: tuple[torch.Tensor, ...]
    weight_decay: float
    # leaf -> {source: its gradient}
    parts: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """'LM head, float32': the case in result.json."""
        return f"{self.graph}, {dtype_name(self.dtype)}"

    @property
    def shown(self) -> str:
        """The label in the learner's language."""
        return f"{_(self.graph)}, {dtype_name(self.dtype)}"

    @property
    def root(self) -> Node:
        return self.loss.grad_fn

    def node_name(self, node) -> str:
        """A node as the learner sees it: its class, and for an AccumulateGrad the leaf it feeds."""
        if not isinstance(node, Node):
            return repr(node)[:40]
        if hasattr(node, "variable"):
            leaf = next((n for n, t in self.leaves.items() if t is node.variable), "?")
            return f"AccumulateGrad({leaf})"
        return type(node).__name__


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


def graph_cases(batch: HeadBatch) -> list[GraphCase]:
    inputs = (batch.hidden, batch.targets, batch.head.weight.detach(), batch.head.bias.detach())
    cases = []
    for dtype in DTYPES:
        for graph, decay in ((HEAD, 0.0), (DECAY, WEIGHT_DECAY)):
            loss, t = build_graph(inputs, dtype, decay)
            real = record_engine_order(loss, retain_graph=True)
            expected = {name: leaf.grad for name, leaf in t.items()}
            for leaf in t.values():
                leaf.grad = None
            cases.append(GraphCase(graph, dtype, loss, t, real, expected, inputs, decay))
        head, decayed = cases[-2:]
        decayed.parts["W"] = {
            N_("the LM head's (through TBackward0)"): head.expected["W"],
            N_("the weight decay's (through PowBackward0)"): WEIGHT_DECAY
            * decayed.leaves["W"].detach(),
        }
    return cases


def check_graphs(ctx: LabContext, cases: list[GraphCase]) -> None:
    """What the lab claims of the real engine: its order is topological, and W's fan-in in the second graph."""
    for case in cases:
        ctx.check_equal(
            _("the real engine ran the nodes in a topological order ({label})").format(
                label=case.shown
            ),
            is_topological(case.real_order, case.root),
            True,
        )
    decayed = next(c for c in cases if c.graph == DECAY)
    edges = [n for node in walk(decayed.root) for n, _nr in node.next_functions if n is not None]
    accumulate_w = next(n for n in edges if decayed.node_name(n) == "AccumulateGrad(W)")
    ctx.check_equal(
        _("weight decay adds fan-in: edges into AccumulateGrad(W)"), edges.count(accumulate_w), 2
    )


def order_indices(order_of, hidden, targets, W, b, dtype: str, weight_decay: float):
    """order_of(root) (the learner's engine order) on the graph built here from the lab's inputs, watched for
    the engine: (each returned entry's position in walk(root), -1 for what is no node of it; what the watch
    saw)."""
    loss, _leaves = build_graph((hidden, targets, W, b), getattr(torch, dtype), weight_decay)
    position = {node: i for i, node in enumerate(walk(loss.grad_fn))}
    order, seen = watched_call(order_of, ENGINE_RULES, loss.grad_fn)
    return [position.get(n, -1) if isinstance(n, Node) else -1 for n in order], seen


def leaf_grads(run_nodes, hidden, targets, W, b, dtype: str, weight_decay, order):
    """run_nodes(nodes in `order`, ones) (the learner's backward pass) on the graph built here, `order` given as
    positions in walk(root):
    ({leaf name: the gradient the learner's dict holds for that very leaf, or None}, what the watch saw); the
    returned value's type name instead of the dict when it is not one."""
    loss, leaves = build_graph((hidden, targets, W, b), getattr(torch, dtype), weight_decay)
    nodes = walk(loss.grad_fn)
    with torch.no_grad():  # as the real engine runs without create_graph
        grads, seen = watched_call(
            run_nodes, ENGINE_RULES, [nodes[i] for i in order], torch.ones_like(loss)
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


def grade_order(ctx: LabContext, impl, cases: list[GraphCase]) -> None:
    """The learner's engine order of each graph's root: topological, and exactly the real engine's order.

    Nodes cannot cross to the worker: it rebuilds the same graph (order_indices, above) and sends back
    the learner's order as positions in walk(root); the verdicts are made here, on the lab's own graph."""
    seen, function = {}, ctx.current_exercise.attribute
    for case in (c for c in cases if c.dtype == torch.float32):
        nodes = walk(case.root)
        indices, watched = impl.probe(
            order_indices, *case.inputs, dtype_name(case.dtype), case.weight_decay
        )
        add_seen(seen, watched)
        order = [nodes[i] if 0 <= i < len(nodes) else NOT_A_NODE for i in indices]
        ctx.check_equal(
            _(
                "{function}: each node once, after every node that sends it a gradient ({graph})"
            ).format(function=function, graph=_(case.graph)),
            is_topological(order, case.root),
            True,
            message=order_violation(case, order),
        )
        ids = {node: i for i, node in enumerate(nodes)}
        ctx.check_equal(
            _("{function} = the order .backward() ran the nodes in ({graph})").format(
                function=function, graph=_(case.graph)
            ),
            list(indices),
            [ids[n] for n in case.real_order],
            message=first_divergence(case, order),
        )
    check_no_autograd(ctx, function, seen, ENGINE_RULES)


def order_violation(case: GraphCase, order: list) -> str:
    nodes = walk(case.root)
    missing = [case.node_name(n) for n in nodes if n not in order]
    if missing:
        return _(
            "your order misses {k} of the graph's {n} nodes ({names}): follow next_functions from "
            "the root to every node"
        ).format(k=len(missing), n=len(nodes), names=", ".join(missing[:3]))
    if len(order) != len(nodes):
        return _("your order has {k} entries for {n} nodes: run each node exactly once").format(
            k=len(order), n=len(nodes)
        )
    position = {node: i for i, node in enumerate(order)}
    for node in order:
        for nxt, _nr in node.next_functions:
            if nxt is not None and position[nxt] < position[node]:
                return _(
                    "step {i}: {late} ran before {early} (step {j}), which sends it a gradient: "
                    "a node may run only once every node that feeds it has run (count its incoming "
                    "edges, and wait for all of them)"
                ).format(
                    i=position[nxt] + 1,
                    late=case.node_name(nxt),
                    early=case.node_name(node),
                    j=position[node] + 1,
                )
    return ""


def first_divergence(case: GraphCase, order: list) -> str:
    for step, (mine, real) in enumerate(zip(order, case.real_order, strict=False), start=1):
        if mine is not real:
            return _(
                "step {step}: .backward() ran {real} (sequence_nr {real_nr}), yours ran {mine} "
                "({mine_nr}): among the nodes ready to run, the engine picks the highest "
                "sequence_nr, the op made last in the forward"
            ).format(
                step=step,
                real=case.node_name(real),
                real_nr=sequence_nr(real),
                mine=case.node_name(mine),
                mine_nr=sequence_nr(mine),
            )
    return _("your order has {k} nodes, the engine ran {n}").format(
        k=len(order), n=len(case.real_order)
    )


def sequence_nr(node) -> str:
    if not isinstance(node, Node):
        return "?"
    return "max" if hasattr(node, "variable") else str(node._sequence_nr())


@dataclass
class ReplayResult:
    """The learner's (or the reference's) backward pass on one graph, against .backward()."""

    label: str  # GraphCase.label
    graph: str  # HEAD or DECAY
    dtype: str  # "float32", "float64"
    max_abs_difference: dict[str, float]
    bit_identical: dict[str, bool]


def grade_backpropagate(ctx: LabContext, impl, cases: list[GraphCase]) -> list[ReplayResult]:
    """The learner's backward pass (order, grad_output) given the real engine's order, on every graph: the
    mistake its results show first (a diagnosis), then each leaf against .backward().

    In the worker, leaf_grads rebuilds the graph and hands the learner the order .backward()
    ran here (positions in walk(root)); it sends back each leaf's gradient by the leaf's name."""
    seen, measured, function = {}, [], ctx.current_exercise.attribute
    for case in cases:
        ids = {node: i for i, node in enumerate(walk(case.root))}
        # .backward()'s order (pre-hooks): torch's, not a reference
        order = [ids[n] for n in case.real_order]
        grads, watched = impl.probe(
            leaf_grads, *case.inputs, dtype_name(case.dtype), case.weight_decay, order
        )
        add_seen(seen, watched)
        if isinstance(grads, str):
            raise TypeError(
                _("{function} returned {what}; return a dict leaf tensor -> gradient").format(
                    function=function, what=grads
                )
            )
        measured.append((case, measure_leaves(case, grads)))
    check_mistake(ctx, function, [row[-1] for _, rows in measured for row in rows])
    results = [record_leaves(ctx, function, case, rows) for case, rows in measured]
    check_no_autograd(ctx, function, seen, ENGINE_RULES)
    return results


class Diagnosis(NamedTuple):
    """What a wrong leaf gradient shows: the mistake's short name (N_(); None: none named) and the message."""

    mistake: str | None
    message: str


def check_mistake(ctx: LabContext, function: str, diagnoses: list[Diagnosis | None]) -> None:
    """The first mistake a diagnosis named, as a check of its own: the line that tells the learner what to fix.
    It passes when no failed output showed a mistake a rule recognises (a wrong output may still fail)."""
    named = next((d for d in diagnoses if d is not None and d.mistake), None)
    ctx.check_equal(
        _("{function}: the mistake its results show").format(function=function),
        _(named.mistake) if named else None,
        None,  # no mistake recognised; not a word, so that a run's thresholds read the same in any language
        message=named.message if named else None,
        diagnosis=True,
    )


# One leaf's gradient against .backward()'s: (leaf name, got, max abs difference, bound, diagnosis or None)
LeafRow = tuple[str, object, float, float, Diagnosis | None]


def measure_leaves(case: GraphCase, grads: dict) -> list[LeafRow]:
    """grads: leaf name -> what the learner's dict held for that very leaf (None: nothing)."""
    rows = []
    for name in case.leaves:
        got = grads.get(name)
        want = case.expected[name]
        difference, bound = max_abs_error(got, want), error_bound(want)
        diagnosis = None if difference <= bound else leaf_diagnosis(case, name, got, bound)
        rows.append((name, got, difference, bound, diagnosis))
    return rows


def record_leaves(
    ctx: LabContext, function: str, case: GraphCase, rows: list[LeafRow]
) -> ReplayResult:
    diffs, identical = {}, {}
    for name, got, difference, bound, diagnosis in rows:
        diffs[name] = difference
        identical[name] = isinstance(got, torch.Tensor) and torch.equal(got, case.expected[name])
        ctx.check_max(
            _("{function}: dL/d{leaf} = .backward()'s ({label}): max abs difference").format(
                function=function, leaf=name, label=case.shown
            ),
            difference,
            bound,
            message=diagnosis.message if diagnosis else None,
        )
    return ReplayResult(case.label, case.graph, dtype_name(case.dtype), diffs, identical)


def leaf_diagnosis(case: GraphCase, name: str, got, bound: float) -> Diagnosis:
    want = case.expected[name]
    if got is None:
        message = _(
            "no gradient reached {leaf}: when an AccumulateGrad node runs, store its summed "
            "gradient under its leaf, node.variable (the dict's key is the leaf tensor itself)"
        ).format(leaf=name)
        return Diagnosis(N_("a leaf's gradient not stored under the leaf"), message)
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        # a non-tensor comes back from the worker as its type's name (wire_value)
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else got
        message = _(
            "{leaf}'s gradient has shape {got}, the leaf has {want}: pass every gradient through "
            "fit_to_input(grad, next_node, input_nr) before it reaches the next node (the forward "
            "broadcast b over the rows; the engine sums the gradient back)"
        ).format(leaf=name, got=shape, want=tuple(want.shape))
        return Diagnosis(N_("a gradient not summed back to its input's shape"), message)
    parts = case.parts.get(name, {})
    for source, part in parts.items():
        if max_abs_error(got, part) <= max(bound, error_bound(part)):
            message = _(
                "{leaf} received {n} gradients (fan-in): {sources}; yours equals only {source}: add a "
                "gradient that arrives at a slot already holding one; do not overwrite it"
            ).format(leaf=name, n=len(parts), sources=", ".join(map(_, parts)), source=_(source))
            return Diagnosis(N_("overwrite at fan-in"), message)
    message = _(
        "dL/d{leaf} differs from .backward()'s by up to {rel:.2g} of its largest entry"
    ).format(leaf=name, rel=max_abs_error(got, want) / float(want.abs().max()))
    return Diagnosis(None, message)
