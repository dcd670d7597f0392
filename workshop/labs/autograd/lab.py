"""Lab autograd: the LM head's backward three ways (by hand, by autograd, by finite differences), and the
grad_fn graph autograd builds for it, walked, drawn, profiled and replayed node by node by a hand-made engine.

Five exercises are graded here (grading/exercises.py): the two hand-gradient functions, the engine's order and its
sums at fan-in, and the handout's checked questions. Everything else runs the reference.
"""

from __future__ import annotations

import math
from dataclasses import asdict

import torch
import torch.nn.functional as F

from workshop import engine
from workshop.engine import Case, Comparison, Graded
from workshop.i18n import _, grouped
from workshop.lab_api import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaves, load_batch
from workshop.labs.autograd.finite_diff import (
    TOLERANCE,
    gradcheck_autograd,
    gradcheck_cross_entropy,
    gradcheck_linear,
    head_slice,
)
from workshop.labs.autograd.grading.hand_cases import (
    FLOAT32,
    cross_entropy_cases,
    linear_cases,
    tf32_call,
)
from workshop.labs.autograd.grading.no_autograd import ENGINE_CHECKS, HAND_CHECKS, watched_call
from workshop.labs.autograd.grading.replay_grading import (
    DECAY,
    HEAD,
    WEIGHT_DECAY,
    check_graphs,
    engine_positions,
    graph_cases,
    head_loss,
    leaf_grads,
    measure_facts,
    order_cases,
    order_indices,
    replay_cases,
    replay_results,
)
from workshop.labs.autograd.graph_walk import chain_text, graph_json
from workshop.labs.autograd.hand_grads import OUTPUTS, tf32
from workshop.labs.autograd.precision import (
    CHAPTER_ATOL,
    EPS_FACTOR,
    TF32_MIN_GROWTH,
    float32_against_float64,
    tf32_effect,
)
from workshop.labs.autograd.replay import profile_backward

TRACE = "backward_trace.json"


def grade_hand(
    ctx: LabContext, batch: HeadBatch
) -> tuple[list[Comparison], dict[bool, dict[str, torch.Tensor]], list[dict]]:
    """Exercises cross_entropy_grad and linear_grads: the learner's functions (or the reference) vs autograd,
    then against finite differences. Returns what grading measured: the comparisons; TF32 on? -> the graded
    functions' float32 results (TF32 off, and on CUDA on), where both gave them, kept for the precision
    section, which shows autograd alone where an exercise gave none; the finite differences against each
    passing function."""
    head = head_slice(batch.hidden, batch.targets, batch.head.weight, batch.head.bias)
    # drawn on the CPU (the same G on every device), used where the head's rows are
    G = torch.randn(  # (R, 600): dL/dlogits of the head's rows
        (head["x"].shape[0], head["W"].shape[0]),
        generator=torch.Generator().manual_seed(ctx.options.seed),
        dtype=torch.float64,
    ).to(head["x"].device)
    comparisons, gradchecks, results = [], [], {False: {}, True: {}}
    witnesses = {
        # the finite differences' witness of each: who (the exercise's name), the function on trial
        "cross_entropy_grad": (
            cross_entropy_cases,
            lambda who, f: gradcheck_cross_entropy(who, f, head),
        ),
        "linear_grads": (linear_cases, lambda who, f: gradcheck_linear(who, f, head, G)),
    }
    for name, (make_cases, witness) in witnesses.items():
        if not ctx.wants(name):
            continue
        cases = make_cases(batch)

        def more(impl, graded: Graded, name=name, cases=cases, witness=witness) -> None:
            comparisons.extend(graded.comparisons)
            results[False].update(graded.returned[FLOAT32])
            if ctx.options.device == "cuda":
                # float32 with TF32 on, ungraded: what the precision section shows TF32 costs. TF32 is a
                # setting of the process that runs the function: the worker's (hand_cases.tf32_call)
                ex = ctx.current_exercise
                case = next(c for c in cases if c.label == FLOAT32)
                with_tf32 = impl.probe(tf32_call, True, *case.args)
                results[True].update(zip(ex.outputs, engine.unpacked(ex, with_tf32), strict=True))
            # finite differences put the function on trial too, wherever its outputs have the right shapes
            if all(c.error != math.inf for c in graded.comparisons):
                gradchecks.extend(check_gradchecks(ctx, witness(name, impl)))

        grade_by_hand(ctx, name, cases, also=more)
    hand = {on: r for on, r in results.items() if set(r) == set(OUTPUTS)}
    return comparisons, hand, gradchecks


def grade_by_hand(ctx: LabContext, name: str, cases: list[Case], also=None) -> Graded:
    """One hand-gradient exercise through the engine: each case watched for autograd in the worker
    (no_autograd.watched_call), then the "no autograd" checks (no_autograd.HAND_CHECKS)."""
    return engine.grade(ctx, name, cases, call=watched_call, rules=HAND_CHECKS, also=also)


def check_precision(
    ctx: LabContext, batch: HeadBatch, hand: dict[bool, dict[str, torch.Tensor]]
) -> list[dict]:
    """float32 (and on CUDA, TF32) against float64; on CUDA, a check that TF32 really changed the matmuls."""
    rows = float32_against_float64(batch, ctx.options.device, hand)
    effect = tf32_effect(rows)
    if effect is not None:
        ctx.check_min(
            _("TF32 on multiplies autograd's dL/dW error against float64 (TF32 took effect)"),
            effect["growth"],
            TF32_MIN_GROWTH,
            message=_("TF32 changed nothing: were the matmul flags set where the matmuls ran?"),
        )
    return rows


def grade_order(ctx: LabContext, cases: list[dict]) -> None:
    """Exercise engine_order on both graphs: run in the worker on the graph rebuilt there (nodes cannot cross the
    wire: replay_grading.order_indices sends back positions), then "no autograd's engine"."""
    engine.grade(ctx, "engine_order", order_cases(cases), call=order_indices, rules=ENGINE_CHECKS)


def grade_backpropagate(ctx: LabContext, cases: list[dict]) -> list[dict]:
    """Exercise backpropagate on every graph, given the real engine's order (replay_grading.leaf_grads runs it
    in the worker); what it measured, per graph, for result.json."""
    graded = engine.grade(
        ctx, "backpropagate", replay_cases(cases), call=leaf_grads, rules=ENGINE_CHECKS
    )
    return replay_results(cases, graded)


def check_graph(ctx: LabContext, graph: dict, rows: int) -> None:
    """What the LM head's graph must look like: its leaves, the loss's chain, what the matmul saved.

    rows: M = B*T, the rows of x the matmul multiplies."""
    leaves_seen = sorted(n["leaf"]["name"] for n in graph["nodes"] if "leaf" in n)
    ctx.check_equal(
        _("the graph ends in one AccumulateGrad per leaf"), leaves_seen, ["W", "b", "x"]
    )
    names = [n["name"] for n in graph["nodes"]]
    ctx.check_equal(
        _("the loss's grad_fn chain: cross-entropy = NllLoss after LogSoftmax"),
        names[:2],
        ["NllLossBackward0", "LogSoftmaxBackward0"],
    )
    # The matmul node saved exactly what its backward multiplies with: x's rows and W^T.
    matmul = next(n for n in graph["nodes"] if n["name"] in ("AddmmBackward0", "MmBackward0"))
    saved = sorted(tuple(s["shape"]) for s in matmul["saved"].values() if s["kind"] == "tensor")
    ctx.check_equal(
        _("{node} saved x rows (M, 64) and W^T (64, 600)").format(node=matmul["name"]),
        saved,
        sorted([(rows, 64), (64, 600)]),
    )


def draw_graph(ctx: LabContext, case: dict) -> dict:
    """graph.json and graph.png of the LM head's graph, each node numbered by the step the engine ran it."""
    graph = graph_json(case["root"], case["leaves"])
    for step, position in enumerate(engine_positions(case), start=1):
        graph["nodes"][position]["step"] = step
    check_graph(ctx, graph, rows=case["leaves"]["x"].shape[:-1].numel())
    ctx.write_json("graph.json", graph)
    # matplotlib costs ~1 s to import: only a whole run draws, not a check of named exercises
    from workshop.labs.autograd.graph_draw import draw

    title = _(
        "lm_loss(lm_head(x)).grad_fn: the backward graph ({device}, [k] = k-th node the engine ran)"
    ).format(device=ctx.options.device)
    ctx.save_figure("graph.png", draw(graph, title))
    return graph


def linear_chains(batch: HeadBatch) -> dict[str, str]:
    """The grad_fn chain of F.linear(x, W, b) alone, for the lab's 3-D x and for its rows as a 2-D x."""
    t = leaves(batch, torch.float32)
    # (M, C), a leaf of its own
    rows = t["x"].detach().reshape(-1, t["x"].shape[-1]).requires_grad_()
    return {
        f"x {tuple(x.shape)}": chain_text(F.linear(x, t["W"], t["b"]).grad_fn, {**t, "x": x})
        for x in (t["x"], rows)
    }


