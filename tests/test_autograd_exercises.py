"""The autograd lab's exercises: the reference passes, and a learner's typical wrong solutions fail each
exercise's checks with a message that points at the mistake. Graded in-process, on the lab's real batch."""

from __future__ import annotations

import heapq
import itertools
from dataclasses import asdict

import autograd_wrong_solutions as w
import pytest

from workshop import labs
from workshop.grading import checks
from workshop.grading.questions import grade_answers
from workshop.harness.options import RunOptions
from workshop.lab import LabContext
from workshop.labs.autograd import graph_facts, hand_grads, replay
from workshop.labs.autograd.batch import load_batch
from workshop.labs.autograd.exercises import EXERCISES
from workshop.labs.autograd.hand_grading import cross_entropy_cases, grade, linear_cases
from workshop.labs.autograd.lab import grade_hand
from workshop.labs.autograd.no_autograd import FORBIDDEN, HAND_RULES
from workshop.labs.autograd.replay_grading import grade_backpropagate, grade_order, graph_cases


@pytest.fixture(scope="module")
def batch():
    return load_batch("cpu")


@pytest.fixture(scope="module")
def cases(batch):
    return {
        "cross_entropy_grad": cross_entropy_cases(batch),
        "linear_grads": linear_cases(batch),
        "graphs": graph_cases(batch),
    }


@pytest.fixture
def ctx(tmp_path):
    return LabContext("autograd", tmp_path, RunOptions("cpu", 1, 0))


def failures(ctx: LabContext) -> list:
    return [c for c in ctx.checks if not c.passed]


def messages(ctx: LabContext) -> str:
    return "\n".join(f"{c.name}: {c.message}" for c in failures(ctx))


CE, LIN = "cross_entropy_grad", "linear_grads"


