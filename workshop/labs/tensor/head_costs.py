"""What the LM head's forward and backward cost, worked out from the shapes alone, and what torch's own observers
see of them: the truths the lab's two dispatch exercises are graded against.

With x's rows (M, K) = (B*T, 64), W (N, K) = (600, 64) and the incoming gradient G (M, N):
- forward: addmm(b, x_rows, W.t()): 2*M*K*N FLOPs for the product, M*N more to add the bias; it reads x_rows,
  W and b and writes the (M, N) logits;
- backward: two mm, dW = G.t() @ x_rows and dx = G @ W, 2*M*K*N FLOPs each; db = G summed over its rows;
  the rest are views (t, view, detach), which move no data.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from workshop.labs.tensor.python_key import CountingMode

MM, ADDMM, SUM = "aten.mm.default", "aten.addmm.default", "aten.sum.dim_IntList"


def analytic(m: int, k: int, n: int, element: int) -> dict[str, dict]:
    """ "forward" and "backward": the head's costs from its shapes, each {"flops": op name -> FLOPs, the ops that
    do arithmetic only; "bytes": op name -> bytes read and written, the ops that are not views}. element: bytes
    per element (4: float32)."""
    forward = {
        "flops": {ADDMM: 2 * m * k * n + m * n},
        "bytes": {ADDMM: element * (m * k + n * k + n + m * n)},
    }
    backward = {
        "flops": {MM: 2 * (2 * m * k * n)},
        "bytes": {
            # each mm reads G (M, N) and one of x_rows (M, K), W (N, K), and writes the other's shape
            MM: 2 * element * (m * n + m * k + n * k),
            SUM: element * (m * n + n),  # reads G, writes db (N,)
        },
    }
    return {"forward": forward, "backward": backward}


def head_leaves(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> dict[str, torch.Tensor]:
    """Fresh leaves x (B, T, K), W (N, K), b (N,) that require grad, each with its own storage."""
    return {name: t.detach().clone().requires_grad_() for name, t in (("x", x), ("W", W), ("b", b))}


def gradient(x: torch.Tensor, W: torch.Tensor, seed: int) -> torch.Tensor:
    """The incoming gradient G (B, T, N) of the head's output: drawn on the CPU, the same on every device."""
    shape = (*x.shape[:-1], W.shape[0])
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=generator, dtype=x.dtype).to(x.device)


def torch_flops(leaves: dict[str, torch.Tensor], G: torch.Tensor) -> dict[str, dict[str, int]]:
    """FlopCounterMode's count of the head's forward and backward, per op. It counts a matmul's product only: an
    addmm's bias is not in it."""
    found = {}
    with FlopCounterMode(display=False) as counter:
        logits = F.linear(leaves["x"], leaves["W"], leaves["b"])
    found["forward"] = counter.get_flop_counts()["Global"]
    with FlopCounterMode(display=False) as counter:
        logits.backward(G)
    found["backward"] = counter.get_flop_counts()["Global"]
    # keyed by packet (aten.mm): named like the ops a mode sees, the default overload's name
    return {phase: {f"{op}.default": int(v) for op, v in c.items()} for phase, c in found.items()}


class OpLog(CountingMode):
    """The workshop's own mode that only lists the ops it sees: the truth the learner's subclass is graded against
    (the dispatcher lab's recorder hands each op on below the Python key itself, a forward-only tool)."""

    def __init__(self):
        super().__init__(None)
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops.append(str(func))
        return func(*args, **(kwargs or {}))


def backward_ops(leaves: dict[str, torch.Tensor], G: torch.Tensor) -> list[str]:
    """The aten ops the head's backward runs, in order, as a mode sees them arrive at the Python key:
    "aten.mm.default", ..."""
    logits = F.linear(leaves["x"], leaves["W"], leaves["b"])
    with OpLog() as log:
        logits.backward(G)
    return log.ops
