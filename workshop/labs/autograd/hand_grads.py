"""The LM head's gradients derived by hand, as plain tensor formulas, next to what autograd computes.

These are the instructor's solutions of the lab's first two exercises (the learner writes the same two functions
in their workspace). Forward, with M = B*T rows, V = 600 classes, and only the N rows whose target is not <pad>
counted:
    Z = X W^T + b                          (M, V) logits
    P = softmax(Z)                         (M, V)
    L = -(1/N) sum_{i real} log P[i, t_i]
Backward (README.md derives it):
    G  = dL/dZ = mask * (P - onehot(t)) / N    (M, V)    cross_entropy_grad
    dW = G^T X                                 (V, C)    linear_grads
    db = sum_i G[i]                            (V,)
    dX = G W                                   (M, C)
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from workshop.minigpt.model import PAD_ID, lm_loss

# The gradients of the LM head's loss with respect to the logits and to each input of the head, in the order
# the backward makes them: dlogits (B, T, V) dL/dZ, dW (V, C), db (V,), dx (B, T, C)
GRADIENTS = ("dlogits", "dW", "db", "dx")
OUTPUTS = ("loss", *GRADIENTS)  # the loss () first: the mean cross-entropy over the real targets


def cross_entropy_grad(
    logits: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """lm_loss(logits, targets) and dL/dlogits, with no autograd: logits (B, T, V), targets (B, T) int64."""
    V = logits.shape[-1]
    Z = logits.reshape(-1, V)  # (M, V)
    t = targets.reshape(-1)  # (M,)
    mask = (t != PAD_ID).to(logits.dtype)  # (M,) 1 for real targets, 0 for <pad>
    n = mask.sum()  # N, the number of real targets: the mean divides by it
    shifted = Z - Z.amax(dim=1, keepdim=True)  # softmax is shift-invariant; this keeps exp() finite
    e = shifted.exp()  # (M, V), every entry in (0, 1]
    total = e.sum(dim=1, keepdim=True)  # (M, 1) >= 1
    # A <pad> row picks the column of <pad> (a valid class id); its mask zeroes what it picked.
    log_p_target = shifted.gather(1, t[:, None])[:, 0] - total[:, 0].log()  # (M,)
    loss = -(log_p_target * mask).sum() / n
    onehot = F.one_hot(t, num_classes=V).to(logits.dtype)  # (M, V) Y
    G = (e / total - onehot) * (mask / n)[:, None]  # (M, V) (P - Y) on real rows, weighed 1/N
    return loss, G.reshape(logits.shape)


def linear_grads(
    dlogits: torch.Tensor, x: torch.Tensor, W: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dL/dW, dL/db, dL/dx of Z = x W^T + b, given G = dL/dZ: dlogits (B, T, V), x (B, T, C), W (V, C)."""
    G = dlogits.reshape(-1, dlogits.shape[-1])  # (M, V)
    X = x.reshape(-1, x.shape[-1])  # (M, C)
    return G.T @ X, G.sum(dim=0), (G @ W).reshape(x.shape)  # (V, C), (V,), (B, T, C)


def autograd_forward_backward(
    x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, targets: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The same quantities from the real thing, by name (OUTPUTS): lm_loss(F.linear(x, W, b)) and .backward()
    on fresh leaves."""
    x, W, b = (t.detach().clone().requires_grad_() for t in (x, W, b))
    logits = F.linear(x, W, b)  # (..., V)
    logits.retain_grad()  # a non-leaf keeps its .grad only when asked
    loss = lm_loss(logits, targets)
    loss.backward()
    grads = (loss.detach(), logits.grad, W.grad, b.grad, x.grad)
    return dict(zip(OUTPUTS, grads, strict=True))


@contextlib.contextmanager
def tf32(enabled: bool):
    """Set TF32 for CUDA matmuls and cuDNN, and put both flags back afterwards, whatever happens."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved
