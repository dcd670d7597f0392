"""Lab custom_op: a Triton softmax made into a PyTorch operator, then checked the ways PyTorch checks its own.

First the learner's pieces (exercises.py), each graded in an operator of its own (learner_op.py); then the
reference op, torch.ops.workshop.softmax: correctness against torch.softmax (dtypes, layouts, -inf/inf/NaN, empty
tensors, bad input), gradcheck and opcheck, torch.compile with zero graph breaks, the op inside the MiniGPT's
attention, what Inductor generates around an opaque custom_op vs a triton_op, and what one eager call costs, with
a profiler trace of it. Which kernels ran is read from the launch record (or, compiled on a GPU, from Inductor's
code). The benchmark is separate: `python -m workshop bench custom_op` (GPU).
"""

from __future__ import annotations

import functools
import time
from dataclasses import asdict

import torch

from workshop.grading import questions
from workshop.i18n import _
from workshop.lab import LabContext
from workshop.labs.custom_op import correctness as cx
from workshop.labs.custom_op import eager_cost, inductor_code, launch_facts, profiler_trace
from workshop.labs.custom_op import exercise_grading as graders
from workshop.labs.custom_op.learner_op import loaded
from workshop.labs.custom_op.memory_bounds import bounds_checked
from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors
from workshop.minigpt.model import lm_loss
from workshop.ops import softmax, softmax_launch, softmax_op
from workshop.ops.triton_launch import recording

PIECES = ("forward_kernel", "backward_kernel", "fake", "setup_context", "backward")


@functools.cache
def extern_softmax():
    """The same kernels registered as an opaque custom_op, under the lab's own namespace (for the comparison)."""
    return softmax_op.define("workshop_lab::softmax", "custom_op").forward


def grade_pieces(ctx: LabContext, pieces: tuple[str, ...] = PIECES) -> None:
    """The exercises that write a piece of the op: each graded in its own twin (exercise_grading.py), with every
    interpreted load and store bounds-checked."""
    for name in pieces:
        with ctx.grading(name) as impl, bounds_checked():
            getattr(graders, f"grade_{name}")(ctx, impl)


def kernels_ran(launches) -> list[str]:
    return [launch.kernel for launch in launches]


