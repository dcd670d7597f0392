"""The third witness: finite differences. torch.autograd.gradcheck nudges every input entry by +-eps (float64)
and compares (L(v + eps) - L(v - eps)) / 2eps with the analytical gradient.

Two analytical gradients are put on trial: autograd's, and the hand formulas (wrapped in an autograd.Function
whose backward *is* hand_forward_backward). The LM head has 38,400 + 600 parameters; probing each one costs two
forward passes, so the full Jacobian is checked only for the rows of x and for b (ROWS x 64 + 600 probes).
W and everything together are checked in fast mode: gradcheck compares one random directional derivative
u . J . v, numerically and analytically, in two forward passes instead of 2 x 39,000.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workshop.i18n import N_
from workshop.labs.autograd.hand_grads import hand_forward_backward
from workshop.minigpt.model import PAD_ID, lm_loss

ROWS_REAL, ROWS_PAD = (
    6,
    2,
)  # a slice of the batch: 6 rows with real targets, 2 <pad> rows (zero gradient)
TOLERANCE = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}  # gradcheck's defaults, stated in result.json


class HandHeadLoss(torch.autograd.Function):
    """Loss of the LM head whose backward is the hand-derived formulas, not autograd."""

    @staticmethod
    def forward(ctx, x, W, b, targets):
        out = hand_forward_backward(x, W, b, targets)
        ctx.save_for_backward(out.dx, out.dW, out.db)
        return out.loss

    @staticmethod
    def backward(ctx, grad_loss):
        dx, dW, db = ctx.saved_tensors
        return grad_loss * dx, grad_loss * dW, grad_loss * db, None  # None: the integer targets


def autograd_head_loss(x, W, b, targets):
    return lm_loss(
        F.linear(x, W, b)[None], targets[None]
    )  # lm_loss wants (B, T, ...): one row "sentence"


@contextlib.contextmanager
def one_thread():
    """Run torch's CPU ops on one thread, then restore the count. gradcheck makes thousands of tiny ops
    ((8, 64) rows): a second OpenMP thread buys nothing there, and on a shared 2-core machine its hand-offs cost
    20x (measured: 27 s of CPU and 78 s wall with 2 threads, 1.5 s and 3 s with one)."""
    saved = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


@dataclass
class GradcheckRecord:
    gradient: str  # "hand" or "autograd" (N_, shown translated): whose gradient was on trial
    probes: str  # what was nudged (N_, shown translated)
    fast_mode: bool
    passed: bool
    n_probed: int  # how many input entries the probes cover
    seconds: float


def pick_rows(targets: torch.Tensor) -> torch.Tensor:
    """Flat row indices: the first ROWS_REAL rows with a real target, then the first ROWS_PAD <pad> rows."""
    flat = targets.reshape(-1)
    real, pad = (flat != PAD_ID).nonzero()[:, 0], (flat == PAD_ID).nonzero()[:, 0]
    if len(real) < ROWS_REAL or len(pad) < ROWS_PAD:
        raise ValueError(
            f"need {ROWS_REAL} real and {ROWS_PAD} <pad> targets, "
            f"the batch has {len(real)} and {len(pad)}"
        )
    return torch.cat([real[:ROWS_REAL], pad[:ROWS_PAD]])


def run_gradchecks(
    hidden: torch.Tensor, targets: torch.Tensor, W: torch.Tensor, b: torch.Tensor
) -> list[GradcheckRecord]:
    """gradcheck both analytical gradients, on a float64 slice of rows. Returns one record per gradcheck."""
    rows = pick_rows(targets)
    x0 = hidden.reshape(-1, hidden.shape[-1])[rows].detach().double()  # (8, 64)
    t = targets.reshape(-1)[rows]  # (8,)
    W0, b0 = W.detach().double(), b.detach().double()  # (600, 64), (600,)
    records = []
    with one_thread():
        for who, fn in ((N_("hand"), HandHeadLoss.apply), (N_("autograd"), autograd_head_loss)):
            records += gradcheck_both_ways(who, fn, x0, W0, b0, t)
    return records


def gradcheck_both_ways(who: str, fn, x0, W0, b0, t) -> list[GradcheckRecord]:
    """Full mode on x's rows and b, fast mode on x, W and b, for one analytical gradient."""
    records = []
    for what, wrt, fast in (
        (N_("x rows and b, every entry"), ("x", "b"), False),
        (N_("x rows, W and b, one random direction"), ("x", "W", "b"), True),
    ):
        inputs = {"x": x0.clone(), "W": W0.clone(), "b": b0.clone()}
        for name in wrt:
            inputs[name].requires_grad_()
        start = time.perf_counter()
        ok = torch.autograd.gradcheck(
            lambda x, W, b, fn=fn: fn(x, W, b, t),
            (inputs["x"], inputs["W"], inputs["b"]),
            fast_mode=fast,
            raise_exception=False,
            **TOLERANCE,
        )
        n_probed = sum(inputs[n].numel() for n in wrt)
        seconds = round(time.perf_counter() - start, 3)
        records.append(GradcheckRecord(who, what, fast, bool(ok), n_probed, seconds))
    return records
