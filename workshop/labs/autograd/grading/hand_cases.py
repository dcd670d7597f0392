"""What the hand-gradient exercises are graded on: the lab's real batch in float32 and float64 (and the
cross-entropy once more on logits shifted by +1000, where a softmax without its max shift overflows), each with
autograd's answer for every output and the facts of the input that a diagnosis reads
(grading/gradient_diagnosis.py).

The inputs do not require grad; they cross to the worker as copies (the learner's in-place edits stay there).
tf32_call is the probe that runs a hand function there with TF32 on, for the precision section.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from workshop.engine import Case
from workshop.labs.autograd.batch import HeadBatch, leaves
from workshop.labs.autograd.hand_grads import autograd_forward_backward, tf32
from workshop.minigpt.model import PAD_ID, lm_loss

DTYPES = (torch.float32, torch.float64)
FLOAT32 = "float32"  # the label of each exercise's float32 case (dtype_name)
# past exp's overflow in float32 (88.7) and float64 (709.8); softmax ignores it
LOGIT_SHIFT = 1000.0


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def facts(targets: torch.Tensor, dtype: torch.dtype) -> dict:
    """What a diagnosis may read of an input (and name in its message): where <pad> is, N real targets of M
    positions, and what the dtype keeps."""
    pad = targets.reshape(-1) == PAD_ID  # (M,) True on <pad> rows
    n = int((~pad).sum())
    return {
        "pad": pad,
        "pad_id": PAD_ID,
        "n": n,
        "m": pad.numel(),
        "n_pad": int(pad.sum()),
        "dtype": dtype,
        "float64": dtype == torch.float64,
        "kept": -math.log10(torch.finfo(dtype).eps),  # significant digits the dtype keeps
        "limit": math.log(torch.finfo(dtype).max),  # exp() overflows past this
        "one_over_n32": float(torch.tensor(1 / n, dtype=torch.float32)) * n,  # fl32(1/N) * N
        "largest": None,
        "over_all": None,
    }


def cross_entropy_case(label: str, logits: torch.Tensor, targets: torch.Tensor) -> Case:
    """Autograd's loss and dL/dlogits; facts: what exp() was given, and the loss over every position (<pad>
    scored like a real target)."""
    z = logits.detach().clone().requires_grad_()  # (B, T, V)
    loss = lm_loss(z, targets)
    loss.backward()
    rows = logits.reshape(-1, logits.shape[-1]).double()  # (M, V)
    found = facts(targets, logits.dtype) | {
        "largest": float(logits.max()),
        "over_all": float(F.cross_entropy(rows, targets.reshape(-1))),  # no ignore_index
    }
    return Case(label, (logits, targets), {"loss": loss.detach(), "dlogits": z.grad}, found)


def cross_entropy_cases(batch: HeadBatch) -> list[Case]:
    with (
        torch.no_grad()
    ):  # dtype -> the head's logits (B, T, V), F.linear(x, W, b) on leaves in that dtype
        logits = {dtype: F.linear(*leaves(batch, dtype).values()) for dtype in DTYPES}
    big = logits[torch.float32] + LOGIT_SHIFT
    return [
        *(cross_entropy_case(dtype_name(dtype), z, batch.targets) for dtype, z in logits.items()),
        cross_entropy_case(f"float32, logits + {LOGIT_SHIFT:.0f}", big, batch.targets),
    ]


def linear_cases(batch: HeadBatch) -> list[Case]:
    """Inputs: autograd's dL/dlogits (so a wrong cross-entropy cannot spoil this exercise), x and W."""
    return [linear_case(batch, dtype) for dtype in DTYPES]


def linear_case(batch: HeadBatch, dtype: torch.dtype) -> Case:
    t = leaves(batch, dtype)
    want = autograd_forward_backward(t["x"], t["W"], t["b"], batch.targets)
    args = (want["dlogits"], t["x"].detach(), t["W"].detach())
    expected = {output: want[output] for output in ("dW", "db", "dx")}
    return Case(dtype_name(dtype), args, expected, facts(batch.targets, dtype))


def tf32_call(function, on: bool, *args):
    """function(*args) with TF32 matmuls `on` (a setting of the process that runs it: the worker's)."""
    with tf32(on):
        return function(*args)
