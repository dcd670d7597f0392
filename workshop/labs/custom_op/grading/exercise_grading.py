"""One function per exercise, `grade_<name>(ctx, impl)`, called inside `ctx.grading(name)` with the learner's piece
(or the reference's): its own checks first (kernel_grading, registration_grading), each failure with the mistake
named; then, once those pass, gradcheck, opcheck and torch.compile of a twin made with the piece (op_grading)."""

from __future__ import annotations

import functools
import inspect
import re
import traceback
from pathlib import Path

import triton

from workshop.grading import workspace
from workshop.i18n import _
from workshop.lab import LabContext
from workshop.labs.custom_op.grading import api_grading, learner_op, probes
from workshop.labs.custom_op.grading import kernel_diagnosis as diagnose
from workshop.labs.custom_op.grading import registration_grading as rg
from workshop.labs.custom_op.grading.kernel_grading import (
    BACKWARD,
    CASES,
    FORWARD,
    Direction,
    run_case,
)
from workshop.labs.custom_op.grading.learner_op import KernelMismatch, loaded, twin
from workshop.labs.custom_op.grading.memory_bounds import OutOfBounds
from workshop.labs.custom_op.grading.op_grading import grade_op
from workshop.ops import INTERPRETED, softmax_op


def grade_forward_kernel(ctx: LabContext, impl) -> None:
    kernel = _kernel(ctx, "forward_kernel", impl)
    if kernel is not None and record_kernel_checks(ctx, kernel, FORWARD, "softmax_fwd_kernel"):
        grade_op(ctx, twin("forward_kernel", softmax_op.KIND, forward_kernel=kernel))


def grade_backward_kernel(ctx: LabContext, impl) -> None:
    kernel = _kernel(ctx, "backward_kernel", impl)
    if kernel is not None and record_kernel_checks(ctx, kernel, BACKWARD, "softmax_bwd_kernel"):
        grade_op(ctx, twin("backward_kernel", softmax_op.KIND, backward_kernel=kernel))


def grade_fake(ctx: LabContext, impl) -> None:
    fake = _function(ctx, "fake", impl)
    ops = twin("fake", "custom_op", fake=fake)  # a fake is a custom_op's: a triton_op's is its body
    # Compiled over dim 0, where the output's strides are not x's: the fake must say so.
    if rg.grade_fake_outputs(ctx, ops, fake, learner_op.source_file(ctx, softmax_op)):
        grade_op(ctx, ops, dim=0)


def grade_setup_context(ctx: LabContext, impl) -> None:
    setup_context = _function(ctx, "setup_context", impl)
    ops = twin("setup_context", softmax_op.KIND, setup_context=setup_context)
    if rg.grade_saved(ctx, ops):
        grade_op(ctx, ops)


def grade_backward(ctx: LabContext, impl) -> None:
    backward = learner_op.counted(_function(ctx, "backward", impl))
    ops = twin("backward", softmax_op.KIND, backward=backward)
    if rg.grade_gradients(ctx, ops):
        grade_op(ctx, ops)


def grade_define_custom_op(ctx: LabContext, impl) -> None:
    api_grading.grade_registration(
        ctx, _function(ctx, "define_custom_op", impl), "define_custom_op"
    )


def grade_define_triton_op(ctx: LabContext, impl) -> None:
    api_grading.grade_registration(
        ctx, _function(ctx, "define_triton_op", impl), "define_triton_op"
    )


def _function(ctx: LabContext, name: str, impl):
    """The learner's function, unless it is a stub (NotImplementedError: "not started")."""
    function = loaded(impl)
    if probes.is_stub(function):
        raise NotImplementedError(ctx.exercise(name).not_started_message())
    return function


