"""One grading function per exercise, `grader(ctx, impl)` (GRADERS: by exercise id), called as engine.grade's
`also` inside the exercise's grading block, with the learner's piece (or the reference's) in the worker: its own
checks first (kernel_grading, registration_grading), each failure with the mistake named by the exercise's
diagnoses (kernel_mistakes.py, piece_mistakes.py); then, once those pass, gradcheck, opcheck and torch.compile of
a twin made with the piece (learner_op; for a registration, the op it registers). The piece runs only in the
worker, through the probes of op_probes.py; every verdict here is made from the values they send back (the worker
protocol).

What a learner's kernel got wrong where the output alone cannot say it is found here too: its row strides, by
running the kernel again on other layouts of a case (layout_mistake), and the arithmetic it did in half precision
(kernel_watch.py, said by half_precision_message). The mistakes its output shows are data: kernel_mistakes.py."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable

from workshop.declarations.diagnosis import Evidence, diagnose
from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import (
    kernel_mistakes,
    kernel_watch,
    learner_op,
    op_probes,
    registration_grading,
)
from workshop.labs.custom_op.grading.kernel_grading import (
    BACKWARD,
    CASES,
    FORWARD,
    LARGE_ROWS,
    NEGATIVE_ROW,
    Direction,
    KernelCase,
    KernelRun,
    guarded_case,
    judged,
    row_strides,
)
from workshop.ops import INTERPRETED


def grade_kernel(ctx: LabContext, impl, name: str, direction: Direction) -> None:
    """A kernel exercise: launchable as the op launches the reference's, then its checks over the four cases,
    then its twin's."""
    ex, ask = ctx.exercise(name), impl.probe
    # each stage only where the one before passed
    launchable = _launchable(ctx, ex, ask(op_probes.kernel_signature))
    if launchable and record_kernel_checks(ctx, ask, direction, ex):
        learner_op.grade_op(
            ctx, ask(op_probes.twin_checks, name, ctx.options.device, ctx.options.seed)
        )


def grade_piece(ctx: LabContext, impl, name: str, inputs, probe, judge, dim: int = -1) -> None:
    """A piece that is not a kernel (fake, setup_context, backward, a registration): `probe` run on it in the worker
    with the `inputs(device)`, what it sent back judged by `judge(ctx, *inputs, found, diagnoses)`
    (registration_grading), then its twin's checks, compiled over `dim`."""
    args = inputs(ctx.options.device)
    if judge(ctx, *args, impl.probe(probe, *args), ctx.exercise(name).diagnoses):
        learner_op.grade_op(
            ctx,
            impl.probe(op_probes.twin_checks, name, ctx.options.device, ctx.options.seed, dim),
            dim=dim,
        )


# exercise id -> its grading function, grader(ctx, impl), for custom_op/lab.py's grade_pieces
GRADERS = {
    "forward_kernel": functools.partial(grade_kernel, name="forward_kernel", direction=FORWARD),
    "backward_kernel": functools.partial(grade_kernel, name="backward_kernel", direction=BACKWARD),
    # Compiled over dim 0, where the output's strides are not x's: the fake must say so.
    "fake": functools.partial(
        grade_piece,
        name="fake",
        inputs=lambda device: (device,),
        probe=op_probes.fake_outputs,
        judge=registration_grading.grade_fake_outputs,
        dim=0,
    ),
    "setup_context": functools.partial(
        grade_piece,
        name="setup_context",
        inputs=lambda device: registration_grading.gradient_inputs(device)[:1],
        probe=op_probes.saved,
        judge=registration_grading.grade_saved,
    ),
    "backward": functools.partial(
        grade_piece,
        name="backward",
        inputs=registration_grading.gradient_inputs,
        probe=op_probes.gradient,
        judge=registration_grading.grade_gradients,
    ),
    # the registration exercises: what the learner's define registered, then the op it registered (its twin)
    **{
        exercise: functools.partial(
            grade_piece,
            name=exercise,
            inputs=lambda device, exercise=exercise: (exercise, device),
            probe=op_probes.registration,
            judge=registration_grading.check_registration,
        )
        for exercise in learner_op.REGISTRATIONS.values()
    },
}


CONSTEXPRS = ("ROWS", "BLOCK_N", "ALIGN")