def check_correctness(ctx: LabContext, shapes: dict) -> dict:
    with recording() as launches:
        found = {"dtype_errors": cx.dtype_errors(softmax, ctx.device, shapes["lm_head"], ctx.seed)}
    ctx.check_equal(
        _("launch record: softmax of {shape} in 4 dtypes ran one forward kernel each").format(
            shape=shapes["lm_head"]
        ),
        kernels_ran(launches),
        ["_fwd_one_pass"] * 4,
    )
    for dtype, e in found["dtype_errors"].items():
        name = _(
            "{dtype} {shape}: max |ours - float64 softmax| (<= 1.25 x torch's + slack)"
        ).format(dtype=dtype, shape=shapes["lm_head"])
        ctx.check_max(name, e.ours, e.tolerance)
    found["long_rows"] = check_long_rows(ctx, shapes["long"])
    found["layouts"] = cx.layouts(ctx.device, ctx.seed)
    ctx.check_max(
        _("non-contiguous inputs (6 layouts): max |ours - torch.softmax|"),
        max(found["layouts"].values()),
        1e-6,
    )
    found["special_values"] = cx.special_value_mismatches(ctx.device, shapes["long"][1] // 4)
    ctx.check_equal(
        _("rows with -inf/inf/NaN/all -inf that differ from torch.softmax"),
        sum(found["special_values"].values()),
        0,
    )
    found["empty"] = cx.empty_results(ctx.device)
    ctx.check_equal(
        _("empty tensors / 0-size dims give torch's empty result"),
        sum(found["empty"].values()),
        len(found["empty"]),
    )
    found["bad_inputs"] = cx.bad_inputs(ctx.device)
    clear = sum(cx.names_the_problem(k, msg) for k, msg in found["bad_inputs"].items())
    ctx.check_equal(
        _("bad inputs rejected with an error naming the problem"), clear, len(found["bad_inputs"])
    )
    return found


def long_row_kernels(shape: tuple[int, int], device: str) -> list[str]:
    """The kernels the plan picks for a float32 forward of rows this long: split in two, or cooperative."""
    n_rows, n_cols = shape
    strategy = softmax_launch.long_row_plan(n_cols, n_rows * n_cols * 4, torch.device(device))[0]
    return ["_fwd_cooperative"] if strategy == "cooperative" else ["_fwd_partials", "_fwd_finish"]


def check_long_rows(ctx: LabContext, shape: tuple[int, int]) -> dict:
    """Rows past one program: the long-row kernels (launch record) and their error."""
    with recording() as launches:
        long = cx.dtype_errors(softmax, ctx.device, shape, ctx.seed, (torch.float32,))["float32"]
    ctx.check_equal(
        _("launch record: float32 long rows {shape} ran the long-row kernels").format(shape=shape),
        kernels_ran(launches),
        long_row_kernels(shape, ctx.device),
    )
    ctx.check_max(
        _("float32 long rows {shape} (long-row kernels): max error").format(shape=shape),
        long.ours,
        long.tolerance,
    )
    return {"error": asdict(long), "kernels": kernels_ran(launches)}


def check_autograd(ctx: LabContext, shapes: dict) -> dict:
    found = {"gradcheck": cx.gradchecks(softmax, ctx.device, shapes["gradcheck_long"])}
    ctx.check_equal(
        _("gradcheck/gradgradcheck float64 cases passed"),
        sum(r == cx.PASSED for r in found["gradcheck"].values()),
        len(found["gradcheck"]),
    )
    found["opcheck"] = cx.opchecks(softmax_op.OPS, ctx.device)
    ok = sum(v == "SUCCESS" for r in found["opcheck"].values() for v in r.values())
    ctx.check_equal(
        _("opcheck tests passed (3 inputs x schema/autograd/fake/aot)"),
        ok,
        sum(len(r) for r in found["opcheck"].values()),
    )
    return found


def compile_kind(ctx: LabContext, kind: str, op, namespace: str, data) -> inductor_code.Census:
    """One registration compiled: compiled vs eager, its Inductor excerpt, and what the excerpt holds."""
    x, dy, eager_y, eager_dx = data
    with recording() as launches:
        (y, dx), sources = inductor_code.compile_and_capture(op, x, dy)
    err = max((y - eager_y).abs().max().item(), (dx - eager_dx).abs().max().item())
    ctx.check_max(
        _("compiled ({kind}) vs eager: max |difference| of y and dx").format(kind=kind), err, 1e-5
    )
    if (
        kind == "custom_op"
    ):  # Inductor calls the op, which runs our kernels eagerly: the record shows them
        ctx.check_equal(
            _("launch record: the compiled step (custom_op) ran our kernels through the op"),
            sorted(set(kernels_ran(launches))),
            ["_bwd_one_pass", "_fwd_one_pass"],
        )
    ctx.write_text(
        f"inductor_{kind}.txt",
        inductor_code.excerpt(_("Inductor's code around a {kind}").format(kind=kind), sources),
    )
    return inductor_code.census(sources, namespace)


def check_compile(ctx: LabContext) -> dict:
    """torch.compile(fullgraph=True) vs eager, graph breaks, and the generated code for both registrations."""
    gen = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(8, 600, generator=gen).to(ctx.device)
    dy = torch.randn(8, 600, generator=gen).to(ctx.device)
    explained = torch._dynamo.explain(lambda t: softmax(t * 2.0, -1) * 3.0)(x)
    ctx.check_equal(_("torch.compile: graph breaks"), explained.graph_break_count, 0)
    x_ = x.clone().requires_grad_()
    eager_y = softmax(x_ * 2.0, -1) * 3.0
    (eager_dx,) = torch.autograd.grad(eager_y, x_, dy)
    data = (x, dy, eager_y.detach(), eager_dx)
    kinds = {softmax_op.KIND: (torch.ops.workshop.softmax, "workshop")}
    if (
        ctx.device == "cuda"
    ):  # the opaque flavor for comparison; under the interpreter only it works at all
        kinds["custom_op"] = (extern_softmax(), "workshop_lab")
    found = {kind: compile_kind(ctx, kind, op, ns, data) for kind, (op, ns) in kinds.items()}
    ctx.check_min(
        _("custom_op: Inductor calls the op as an opaque extern kernel (calls)"),
        found["custom_op"].extern_calls,
        2,
    )
    if "triton_op" in found:
        ctx.check_min(
            _("triton_op: our kernels' source inlined into Inductor's code (defs)"),
            found["triton_op"].inlined_kernel_defs,
            2,
        )
        ctx.check_equal(_("triton_op: extern calls left"), found["triton_op"].extern_calls, 0)
    else:
        ctx.write_text(
            "inductor_triton_op.txt",
            _(
                "Not produced on the CPU: under Triton's interpreter a triton_op "
                "cannot be compiled (see the handout).\nThe H200 excerpt is committed in "
                "benchmarks/custom_op/inductor_triton_op.txt.\n"
            ),
        )
    return found


def check_minigpt(ctx: LabContext) -> dict:
    """Our op in every attention block: logits and gradients vs the model with F.softmax."""
    torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would blur a 1e-5 comparison on the GPU
    model = checkpoint.load(ctx.checkpoint, device=ctx.device)
    x, y = (t[:16].to(ctx.device) for t in train_tensors())  # (16, T) tokens and targets

    def logits_and_grads():
        model.zero_grad()
        logits = model(x)  # (16, T, 600)
        lm_loss(logits, y).backward()
        return logits.detach(), [p.grad.clone() for p in model.parameters()]

    ref_logits, ref_grads = logits_and_grads()
    model.use_softmax(softmax)
    with recording() as launches:
        logits, grads = logits_and_grads()
    found = {
        "logits": (logits - ref_logits).abs().max().item(),
        "grads": max((a - b).abs().max().item() for a, b in zip(grads, ref_grads, strict=True)),
        "launches": kernels_ran(launches),
    }
    layers = model.cfg.n_layer
    ctx.check_equal(
        _(
            "launch record: the MiniGPT step ran our forward and backward kernel once per attention layer"
        ),
        [found["launches"].count(k) for k in ("_fwd_one_pass", "_bwd_one_pass")],
        [layers, layers],
    )
    ctx.check_max(
        _("MiniGPT with our softmax: max |logits - logits with F.softmax|"), found["logits"], 1e-5
    )
    ctx.check_max(
        _("MiniGPT with our softmax: max |grad - grad with F.softmax|"), found["grads"], 1e-5
    )
    return found


def measure_eager(ctx: LabContext) -> dict:
    """What one eager call costs, layer by layer (eager_cost.py), which kernels one training step launched, and
    a profiler trace of the same layers (profiler_trace.py)."""
    found = eager_cost.measure(ctx.device)
    ctx.save_figure("eager_cost.png", eager_cost.figure(found, ctx.device))
    x = torch.randn(eager_cost.STEP, device=ctx.device, requires_grad=True)
    with recording() as launches:
        softmax(x).backward(torch.ones_like(x))
    found["step_launches"] = [
        {"kernel": launch.kernel, "grid": list(launch.grid), "constexprs": launch.constexprs}
        for launch in launches
    ]
    found["trace"] = asdict(check_trace(ctx))
    return found


def check_trace(ctx: LabContext) -> profiler_trace.TraceFacts:
    """The profiler trace of the eager call's layers, written and read back: every range in it, and on a GPU
    the step's kernels."""
    trace = profiler_trace.record(ctx.path(profiler_trace.TRACE), ctx.device)
    ctx.check_equal(
        _("profiler trace: the ladder's rungs, the inner layers and the step, each a range"),
        trace.ranges,
        list(profiler_trace.RANGES),
    )
    if ctx.device == "cuda":
        ctx.check_equal(
            _("profiler trace: the step's CUDA kernels"),
            [k for k in ("_bwd_one_pass", "_fwd_one_pass") if k in trace.gpu_kernels],
            ["_bwd_one_pass", "_fwd_one_pass"],
        )
    return trace


def grade_answers(ctx: LabContext, found: dict) -> None:
    facts = launch_facts.measure_facts(
        found["eager"]["step_launches"], found["compile"]["custom_op"].extern_calls
    )
    with ctx.grading("answers") as answers:
        questions.grade_answers(ctx, loaded(answers), asdict(facts))
    found["facts"] = facts


def run(ctx: LabContext) -> None:
    torch.manual_seed(ctx.seed)
    shapes = cx.shapes(ctx.device)
    found = {"registration": softmax_op.KIND, "shapes": {k: list(v) for k, v in shapes.items()}}
    sections = {
        "exercises": lambda: grade_pieces(ctx),
        "correctness": lambda: check_correctness(ctx, shapes),
        "autograd": lambda: check_autograd(ctx, shapes),
        "compile": lambda: check_compile(ctx),
        "minigpt": lambda: check_minigpt(ctx),
        "eager": lambda: measure_eager(ctx),
    }
    seconds = {}
    for name, section in sections.items():
        start = time.perf_counter()
        found[name] = section()
        seconds[name] = round(time.perf_counter() - start, 1)
        print(_("section {name}: {seconds} s").format(name=name, seconds=seconds[name]), flush=True)
    grade_answers(ctx, found)
    ctx.render_summary(graded=ctx.graded, **summary_values(found))
    ctx.extra.update(json_values(found, seconds))


def summary_values(found: dict) -> dict:
    return {
        "registration": found["registration"],
        "shapes": found["shapes"],
        "dtype_errors": found["correctness"]["dtype_errors"],
        "long_rows": found["correctness"]["long_rows"],
        "bad_inputs": found["correctness"]["bad_inputs"],
        "census": found["compile"],
        "minigpt": found["minigpt"],
        "eager": found["eager"],
        "launch_share": eager_cost.launch_share(found["eager"]),
        "trace": found["eager"]["trace"],
    }


def json_values(found: dict, seconds: dict) -> dict:
    """result.json's part of the run: the typed records as dicts."""
    out = {k: v for k, v in found.items() if k not in ("exercises", "facts")}
    correctness = dict(found["correctness"])
    correctness["dtype_errors"] = {k: asdict(v) for k, v in correctness["dtype_errors"].items()}
    out["correctness"] = correctness
    out["compile"] = {k: asdict(v) for k, v in found["compile"].items()}
    out["facts"] = asdict(found["facts"])
    return {**out, "seconds": seconds}
