"""Probes: what runs where a learner's code may run (the worker), on the op made of a set of pieces, a learner's own
or the shipped ones (own_op.py), or on one piece when the exercise that writes it is graded (the probes of one
piece, below `minigpt`). The pieces are {exercise name: the learner's or the reference's object}; in_worker builds
the op from them and hands it to the probe of the op asked for. Each returns plain values (tensors, strings,
numbers, lists and dicts of these) for the lab's process to judge: nothing here decides whether anything is right.

The pieces, by exercise: forward_kernel, backward_kernel (@triton.jit kernels), fake, setup_context, backward
(functions), and the registration (learner_op.REGISTRATIONS). The op is registered as
own_<kind>::softmax, a custom_op or a triton_op (softmax_op.define with the learner's registration).

The probes of one piece (exercise_grading.py asks for them: impl.probe(op_probes.NAME, ...)) each take the
learner's piece (or, in a plain run, the reference's, in the lab's own process: the worker's code all the same) and
return wire values: the kernel's launches and the buffer it wrote, the fake's outputs' layouts, what setup_context
saved, the gradient the backward gave, what a registration registered, and the outcomes of gradcheck, opcheck and
torch.compile on the twin made with the piece (learner_op.twin). Nothing here is said in a language either: the
worker speaks none, so a mistake comes back as facts (kernel_watch.OutOfBounds' place, learner_op.pair_problem)
that the lab says in the learner's.

A piece still raising NotImplementedError (read from its source: a stub kernel would not compile on a GPU) raises
NotImplementedError here, which the worker reports as "not started": in the first probe its exercise asks
(kernel_signature, fake_outputs, saved, gradient, registration), which the later ones (kernel_cases, twin_checks)
follow only once it answered.
"""

from __future__ import annotations

import inspect
import re
import traceback
from pathlib import Path

import torch
import triton
from torch._subclasses.fake_tensor import FakeTensorMode

from workshop import i18n
from workshop.labs.custom_op.grading import (
    correctness,
    kernel_grading,
    kernel_watch,
    learner_op,
    registration_grading,
)
from workshop.learner import workspace
from workshop.minigpt.model import GPT, GPTConfig, lm_loss
from workshop.ops import softmax_op
from workshop.ops.triton_launch import recording

PIECES = ("forward_kernel", "backward_kernel", "fake", "setup_context", "backward")
# every exercise that writes a part of the op
EXERCISES = (*PIECES, *learner_op.REGISTRATIONS.values())


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
    registration = pieces.get(learner_op.REGISTRATIONS[kind])
    return softmax_op.define(f"{namespace(kind)}::softmax", kind, parts, registration)


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
        return {"error": f"{type(e).__name__}: {e}"}


def apply(ops: softmax_op.SoftmaxOps, requests: list[dict]) -> dict:
    """Each request answered by `ops`, and the kernels all of them launched, in order."""
    with recording() as launches:
        replies = [_answer(ops, request) for request in requests]
    return {"replies": replies, "launches": [launch.kernel for launch in launches]}


def step_launches(ops: softmax_op.SoftmaxOps, shape: list[int], device: str) -> list[dict]:
    """A forward + backward step of `ops` at `shape`: each launch's kernel, grid, constexprs."""
    x = torch.randn(shape, device=device, requires_grad=True)
    with recording() as launches:
        ops.forward(x, -1).backward(torch.ones_like(x))
    return [
        {"kernel": launch.kernel, "grid": list(launch.grid), "constexprs": dict(launch.constexprs)}
        for launch in launches
    ]


def checks(ops: softmax_op.SoftmaxOps, device: str, long_shape: list[int] | None) -> dict:
    """PyTorch's own checks of `ops`: gradcheck and gradgradcheck, and opcheck, as the error's first line or
    "passed" / "SUCCESS" per case."""
    return {
        "gradcheck": correctness.gradchecks(ops.forward, device, long_shape and tuple(long_shape)),
        "opcheck": correctness.opchecks(ops, device),
    }