def _launchable(ctx: LabContext, ex, signature: dict) -> bool:
    """Whether the learner's kernel can be launched as the op launches the reference's, from
    op_probes.kernel_signature's facts: a @triton.jit function with the reference's parameters, ROWS, BLOCK_N and
    ALIGN constexpr; else False, recorded: what it is against what the launch needs, and why (the first of its
    problems)."""
    attribute, params = ex.attribute, signature["params"]
    plain = [n for n in CONSTEXPRS if n not in signature["constexpr"]]
    expected = list(inspect.signature(ex.load_reference().fn).parameters)
    got, want, names = ", ".join(params), ", ".join(expected), ", ".join(plain)
    # (whether it is the problem, what the kernel is, what the launch needs, why)
    problems = [
        (
            not signature["jit"],
            signature["kind"],
            _("a @triton.jit kernel"),
            _(
                "{name} is a {kind}, not a Triton kernel: the op launches it as kernel[grid](...), so a Python "
                "function (a fallback to torch.softmax, say) would run nothing on the device. Decorate it with "
                "@triton.jit and compute with tl.load, tl.max, tl.exp, tl.sum and tl.store."
            ).format(name=attribute, kind=signature["kind"]),
        ),
        (
            params != expected,
            f"({got})",
            f"({want})",
            _("{name}'s parameters are ({got}); the launch passes ({want}), in this order.").format(
                name=attribute, got=got, want=want
            ),
        ),
        (
            bool(plain),
            _("{names} not constexpr").format(names=names),
            _("ROWS, BLOCK_N, ALIGN: tl.constexpr"),
            _(
                "{names} must be annotated `: tl.constexpr`: they are compile-time constants "
                "(tl.arange needs them known when the kernel is compiled)."
            ).format(names=names),
        ),
    ]
    problem = next((p for p in problems if p[0]), None)
    if problem is not None:
        ctx.check_equal(
            _("{name} is a @triton.jit kernel with the launch's parameters").format(name=attribute),
            *problem[1:3],
            message=problem[3],
        )
    return problem is None


def record_kernel_checks(ctx: LabContext, ask, direction: Direction, ex) -> bool:
    """The kernel-level checks over the four cases (kernel_grading.py), launched in the worker and judged here,
    wrong values named by the exercise's diagnoses; True when all passed."""
    attribute = ex.attribute

    def launched(cases) -> list[dict]:
        sent = [guarded_case(case, direction, ctx.options.seed) for case in cases]
        return ask(op_probes.kernel_cases, direction.name, sent, ctx.options.device)

    # the kernel on another layout of a case: None where it raised or went out of bounds
    @functools.cache
    def rerun(case):
        (found,) = launched([case])
        return judged(case, direction, ctx.options.seed, found) if "out" in found else None

    # asked only when a check fails: it runs the kernel again
    @functools.cache
    def stride_mistake(case) -> str | None:
        return layout_mistake(rerun, case, direction, attribute)

    runs = []
    # the worker sends every case, or stops at the first that fails (strict: a reply short of that raises)
    for case, found in zip(CASES, launched(CASES), strict=True):
        if "out_of_bounds" in found:
            return _out_of_bounds(ctx, found["out_of_bounds"], stride_mistake(case), attribute)
        if "raised" in found:
            return _kernel_raised(ctx, found["raised"], attribute)
        runs.append(judged(case, direction, ctx.options.seed, found))
    if INTERPRETED:
        ctx.check_equal(
            _(
                "{name}: loads and stores inside its tensors (the interpreter's bounds check)"
            ).format(name=attribute),
            _("none outside"),
            _("none outside"),
        )
    # one launch a run, of the learner's kernel, on the plan's grid
    planned = [
        [(launch["learners"], tuple(launch["grid"])) for launch in run.launches]
        == [(True, tuple(run.plan[0]))]
        for run in runs
    ]
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
        _check_writes(ctx, runs, attribute, stride_mistake),
        _check_values(ctx, runs, ex.diagnoses, attribute, stride_mistake),
    ]
    return all(c.passed for c in results)


def _launches_message(run, attribute: str) -> str:
    ran = [
        _("{kernel} on {n} programs").format(kernel=launch["kernel"], n=launch["grid"][0])
        for launch in run.launches
    ] or [_("nothing")]
    return _(
        "{label}: the launch record shows {ran}, not one launch of {name} on {n} programs"
    ).format(label=run.case.label, ran=", ".join(ran), name=attribute, n=run.plan[0][0])


def _check_precision(ctx: LabContext, runs: list, attribute: str):
    """What the kernel computes in for half-precision input, from what it did (kernel_watch.py), not its values."""
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
        message=half and kernel_watch.half_precision_message(half, attribute),
    )


def _check_writes(ctx: LabContext, runs: list, attribute: str, stride_mistake):
    """Every element of the output written, nothing around it: the guards' count. A run whose values say
    nothing (kernel_watch.py) is left out of the count of elements not written."""
    outside = next((run for run in runs if any(run.outside.values())), None)
    unwritten = next((run for run in runs if run.values_tell and run.unwritten.any()), None)
    if outside is None and unwritten is not None:
        return ctx.check_equal(
            _("{name}: every element of its output written").format(name=attribute),
            sum(int(run.unwritten.sum()) for run in runs if run.values_tell),
            0,
            message=stride_mistake(unwritten.case)
            or explained(kernel_mistakes.UNWRITTEN, unwritten, attribute),
        )
    message = outside and (
        stride_mistake(outside.case)
        or explained(kernel_mistakes.WRITES_OUTSIDE, outside, attribute)
    )
    return ctx.check_equal(
        _("{name}: writes only inside its output (guard cells changed)").format(name=attribute),
        sum(sum(run.outside.values()) for run in runs),
        0,
        message=message,
    )


