"""Proof that code computed its gradients without autograd: watch every aten op it runs, below autograd.

Autograd can hand out a gradient in two ways, and each leaves a trace at the dispatcher:
- its engine ran a backward (`.backward()`, `torch.autograd.grad`, `torch.func.grad`, `autograd.functional`):
  the ops the engine calls run while `torch._C._current_graph_task_id()` is not -1;
- the forward recorded a graph to differentiate: an op ran with grad mode on and an argument that requires
  grad. The grader passes tensors that do not, so this happens only when the code asked for it
  (`requires_grad_()`), for instance to call a grad_fn node by hand.
A TorchDispatchMode sees every aten op on this thread and on the engine's threads (the engine carries the mode
along with the rest of the thread-local state), so neither can hide.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from workshop.i18n import _

EXAMPLES = 3  # op names kept for the message


class AutogradSpy(TorchDispatchMode):
    """Counts the aten ops run by autograd's engine and the ops that recorded a graph while it was on."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here runs under torch.compile. Left True (torch 2.13's default), the subclass's
        # __torch_dispatch__ is wrapped in torch._disable_dynamo, whose first call imports torch._dynamo: 3.5 s.
        return False

    def __init__(self, watch_recording: bool = True):
        super().__init__()
        self.watch_recording = watch_recording  # False where the caller itself runs grad_fn nodes
        self.engine_ops: list[str] = []
        self.recording_ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch._C._current_graph_task_id() != -1:
            self.engine_ops.append(str(func))
        elif self.watch_recording and torch.is_grad_enabled() and requires_grad(args, kwargs):
            self.recording_ops.append(str(func))
        return func(*args, **kwargs)

    @property
    def count(self) -> int:
        return len(self.engine_ops) + len(self.recording_ops)

    def evidence(self) -> str:
        """What was seen, in one line: how many ops of each kind, and the first few names."""
        parts = []
        if self.engine_ops:
            parts.append(
                _("{n} ops run by autograd's backward engine ({names})").format(
                    n=len(self.engine_ops), names=", ".join(self.engine_ops[:EXAMPLES])
                )
            )
        if self.recording_ops:
            parts.append(
                _("{n} ops that recorded an autograd graph ({names})").format(
                    n=len(self.recording_ops), names=", ".join(self.recording_ops[:EXAMPLES])
                )
            )
        return "; ".join(parts) or _("none")


def requires_grad(args, kwargs) -> bool:
    return any(isinstance(a, torch.Tensor) and a.requires_grad for a in tree_leaves((args, kwargs)))
