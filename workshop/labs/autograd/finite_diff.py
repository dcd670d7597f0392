"""The third witness: finite differences. torch.autograd.gradcheck nudges every input entry by +-eps (float64)
and compares (L(v + eps) - L(v - eps)) / 2eps with the analytical gradient.

Three analytical gradients are put on trial, each against finite differences of a loss torch computes (never of
the reference: in the learner's edition it is a stub): autograd's, of the LM head's loss; the hand cross-entropy's
dL/dlogits, of lm_loss; the hand linear layer's dL/dx, dL/dW and dL/db, of sum(G * (x W^T + b)) for a fixed G.
Each exercise's function (the learner's, or the reference in a plain run) is the backward of an autograd.Function,
and gradcheck calls it only for the analytical side: a few calls, wherever the function runs.

The LM head has 38,400 + 600 parameters and each probe costs two forward passes, so the full Jacobian is checked
on a slice of rows: x's rows and b (ROWS x 64 + 600 probes), the logits of one real and one <pad> row (2 x 600).
W and everything together are checked in fast mode: gradcheck compares one random directional derivative
u . J . v, numerically and analytically, in two forward passes instead of 2 x 39,000.
"""

from __future__ import annotations

import contextlib
import time

import torch
import torch.nn.functional as F

from workshop.i18n import N_
from workshop.minigpt.model import PAD_ID, lm_loss

# a slice of the batch: 6 rows with real targets, 2 <pad> rows (zero gradient)
ROWS_REAL, ROWS_PAD = 6, 2
TOLERANCE = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-3}  # gradcheck's defaults, stated in result.json
# Who is on trial: a record's "gradient" (translated where shown); an exercise's function is named by its
# exercise's name, which the lab gives.
AUTOGRAD = N_("autograd")


class CrossEntropyByHand(torch.autograd.Function):
    """lm_loss of logit rows z (R, V) as one sentence, whose backward is the hand cross-entropy's dL/dlogits
    (loss_and_dlogits(logits, targets) -> (loss, dL/dlogits))."""

    @staticmethod
    def forward(ctx, z, targets, loss_and_dlogits):
        ctx.save_for_backward(z)
        ctx.targets, ctx.loss_and_dlogits = targets, loss_and_dlogits
        return lm_loss(z[None], targets[None])

    @staticmethod
    def backward(ctx, grad_loss):
        (z,) = ctx.saved_tensors
        with (
            torch.enable_grad()
        ):  # as the function is called anywhere else (a backward turns grad mode off)
            # (1, R, V)
            _loss, dlogits = ctx.loss_and_dlogits(z.detach()[None], ctx.targets[None])
        return grad_loss * dlogits[0], None, None


class LinearByHand(torch.autograd.Function):
    """sum(G * (x W^T + b)) for a fixed G (R, V), whose backward is the hand linear layer's
    (grads_of_linear(G, x, W) -> (dW, db, dx))."""

    @staticmethod
    def forward(ctx, x, W, b, G, grads_of_linear):
        ctx.save_for_backward(x, W, G)
        ctx.grads_of_linear = grads_of_linear
        return (F.linear(x, W, b) * G).sum()

    @staticmethod
    def backward(ctx, grad):
        x, W, G = ctx.saved_tensors
        with torch.enable_grad():
            dW, db, dx = ctx.grads_of_linear(G[None], x[None], W)  # dlogits (1, R, V), x (1, R, C)
        return grad * dx[0], grad * dW, grad * db, None, None


def autograd_head_loss(x, W, b, targets):
    # lm_loss wants (B, T, ...): one row "sentence"
    return lm_loss(F.linear(x, W, b)[None], targets[None])


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


def head_slice(
    hidden: torch.Tensor, targets: torch.Tensor, W: torch.Tensor, b: torch.Tensor
) -> dict:
    """The rows gradcheck probes, in float64: x's rows (R, 64), their targets (R,), W (600, 64), b (600,)."""
    rows = pick_rows(targets)
    return {
        "x": hidden.reshape(-1, hidden.shape[-1])[rows].detach().double(),  # (8, 64)
        "targets": targets.reshape(-1)[rows],
        "W": W.detach().double(),
        "b": b.detach().double(),
    }


def gradcheck_autograd(head: dict) -> list[dict]:
    """autograd's gradient of the LM head's loss."""
    return gradchecks(
        AUTOGRAD, head_plans(lambda x, W, b: autograd_head_loss(x, W, b, head["targets"]), head)
    )


def gradcheck_linear(who: str, grads_of_linear, head: dict, G: torch.Tensor) -> list[dict]:
    """The hand linear layer's dL/dx, dL/dW, dL/db against finite differences of sum(G * (x W^T + b));
    G (R, 600). who: the exercise's name, the records' "gradient"."""
    return gradchecks(
        who, head_plans(lambda x, W, b: LinearByHand.apply(x, W, b, G, grads_of_linear), head)
    )


def head_plans(loss, head: dict) -> list[tuple]:
    """Full mode on x's rows and b, fast mode on x, W and b together (head: head_slice's)."""
    inputs = {name: head[name] for name in ("x", "W", "b")}
    return [
        (N_("x rows and b, every entry"), loss, inputs, ("x", "b"), False),
        (N_("x rows, W and b, one random direction"), loss, inputs, ("x", "W", "b"), True),
    ]


def gradcheck_cross_entropy(who: str, loss_and_dlogits, head: dict) -> list[dict]:
    """The hand cross-entropy's dL/dlogits against finite differences of lm_loss: every entry of one real and
    one <pad> row (1200 probes; all 8 rows would take ~7 s here), and all the rows in one random direction.
    who: the exercise's name, the records' "gradient"."""
    pair = torch.tensor([0, ROWS_REAL])  # pick_rows puts the real rows first
    logits = F.linear(head["x"], head["W"], head["b"]).detach()  # (R, 600)

    def loss_of(targets):
        return lambda z: CrossEntropyByHand.apply(z, targets, loss_and_dlogits)

    plans = [
        (
            N_("logits of a real and a <pad> row, every entry"),
            loss_of(head["targets"][pair]),
            {"z": logits[pair]},
            ("z",),
            False,
        ),
        (
            N_("logit rows, one random direction"),
            loss_of(head["targets"]),
            {"z": logits},
            ("z",),
            True,
        ),
    ]
    return gradchecks(who, plans)


def gradchecks(who: str, plans: list[tuple]) -> list[dict]:
    """One gradcheck per plan: (what it probes (N_, shown translated), the loss (loss(**inputs) -> a 0-dim
    tensor), its inputs by name, the names it differentiates, fast mode or not)."""
    with one_thread():
        return [gradcheck(who, *plan) for plan in plans]


def gradcheck(who: str, what: str, loss_of, inputs: dict, wrt: tuple[str, ...], fast: bool) -> dict:
    """One gradcheck's record, as result.json keeps it."""
    names = list(inputs)
    args = tuple(inputs[n].clone().requires_grad_(n in wrt) for n in names)

    def loss(*values):
        return loss_of(**dict(zip(names, values, strict=True)))

    start = time.perf_counter()
    ok = torch.autograd.gradcheck(loss, args, fast_mode=fast, raise_exception=False, **TOLERANCE)
    return {
        "gradient": who,  # AUTOGRAD or an exercise's name: whose gradient was on trial
        "probes": what,  # what was nudged (N_, shown translated)
        "fast_mode": fast,
        "passed": bool(ok),
        "n_probed": sum(inputs[n].numel() for n in wrt),  # how many input entries the probes cover
        "seconds": round(time.perf_counter() - start, 3),
    }
