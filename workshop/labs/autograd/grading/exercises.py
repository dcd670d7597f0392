"""The autograd lab's exercises: the LM head's gradients by hand (the chapter's first Definition-of-Done item),
the two halves of a backward engine (its order, and the sums at fan-in), and the handout's checked questions.

Each is graded by the lab's own checks (lab.py): `python -m workshop check autograd`.
"""

import math

from workshop.declarations.diagnosis import Evidence
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.i18n import N_
from workshop.labs.autograd.grading.gradient_diagnosis import HAND_DIAGNOSES
from workshop.labs.autograd.grading.replay_diagnosis import (
    LEAF_DIAGNOSES,
    ORDER_DIAGNOSES,
    compare_leaf,
    compare_order,
)

LAB = "autograd"

WORKSPACE_DOC = N_("""Your autograd lab: the LM head's gradients by hand, and a backward engine of your own.

Replace each `raise NotImplementedError(...)` below with your code, then grade this file with
`python -m workshop check autograd`: the lab runs the real thing (lm_loss(...).backward()) on the same tensors
and compares, function by function. The handout, workshop/labs/autograd/README.md, derives what to write.
Your functions may use any tensor operation, but not autograd (no .backward(), torch.autograd.grad,
torch.func, requires_grad_()): the grader watches for it.""")

WORKSPACE_IMPORTS = """
from __future__ import annotations

import heapq
import itertools
from collections import Counter

import torch
import torch.nn.functional as F
from torch.autograd.graph import Node

from workshop.labs.autograd.graph_walk import num_inputs, walk
from workshop.labs.autograd.replay import fit_to_input
from workshop.minigpt.model import PAD_ID
"""

# How a hand gradient's check names each output.
SYMBOLS = {"loss": "L", "dlogits": "dL/dlogits", "dW": "dL/dW", "db": "dL/db", "dx": "dL/dx"}
HAND_CHECK = N_("{function}: {output} = autograd's ({label}): max abs error")


def compare_gradient(e: Evidence) -> tuple[float, float, float]:
    """One output against autograd's: (max abs error, precision.error_bound, max |autograd's|). The loss is
    held to its dtype's rounding only: the chapter's 1e-7 is about gradients."""
    from workshop.labs.autograd.precision import CHAPTER_ATOL, error_bound, max_abs_error

    bound = error_bound(e.want, atol=math.inf if e.output == "loss" else CHAPTER_ATOL)
    return max_abs_error(e.got, e.want), bound, float(e.want.abs().max())


# The handout's checked questions (README.md, "Questions"), answered in ANSWERS from this run's outputs.
QUESTIONS = (
    Question(
        "graph_nodes",
        N_(
            "Q1. How many nodes does the LM head's backward graph have, AccumulateGrad nodes included? (int)"
        ),
        N_("count the nodes in graph.json"),
    ),
    Question(
        "saves_result",
        N_(
            "Q2. Which node saved its own output (a saved value named 'result')? (its class name, str)"
        ),
        N_("read each node's 'saved' in graph.json; one saved a value named 'result'"),
        kind="str",
    ),
    Question(
        "t_saved_tensors",
        N_("Q3. How many tensors does TBackward0 save? (int)"),
        N_("read TBackward0's 'saved' in graph.json"),
    ),
    Question(
        "addmm_bias_grad_shape",
        N_(
            "Q4. What shape does AddmmBackward0 return for b's gradient, before the engine sums it? "
            "(list of ints)"
        ),
        N_(
            "call the AddmmBackward0 node on a gradient of its input's shape (node._input_metadata) and "
            "look at its first output"
        ),
        kind="list",
    ),
    Question(
        "first_leaf",
        N_(
            "Q5. Which leaf's gradient is complete first: the engine runs its AccumulateGrad first? "
            '("x", "W" or "b")'
        ),
        N_("read the order the real engine ran the nodes in summary.md"),
        kind="str",
    ),
    Question(
        "w_fan_in",
        N_("Q6. With weight decay, how many gradients are summed into W's AccumulateGrad? (int)"),
        N_("build the weight-decay loss and count the edges into W's AccumulateGrad"),
    ),
    Question(
        "db_sum",
        N_("Q7. What is the sum of dL/db over the 600 classes? (a number; to 1e-6)"),
        N_("sum dL/db over the classes, knowing that each real row of dL/dlogits sums to 0"),
        kind="number",
        # 0 up to rounding: 1e-9 in float32, 1e-18 in float64
        tolerance=1e-6,
    ),
)

