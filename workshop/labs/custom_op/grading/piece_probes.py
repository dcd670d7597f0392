"""Probes of one piece: what runs in the worker, where the learner's code may run, when an exercise that writes a
piece of the op is graded (exercise_grading.py asks for them: impl.probe(piece_probes.NAME, ...); the
registration exercises' two probes are api_grading's).

Each takes the learner's piece (or, in a plain run, the reference's, in the lab's own process: the worker's
code all the same) and returns wire values: the kernel's launches and the buffer it wrote, the fake's outputs'
layouts, what setup_context saved, the gradient the backward gave, and the
outcomes of gradcheck, opcheck and torch.compile on the twin made with the piece (learner_op.twin). Nothing here
judges: the lab's process does, from these values and PyTorch's own results. Nothing here is said in a language
either: the worker speaks none, so a mistake comes back as facts (memory_bounds.OutOfBounds' place,
learner_op.pair_problem) that the lab says in the learner's.

A piece still raising NotImplementedError (read from its source: a stub kernel would not compile on a GPU) raises
NotImplementedError here, which the worker reports as "not started".
"""

from __future__ import annotations

import inspect
import re
import traceback
from dataclasses import asdict
from pathlib import Path

import torch
import triton
from torch._subclasses.fake_tensor import FakeTensorMode

from workshop.labs.custom_op.grading import kernel_grading as kg
from workshop.labs.custom_op.grading import learner_op, op_probes
from workshop.labs.custom_op.grading import registration_grading as rg
from workshop.labs.custom_op.grading.memory_bounds import OutOfBounds, bounds_checked
from workshop.labs.custom_op.grading.op_grading import op_facts
from workshop.learner import workspace
from workshop.ops import softmax_op


def kernel_signature(kernel) -> dict:
    """What the learner's kernel is (learner_op.kernel_signature), before anything launches it."""
    op_probes.started(kernel)
    return learner_op.kernel_signature(kernel)


def kernel_cases(kernel, direction: str, cases: list[dict], device: str, seed: int) -> list[dict]:
    """The kernel launched on each case (kernel_grading.launch_case, every load and store bounds-checked under
    the interpreter), up to the first that goes out of bounds ({"out_of_bounds": {access, place, at, line}}) or
    raises ({"raised": {at, line, error}})."""
    op_probes.started(kernel)
    found = []
    with bounds_checked():
        for spec in cases:
            try:
                found.append(
                    kg.launch_case(kernel, kg.case_of(spec), kg.DIRECTIONS[direction], device, seed)
                )
            except NotImplementedError:
                raise
            except OutOfBounds as e:
                at, line = kernel_line(e, kernel)
                where = {"access": e.access, "place": e.place, "at": at, "line": line}
                return [*found, {"out_of_bounds": where}]
            except Exception as e:
                at, line = kernel_line(e, kernel)
                return [
                    *found,
                    {"raised": {"at": at, "line": line, "error": workspace.describe(e)}},
                ]
    return found


def twin_checks(piece, exercise: str, device: str, seed: int, dim: int = -1) -> dict:
    """gradcheck, opcheck and torch.compile of the twin made with the piece (op_grading.op_facts). A fake is a
    custom_op's (a triton_op's fake is its body); the others go into an op registered as this device's KIND."""
    op_probes.started(piece)
    kind = "custom_op" if exercise == "fake" else softmax_op.KIND
    if exercise == "backward":
        piece = learner_op.counted(piece)
    ops = learner_op.twin(exercise, kind, **{exercise: piece})
    with bounds_checked():
        return op_facts(ops, dim, device, seed)


def fake_outputs(fake, device: str) -> dict:
    """The learner's fake on a fake tensor of each of registration_grading.fake_cases: {"outputs": {case: its
    output's layout, {"is_x": True} or {"kind": type}}}; or {"raised": "file:line: error"} at the first that
    raises."""
    op_probes.started(fake)
    outputs = {}
    for case, (x, dim) in rg.fake_cases(device).items():
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
            outputs[case] = asdict(rg.Layout.of(out))
    return {"outputs": outputs}


def saved(setup_context, x: torch.Tensor) -> dict:
    """What the learner's setup_context left on the autograd node of y = op(x, -1), in its twin: the saved
    tensors, y, and ctx.dim ("has_dim" False when it set none; a value that is not a number or a string as its
    repr)."""
    op_probes.started(setup_context)
    ops = learner_op.twin("setup_context", softmax_op.KIND, setup_context=setup_context)
    y = ops.forward(x.requires_grad_(), -1)
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
    op_probes.started(backward)
    ops = learner_op.twin("backward", softmax_op.KIND, backward=learner_op.counted(backward))
    try:
        (dx,) = torch.autograd.grad(ops.forward(x.requires_grad_(), -1), x, dy)
    except learner_op.GradientCount as e:
        return {"count": e.problem, "where": e.where}
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
