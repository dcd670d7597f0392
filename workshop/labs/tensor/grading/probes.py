"""Probes of the tensor lab: trusted code that runs in the worker beside the learner's function (the worker
protocol; workshop/learner/worker.py) and returns wire values, each called by the engine as
probe(learner_function, *case.args) -> (result, seen).

What each one reports is said where the learner's code runs: the lab backs every verdict with what it measures
itself (torch's view, the shapes' counts, a reference mode's ops)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from workshop.labs.tensor.anatomy import shares_storage
from workshop.labs.tensor.head_costs import OpLog, head_leaves
from workshop.labs.tensor.python_key import CountingMode, NoResult, recording_class


class ViewLog(OpLog):
    """The ops a view exercise's function runs, and the arguments of its last as_strided: [size, stride, offset]
    (offset None: as_strided's default, the input's own)."""

    def __init__(self):
        super().__init__()
        self.as_strided: list | None = None
        self.as_strided_failed = (
            False  # the last op was as_strided, and it raised (out of the storage's bounds)
        )

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        is_as_strided = func is torch.ops.aten.as_strided.default
        if is_as_strided:
            offset = args[3] if len(args) > 3 else kwargs.get("storage_offset")
            self.as_strided = [[int(n) for n in args[1]], [int(n) for n in args[2]], offset]
        try:
            return super().__torch_dispatch__(func, types, args, kwargs)
        except RuntimeError:
            self.as_strided_failed = is_as_strided
            raise


def strided_call(function, x: torch.Tensor, *args):
    """function(x, *args) under a ViewLog: ({"view": its sizes, strides, offset, whether it shares x's storage and
    its values, or None; "as_strided": the last call's arguments}, the ops it ran). An as_strided that raised (a
    view past the storage's end) is reported, not raised: its arguments say why."""
    with ViewLog() as log:
        try:
            out = function(x, *args)
        except RuntimeError:
            if not log.as_strided_failed:
                raise
            out = None
    view = None
    if isinstance(out, torch.Tensor):
        view = {
            "size": list(out.shape),
            "stride": list(out.stride()),
            "offset": out.storage_offset(),
            "shares": shares_storage(out, x),
            "values": out.clone(),
        }
    return {"view": view, "as_strided": log.as_strided}, log.ops


def count_head(method, phase: str, x, W, b, G):
    """The head's forward (phase "forward") or backward under a CountingMode whose __torch_dispatch__ is the
    learner's: ({"flops": {op: n}, "bytes": {op: n}} or {"no_result": op}, None)."""
    leaves = head_leaves(x, W, b)
    mode = CountingMode(method)
    try:
        if phase == "forward":
            with mode:
                F.linear(leaves["x"], leaves["W"], leaves["b"])
        else:
            logits = F.linear(leaves["x"], leaves["W"], leaves["b"])
            with mode:
                logits.backward(G)
    except NoResult as e:
        return {"no_result": str(e)}, None
    return {"flops": dict(mode.flops), "bytes": dict(mode.bytes)}, None


def record_head(method, x, W, b, G):
    """The head's backward with x, W, b and G wrapped in a RecordingTensor class whose __torch_dispatch__ is the
    learner's: ({"log": the ops its class recorded in the backward} or {"no_result": op} or {"recursion": True},
    None)."""
    cls = recording_class(method)
    try:
        leaves = {k: cls(t.detach(), requires_grad=True) for k, t in head_leaves(x, W, b).items()}
        logits = F.linear(leaves["x"], leaves["W"], leaves["b"])
        cls.log.clear()  # the forward's ops: not graded
        logits.backward(cls(G))
    except NoResult as e:
        return {"no_result": str(e)}, None
    except RecursionError:
        return {"recursion": True}, None
    return {"log": [str(op) for op in cls.log]}, None
