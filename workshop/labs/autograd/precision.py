"""How close is close enough: the bound every gradient comparison uses, and what float32 and TF32 cost.

The chapter asks hand gradients to match `.backward()` to 1e-7. Read as an absolute error, that says nothing in
float64 (whose errors are ~1e-17 here) and little for a small gradient (dL/dx peaks at 3.7e-3, where 1e-7 is
2.7e-5 of its size). So a comparison passes when its max abs error is within the chapter's 1e-7 AND within
EPS_FACTOR units of rounding of the dtype, times the gradient's largest entry: the tighter of the two binds.

A comparison of two float32 computations cannot show float32's (or TF32's) own error when both carry it: the
errors are measured here against a float64 reference instead.
"""

from __future__ import annotations

import math

import torch

from workshop.i18n import N_
from workshop.labs.autograd.batch import HeadBatch, leaves
from workshop.labs.autograd.hand_grads import OUTPUTS, autograd_forward_backward, tf32

CHAPTER_ATOL = 1e-7  # the chapter's Definition of Done: hand gradients equal .backward()'s to 1e-7
# Measured max |error| / max |gradient| of correct code (this CPU and the committed H200 run): at most 4.7 eps
# in float32 and 8.7 eps in float64. 64 eps leaves a margin of 7x over the worst, and a gradient off by one part
# in 10^13 in float64 (or 10^5 in float32) fails.
EPS_FACTOR = 64
# Who computed a precision row (result.json's "path"; the summary shows it translated).
HAND, AUTOGRAD, HAND_VS_AUTOGRAD = N_("hand"), N_("autograd"), N_("hand vs autograd")
# TF32 keeps 10 mantissa bits of 23: its errors are ~2^13 x float32's; 10x proves it ran
TF32_MIN_GROWTH = 10


def error_bound(reference: torch.Tensor, atol: float = CHAPTER_ATOL) -> float:
    """The largest max-abs error a correct result may have against `reference` (see the module's docstring).

    atol=math.inf for a value the chapter's 1e-7 is not about: the loss (~3.7, whose float32 spacing is 2.4e-7).
    """
    scale = float(reference.abs().max())
    return min(atol, EPS_FACTOR * torch.finfo(reference.dtype).eps * scale)


def max_abs_error(got, want: torch.Tensor) -> float:
    """max |got - want|; inf when got is not a tensor of want's shape (nothing to compare), NaN if got has any."""
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return math.inf
    return float((got.detach().to(want.dtype) - want).abs().max()) if want.numel() else 0.0


def precision_row(path: str, tf32_on: bool, got: dict, reference: dict) -> dict:
    """One float32 computation of the head's gradients measured against float64 autograd (or HAND_VS_AUTOGRAD:
    the two float32 results against each other), as result.json keeps it."""
    scale = {name: float(reference[name].abs().max()) for name in OUTPUTS}
    return {
        "path": path,  # HAND, AUTOGRAD, or HAND_VS_AUTOGRAD
        "tf32": tf32_on,
        # gradient name -> max |g - reference| / max |reference|, in float64 (the more precise dtype)
        "relative_error": {
            name: max_abs_error(got[name], reference[name].to(torch.float64)) / scale[name]
            for name in OUTPUTS
        },
        # gradient name -> max |reference|: relative_error's denominator
        "reference_largest": scale,
    }


def float32_against_float64(
    batch: HeadBatch, device: str, hand: dict[bool, dict[str, torch.Tensor]]
) -> list[dict]:
    """float32 autograd gradients (TF32 off, and on where CUDA has it) against float64 autograd, and the hand
    ones beside them where `hand` has them: TF32 on/off -> the graded functions' float32 results (the
    learner's, or the reference's in a plain run; absent where an exercise gave none)."""
    t64 = leaves(batch, torch.float64)
    reference = autograd_forward_backward(t64["x"], t64["W"], t64["b"], batch.targets)
    t32 = leaves(batch, torch.float32)
    rows = []
    for enabled in (False, True) if device == "cuda" else (False,):
        with tf32(enabled):
            auto = autograd_forward_backward(t32["x"], t32["W"], t32["b"], batch.targets)
        if enabled in hand:
            rows.append(precision_row(HAND, enabled, hand[enabled], reference))
        rows.append(precision_row(AUTOGRAD, enabled, auto, reference))
        if enabled in hand:
            rows.append(precision_row(HAND_VS_AUTOGRAD, enabled, hand[enabled], auto))
    return rows


def tf32_effect(rows: list[dict], gradient: str = "dW") -> dict | None:
    """What TF32 did to `gradient`, as this run measured it (relative errors against float64), as result.json
    keeps it; None where the run had no TF32 (the CPU)."""
    error = {(r["path"], r["tf32"]): r["relative_error"][gradient] for r in rows}
    if (AUTOGRAD, True) not in error:
        return None
    off, on = error[AUTOGRAD, False], error[AUTOGRAD, True]
    return {
        "gradient": gradient,
        "autograd_off": off,  # float32 autograd, TF32 off
        "autograd_on": on,  # float32 autograd, TF32 on
        # hand against autograd, both under TF32: what comparing the two can show (None: no hand results)
        "hand_vs_autograd_on": error.get((HAND_VS_AUTOGRAD, True)),
        "growth": on / off if off else math.inf,
    }
