"""Grading the hand gradients (exercises cross_entropy_grad and linear_grads) against autograd's.

Each exercise is run on the lab's real batch in float32 and float64 (and the cross-entropy once more on logits
shifted by +1000, where a softmax without its max shift overflows), on inputs that do not require grad, in the
worker process (the worker protocol: the arguments and results cross the wire as copies), watched there for autograd
(no_autograd.py, through probes.py). Every result must be within precision.error_bound of autograd's. The checks of
an exercise: the mistake its outputs show, when a diagnosis recognises one (gradient_diagnosis.py), a
diagnosis check, so that it is the failure the learner reads first; each output against autograd's, its
message the diagnosis of that output; one diagnosis check per thing "no autograd" forbids, and one for autograd
named in the learner's source (read here, in the lab's process, where the learner cannot hide it by switching
the watch off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaves
from workshop.labs.autograd.grading.gradient_diagnosis import Diagnosis, Evidence, diagnose
from workshop.labs.autograd.grading.no_autograd import (
    EXAMPLES,
    FORBIDDEN,
    HAND_RULES,
    add_seen,
    watched_call,
)
from workshop.labs.autograd.hand_grads import autograd_forward_backward
from workshop.labs.autograd.precision import CHAPTER_ATOL, error_bound, max_abs_error
from workshop.minigpt.model import lm_loss

DTYPES = (torch.float32, torch.float64)
FLOAT32 = "float32"  # the label of each exercise's float32 case (dtype_name)
# past exp's overflow in float32 (88.7) and float64 (709.8); softmax ignores it
LOGIT_SHIFT = 1000.0
SYMBOL = {"loss": "L", "dlogits": "dL/dlogits", "dW": "dL/dW", "db": "dL/db", "dx": "dL/dx"}


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


@dataclass
class Case:
    """One input an exercise is graded on: the arguments, and autograd's answer for each output."""

    label: str  # "float32", "float64", "float32, logits + 1000"
    args: tuple  # the exercise function's arguments, none of them requiring grad
    expected: dict[str, torch.Tensor]  # output name -> autograd's value
    targets: torch.Tensor  # (B, T): where the <pad> rows are, for the diagnosis
    largest_logit: float | None = None  # for the cross-entropy: what exp() was given


@dataclass
class Comparison:
    """One output of the learner's (or the reference's) function against autograd's, as this run measured it."""

    function: str
    label: str
    output: str  # "loss", "dlogits", "dW", "db", "dx"
    max_abs_error: float
    bound: float
    scale: float  # max |autograd's value|

    @property
    def passed(self) -> bool:
        return self.max_abs_error <= self.bound


def autograd_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
    z = logits.detach().clone().requires_grad_()  # (B, T, V)
    loss = lm_loss(z, targets)
    loss.backward()
    return {"loss": loss.detach(), "dlogits": z.grad}


def cross_entropy_cases(batch: HeadBatch) -> list[Case]:
    cases = []
    for dtype in DTYPES:
        t = leaves(batch, dtype)
        with torch.no_grad():
            logits = F.linear(t["x"], t["W"], t["b"])  # (B, T, V)
        cases.append(Case(dtype_name(dtype), (logits, batch.targets), {}, batch.targets))
    big = cases[0].args[0] + LOGIT_SHIFT
    cases.append(
        Case(f"float32, logits + {LOGIT_SHIFT:.0f}", (big, batch.targets), {}, batch.targets)
    )
    for case in cases:
        case.expected = autograd_cross_entropy(*case.args)
        case.largest_logit = float(case.args[0].max())
    return cases


def linear_cases(batch: HeadBatch) -> list[Case]:
    """Inputs: autograd's dL/dlogits (so a wrong cross-entropy cannot spoil this exercise), x and W."""
    cases = []
    for dtype in DTYPES:
        t = leaves(batch, dtype)
        want = autograd_forward_backward(t["x"], t["W"], t["b"], batch.targets)
        args = (want.dlogits, t["x"].detach(), t["W"].detach())
        expected = {"dW": want.dW, "db": want.db, "dx": want.dx}
        cases.append(Case(dtype_name(dtype), args, expected, batch.targets))
    return cases


