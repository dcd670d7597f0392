"""The version counter: how autograd knows that a tensor it saved was changed in place since.

Every tensor carries a counter, `_version`, that each in-place op on its memory bumps by one; a view is handed its
base's counter (the very same object), so that writing through the view counts as writing the base. A node of the
graph remembers the version of each tensor it saved; backward compares, and refuses a changed one.
"""

from __future__ import annotations

import re

import torch
import torch.nn.functional as F

# op name -> what it does to y (B, T, 64); the run measures whether each bumps y._version
OPS = {
    "add_": lambda y: y.add_(1),
    "mul": lambda y: y.mul(2),
    "setitem": lambda y: y.__setitem__(0, 0),  # y[0] = 0
    "t": lambda y: y.view(-1, 64).t(),
    "copy_": lambda y: y.copy_(torch.zeros_like(y)),
    "detach": lambda y: y.detach(),
    "view_mul_": lambda y: y.view(-1, 64).mul_(2),
}


def bumps(x: torch.Tensor) -> dict[str, int]:
    """How much each op of OPS moves the version of a fresh copy y of x."""
    moved = {}
    for name, op in OPS.items():
        y = x.clone()
        op(y)
        moved[name] = y._version
    return moved


def through_a_view(x: torch.Tensor) -> tuple[int, int]:
    """(v._version, y._version) after v.mul_(3); v.add_(1) with v = y.view(-1, 64), y a copy of x."""
    y = x.clone()
    v = y.view(-1, 64)
    v.mul_(3)
    v.add_(1)
    return v._version, y._version


# "... [torch.FloatTensor [176, 64]], which is output 0 of ...; is at version 1; expected version 0 instead."
ERROR = re.compile(r"\[\S+ \[(?P<shape>[\d, ]+)\]\].*is at version (?P<version>\d+)", re.DOTALL)


def saved_tensor_error(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> tuple[str, int, list]:
    """The LM head's forward, then x changed in place, then backward: autograd's refusal, its text, the version
    it names and the saved tensor's shape. x (B, T, 64) is no leaf of the graph, W and b are."""
    x = x.detach().clone()
    W = W.detach().clone().requires_grad_()
    b = b.detach().clone().requires_grad_()
    logits = F.linear(x, W, b)  # addmm saves x's rows, x.view(-1, 64), to compute dL/dW
    x.mul_(2)  # after the forward: the saved rows are a view of x, so their counter moves too
    try:
        logits.sum().backward()
    except RuntimeError as e:
        text = str(e).split("\n")[0]
        found = ERROR.search(text)
        shape = [int(n) for n in found["shape"].split(",")]
        return text, int(found["version"]), shape
    raise AssertionError("backward ran on a saved tensor changed in place")


def version_facts(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor) -> dict:
    view_version, base_version = through_a_view(x)
    error, version, shape = saved_tensor_error(x, W, b)
    return {
        "bumps": bumps(x),  # op name -> how much it moved y._version
        "view_version": view_version,  # v._version after two in-place ops through v = y.view(-1, 64)
        # y._version after the same two ops: the view's counter is the base's
        "base_version": base_version,
        "error": error,  # the autograd error after x is changed in place between forward and backward
        "error_version": version,  # the version the error says the saved tensor is at
        "saved_shape": shape,  # the shape of the saved tensor the error names
    }