def _kernel(ctx: LabContext, name: str, impl):
    """The learner's kernel if it can be launched as the op launches the reference's; else None, recorded."""
    ex = ctx.exercise(name)
    kernel = _function(ctx, name, impl)
    try:
        learner_op.check_kernel(kernel, ex.load_reference(), ex.attribute)
    except KernelMismatch as e:
        ctx.check_equal(
            _("{name} is a @triton.jit kernel with the launch's parameters").format(
                name=ex.attribute
            ),
            e.value,
            e.expected,
            message=str(e),
        )
        return None
    return kernel


def record_kernel_checks(ctx: LabContext, kernel, direction: Direction, attribute: str) -> bool:
    """The kernel-level checks over the four cases (kernel_grading.py); True when all passed."""

    @functools.cache
    def stride_mistake(
        case,
    ) -> str | None:  # asked only when a check fails: it runs the kernel again
        return diagnose.stride_mistake(kernel, case, direction, attribute, ctx.device, ctx.seed)

    runs = []
    for case in CASES:
        try:
            runs.append(run_case(kernel, case, direction, ctx.device, ctx.seed))
        except OutOfBounds as e:
            return _out_of_bounds(ctx, e, kernel, case, direction, attribute)
        except (NotImplementedError, workspace.LearnerError):
            raise
        except Exception as e:
            return _kernel_raised(ctx, e, kernel, attribute)
    if INTERPRETED:
        ctx.check_equal(
            _(
                "{name}: loads and stores inside its tensors (the interpreter's bounds check)"
            ).format(name=attribute),
            _("none outside"),
            _("none outside"),
        )
    planned = [_launched_as_planned(run, kernel) for run in runs]
    missed = next((run for run, ok in zip(runs, planned, strict=True) if not ok), None)
    results = [
        ctx.check_equal(
            _("{name}: launched once a call, on the plan's grid (launch record)").format(
                name=attribute
            ),
            sum(planned),
            len(runs),
            message=missed and _launches_message(missed, attribute),
        ),
        _check_precision(ctx, runs, attribute),
        _check_writes(ctx, runs, direction, attribute, stride_mistake),
        _check_values(ctx, runs, direction, attribute, stride_mistake),
    ]
    return all(c.passed for c in results)


def _launched_as_planned(run, kernel) -> bool:
    return [(launch.function, launch.grid) for launch in run.launches] == [(kernel, run.plan[0])]


def _launches_message(run, attribute: str) -> str:
    ran = [
        _("{kernel} on {n} programs").format(kernel=launch.kernel, n=launch.grid[0])
        for launch in run.launches
    ] or [_("nothing")]
    return _(
        "{label}: the launch record shows {ran}, not one launch of {name} on {n} programs"
    ).format(label=run.case.label, ran=", ".join(ran), name=attribute, n=run.plan[0][0])


def _check_precision(ctx: LabContext, runs: list, attribute: str):
    """What the kernel computes in for half-precision input, from what it did (precision.py), not its values."""
    half = next((run for run in runs if run.half_ops), None)
    observed = half and "; ".join(
        f"{dtype}: {', '.join(map(_, ops))}" for dtype, ops in half.half_ops.items()
    )
    return ctx.check_equal(
        _("{name}: arithmetic in float32 for half-precision input (what it computes in)").format(
            name=attribute
        ),
        observed or _("none in half precision"),
        _("none in half precision"),
        message=half and diagnose.half_precision(half, attribute),
    )


def _check_writes(ctx: LabContext, runs: list, direction, attribute: str, stride_mistake):
    """Every element of the output written, nothing around it: the guards' count. A run whose values say
    nothing (precision.py) is left out of the count of elements not written."""
    outside = next((run for run in runs if any(run.outside.values())), None)
    unwritten = next((run for run in runs if run.values_tell and run.unwritten.any()), None)
    if outside is None and unwritten is not None:
        return ctx.check_equal(
            _("{name}: every element of its output written").format(name=attribute),
            sum(int(run.unwritten.sum()) for run in runs if run.values_tell),
            0,
            message=stride_mistake(unwritten.case) or diagnose.unwritten(unwritten, attribute),
        )
    message = None
    if outside is not None:
        message = stride_mistake(outside.case) or diagnose.outside(outside, attribute)
    return ctx.check_equal(
        _("{name}: writes only inside its output (guard cells changed)").format(name=attribute),
        sum(sum(run.outside.values()) for run in runs),
        0,
        message=message,
    )