@pytest.mark.parametrize(
    "function, wrong, expected",
    [
        (CE, w.ce_sum_not_mean, "a sum over the 82 real targets where the loss is their mean"),
        (CE, w.ce_mask_dropped, "the <pad> mask was dropped"),
        (CE, w.ce_mask_on_the_class_column, "the mask applies to the positions"),
        (CE, w.ce_mask_misaligned, "the mask is misaligned"),
        (CE, w.ce_no_max_shift, "subtract each row's max before exp()"),
        (CE, w.ce_sign_flipped, "the sign is flipped"),
        (CE, w.ce_float32_always, "is torch.float32, the inputs are torch.float64"),
        (CE, w.ce_by_autograd, "cross_entropy_grad used autograd's engine"),
        (CE, w.ce_by_torch_func, "cross_entropy_grad used autograd's engine"),
        (CE, w.ce_on_another_thread, "cross_entropy_grad used autograd's engine"),
        (CE, w.ce_by_derivative_op, "aten::nll_loss_backward, aten::_log_softmax_backward_data"),
        (CE, w.ce_float32_softmax, "that is float32's precision (about 7 digits)"),
        (LIN, w.lin_transposed_dW, "dW has shape (64, 600), expected (600, 64): transposed"),
        (LIN, w.lin_db_over_classes, "db has one entry per class"),
        (LIN, w.lin_db_over_batch_only, "db has shape (22, 600), expected (600,)"),
        (LIN, w.lin_dx_not_reshaped, "dx has shape (176, 64), expected (8, 22, 64): the right"),
        (LIN, w.lin_mean_again, "divided by N twice"),
        (LIN, w.lin_by_vjp, "linear_grads used autograd's engine"),
        (LIN, w.lin_float64_off_by_5e7, "every entry is off by the same factor, 1.0000005"),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_hand_wrong_solutions_fail_with_a_pointed_message(ctx, cases, function, wrong, expected):
    grade(ctx, function, wrong, cases[function])
    assert failures(ctx), "the wrong solution passed"
    assert expected in messages(ctx), messages(ctx)


@pytest.mark.parametrize(
    "wrong, mistake, why",
    [
        (w.ce_mask_dropped, "<pad> positions counted", "the mean over all 176 positions"),
        (w.ce_no_max_shift, "no max shift before exp()", "subtract each row's max"),
        (w.ce_float32_step, "a float32 step in a float64 computation", "1/N = 1/82 rounded"),
        (w.ce_epsilon_in_the_mean, "an epsilon in a denominator", "were N + 1e-06"),
        (w.ce_sign_flipped, "the sign flipped", "P - Y"),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_the_first_failure_names_the_mistake(ctx, cases, wrong, mistake, why):
    """Issue 27: the first failed check the learner reads is the diagnosis, not a raw comparison (a loss
    averaged over <pad> used to lead with "2.42 times autograd's: the wrong scale", a 1e-6 epsilon and a
    float32 step with "0.99999999 times autograd's: the wrong scale")."""
    grade(ctx, CE, wrong, cases[CE])
    first = failures(ctx)[0]
    assert first.name == "cross_entropy_grad: the mistake its results show"
    assert first.value == mistake and why in first.message, (first.value, first.message)
    assert "the wrong scale" not in messages(ctx)


@pytest.mark.parametrize("rule", HAND_RULES)
def test_each_thing_no_autograd_forbids_fails_its_own_check(ctx, cases, rule):
    grade(ctx, CE, w.ce_cheating(rule), cases[CE])
    assert [c.name for c in failures(ctx)] == [
        f"cross_entropy_grad, no autograd: {FORBIDDEN[rule]}"
    ]


def test_float64_off_by_5e7_fails_at_float64_only(ctx, cases):
    """The issue's row: 1e-7 absolute let it through; float64 is now judged at its own scale."""
    grade(ctx, "linear_grads", w.lin_float64_off_by_5e7, cases["linear_grads"])
    assert [c.name for c in failures(ctx)] == [
        "linear_grads: dL/dW = autograd's (float64): max abs error"
    ]


# ---- engine_order ----
@pytest.mark.parametrize(
    "wrong, expected",
    [
        (w.order_bfs, "step 7: .backward() ran TBackward0"),
        (w.order_bfs, "which sends it a gradient"),
        (w.order_fifo, "the engine picks the highest sequence_nr"),
        (w.order_by_sequence_nr, "AccumulateGrad(b) ran before AddmmBackward0"),
        (w.order_without_leaves, "your order misses 3 of the graph's 10 nodes (AccumulateGrad("),
    ],
    ids=["bfs-order", "bfs-not-topological", "fifo", "sequence-nr-only", "no-leaves"],
)
def test_engine_order_wrong_solutions(ctx, cases, wrong, expected):
    grade_order(ctx, wrong, cases["graphs"])
    assert failures(ctx) and expected in messages(ctx), messages(ctx)


# ---- backpropagate ----
@pytest.mark.parametrize(
    "wrong, expected",
    [
        (w.bp_overwrite, "yours equals only the LM head's (through TBackward0): add a gradient"),
        (
            w.bp_no_fit,
            "b's gradient has shape (176, 600), the leaf has (600,): pass every gradient",
        ),
        (w.bp_keyed_by_id, "no gradient reached x"),
    ],
    ids=["overwrite-at-fan-in", "no-fit-to-input", "keyed-by-id"],
)
def test_backpropagate_wrong_solutions(ctx, cases, wrong, expected):
    grade_backpropagate(ctx, wrong, cases["graphs"])
    assert failures(ctx) and expected in messages(ctx), messages(ctx)


def test_overwrite_at_fan_in_is_the_first_failure(ctx, cases):
    grade_backpropagate(ctx, w.bp_overwrite, cases["graphs"])
    first = failures(ctx)[0]
    assert (first.name, first.value) == (
        "backpropagate: the mistake its results show",
        "overwrite at fan-in",
    )
    assert "do not overwrite it" in first.message


def test_overwriting_passes_the_graph_without_fan_in(ctx, cases):
    """Why the weight-decay graph is in the grading: on the LM head alone, overwriting is not wrong."""
    grade_backpropagate(ctx, w.bp_overwrite, cases["graphs"])
    compared = [c for c in failures(ctx) if "max abs difference" in c.name]
    assert compared and all("(LM head + weight decay, " in c.name for c in compared)


# ---- answers ----
@pytest.mark.parametrize(
    "change, expected, message",
    [
        ({"graph_nodes": 9}, "ANSWERS['graph_nodes']", "is not what this run shows: "),
        (
            {"addmm_bias_grad_shape": "(176, 600)"},
            "ANSWERS['addmm_bias_grad_shape']",
            "give a list",
        ),
        ({"first_leaf": "x"}, "ANSWERS['first_leaf']", "is not what this run shows: "),
        ({"db_sum": 1e-3}, "ANSWERS['db_sum']", "is not what this run shows: "),
    ],
)
def test_wrong_answers_fail_and_say_where_to_look(ctx, cases, change, expected, message):
    facts = asdict(graph_facts.measure_facts(cases["graphs"]))
    with ctx.grading("answers"):
        grade_answers(ctx, graph_facts.ANSWERS | change, facts)
    assert [c.name for c in failures(ctx)] == [f"{expected} matches this run"]
    # wording unified by the one grader: a wrong kind of value says what kind to give
    assert message in failures(ctx)[0].message


def test_unanswered_is_not_started(ctx, cases):
    facts = asdict(graph_facts.measure_facts(cases["graphs"]))
    unanswered = dict.fromkeys(graph_facts.ANSWERS, ...)
    with (
        pytest.raises(NotImplementedError, match="autograd.answers: Answer"),
        ctx.grading("answers"),
    ):
        grade_answers(ctx, unanswered, facts)


# ---- the references pass; a learner's own correct code passes through the workspace ----
def test_the_references_pass_every_exercise(ctx, cases):
    grade(ctx, "cross_entropy_grad", hand_grads.cross_entropy_grad, cases["cross_entropy_grad"])
    grade(ctx, "linear_grads", hand_grads.linear_grads, cases["linear_grads"])
    grade_order(ctx, replay.engine_order, cases["graphs"])
    grade_backpropagate(ctx, replay.backpropagate, cases["graphs"])
    with ctx.grading("answers"):
        grade_answers(ctx, graph_facts.ANSWERS, asdict(graph_facts.measure_facts(cases["graphs"])))
    assert ctx.checks and not failures(ctx), messages(ctx)


LEARNER_HAND = """
def cross_entropy_grad(logits, targets):
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    t = targets.reshape(-1)
    real = (t != PAD_ID).to(z.dtype)
    n = real.sum()
    p = torch.softmax(z, dim=-1)  # torch's softmax shifts by the row max itself
    loss = -(torch.log_softmax(z, dim=-1)[torch.arange(len(t)), t] * real).sum() / n
    g = p.clone()
    g[torch.arange(len(t)), t] -= 1
    return loss, (g * real[:, None] / n).reshape(logits.shape)


def linear_grads(dlogits, x, W):
    G = dlogits.flatten(0, -2)
    return G.t().mm(x.flatten(0, -2)), G.sum(0), G.mm(W).view_as(x)
"""


def test_a_learners_correct_hand_gradients_pass_and_the_rest_is_not_started(ctx, batch, tmp_path):
    stubs = [
        ex.stub_code() for ex in EXERCISES if ex.name not in ("cross_entropy_grad", "linear_grads")
    ]
    header = labs.workspace_header("autograd")
    (tmp_path / "autograd.py").write_text(header + LEARNER_HAND + "\n\n".join(stubs))
    ctx.options.work = tmp_path
    grade_hand(ctx, batch)
    results = ctx.exercise_results()
    assert results["autograd.cross_entropy_grad"]["status"] == checks.PASSING, messages(ctx)
    assert results["autograd.linear_grads"]["status"] == checks.PASSING, messages(ctx)


def test_kahn_with_a_heap_is_what_the_hint_describes(ctx, cases):
    """The hint's recipe, written as a learner would, passes: the grader asks for nothing more."""

    def engine_order(root):
        deps = replay.dependencies(root)
        tie, ready, order = itertools.count(), [(-root._sequence_nr(), 0, root)], []
        while ready:
            node = heapq.heappop(ready)[2]
            order.append(node)
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    deps[nxt] -= 1
                    if deps[nxt] == 0:
                        heapq.heappush(ready, (-nxt._sequence_nr(), next(tie), nxt))
        return order

    grade_order(ctx, engine_order, cases["graphs"])
    assert ctx.checks and not failures(ctx), messages(ctx)