def compiled(pieces: dict, kind: str, x: torch.Tensor, dy: torch.Tensor) -> dict:
    """torch.compile(fullgraph=True) of softmax(2x) * 3, forward and backward, with the op made of `pieces`
    registered as `kind` (learner_op.compiled_facts: y, dx, Inductor's generated sources, the kernels launched, the
    op's namespace)."""
    return learner_op.compiled_facts(build(pieces, kind), x, dy)


def graph_breaks(ops: softmax_op.SoftmaxOps, x: torch.Tensor) -> int:
    """torch._dynamo.explain's graph breaks in softmax(2x) * 3 with `ops`."""
    return torch._dynamo.explain(lambda t: ops.forward(t * 2.0, -1) * 3.0)(x).graph_break_count


def minigpt(
    ops: softmax_op.SoftmaxOps, state: dict, config: dict, x: torch.Tensor, targets: torch.Tensor
) -> dict:
    """The MiniGPT of `state` with `ops` in its attention: its logits on `x`, the gradients of its loss on
    `targets` (in parameter order), and the kernels the step launched."""
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


def kernel_signature(kernel) -> dict:
    """What the learner's kernel is, before anything launches it, as plain values (learner_op.check_kernel judges
    them): its type's name, whether it is a @triton.jit kernel, its parameters, and which of them are annotated
    constexpr."""
    started(kernel)
    jit = isinstance(kernel, triton.runtime.KernelInterface)
    params = inspect.signature(kernel.fn).parameters if jit else {}
    return {
        "kind": type(kernel).__name__,
        "jit": jit,
        "params": list(params),
        "constexpr": [name for name, p in params.items() if "constexpr" in str(p.annotation)],
    }


def kernel_cases(kernel, direction: str, cases: list[dict], device: str) -> list[dict]:
    """The kernel launched on each case (kernel_grading.guarded_case's buffers, by kernel_grading.launch_case,
    watched: every load and store bounds-checked under the interpreter), up to the first that goes out of bounds
    ({"out_of_bounds": {access, place, at, line}}) or raises ({"raised": {at, line, error}})."""
    found = []
    for case in cases:
        try:
            found.append(
                kernel_grading.launch_case(
                    kernel, kernel_grading.DIRECTIONS[direction], device, **case
                )
            )
        except NotImplementedError:
            raise
        except Exception as e:
            at, line = kernel_line(e, kernel)
            if isinstance(e, kernel_watch.OutOfBounds):
                where = {"access": e.access, "place": e.place, "at": at, "line": line}
                return [*found, {"out_of_bounds": where}]
            return [*found, {"raised": {"at": at, "line": line, "error": workspace.describe(e)}}]
    return found


def twin_checks(piece, exercise: str, device: str, seed: int, dim: int = -1) -> dict:
    """gradcheck, opcheck and torch.compile of the twin made with the piece (learner_op.twin, learner_op.op_facts):
    for a registration, the op it registers."""
    ops = learner_op.twin(exercise, piece, device)
    with kernel_watch.watched():  # its loads and stores bounds-checked
        return learner_op.op_facts(ops, dim, device, seed)


def registration(define, exercise: str, device: str) -> dict:
    """What the learner's registration (either of learner_op.REGISTRATIONS) registered: the facts of
    learner_op.registration_facts."""
    started(define)
    return learner_op.registration_facts(define, exercise, device)[0]


def fake_outputs(fake, device: str) -> dict:
    """The learner's fake on a fake tensor of each of registration_grading.fake_cases: {"outputs": {case: its
    output's layout, {"is_x": True} or {"kind": type}}}; or {"raised": "file:line: error"} at the first that
    raises."""
    started(fake)
    outputs = {}
    for case, (x, dim) in registration_grading.fake_cases(device).items():
        with FakeTensorMode() as mode:
            fake_x = mode.from_tensor(x)
            try:
                out = fake(fake_x, dim)
            except Exception as e:
                return {"raised": f"{workspace.where(e, _file(fake))}: {workspace.describe(e)}"}
        if out is fake_x:
            outputs[case] = {"is_x": True}
        elif not isinstance(out, torch.Tensor):
            outputs[case] = {"kind": type(out).__name__}
        else:
            outputs[case] = registration_grading.layout(out)
    return {"outputs": outputs}


