"""Grading the hand gradients (exercises cross_entropy_grad and linear_grads) against autograd's.

Each exercise is run on the lab's real batch in float32 and float64 (and the cross-entropy once more on logits
shifted by +1000, where a softmax without its max shift overflows), on inputs that do not require grad, in the
worker (`impl` is a grading.solution.Solution: the arguments and the result cross the wire as copies), watched
there for autograd on every thread; the learner's source is read here for it too (grading/no_autograd.py).
Every result must be within precision.error_bound of autograd's; a failure comes with a diagnosis computed from
the learner's output (gradient_diagnosis.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workshop.grading.no_autograd import check_no_autograd
from workshop.i18n import _
from workshop.lab import LabContext
from workshop.labs.autograd.batch import HeadBatch, leaves
from workshop.labs.autograd.gradient_diagnosis import Evidence, diagnose
from workshop.labs.autograd.hand_grads import autograd_forward_backward
from workshop.labs.autograd.precision import CHAPTER_ATOL, error_bound, max_abs_error
from workshop.minigpt.model import lm_loss

DTYPES = (torch.float32, torch.float64)
LOGIT_SHIFT = (
    1000.0  # past exp's overflow in float32 (88.7) and float64 (709.8); softmax ignores it
)
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


def grade(ctx: LabContext, function: str, impl, cases: list[Case]) -> list[Comparison]:
    """Run impl (in the worker, watched for autograd) on every case; check each output against autograd's,
    then that no autograd was named or used."""
    found = []
    for case in cases:
        result = impl(*case.args)  # the worker gets copies: its in-place edits stay there
        outputs = unpack(function, result, tuple(case.expected))
        for name, got in zip(case.expected, outputs, strict=True):
            found.append(compare(ctx, function, case, name, got))
    check_no_autograd(ctx, function, impl)
    return found


def unpack(function: str, result, names: tuple[str, ...]) -> tuple:
    if not isinstance(result, tuple | list) or len(result) != len(names):
        raise TypeError(
            _("{function} returned {what}; return the tuple ({names})").format(
                function=function, what=type(result).__name__, names=", ".join(names)
            )
        )
    return tuple(result)


def compare(ctx: LabContext, function: str, case: Case, name: str, got) -> Comparison:
    want = case.expected[name]
    error = max_abs_error(got, want)
    bound = error_bound(want, atol=math.inf if name == "loss" else CHAPTER_ATOL)
    found = Comparison(function, case.label, name, error, bound, float(want.abs().max()))
    message = None
    if not found.passed:
        message = diagnose(Evidence(name, got, want, case.targets, case.largest_logit))
    ctx.check_max(
        _("{function}: {symbol} = autograd's ({label}): max abs error").format(
            function=function, symbol=SYMBOL[name], label=case.label
        ),
        error,
        bound,
        message=message,
    )
    return found