def _check_values(
    ctx: LabContext, runs: list, direction: Direction, attribute: str, stride_mistake
):
    """The largest error against float64 over the cases whose values say what the kernel computes."""
    told = [run for run in runs if run.values_tell]
    worst = max(told, key=lambda run: run.error / run.tolerance)
    # The mistake is read from the first case (in CASES' order, the richest first) whose error is too large.
    failed = next((run for run in told if run.error > run.tolerance), None)
    message = None
    if failed is not None:
        message = stride_mistake(failed.case) or diagnose.values(failed, direction, attribute)
    return ctx.check_max(
        _("{name}: largest error / tolerance against float64 ({n} cases)").format(
            name=attribute, n=len(told)
        ),
        worst.error / worst.tolerance,
        1.0,  # the tolerance: 1.25 x torch's own error plus a rounding (kernel_grading.tolerance)
        message=message,
    )


# Before compiling a kernel for a GPU, Triton hashes the functions it references and refuses a Python one
# (torch.softmax, say) with this error, which names the function but no line.
REFERENCED = re.compile(r"Unsupported function referenced: <(?:built-in method|function) (\w+)")


def kernel_line(error: BaseException, kernel) -> tuple[str, str]:
    """('my-work/custom_op.py:42', 'the source line') where the kernel failed: the innermost frame in the
    kernel's file (the interpreter runs its Python), the line a GPU compile error names (its line numbers
    count from the kernel's `def`), or the first line that calls the Python function Triton refused."""
    path = Path(inspect.getsourcefile(kernel.fn))
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


def _out_of_bounds(
    ctx: LabContext, error: OutOfBounds, kernel, case, direction, attribute: str
) -> bool:
    """An access out of bounds, stopped at the learner's line; the mask named, or the row stride where the
    kernel is right with its tensors' rows laid out another way (kernel_diagnosis.stride_mistake)."""
    where, text = kernel_line(error, kernel)
    why = diagnose.stride_mistake(kernel, case, direction, attribute, ctx.device, ctx.seed)
    if why:
        message = _("Out of bounds at {where} (`{line}`): {access} reached {place}. {why}").format(
            where=where, line=text, access=error.access, place=error.where, why=why
        )
    else:
        message = _(
            "Out of bounds at {where} (`{line}`): {access} reached {place}. Mask it: rows < n_rows for the "
            "rows, cols < n_cols for the columns (each row is padded here, so one column too many shows)"
        ).format(where=where, line=text, access=error.access, place=error.where)
    ctx.check_equal(
        _("{name}: loads and stores inside its tensors (the interpreter's bounds check)").format(
            name=attribute
        ),
        f"{where}: {error}",
        _("none outside"),
        message=message,
    )
    return False


def _kernel_raised(ctx: LabContext, error: Exception, kernel, attribute: str) -> bool:
    where, text = kernel_line(error, kernel)
    if "torch." in text:
        message = _(
            "Inside a @triton.jit kernel only triton.language runs: `{line}` hands a Triton block to PyTorch. "
            "Compute the softmax yourself: tl.max, tl.exp, tl.sum"
        ).format(line=text)
    else:
        message = _(
            "{name} raised at {where} (`{line}`). Under the interpreter you can print() inside the kernel "
            "to look at a block"
        ).format(name=attribute, where=where, line=text)
    ctx.check_equal(
        _("{name} runs").format(name=attribute),
        f"{where}: {workspace.describe(error)}",
        _("no error"),
        message=message,
    )
    return False