def saved(setup_context, x: torch.Tensor) -> dict:
    """What the learner's setup_context left on the autograd node of y = op(x, -1), in its twin: the saved
    tensors, y, and ctx.dim ("has_dim" False when it set none; a value that is not a number or a string as its
    repr)."""
    started(setup_context)
    y = learner_op.twin("setup_context", setup_context).forward(x.requires_grad_(), -1)
    node = y.grad_fn
    dim = getattr(node, "dim", None)
    plain = type(dim) in (int, float, bool, str, type(None))
    return {
        "saved": [t.detach() for t in node.saved_tensors],
        "y": y.detach(),
        "has_dim": hasattr(node, "dim"),
        "dim": dim if plain else repr(dim),
    }


def gradient(backward, x: torch.Tensor, dy: torch.Tensor) -> dict:
    """dx through the twin with the learner's backward: {"dx": dx}, or {"count": what it returned instead of
    (dx, None) (learner_op.pair_problem), "where": where that backward is defined}."""
    started(backward)
    ops = learner_op.twin("backward", backward)  # counted: what it returned is said
    try:
        (dx,) = torch.autograd.grad(ops.forward(x.requires_grad_(), -1), x, dy)
    except learner_op.GradientCount as e:
        problem, where = e.args
        return {"count": problem, "where": where}
    return {"dx": dx}


def _file(function) -> Path:
    """The file a function is defined in (the learner's, under the name the worker compiled it with)."""
    return Path(inspect.getsourcefile(function))


# Before compiling a kernel for a GPU, Triton hashes the functions it references and refuses a Python one
# (torch.softmax, say) with this error, which names the function but no line.
REFERENCED = re.compile(r"Unsupported function referenced: <(?:built-in method|function) (\w+)")


def kernel_line(error: BaseException, kernel) -> tuple[str, str]:
    """('my-work/custom_op.py:42', 'the source line') where the kernel failed: the innermost frame in the
    kernel's file (the interpreter runs its Python), the line a GPU compile error names (its line numbers
    count from the kernel's `def`), or the first line that calls the Python function Triton refused."""
    path = _file(kernel.fn)
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if Path(frame.filename).resolve() == path.resolve():
            return f"{workspace.display(path)}:{frame.lineno}", frame.line or ""
    lines, first = inspect.getsourcelines(kernel.fn)
    node = getattr(error, "node", None)
    if isinstance(error, triton.CompilationError) and hasattr(node, "lineno"):
        at_def = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
        index = at_def + node.lineno - 1
        text = lines[index].strip() if index < len(lines) else ""
        return f"{workspace.display(path)}:{first + index}", text
    if referenced := REFERENCED.search(str(error)):
        calls = re.compile(rf"\b{referenced[1]}\(")
        for index, line in enumerate(lines):
            if calls.search(line):
                return f"{workspace.display(path)}:{first + index}", line.strip()
    return workspace.display(path), ""


# The probes in_worker runs: those of the op made of the pieces, which it builds (build) and hands them, and those
# that take the pieces themselves (whether each is a stub; the op registered as a kind of their own).
ON_OP = {probe.__name__: probe for probe in (apply, step_launches, checks, graph_breaks, minigpt)}
ON_PIECES = {probe.__name__: probe for probe in (stubs, compiled)}


def in_worker(by_attribute: dict, exercise_of: dict, lang: str, probe: str, *args):
    """The worker's entry (LabContext.probe, own_op.py): the probe named `probe` (ON_OP, ON_PIECES) on the
    learner's pieces, which the worker gives by their names in the learner's file, `exercise_of` maps them to their
    exercises. The op's errors are said in the lab's language `lang` (the worker's own is none:
    correctness.names_the_problem reads them)."""
    i18n.set_language(lang)
    pieces = {exercise_of[attribute]: piece for attribute, piece in by_attribute.items()}
    if probe in ON_PIECES:
        return ON_PIECES[probe](pieces, *args)
    return ON_OP[probe](build(pieces), *args)
