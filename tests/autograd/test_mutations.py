"""Mutation suite of the autograd lab: plausible bugs planted in the reference by monkeypatching, one at a time;
each must make one of the lab's OWN checks fail (not a unit test). Test ids read "bug -> check that caught it".

The lab's sections run in-process on the real batch with the reference (no workspace), as `run` calls them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

from tests.autograd import wrong_solutions as w
from workshop import engine
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.autograd import lab
from workshop.labs.autograd.grading.replay_grading import measure_facts
from workshop.labs.autograd.graph_walk import walk
from workshop.labs.autograd.hand_grads import cross_entropy_grad, linear_grads
from workshop.minigpt.model import lm_loss

HAND = "workshop.labs.autograd.hand_grads"


@pytest.fixture(scope="module")
def batch():
    return lab.load_batch("cpu")


def sections(ctx: LabContext, batch, which: str) -> None:
    """Run one section of lab.run on the reference (the graph cases first where it needs them)."""
    if which == "hand":
        return lab.grade_hand(ctx, batch)
    if which == "gradcheck":
        return lab.check_finite_differences(ctx, batch)
    cases = lab.graph_cases(batch)
    if which == "engine":
        lab.check_graphs(ctx, cases, measure_facts(cases)["w_fan_in"])
        lab.grade_order(ctx, cases)
        lab.grade_backpropagate(ctx, cases)
    elif which == "graph":
        lab.draw_graph(ctx, cases[0])
    elif which == "answers":
        engine.grade(ctx, "answers", measure_facts(cases))  # the reference's ANSWERS
    elif which == "trace":
        lab.check_trace(ctx, batch, cases[1])


# ---- the bugs ----
def float64_scaled(ce, lin):
    """Every float64 hand gradient scaled by (1 + 5e-7): 1e-7 absolute let this through."""

    def scale(t):
        return t * (1 + 5e-7) if t.dtype == torch.float64 else t

    return {
        f"{HAND}.cross_entropy_grad": lambda z, t: tuple(map(scale, ce(z, t))),
        f"{HAND}.linear_grads": lambda g, x, W: tuple(map(scale, lin(g, x, W))),
    }


def counted_once(root):
    return Counter(set(walk(root)) - {root})  # each node waits for one gradient: fan-in ignored


def hooks_replaced_by_walk(output, retain_graph=False):
    output.backward(retain_graph=retain_graph)
    return walk(output.grad_fn)  # "the order" read from the graph instead of from the engine


def bias_off_one_percent(dlogits, x, W):
    dW, db, dx = linear_grads(dlogits, x, W)
    return dW, db * 1.01, dx


def head_loss_with_the_bias_detached(x, W, b, targets):
    return lm_loss(F.linear(x, W, b.detach())[None], targets[None])  # autograd never reaches b


def profiler_namespace_kept(original):
    def profile(loss, trace, device):
        names = original(loss, trace, device)
        return [f"torch::autograd::{n}" if n == "AccumulateGrad" else n for n in names]

    return profile


@dataclass(frozen=True)
class Mutation:
    bug: str
    section: str
    caught_by: str  # the start of the name of a lab check that must fail
    patches: object  # {"module.attr": replacement}, or a function of nothing that returns one


MUTATIONS = [
    # the rows the mutation table asks for
    Mutation(
        "every float64 hand gradient scaled by (1 + 5e-7)",
        "hand",
        "cross_entropy_grad: dL/dlogits = autograd's (float64)",
        lambda: float64_scaled(cross_entropy_grad, linear_grads),
    ),
    Mutation(
        "the hand path built on torch.autograd.grad",
        "hand",
        "cross_entropy_grad, no autograd: autograd's engine",
        {f"{HAND}.cross_entropy_grad": w.ce_by_autograd},
    ),
    Mutation(
        "the replay overwrites gradients at fan-in",
        "engine",
        "backpropagate: dL/dW = .backward()'s (LM head + weight decay, float32)",
        {"workshop.labs.autograd.replay.backpropagate": w.bp_overwrite},
    ),
    Mutation(
        "the hand bias gradient 1% off (gradcheck's tolerance matters)",
        "hand",
        "gradcheck float64, linear_grads gradient, x rows and b, every entry",
        {f"{HAND}.linear_grads": bias_off_one_percent},
    ),
    Mutation(
        "autograd's loss for the gradcheck with the bias detached",
        "gradcheck",
        "gradcheck float64, autograd gradient, x rows and b, every entry",
        {"workshop.labs.autograd.finite_diff.autograd_head_loss": head_loss_with_the_bias_detached},
    ),
    # more plausible bugs
    Mutation(
        "softmax without the max shift",
        "hand",
        "cross_entropy_grad: L = autograd's (float32, logits + 1000)",
        {f"{HAND}.cross_entropy_grad": w.ce_no_max_shift},
    ),
    Mutation(
        "the <pad> mask dropped",
        "hand",
        "cross_entropy_grad: dL/dlogits = autograd's (float32)",
        {f"{HAND}.cross_entropy_grad": w.ce_mask_dropped},
    ),
    Mutation(
        "db summed over the classes",
        "hand",
        "linear_grads: dL/db = autograd's (float32)",
        {f"{HAND}.linear_grads": w.lin_db_over_classes},
    ),
    Mutation(
        "the engine's order is breadth-first",
        "engine",
        "engine_order = the order .backward() ran the nodes in (LM head)",
        {"workshop.labs.autograd.replay.engine_order": walk},
    ),
    Mutation(
        "dependencies count each node once (fan-in ignored)",
        "engine",
        "engine_order: each node once, after every node that sends it a gradient (LM head + weight",
        {"workshop.labs.autograd.replay.dependencies": counted_once},
    ),
    Mutation(
        "gradients not summed back to the input's shape",
        "engine",
        "backpropagate: dL/db = .backward()'s (LM head, float32)",
        {"workshop.labs.autograd.replay.fit_to_input": lambda grad, node, input_nr: grad},
    ),
    Mutation(
        "the engine's order read from the graph, not from hooks",
        "engine",
        "the real engine ran the nodes in a topological order (LM head + weight decay, float32)",
        {
            "workshop.labs.autograd.grading.replay_grading.record_engine_order": hooks_replaced_by_walk
        },
    ),
    Mutation(
        "the weight-decay graph built without its penalty",
        "engine",
        "weight decay adds fan-in: edges into AccumulateGrad(W)",
        {
            "workshop.labs.autograd.grading.replay_grading.head_loss": lambda t, targets, decay: (
                lm_loss(F.linear(t["x"], t["W"], t["b"]), targets)
            )
        },
    ),
    Mutation(
        "the graph walk reads no saved values",
        "graph",
        "AddmmBackward0 saved x rows (M, 64) and W^T (64, 600)",
        {"workshop.labs.autograd.graph_walk.saved_values": lambda node: {}},
    ),
    Mutation(
        "the facts read no saved values",
        "answers",
        "ANSWERS['saves_result'] matches this run",
        {"workshop.labs.autograd.grading.replay_grading.saved_values": lambda node: {}},
    ),
    Mutation(
        "the profiler's node names keep their C++ namespace",
        "trace",
        "the autograd profiler saw the nodes run in the order the pre-hooks recorded",
        lambda: {
            "workshop.labs.autograd.lab.profile_backward": profiler_namespace_kept(
                lab.profile_backward
            )
        },
    ),
]


@pytest.mark.parametrize(
    "mutation", MUTATIONS, ids=[f"{m.bug} -> {m.caught_by}" for m in MUTATIONS]
)
def test_the_lab_catches_the_planted_bug(mutation, batch, tmp_path, monkeypatch):
    patches = mutation.patches() if callable(mutation.patches) else mutation.patches
    for target, replacement in patches.items():
        monkeypatch.setattr(target, replacement)
    ctx = LabContext("autograd", tmp_path, RunOptions("cpu", 1, 0))
    sections(ctx, batch, mutation.section)
    failed = [c.name for c in ctx.checks if not c.passed]
    assert any(name.startswith(mutation.caught_by) for name in failed), failed


def test_without_a_bug_every_section_passes(batch, tmp_path):
    ctx = LabContext("autograd", tmp_path, RunOptions("cpu", 1, 0))
    for section in sorted({m.section for m in MUTATIONS}):
        sections(ctx, batch, section)
    assert ctx.checks and all(c.passed for c in ctx.checks), [c for c in ctx.checks if not c.passed]


@pytest.mark.gpu
def test_tf32_flags_not_set_are_caught(tmp_path, monkeypatch):
    import contextlib

    monkeypatch.setattr(
        "workshop.labs.autograd.precision.tf32", lambda enabled: contextlib.nullcontext()
    )
    ctx = LabContext("autograd", tmp_path, RunOptions("cuda", 1, 0))
    lab.check_precision(ctx, lab.load_batch("cuda"), {})
    assert [c.name for c in ctx.checks if not c.passed] == [
        "TF32 on multiplies autograd's dL/dW error against float64 (TF32 took effect)"
    ]
