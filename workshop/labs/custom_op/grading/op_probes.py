"""Probes: what runs where a learner's code may run (the worker), on the op made of a set of pieces, a learner's own
or the shipped ones (own_op.py). Each takes the pieces, {exercise name: the learner's or the reference's object},
builds the op from them and returns plain values (tensors, strings, numbers, lists and dicts of these) for the lab's
process to judge: nothing here decides whether anything is right.

The pieces, by exercise: forward_kernel, backward_kernel (@triton.jit kernels), fake, setup_context, backward
(functions), define_custom_op and define_triton_op (the registration). The op is registered as
own_<kind>::softmax, a custom_op or a triton_op (softmax_op.define with the learner's registration).
"""

from __future__ import annotations

import inspect

import torch

from workshop import i18n
from workshop.labs.custom_op import inductor_code
from workshop.labs.custom_op.grading import correctness as cx
from workshop.minigpt.model import GPT, GPTConfig, lm_loss
from workshop.ops import softmax_op
from workshop.ops.triton_launch import recording

PIECES = ("forward_kernel", "backward_kernel", "fake", "setup_context", "backward")
REGISTRATIONS = {"custom_op": "define_custom_op", "triton_op": "define_triton_op"}
EXERCISES = (*PIECES, *REGISTRATIONS.values())  # every exercise that writes a part of the op


def namespace(kind: str) -> str:
    """Where the op made of a run's pieces is registered as `kind`: torch.ops.own_<kind>.softmax."""
    return f"own_{kind}"


def is_stub(function) -> bool:
    """A stub still raising NotImplementedError (a @triton.jit stub would fail to compile on a GPU instead)."""
    try:
        source = inspect.getsource(getattr(function, "fn", function))
    except (OSError, TypeError):
        return False
    return "raise NotImplementedError" in source


def started(piece) -> None:
    """Raises NotImplementedError (the worker's "not started") for a piece that is still its stub."""
    if is_stub(piece):
        raise NotImplementedError


def stubs(pieces: dict) -> list[str]:
    """The exercises whose piece still raises NotImplementedError (its source read, nothing run)."""
    return [name for name, piece in pieces.items() if is_stub(piece)]


def build(pieces: dict, kind: str = softmax_op.KIND) -> softmax_op.SoftmaxOps:
    """The op made of `pieces`, registered as `kind` (namespace(kind)::softmax)."""
    parts = softmax_op.Pieces(**{name: pieces[name] for name in PIECES if name in pieces})
    registration = pieces.get(REGISTRATIONS[kind])
    return softmax_op.define(f"{namespace(kind)}::softmax", kind, parts, registration)


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def _answer(ops, request: dict) -> dict:
    """One request: {"op": "forward" or "backward", "args": [...], "dy": tensor or None, "to": {index: device}}
    -> {"y": ..., "dx": ...} or {"error": text}. "to" moves an argument to another device here (meta, which
    cannot cross the wire)."""
    op = ops.forward if request["op"] == "forward" else ops.backward
    args = list(request["args"])
    for index, device in request.get("to", {}).items():
        args[index] = args[index].to(device)
    try:
        if request.get("dy") is None:
            return {"y": op(*args)}
        x = args[0].detach().requires_grad_()
        y = op(x, *args[1:])
        (dx,) = torch.autograd.grad(y, x, request["dy"])
        return {"y": y.detach(), "dx": dx}
    except (TypeError, IndexError, RuntimeError, ValueError) as e:
        return {"error": _described(e)}


def apply(pieces: dict, requests: list[dict]) -> dict:
    """Each request answered by the op made of `pieces`, and the kernels all of them launched, in order."""
    ops = build(pieces)
    with recording() as launches:
        answers = [_answer(ops, request) for request in requests]
    return {"answers": answers, "launches": [launch.kernel for launch in launches]}


def step_launches(pieces: dict, shape: list[int], device: str) -> list[dict]:
    """A forward + backward step of the op made of `pieces` at `shape`: each launch's kernel, grid, constexprs."""
    ops = build(pieces)
    x = torch.randn(shape, device=device, requires_grad=True)
    with recording() as launches:
        ops.forward(x, -1).backward(torch.ones_like(x))
    return [
        {"kernel": launch.kernel, "grid": list(launch.grid), "constexprs": dict(launch.constexprs)}
        for launch in launches
    ]


def checks(pieces: dict, device: str, long_shape: list[int] | None) -> dict:
    """PyTorch's own checks of the op made of `pieces`: gradcheck and gradgradcheck, and opcheck, as the error's
    first line or "passed" / "SUCCESS" per case."""
    ops = build(pieces)
    return {
        "gradcheck": cx.gradchecks(ops.forward, device, long_shape and tuple(long_shape)),
        "opcheck": cx.opchecks(ops, device),
    }


def compiled(pieces: dict, kind: str, x: torch.Tensor, dy: torch.Tensor) -> dict:
    """torch.compile(fullgraph=True) of softmax(2x) * 3, forward and backward, with the op made of `pieces`
    registered as `kind`: y, dx, Inductor's generated sources, the kernels launched, the op's namespace."""
    ops = build(pieces, kind)
    torch._dynamo.reset()
    with recording() as launches:
        (y, dx), sources = inductor_code.compile_and_capture(ops.forward, x, dy)
    return {
        "y": y,
        "dx": dx,
        "sources": sources,
        "launches": [launch.kernel for launch in launches],
        "namespace": ops.forward.namespace,
    }


def graph_breaks(pieces: dict, x: torch.Tensor) -> int:
    """torch._dynamo.explain's graph breaks in softmax(2x) * 3 with the op made of `pieces`."""
    ops = build(pieces)
    return torch._dynamo.explain(lambda t: ops.forward(t * 2.0, -1) * 3.0)(x).graph_break_count


def minigpt(
    pieces: dict, state: dict, config: dict, x: torch.Tensor, targets: torch.Tensor
) -> dict:
    """The MiniGPT of `state` with the op made of `pieces` in its attention: its logits on `x`, the gradients of
    its loss on `targets` (in parameter order), and the kernels the step launched."""
    ops = build(pieces)
    model = GPT(GPTConfig(**config)).to(x.device)
    model.load_state_dict(state)
    model.use_softmax(ops.forward)
    with recording() as launches:
        logits = model(x)
        lm_loss(logits, targets).backward()
    return {
        "logits": logits.detach(),
        "grads": [p.grad for p in model.parameters()],
        "launches": [launch.kernel for launch in launches],
    }


IN_WORKER = {
    probe.__name__: probe
    for probe in (stubs, apply, step_launches, checks, compiled, graph_breaks, minigpt)
}


def in_worker(by_attribute: dict, exercise_of: dict, lang: str, probe: str, *args):
    """The worker's entry (LabContext.probe, own_op.py): IN_WORKER[probe] on the learner's pieces, which the worker
    gives by their names in the learner's file, `exercise_of` maps them to their exercises. The op's errors are
    said in the lab's language `lang` (the worker's own is none: correctness.names_the_problem reads them)."""
    i18n.set_language(lang)
    pieces = {exercise_of[attribute]: piece for attribute, piece in by_attribute.items()}
    return IN_WORKER[probe](pieces, *args)
