"""The facts of this run that the learner's predictions and handout answers are graded against (the one grader,
declarations.questions.grade_answers; the questions are declared in exercises.py), and why a prediction is off.

Predictions, one per CPU scenario (every run traces those; a CUDA run adds cuda/* ones that differ only in the
backend's name): the key whose kernel first does real work on the traced call's root op (the end of its real
chain: the recorder's pass-through keys only hand the call on), and the aten op that finally does the GEMM.
Answers: the handout's questions whose answer is a fact of the run.
"""

from __future__ import annotations

from workshop.declarations.questions import Question
from workshop.i18n import _
from workshop.labs.dispatcher import keys
from workshop.labs.dispatcher.crosscheck import CallNode
from workshop.labs.dispatcher.tracing import ScenarioResult

# the lab's recording mode puts these in every chain
RECORDER_KEYS = ("PythonTLSSnapshot", "Python")


def predictions(results: list[ScenarioResult]) -> dict[str, dict[str, str | None]]:
    """Scenario name -> {"handled_at": key, "gemm_op": "aten::..."} for the run's CPU scenarios."""
    return {
        r.name: {"handled_at": r.tree.real_keys[-1], "gemm_op": r.gemm_op}
        for r in results
        if r.device == "cpu"
    }


def _child(node: CallNode, op: str) -> CallNode:
    return next(c for c in node.children if c.op == op)


def answers(results: list[ScenarioResult]) -> dict[str, object]:
    """The handout's checked answers (README.md, Questions), read off this run's CPU scenarios."""
    by_name = {r.name: r.tree for r in results}
    outputs = {r.name: r.output_keys for r in results}
    grad = by_name["cpu/grad/3d"]
    addmm_autocast = _child(by_name["cpu/autocast_bf16/3d"], "aten::addmm")
    inplace = keys.computed_table("aten::addmm").get("ADInplaceOrView")
    return {
        "addmm_ADInplaceOrView_kernel": inplace.tag if inplace else None,
        "addmm_ADInplaceOrView_fallthrough": bool(inplace and inplace.fallthrough),
        # the keys of a tensor made inside inference_mode: its result's own key set
        "inference_result_keys": frozenset(outputs["cpu/inference_mode/3d"]),
        "addmm_chain_without_recorder": [
            k for k in _child(grad, "aten::addmm").real_keys if k not in RECORDER_KEYS
        ],
        # the excluded autocast key that addmm's tensors carry (autocast excludes other backends' keys too)
        "autocast_key_excluded_for_addmm": frozenset(
            k
            for k in set(addmm_autocast.tls_exclude) & set(addmm_autocast.tensor_keys)
            if k.startswith("Autocast")
        ),
        "matmul_3d_last_op": by_name["cpu/matmul/3d"].children[-1].op,
    }


def prediction_hint(field: str, predicted, actual) -> str:
    """Why a prediction is off, from the pair (predicted, actual): the rule to apply again, never the answer
    (a prediction must stay one until it is right)."""
    if field == "gemm_op":
        if predicted in ("aten::linear", "aten::matmul"):
            return _("That op is decomposed: it calls other ops and runs no GEMM itself.")
        if (predicted, actual) == ("aten::mm", "aten::addmm"):
            return _("Where does the bias go? A GEMM op can add it itself: beta*b + alpha*x W^T.")
        if (predicted, actual) == ("aten::bmm", "aten::mm"):
            return _(
                "The weight is 2-D, the same for every batch entry: does the product need a batch?"
            )
        return _("Follow the calls in trace.md down to the op whose kernel calls BLAS.")
    if predicted in RECORDER_KEYS:
        return _(
            "{key} only hands the call on (the lab's recorder); the chain goes on below it."
        ).format(key=predicted)
    if str(actual).startswith(("Autocast", "Autograd")):
        return _(
            "List the keys in play for this scenario (tensor keys, TLS include and exclude, fallthroughs), "
            "rank them, and read the winner's slot for the root op (handout, sections 2 and 5)."
        )
    if str(predicted).startswith("Autograd"):
        return _("This scenario's TLS exclude set removes every autograd key (inference_mode).")
    return _("Walk the three steps of the handout for this scenario's keys and TLS sets.")


def explain_prediction(question: Question, predicted, actual, _facts) -> str:
    """grade_answers' explain for PREDICTIONS: why the prediction of question's field is off."""
    return prediction_hint(question.path[-1], predicted, actual)