EXERCISES = [
    Exercise(
        lab=LAB,
        name="cross_entropy_grad",
        title=N_("the loss and dL/dlogits of the mean cross-entropy, by hand"),
        statement=N_(
            "Compute the LM head's loss and its gradient dL/dlogits by hand. Use plain tensor operations "
            "and no autograd. The loss is lm_loss's: the mean cross-entropy over the positions whose "
            "target is not <pad>, and its gradient is yours to derive (the handout's section 1 works the "
            "method on another loss). Graded against lm_loss(...).backward() in "
            "float32, in float64 and on logits shifted by +1000 (where an unshifted exp() overflows), "
            "each within the chapter's 1e-7 and within 64 units of rounding of the gradient's size."
        ),
        hints=(
            N_(
                "Work on rows: logits as (M, V), targets as (M,). Differentiate one real row's L_i with "
                "respect to one logit z_ik, one term at a time, as the handout's section 1 does for the "
                "logistic loss; then average over the N real rows. Compute the softmax after subtracting each "
                "row's max."
            ),
            N_(
                "d/dz_ik of log sum_j exp z_ij is exp z_ik / sum_j exp z_ij = p_ik, and d/dz_ik of z_(i, t_i) "
                "is [k = t_i]: so dL_i/dz_ik = p_ik - [k = t_i]. With m_i = max_k z_ik and s_i = sum_k "
                "exp(z_ik - m_i): log p_ik = z_ik - m_i - log s_i. L = -(1/N) sum over the real rows i of "
                "log p_(i, t_i), and dL/dz_ik = mask_i (p_ik - [k = t_i]) / N, where mask_i is 1 where t_i is "
                "not PAD_ID and 0 where it is, and N is the mask's sum."
            ),
            N_(
                "`Z, t = logits.reshape(-1, V), targets.reshape(-1)`; `mask = ...` (M,), 1 on the "
                "real rows, in Z's dtype; `n = mask.sum()`; `shifted = ...` each row minus its max; "
                "`log_p = ...` each row's log-softmax, from shifted; `loss = ...` minus the masked "
                "sum of log_p at each row's target, over n; `G = ...` softmax minus one-hot, times "
                "the mask, over n; return the loss, and G in the logits' shape."
            ),
        ),
        handout=N_("README.md#1-the-cross-entropys-gradient"),
        reference="workshop.labs.autograd.hand_grads:cross_entropy_grad",
        attribute="cross_entropy_grad",
        outputs=("loss", "dlogits"),
        shown=SYMBOLS,
        compare=compare_gradient,
        check=HAND_CHECK,
        diagnoses=HAND_DIAGNOSES,
        interface=N_(
            "logits: (B, T, V) float32 or float64, not requiring grad. targets: (B, T) int64; PAD_ID marks "
            "a position with nothing to predict. Returns (loss, dlogits): loss a 0-dim tensor, dlogits "
            "(B, T, V), both in the logits' dtype."
        ),
    ),
    Exercise(
        lab=LAB,
        name="linear_grads",
        title=N_("dL/dW, dL/db and dL/dx of the linear layer, by hand"),
        statement=N_(
            "Compute dL/dW, dL/db and dL/dx of the linear layer Z = x W^T + b by hand, given G = dL/dZ. "
            "Use plain tensor operations and no autograd. Graded with autograd's own dL/dlogits as input "
            "(so it stands apart from cross_entropy_grad) against .backward() in float32 and float64, "
            "within the chapter's 1e-7 and 64 units of rounding of each gradient."
        ),
        hints=(
            N_(
                "Flatten G to (M, V) and x to (M, C). Each gradient has the shape of what it differentiates: "
                "W (V, C), b (V,), x (B, T, C); b was added to every row. Write each one entry at a time, as "
                "the handout's section 2 does for another layer, then read each sum as a product or an axis "
                "sum."
            ),
            N_(
                "dL/dW_kc = sum_i G_ik x_ic, dL/db_k = sum_i G_ik, dL/dx_ic = sum_k G_ik W_kc. A sum over "
                "the index two factors share is one matrix product; a sum over one factor's own index is a "
                "sum over that axis."
            ),
            N_(
                "`G = dlogits.reshape(-1, V)`; `X = x.reshape(-1, C)`; `dW = ...` (V, C): G and X "
                "multiplied, M summed; `db = ...` (V,): G summed over its rows; `dx = ...` (M, C): G "
                "and W multiplied, V summed; `return dW, db, dx.reshape(x.shape)`."
            ),
        ),
        handout=N_("README.md#2-the-linear-layers-gradients"),
        reference="workshop.labs.autograd.hand_grads:linear_grads",
        attribute="linear_grads",
        outputs=("dW", "db", "dx"),
        shown=SYMBOLS,
        compare=compare_gradient,
        check=HAND_CHECK,
        diagnoses=HAND_DIAGNOSES,
        interface=N_(
            "dlogits: (B, T, V); x: (B, T, C); W: (V, C); all float32 or all float64, none requiring "
            "grad. Returns (dW (V, C), db (V,), dx (B, T, C)) in the inputs' dtype."
        ),
    ),
    Exercise(
        lab=LAB,
        name="engine_order",
        title=N_("the order autograd's engine runs the nodes in"),
        statement=N_(
            "Return the nodes of the graph below root in the order autograd's engine runs them. A node "
            "may run only once every node that sends it a gradient has run; among the "
            "nodes ready to run, the engine picks the one with the highest node._sequence_nr(). Graded on "
            "the LM head's graph and on the same graph with weight decay (where W's AccumulateGrad has "
            "fan-in): your order must be topological and equal the order .backward() ran."
        ),
        hints=(
            N_(
                "A node may run only once every node that sends it a gradient has run: count each node's "
                "incoming edges and keep ready the nodes whose count reached 0. Among the ready nodes, the "
                "engine runs the one with the highest node._sequence_nr()."
            ),
            N_(
                "Kahn's algorithm with a priority: waiting[n] = how many next_functions entries (not None) "
                "point at n, over walk(root). Start with root ready. Repeatedly take the ready node with the "
                "highest _sequence_nr(), append it, and lower by one the count of each node it points at; a "
                "count that reaches 0 makes that node ready. AccumulateGrad nodes share the highest number "
                "(UINT64_MAX), and the engine's ready queue is a priority queue: among tied nodes the order "
                "is not their arrival order. The graphs graded here never hold two ready at once."
            ),
            N_(
                "`waiting = ...` a Counter over walk(root); `tie = itertools.count()`; `ready`: a "
                "heap of (-sequence_nr, next(tie), node) entries, the root's first, so that the "
                "highest sequence_nr pops first; `order = []`; `while ready:` `node = ...` pop it; "
                "`order.append(node)`; for each edge (nxt, _) of node.next_functions: ... skip None, "
                "one edge fewer for nxt, push it when its count reaches 0; `return order`."
            ),
        ),
        handout=N_("README.md#4-the-engine-order-and-fan-in"),
        reference="workshop.labs.autograd.replay:engine_order",
        attribute="engine_order",
        # the order twice, one check each (replay_grading.order_indices)
        outputs=("topological", "order"),
        compare=compare_order,
        check={
            "topological": N_(
                "{function}: each node once, after every node that sends it a gradient ({label})"
            ),
            "order": N_("{function} = the order .backward() ran the nodes in ({label})"),
        },
        diagnoses=ORDER_DIAGNOSES,
        interface=N_(
            "root: torch.autograd.graph.Node (a loss's grad_fn). Returns a list of every node reachable "
            "from root through next_functions, each once, root first. walk(root) lists them (any order)."
        ),
    ),
    Exercise(
        lab=LAB,
        name="backpropagate",
        title=N_("run the nodes, summing gradients at fan-in"),
        statement=N_(
            "Run the backward pass over the nodes in order, summing gradients where two meet (fan-in), "
            "and return each leaf's gradient. Run each node once (order[0] is the root, whose incoming "
            "gradient is grad_output) and send each of its outputs along next_functions into the next "
            "node's input slot, adding it to a gradient already waiting there. Graded given the real "
            "engine's order, on the LM head's graph and on the weight-decay graph, in float32 and "
            "float64, against .backward()."
        ),
        hints=(
            N_(
                "Keep, per node, one gradient slot per input (num_inputs(node)). Run the nodes in the order "
                "given: an AccumulateGrad node (it has .variable) hands its gradient to that leaf; any other "
                "node is called with its slots, and each of its outputs goes to the node next_functions names "
                "for it."
            ),
            N_(
                "Output j of a node goes along node.next_functions[j] = (nxt, input_nr): skip it "
                "where nxt or the gradient is None; otherwise the gradient passes through "
                "fit_to_input(g, nxt, input_nr), and nxt's slot input_nr becomes it when it is empty,"
                " the sum of the two when a gradient already waits there (fan-in)."
            ),
            N_(
                "`buffers = {order[0]: [grad_output]}`, node -> its input slots; `leaf_grads = {}`; "
                "`for node in order:` take the node's slots out of buffers; a node with `.variable` "
                "(AccumulateGrad): ... the leaf's gradient, then `continue`; `outs = node(*grads)`, "
                "as a tuple; `for (nxt, input_nr), g in zip(node.next_functions, outs):` ... skip "
                "None, pass g through fit_to_input, into nxt's slot input_nr, added to what waits "
                "there; `return leaf_grads`."
            ),
        ),
        handout=N_("README.md#4-the-engine-order-and-fan-in"),
        reference="workshop.labs.autograd.replay:backpropagate",
        attribute="backpropagate",
        outputs=("x", "W", "b"),  # each leaf's gradient (replay_grading.leaf_grads)
        shown={leaf: f"dL/d{leaf}" for leaf in ("x", "W", "b")},
        compare=compare_leaf,
        check=N_("{function}: {output} = .backward()'s ({label}): max abs difference"),
        diagnoses=LEAF_DIAGNOSES,
        interface=N_(
            "order: list[Node], root first; grad_output: a tensor of the root output's shape (ones for a "
            "scalar loss). Returns a dict leaf tensor -> dL/dleaf (the leaf's shape). Helpers in your "
            "file: num_inputs(node), fit_to_input(grad, node, input_nr)."
        ),
    ),
    Exercise(
        lab=LAB,
        name="answers",
        title=N_("the handout's checked questions, answered from this run"),
        statement=N_(
            "Answer the handout's checked questions (1 to 7) in ANSWERS, from this run's outputs "
            "(graph.json, graph.png, summary.md) or by exploring the graph yourself."
        ),
        hints=(
            N_(
                "Each failed answer names the output that shows it; README.md, Questions, says what is asked."
            ),
        ),
        handout=N_("README.md#questions"),
        reference="workshop.labs.autograd.grading.replay_grading:ANSWERS",
        attribute="ANSWERS",
        questions=QUESTIONS,
        from_run=True,
    ),
]
