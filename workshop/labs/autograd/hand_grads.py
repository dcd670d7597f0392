"""The LM head's gradients derived by hand, as plain tensor formulas, next to what autograd computes.

Forward, with M = B*T rows, V = 600 classes, and only the N rows whose target is not <pad> counted:
    Z = X W^T + b                          (M, V) logits
    P = softmax(Z)                         (M, V)
    L = -(1/N) sum_{i real} log P[i, t_i]
Backward (README.md derives it):
    G  = dL/dZ = mask * (P - onehot(t)) / N    (M, V)
    dW = G^T X                                 (V, 64)
    db = sum_i G[i]                            (V,)
    dX = G W                                   (M, 64)
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from workshop.minigpt.model import PAD_ID, lm_loss


def hand_forward_backward(
    x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, targets: torch.Tensor
) -> dict:
    """Loss and gradients of the mean cross-entropy of x @ W^T + b, with no autograd at all.

    x (..., C), W (V, C), b (V,), targets (...) with PAD_ID where nothing is predicted.
    Returns {"loss", "logits", "W", "b", "x"}: the loss and dL/d of each (dL/dlogits and dL/dx in x's shape).
    """
    if x.shape[:-1] != targets.shape:
        raise ValueError(
            f"x {tuple(x.shape)} and targets {tuple(targets.shape)} disagree on the leading dims"
        )
    if W.shape != (b.shape[0], x.shape[-1]):
        raise ValueError(
            f"W {tuple(W.shape)} must be (V, C) = ({b.shape[0]}, {x.shape[-1]}) for b and x"
        )
    with torch.no_grad():
        X = x.reshape(-1, x.shape[-1])  # (M, C)
        t = targets.reshape(-1)  # (M,)
        mask = (t != PAD_ID).to(x.dtype)  # (M,) 1 for real targets, 0 for <pad>
        n = mask.sum()
        if n == 0:
            raise ValueError("every target is <pad>: the mean cross-entropy is undefined")
        Z = X @ W.T + b  # (M, V)
        shifted = Z - Z.amax(
            dim=1, keepdim=True
        )  # softmax is shift-invariant; this keeps exp() finite
        e = shifted.exp()  # (M, V)
        P = e / e.sum(dim=1, keepdim=True)  # (M, V) rows sum to 1
        safe_t = t.clamp(min=0)  # <pad> rows pick any column; the mask zeroes them
        log_p_target = shifted.gather(1, safe_t[:, None])[:, 0] - e.sum(dim=1).log()  # (M,)
        loss = -(log_p_target * mask).sum() / n
        onehot = F.one_hot(safe_t, num_classes=W.shape[0]).to(x.dtype)  # (M, V)
        G = (P - onehot) * (mask / n)[:, None]  # (M, V) dL/dZ
        return {
            "loss": loss,
            "logits": G.reshape(*x.shape[:-1], -1),  # (..., V)
            "W": G.T @ X,  # (V, C)
            "b": G.sum(dim=0),  # (V,)
            "x": (G @ W).reshape(x.shape),  # (..., C)
        }


def autograd_forward_backward(
    x: torch.Tensor, W: torch.Tensor, b: torch.Tensor, targets: torch.Tensor
) -> dict:
    """The same quantities from the real thing: lm_loss(F.linear(x, W, b)) and .backward()."""
    logits = F.linear(x, W, b)  # (..., V)
    logits.retain_grad()  # a non-leaf keeps its .grad only when asked
    loss = lm_loss(logits, targets)
    loss.backward()
    return {"loss": loss.detach(), "logits": logits.grad, "W": W.grad, "b": b.grad, "x": x.grad}


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


def compare(hand: dict, reference: dict) -> dict[str, dict]:
    """Per tensor: max |hand - autograd| and max |autograd| (the scale the error should be read against)."""
    return {
        name: {
            "max_abs_error": float((hand[name] - reference[name]).abs().max()),
            "max_abs_value": float(reference[name].abs().max()),
            "shape": list(reference[name].shape),
        }
        for name in ("loss", "logits", "W", "b", "x")
    }
