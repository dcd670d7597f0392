"""The graphs the hand-made engine is checked on, and the grading of its two halves (engine_order, backpropagate).

Two graphs, in float32 and float64: the LM head under lm_loss, and the same plus weight decay (lambda/2)||W||^2.
The second has fan-in: W is used twice in the forward, so two gradients reach W's AccumulateGrad and must be
summed; an engine that overwrites instead passes the first graph and fails this one. Each graph is run once by
the real engine (.backward(), pre-hooks recording its order, the graph retained) before any replay.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch.autograd.graph import Node

from workshop.i18n import N_, _
from workshop.lab import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaves
from workshop.labs.autograd.gradient_diagnosis import Diagnosis
from workshop.labs.autograd.graph_walk import walk
from workshop.labs.autograd.hand_grading import (
    DTYPES,
    check_mistake,
    check_no_autograd,
    dtype_name,
)
from workshop.labs.autograd.no_autograd import ENGINE_RULES, add_seen, watched_call
from workshop.labs.autograd.precision import error_bound, max_abs_error
from workshop.labs.autograd.replay import is_topological, record_engine_order
from workshop.minigpt.model import lm_loss

# The penalty's gradient lambda * W peaks at 0.038 against dL/dW's 0.108: either half alone is far off the sum.
WEIGHT_DECAY = 0.1
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
    parts: dict[str, dict[str, torch.Tensor]] = field(
        default_factory=dict
    )  # leaf -> {source: its gradient}

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


def graph_cases(batch: HeadBatch) -> list[GraphCase]:
    cases = []
    for dtype in DTYPES:
        for graph, decay in ((HEAD, 0.0), (DECAY, WEIGHT_DECAY)):
            t = leaves(batch, dtype)
            loss = head_loss(t, batch.targets, decay)
            real = record_engine_order(loss, retain_graph=True)
            expected = {name: leaf.grad for name, leaf in t.items()}
            for leaf in t.values():
                leaf.grad = None
            cases.append(GraphCase(graph, dtype, loss, t, real, expected))
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


def grade_order(ctx: LabContext, impl, cases: list[GraphCase]) -> None:
    """The learner's engine_order(root) on each graph: topological, and exactly the real engine's order."""
    seen = {}
    for case in (c for c in cases if c.dtype == torch.float32):
        order, watched = watched_call(impl, ENGINE_RULES, case.root)
        add_seen(seen, watched)
        order = list(order)
        ctx.check_equal(
            _(
                "engine_order: each node once, after every node that sends it a gradient ({graph})"
            ).format(graph=_(case.graph)),
            is_topological(order, case.root),
            True,
            message=order_violation(case, order),
        )
        ids = {node: i for i, node in enumerate(walk(case.root))}
        ctx.check_equal(
            _("engine_order = the order .backward() ran the nodes in ({graph})").format(
                graph=_(case.graph)
            ),
            [ids.get(n, -1) if isinstance(n, Node) else -1 for n in order],
            [ids[n] for n in case.real_order],
            message=first_divergence(case, order),
        )
    check_no_autograd(ctx, "engine_order", seen, ENGINE_RULES)


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
    """The learner's (or the reference's) backpropagate on one graph, against .backward()."""

    label: str  # GraphCase.label
    graph: str  # HEAD or DECAY
    dtype: str  # "float32", "float64"
    max_abs_difference: dict[str, float]
    bit_identical: dict[str, bool]


def grade_backpropagate(ctx: LabContext, impl, cases: list[GraphCase]) -> list[ReplayResult]:
    """The learner's backpropagate(order, grad_output) given the real engine's order, on every graph: the
    mistake its results show first (hand_grading's order of checks), then each leaf against .backward()."""
    seen, measured = {}, []
    for case in cases:
        # the order .backward() ran (pre-hooks): from torch, not from the engine_order exercise
        order, grad_output = case.real_order, torch.ones_like(case.loss)
        with torch.no_grad():
            grads, watched = watched_call(impl, ENGINE_RULES, order, grad_output)
        add_seen(seen, watched)
        if not isinstance(grads, dict):
            raise TypeError(
                _("backpropagate returned {what}; return a dict leaf tensor -> gradient").format(
                    what=type(grads).__name__
                )
            )
        measured.append((case, measure_leaves(case, grads)))
    check_mistake(ctx, "backpropagate", [row[-1] for _, rows in measured for row in rows])
    results = [record_leaves(ctx, case, rows) for case, rows in measured]
    check_no_autograd(ctx, "backpropagate", seen, ENGINE_RULES)
    return results


# One leaf's gradient against .backward()'s: (leaf name, got, max abs difference, bound, diagnosis or None)
LeafRow = tuple[str, object, float, float, Diagnosis | None]


def measure_leaves(case: GraphCase, grads: dict) -> list[LeafRow]:
    rows = []
    for name, leaf in case.leaves.items():
        # by identity: the keys may be anything, and a tensor's == is elementwise
        got = next((g for key, g in grads.items() if key is leaf), None)
        want = case.expected[name]
        difference, bound = max_abs_error(got, want), error_bound(want)
        diagnosis = None if difference <= bound else leaf_diagnosis(case, name, got, bound)
        rows.append((name, got, difference, bound, diagnosis))
    return rows


def record_leaves(ctx: LabContext, case: GraphCase, rows: list[LeafRow]) -> ReplayResult:
    diffs, identical = {}, {}
    for name, got, difference, bound, diagnosis in rows:
        diffs[name] = difference
        identical[name] = isinstance(got, torch.Tensor) and torch.equal(got, case.expected[name])
        ctx.check_max(
            _("backpropagate: dL/d{leaf} = .backward()'s ({label}): max abs difference").format(
                leaf=name, label=case.shown
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
        shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
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
