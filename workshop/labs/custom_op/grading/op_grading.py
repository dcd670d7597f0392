"""The three tools PyTorch checks an operator with, run on a graded twin (learner_op.py): gradcheck (and
gradgradcheck), opcheck, and torch.compile(fullgraph=True) of y = op(x, dim) forward and backward, with the proof
that the twin's kernels ran inside the compiled step.

That proof differs by registration. A custom_op (the CPU's, and a fake's twin everywhere): Inductor calls it, the
call runs its kernels eagerly, and the launch record shows them (the very function objects). A triton_op (a GPU's):
Inductor copies the kernels' source into its own code and launches them itself, so the launch record stays empty
and the generated code is the evidence: a definition of each kernel, and no call of the op left.
"""

from __future__ import annotations

import torch
import torch._dynamo

from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.custom_op import inductor_code
from workshop.labs.custom_op.grading import correctness as cx
from workshop.ops import INTERPRETED
from workshop.ops.softmax_op import SoftmaxOps
from workshop.ops.triton_launch import recording

COMPILE_ATOL = 1e-5  # compiled vs torch.softmax, y in [0, 1] and dx: float32 rounding is ~1e-7


def compile_inputs(device: str, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """x and dy, (8, 600) float32, of the compiled step: made alike in the worker and in the lab's process."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(8, 600, generator=gen).to(device), torch.randn(8, 600, generator=gen).to(
        device
    )


def op_facts(ops: SoftmaxOps, dim: int, device: str, seed: int) -> dict:
    """In the worker: gradcheck, opcheck and torch.compile(fullgraph=True) of the twin `ops`, as wire values."""
    found = {
        "name": ops.forward.name(),
        "kind": ops.kind,
        "namespace": ops.forward.namespace,
        "kernels": [kernel.__name__ for kernel in ops.kernels],
        "gradcheck": cx.gradchecks(ops.forward, device),
    }
    x, dy = compile_inputs(device, seed)
    if ops.kind == "triton_op" and INTERPRETED:
        # Under the interpreter a triton_op can be neither compiled nor opchecked (softmax_op.py says why): its
        # values, called eagerly, in their place.
        return found | {"eager": ops.forward(x, -1)}
    found["opcheck"] = cx.opchecks(ops, device)
    torch._dynamo.reset()  # each twin compiled afresh: no recompilation limit across many graded pieces
    with recording() as launches, inductor_code.fresh_code():
        # The op alone (around=False): what is graded is the op, and Inductor has no code of its own to compile.
        if ops.kind == "triton_op":
            (y, dx), found["sources"] = inductor_code.compile_and_capture(
                ops.forward, x, dy, dim, False
            )
        else:
            y, dx = inductor_code.compiled_step(ops.forward, dim, around=False)(x, dy)
    found |= {
        "y": y,
        "dx": dx,
        "ran": [launch.kernel for launch in launches if launch.function in ops.kernels],
        "launched": [launch.kernel for launch in launches],
    }
    return found


def grade_op(ctx: LabContext, found: dict, dim: int = -1) -> None:
    """gradcheck, opcheck and torch.compile of a twin, from op_facts' values, each a check of the exercise being
    graded; for a triton_op under the interpreter, gradcheck and its values called eagerly."""
    name = found["name"]
    gradcheck = _("gradcheck and gradgradcheck (float64) of {op}: cases passed").format(op=name)
    check_passed(ctx, gradcheck, _("gradcheck"), found["gradcheck"], cx.PASSED)
    if found["kind"] == "triton_op" and INTERPRETED:
        x, _dy = compile_inputs(ctx.device, ctx.seed)
        err = (found["eager"] - torch.softmax(x, -1)).abs().max().item()
        ctx.check_max(_("{op}: max |y - torch.softmax|, called eagerly").format(op=name), err, 1e-6)
        return
    opcheck = {f"{case}: {t}": r for case, rs in found["opcheck"].items() for t, r in rs.items()}
    check_passed(
        ctx, _("opcheck of {op}: tests passed").format(op=name), _("opcheck"), opcheck, "SUCCESS"
    )
    grade_compiled(ctx, found, dim)


def check_passed(
    ctx: LabContext, name: str, tool: str, outcomes: dict[str, str], passed: str
) -> None:
    """One check: every case of `tool` (case -> its outcome) gave `passed`; the message names those that did not."""
    failed = {case: r for case, r in outcomes.items() if r != passed}
    ctx.check_equal(
        name,
        len(outcomes) - len(failed),
        len(outcomes),
        message=_("{tool} failed on {cases}").format(
            tool=tool, cases="; ".join(f"{case} ({why})" for case, why in failed.items())
        ),
    )


def grade_compiled(ctx: LabContext, found: dict, dim: int) -> None:
    """torch.compile(fullgraph=True): the result against torch.softmax's, and the twin's kernels in it."""
    x, dy = compile_inputs(ctx.device, ctx.seed)
    x_ = x.clone().requires_grad_()
    expected = torch.softmax(x_, dim)
    (expected_dx,) = torch.autograd.grad(expected, x_, dy)
    err = max(
        (found["y"] - expected).abs().max().item(), (found["dx"] - expected_dx).abs().max().item()
    )
    ctx.check_max(
        _("torch.compile(fullgraph=True) of {op}, dim={dim}: max |y, dx - torch's|").format(
            op=found["name"], dim=dim
        ),
        err,
        COMPILE_ATOL,
    )
    # The op's Triton kernels (a twin whose pieces are all the grader's, PyTorch's, has none to show).
    names = found["kernels"]
    if found["kind"] == "triton_op":
        check_inlined(ctx, found, names)
        return
    if not names:
        return
    ctx.check_equal(
        _("torch.compile: the op's kernels ran inside the compiled step (launch record)"),
        sorted(set(found["ran"])),
        sorted(names),
        message=_("launched inside the compiled step: {ran}").format(ran=found["launched"]),
    )


def check_inlined(ctx: LabContext, found: dict, names: list[str]) -> None:
    """A triton_op: Inductor's code defines each of the twin's kernels and calls the op no more."""
    text = "\n".join(found["sources"])
    inlined = [name for name in names if inductor_code.kernel_defs(text, name)]
    if names:
        ctx.check_equal(
            _("torch.compile: the op's kernels inlined into Inductor's code"),
            sorted(inlined),
            sorted(names),
        )
    census = inductor_code.census(found["sources"], found["namespace"])
    ctx.check_equal(
        _("torch.compile: calls of the op left in Inductor's code"), census.extern_calls, 0
    )