def check_trace(ctx: LabContext, batch: HeadBatch, decayed: dict) -> dict:
    """The autograd profiler's view of the weight-decay graph's backward: written, and its order checked."""
    loss = head_loss(leaves(batch, torch.float32), batch.targets, WEIGHT_DECAY)
    seen = profile_backward(loss, ctx.path(TRACE), ctx.options.device)
    hooks = [type(n).__name__ for n in decayed["real_order"]]
    ctx.check_equal(
        _(
            "the autograd profiler saw the nodes run in the order the pre-hooks recorded ({graph})"
        ).format(graph=_(DECAY)),
        seen,
        hooks,
    )
    return {"file": TRACE, "graph": DECAY, "order": seen, "matches_hooks": seen == hooks}


def check_finite_differences(ctx: LabContext, batch: HeadBatch) -> list[dict]:
    head = head_slice(batch.hidden, batch.targets, batch.head.weight, batch.head.bias)
    return check_gradchecks(ctx, gradcheck_autograd(head))


def check_gradchecks(ctx: LabContext, records: list[dict]) -> list[dict]:
    for g in records:
        ctx.check_equal(
            _("gradcheck float64, {gradient} gradient, {probes} ({n} inputs)").format(
                gradient=_(g["gradient"]), probes=_(g["probes"]), n=grouped(g["n_probed"])
            ),
            g["passed"],
            True,
        )
    return records


GRAPH_EXERCISES = ("engine_order", "backpropagate", "answers")  # graded on graph_cases' graphs


def run(ctx: LabContext) -> None:
    """The whole lab; a check of named exercises (`check autograd EXERCISE`) runs only what they need. Then
    result.json's extra keys (the records each section returns) and summary.md from templates/summary.md.j2."""
    batch = load_batch(ctx.options.device)
    # every comparison at 1e-7 runs without TF32 (the precision report turns it on itself)
    with tf32(False):
        comparisons, hand, gradchecks = grade_hand(ctx, batch)
        cases = graph_cases(batch) if any(map(ctx.wants, GRAPH_EXERCISES)) else []
        grade_order(ctx, cases)
        replays = grade_backpropagate(ctx, cases)
        facts = measure_facts(cases) if ctx.wants("answers") else None
        engine.grade(ctx, "answers", facts)  # not graded (facts None) where not wanted
        if ctx.options.only:  # the demonstrations, the lab's own checks, the summary: a whole run's
            ctx.summary = _(
                "Graded only {exercises}; the whole lab runs with `python -m workshop check {lab}`."
            ).format(exercises=", ".join(ctx.options.only), lab=ctx.name)
            return
        precision = check_precision(ctx, batch, hand)
        check_graphs(ctx, cases, facts["w_fan_in"])
        head = next(c for c in cases if c["graph"] == HEAD)  # the LM head's float32 graph
        graph = draw_graph(ctx, head)  # graph.json
        trace = check_trace(ctx, batch, next(c for c in cases if c["graph"] == DECAY))
    values = {
        "batch": {
            "sentences": batch.targets.shape[0],
            "rows": batch.targets.numel(),
            "real": batch.n_real,
        },
        "thresholds": {
            "chapter_atol": CHAPTER_ATOL,
            "eps_factor": EPS_FACTOR,
            "weight_decay": WEIGHT_DECAY,
        },
        "hand_vs_autograd": [hand_vs_autograd(c) for c in comparisons],
        "precision": precision,
        "tf32": tf32_effect(precision),
        "replay": replays,
        "engine_order": [type(n).__name__ for n in head["real_order"]],
        "graph_nodes": len(graph["nodes"]),
        "graph_edges": len(graph["edges"]),
        # gradients summed into W's AccumulateGrad with weight decay (not the graded facts: no answer key)
        "w_accumulate_grad_inputs": facts["w_fan_in"],
        # x's shape -> the grad_fn chain of F.linear(x, W, b)
        "linear_grad_fn_chain": linear_chains(batch),
        # backward_trace.json: which graph, the nodes in the order the profiler saw them run
        "engine_trace": trace,
        "gradcheck": gradchecks + check_finite_differences(ctx, batch),
        "gradcheck_tolerance": TOLERANCE,
    }
    ctx.extra.update(values)
    ctx.render_summary(**values, graded=ctx.graded)


def hand_vs_autograd(c: Comparison) -> dict:
    """One comparison as result.json keeps it: its error under its name there, max_abs_error."""
    row = {
        "max_abs_error" if key == "error" else key: value
        for key, value in asdict(c).items()
        if key != "relation"  # always "<=" here: a measure at most its bound
    }
    return row | {"passed": c.passed}