@dataclass
class Graded:
    """What grading one exercise measured: each output against autograd's, and what the function returned."""

    comparisons: list[Comparison]
    # case label -> output name -> the function's tensor
    returned: dict[str, dict[str, torch.Tensor]]


def grade(ctx: LabContext, function: str, impl, cases: list[Case]) -> Graded:
    """Run impl (a learner.learner_code.Solution) on every case, watched for autograd where it runs (the watch is a
    probe: no_autograd.watched_call); record the checks in the module docstring's order."""
    measured, seen, returned = [], {}, {}
    for case in cases:  # the worker gets copies: the learner's in-place edits stay there
        result, watched = impl.probe(watched_call, list(HAND_RULES), *case.args)
        add_seen(seen, watched)
        outputs = unpack(function, result, tuple(case.expected))
        returned[case.label] = dict(zip(case.expected, outputs, strict=True))
        for name, got in returned[case.label].items():
            measured.append(measure(function, case, name, got))
    check_mistake(ctx, function, [diagnosis for _, diagnosis in measured])
    for comparison, diagnosis in measured:
        ctx.check_max(
            _("{function}: {symbol} = autograd's ({label}): max abs error").format(
                function=function, symbol=SYMBOL[comparison.output], label=comparison.label
            ),
            comparison.max_abs_error,
            comparison.bound,
            message=diagnosis.message if diagnosis else None,
        )
    check_no_autograd(ctx, function, seen, HAND_RULES)
    check_autograd_not_named(ctx, function, impl)
    return Graded([comparison for comparison, _ in measured], returned)


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


def check_no_autograd(ctx: LabContext, function: str, seen: dict, rules: tuple[str, ...]) -> None:
    """One check per thing "no autograd" forbids (no_autograd.FORBIDDEN), from what the watch saw."""
    for rule in rules:
        found = seen.get(rule, {"count": 0, "examples": []})
        ctx.check_max(
            _("{function}, no autograd: {forbidden}").format(
                function=function, forbidden=_(FORBIDDEN[rule])
            ),
            found["count"],
            0,
            diagnosis=True,
            message=_(
                "{function} used {forbidden}: {examples}. README.md, Exercises, lists what the "
                "exercises may not use"
            ).format(
                function=function,
                forbidden=_(FORBIDDEN[rule]),
                examples=", ".join(found["examples"]),
            ),
        )


def check_autograd_not_named(ctx: LabContext, function: str, impl) -> None:
    """What the watch saw was seen where the learner's code runs, and a hostile learner can hide from it there:
    this check is made here, from the learner's source as the lab's process reads it (a name built at run
    time escapes it; learner/source_check.py)."""
    named = [f"{found.what} (line {found.line})" for found in impl.autograd_named()]
    ctx.check_max(
        _("{function}, no autograd: named in its code (the grader's reading of your file)").format(
            function=function
        ),
        len(named),
        0,
        diagnosis=True,
        message=_(
            "{function} names autograd in your file: {examples}. README.md, Exercises, lists what the "
            "exercises may not use"
        ).format(function=function, examples=", ".join(named[:EXAMPLES])),
    )


def unpack(function: str, result, names: tuple[str, ...]) -> tuple:
    if not isinstance(result, tuple | list) or len(result) != len(names):
        raise TypeError(
            _("{function} returned {what}; return the tuple ({names})").format(
                function=function, what=type(result).__name__, names=", ".join(names)
            )
        )
    return tuple(result)


def measure(function: str, case: Case, name: str, got) -> tuple[Comparison, Diagnosis | None]:
    """One output against autograd's; a failed one comes with its diagnosis."""
    want = case.expected[name]
    error = max_abs_error(got, want)
    bound = error_bound(want, atol=math.inf if name == "loss" else CHAPTER_ATOL)
    found = Comparison(function, case.label, name, error, bound, float(want.abs().max()))
    if found.passed:
        return found, None
    logits = case.args[0] if name == "loss" else None
    return found, diagnose(Evidence(name, got, want, case.targets, case.largest_logit, logits))