def _check_values(ctx: LabContext, runs: list, diagnoses: tuple, attribute: str, stride_mistake):
    """The largest error against float64 over the cases whose values say what the kernel computes."""
    told = [run for run in runs if run.values_tell]
    worst = max(told, key=lambda run: run.error / run.tolerance)
    # The mistake is read from the first case (in CASES' order, the richest first) whose error is too large.
    failed = next((run for run in told if run.error > run.tolerance), None)
    message = failed and (stride_mistake(failed.case) or explained(diagnoses, failed, attribute))
    return ctx.check_max(
        _("{name}: largest error / tolerance against float64 ({n} cases)").format(
            name=attribute, n=len(told)
        ),
        worst.error / worst.tolerance,
        1.0,  # the tolerance: 1.25 x torch's own error plus a rounding (kernel_grading.tolerance)
        message=message,
    )


def explained(diagnoses: tuple, run, attribute: str) -> str:
    """The message of the first of `diagnoses` (kernel_mistakes.py) that the kernel's run on one case shows."""
    facts = {"first": run.case is CASES[0], "large_rows": LARGE_ROWS, "negative_row": NEGATIVE_ROW}
    return diagnose(diagnoses, Evidence(attribute, run, run.expected, run.case.label, facts))[1]


def _out_of_bounds(ctx: LabContext, found: dict, why: str | None, attribute: str) -> bool:
    """An access out of bounds, stopped at the learner's line; the mask named, or the row stride where the
    kernel is right with its tensors' rows laid out another way (`why`: layout_mistake)."""
    where, text = found["at"], found["line"]
    message = (
        _("Out of bounds at {where} (`{line}`): {access} reached {place}. {why}")
        if why
        else _(
            "Out of bounds at {where} (`{line}`): {access} reached {place}. Mask it: rows < n_rows for the "
            "rows, cols < n_cols for the columns (each row is padded here, so one column too many shows)"
        )
    ).format(
        where=where,
        line=text,
        access=_(kernel_watch.ACCESSES[found["access"]]),
        place=kernel_watch.place_said(found["place"]),
        why=why,
    )
    ctx.check_equal(
        _("{name}: loads and stores inside its tensors (the interpreter's bounds check)").format(
            name=attribute
        ),
        f"{where}: {kernel_watch.said(found['access'], found['place'])}",
        _("none outside"),
        message=message,
    )
    return False


def _kernel_raised(ctx: LabContext, found: dict, attribute: str) -> bool:
    where, text = found["at"], found["line"]
    message = (
        _(
            "Inside a @triton.jit kernel only triton.language runs: `{line}` hands a Triton block to PyTorch. "
            "Compute the softmax yourself: tl.max, tl.exp, tl.sum"
        )
        if "torch." in text
        else _(
            "{name} raised at {where} (`{line}`). Under the interpreter you can print() inside the kernel "
            "to look at a block"
        )
    ).format(name=attribute, where=where, line=text)
    ctx.check_equal(
        _("{name} runs").format(name=attribute),
        f"{where}: {found['error']}",
        _("no error"),
        message=message,
    )
    return False


def layout_mistake(
    rerun: Callable[[KernelCase], KernelRun | None],
    case: KernelCase,
    direction: Direction,
    attribute: str,
) -> str | None:
    """The message for a kernel that failed on `case` because of its row strides, or None. Right when every tensor
    has the first one's row stride: it uses one tensor's stride for another's. Else right on the same rows one
    after another (row stride = n_cols): it mixes up n_cols and the row stride. `rerun(case)`: the kernel's run
    on another layout of the case (None where it raised or went out of bounds there)."""
    shared = dataclasses.replace(case, own_strides=False)
    if _passes(rerun(shared)):
        # it reads or writes a tensor with another tensor's row stride
        strides = zip(direction.tensors, row_strides(case, len(direction.tensors)), strict=True)
        return _(
            "{name} is right when its tensors' rows are all the same distance apart and wrong when each tensor "
            "has its own row stride, as here ({label}: {strides}): it addresses one tensor with another's row "
            "stride. Row r of each tensor starts at its own pointer + r * its own row stride"
        ).format(
            name=attribute,
            label=case.label,
            strides=", ".join(f"{name}_row_stride = {stride}" for name, stride in strides),
        )
    if _passes(rerun(dataclasses.replace(shared, pad=0))):
        # it takes n_cols for the row stride
        return _(
            "{name} is right when each row follows the previous one directly (row stride = n_cols) and wrong "
            "when the rows are padded, as here ({label}: {cols} columns, rows {stride} elements apart): it takes "
            "n_cols for the distance between rows. Row r of a tensor starts at its pointer + r * its row stride "
            "({strides}); its columns run up to n_cols"
        ).format(
            name=attribute,
            label=case.label,
            cols=case.cols,
            stride=case.cols + case.pad,
            strides=", ".join(f"{name}_row_stride" for name in direction.tensors),
        )
    return None


def _passes(run: KernelRun | None) -> bool:
    """Right on that layout: nothing outside written, every element written, within the tolerance."""
    if run is None:  # an access out of bounds, or any error: not this mistake alone
        return False
    return not any(run.outside.values()) and not run.unwritten.any() and run.error <= run.tolerance
