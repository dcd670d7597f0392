"""Lab custom_op: a Triton softmax made into a PyTorch operator, then checked the ways PyTorch checks its own.

First the learner's pieces (grading/exercises.py), each graded in an operator of its own (grading/learner_op.py),
in the worker (grading/op_probes.py);
then the reference op, torch.ops.workshop.softmax: correctness against torch.softmax (dtypes, layouts,
-inf/inf/NaN, empty tensors, bad input), gradcheck and opcheck, torch.compile with zero graph breaks, the op
inside the MiniGPT's attention, what Inductor generates around an opaque custom_op vs a triton_op, and what one
eager call costs, with a profiler trace of it. Which kernels ran is read from the launch record (or, compiled on a
GPU, from Inductor's code). The benchmark is separate: `python -m workshop bench custom_op` (GPU).
"""

from __future__ import annotations

import collections
import functools
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch

from workshop import engine
from workshop.foundations.results import RunFolderError
from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.custom_op import eager_cost, inductor_code
from workshop.labs.custom_op.grading import (
    correctness,
    exercise_grading,
    launch_facts,
    learner_op,
    op_probes,
)
from workshop.labs.custom_op.grading.own_op import OwnOp, own_op, shipped_ready
from workshop.learner.learner_code import LearnerCodeFailed
from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors
from workshop.minigpt.model import lm_loss
from workshop.ops import softmax_op


def grade_pieces(ctx: LabContext, pieces: tuple[str, ...] = op_probes.EXERCISES) -> None:
    """The exercises that write a piece of the op, each through engine.grade: no cases of values to compare, each
    graded in its own twin (exercise_grading.py), the piece run in the worker (the worker protocol), every
    interpreted load and store of a kernel bounds-checked there."""
    for name in pieces:
        engine.grade(
            ctx,
            name,
            None,
            also=lambda impl, _graded, name=name: exercise_grading.GRADERS[name](ctx, impl),
        )


def check_correctness(ctx: LabContext, own: OwnOp, shapes: dict) -> dict:
    """The op's values against torch.softmax (correctness.check); where the op raised instead of answering, a
    failed check with its error, and the section's result empty."""
    try:
        run = functools.partial(own.probe, op_probes.apply)  # requests -> the op's replies
        return correctness.check(ctx, run, own.kernel_names["forward_kernel"], shapes)
    except correctness.OpFailed as e:
        ctx.check_equal(
            _("the op answers every call of the correctness checks"), str(e), _("an answer")
        )
        return {}


def check_autograd(ctx: LabContext, own: OwnOp, shapes: dict) -> dict:
    """PyTorch's own checks of the op: gradcheck and gradgradcheck, opcheck."""
    found = own.probe(op_probes.checks, ctx.options.device, list(shapes["gradcheck_long"]))
    learner_op.check_tools(
        ctx,
        found,
        _("gradcheck/gradgradcheck float64 cases passed"),
        _("opcheck tests passed (3 inputs x schema/autograd/fake/aot)"),
    )
    return found


def compile_kind(ctx: LabContext, own: OwnOp, kind: str, x, dy) -> dict:
    """The op registered as `kind`, compiled: its result against torch's, its Inductor excerpt, and what the
    excerpt holds."""
    found = own.probe(op_probes.compiled, kind, x, dy)
    ctx.check_max(
        _("compiled ({kind}) vs torch: max |difference| of y and dx").format(kind=kind),
        learner_op.compiled_error(found, x, dy),
        1e-5,
    )
    # Inductor calls a custom_op, which runs our kernels eagerly: the launch record shows them.
    if kind == "custom_op":
        ctx.check_equal(
            _("launch record: the compiled step (custom_op) ran our kernels through the op"),
            sorted(set(found["launches"])),
            sorted(own.kernel_names.values()),
        )
    sources, names = found["sources"], tuple(own.kernel_names.values())
    title = _("Inductor's code around a {kind}").format(kind=kind)
    ctx.write_text(f"inductor_{kind}.txt", inductor_code.excerpt(title, sources, names))
    return inductor_code.census(sources, found["namespace"], names)


def check_compile(ctx: LabContext, own: OwnOp) -> dict:
    """torch.compile(fullgraph=True) against torch, graph breaks, and the generated code for both registrations
    (on the CPU the custom_op only: a triton_op cannot be compiled under Triton's interpreter), side by side."""
    x, dy = learner_op.x_and_dy(ctx.options.device, ctx.options.seed)
    ctx.check_equal(_("torch.compile: graph breaks"), own.probe(op_probes.graph_breaks, x), 0)
    kinds = ("custom_op", "triton_op") if ctx.options.device == "cuda" else ("custom_op",)
    found = {kind: compile_kind(ctx, own, kind, x, dy) for kind in kinds}
    ctx.check_min(
        _("custom_op: Inductor calls the op as an opaque extern kernel (calls)"),
        found["custom_op"]["extern_calls"],
        2,
    )
    if "triton_op" in found:
        ctx.check_min(
            _("triton_op: our kernels' source inlined into Inductor's code (defs)"),
            found["triton_op"]["inlined_kernel_defs"],
            2,
        )
        ctx.check_equal(_("triton_op: extern calls left"), found["triton_op"]["extern_calls"], 0)
        triton_op = ctx.path("inductor_triton_op.txt").read_text()
        label = _("triton_op (this run)")
    else:
        ctx.write_text("inductor_triton_op.txt", _(inductor_code.NOT_ON_THE_CPU))
        triton_op = inductor_code.COMMITTED_TRITON_OP.read_text()
        label = _("triton_op (the committed H200 run)")
    custom_op = ctx.path("inductor_custom_op.txt").read_text()
    columns = {_("custom_op (this run)"): custom_op, label: triton_op}
    ctx.write_text(inductor_code.SIDE_BY_SIDE, inductor_code.side_by_side(columns))
    return found


def check_minigpt(ctx: LabContext, own: OwnOp) -> dict:
    """The op in every attention block: logits and gradients against the model with F.softmax."""
    torch.backends.cuda.matmul.allow_tf32 = False  # TF32 would blur a 1e-5 comparison on the GPU
    model = checkpoint.load(ctx.options.checkpoint, device=ctx.options.device)
    x, y = (t.to(ctx.options.device) for t in train_tensors(16))  # (16, T) tokens and targets
    logits = model(x)  # (16, T, 600)
    lm_loss(logits, y).backward()
    state = {k: v.detach() for k, v in model.state_dict().items()}
    ours = own.probe(op_probes.minigpt, state, asdict(model.cfg), x, y)
    grads = zip(ours["grads"], (p.grad for p in model.parameters()), strict=True)
    found = {
        "logits": (ours["logits"] - logits.detach()).abs().max().item(),
        "grads": max((a - b).abs().max().item() for a, b in grads),
        "launches": ours["launches"],
        "launch_counts": dict(collections.Counter(ours["launches"])),
    }
    layers = model.cfg.n_layer
    kernels = (own.kernel_names["forward_kernel"], own.kernel_names["backward_kernel"])
    ctx.check_equal(
        _(
            "launch record: the MiniGPT step ran our forward and backward kernel once per attention layer"
        ),
        [found["launches"].count(k) for k in kernels],
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
    """The appendix: what one eager call of the shipped op costs, layer by layer, registered three ways
    (eager_cost.py), and a profiler trace of the same layers (eager_cost.record_trace)."""
    found = eager_cost.measure(ctx.options.device)
    ctx.save_figure("eager_cost.png", eager_cost.figure(found, ctx.options.device))
    found["trace"] = check_trace(ctx)
    return found


def check_trace(ctx: LabContext) -> dict:
    """The profiler trace of the eager call's layers, written and read back: every range in it, and on a GPU
    the step's kernels."""
    trace = eager_cost.record_trace(ctx.path(eager_cost.TRACE), ctx.options.device)
    ctx.check_equal(
        _("profiler trace: the ladder's rungs, the inner layers and the step, each a range"),
        trace["ranges"],
        list(eager_cost.RANGES),
    )
    if ctx.options.device == "cuda":
        ctx.check_equal(
            _("profiler trace: the step's CUDA kernels"),
            [k for k in ("_bwd_one_pass", "_fwd_one_pass") if k in trace["gpu_kernels"]],
            ["_bwd_one_pass", "_fwd_one_pass"],
        )
    return trace


def check_own_op(ctx: LabContext, shapes: dict, seconds: dict) -> dict:
    """The op made of this run's pieces (own_op.py), checked section by section, each section's time into
    `seconds`; or, while a piece is missing, one line naming the exercises the op waits on."""
    own = own_op(ctx)
    found = {"own": {"graded": own.graded, "waiting": own.waiting, "failed": []}}
    if own.waiting:
        # One line, no check: the exercises not written fail on their own, and nothing here ran to pass or fail.
        print(
            _(
                "The checks of the op made of your pieces wait on the exercises {names}: they run once "
                "each piece is written"
            ).format(names=", ".join(own.waiting)),
            flush=True,
        )
        return found
    sections = {
        "correctness": lambda: check_correctness(ctx, own, shapes),
        "autograd": lambda: check_autograd(ctx, own, shapes),
        "compile": lambda: check_compile(ctx, own),
        "minigpt": lambda: check_minigpt(ctx, own),
        "step_launches": lambda: own.probe(
            op_probes.step_launches, list(eager_cost.STEP), ctx.options.device
        ),
    }
    found |= timed(sections, seconds, guard=ctx)
    found["own"]["failed"] = [name for name in sections if not found[name]]
    return found


def op_checked(found: dict) -> bool:
    """Whether every section of the op's checks ran to its end (for the summary, the answers, result.json)."""
    return "own" in found and not found["own"]["waiting"] and not found["own"]["failed"]


def timed(sections: dict, seconds: dict, guard: LabContext | None = None) -> dict:
    """Each section run, its result kept and its time printed. With `guard`, the lab's context: where the
    learner's code failed inside the worker (an exception, its time limit), a failed check naming the section and
    the error at the learner's line; the section's result is then None."""
    found = {}
    for name, section in sections.items():
        start = time.perf_counter()
        try:
            found[name] = section()
        except LearnerCodeFailed as e:
            if guard is None:
                raise
            guard.check_equal(
                _("the op made of your pieces runs its {section} checks").format(section=name),
                str(e),
                _("an answer"),
            )
            found[name] = None
        seconds[name] = round(time.perf_counter() - start, 1)
        print(_("section {name}: {seconds} s").format(name=name, seconds=seconds[name]), flush=True)
    return found


def run(ctx: LabContext) -> None:
    torch.manual_seed(ctx.options.seed)
    shapes = correctness.shapes(ctx.options.device)
    found = {"registration": softmax_op.KIND, "shapes": {k: list(v) for k, v in shapes.items()}}
    seconds = {}
    # `check custom_op EXERCISE` grades that exercise alone: the op's checks only serve a whole run and the answers.
    whole = not ctx.options.only
    # each exercise this run does not grade is left out by engine.grade
    found |= timed({"exercises": lambda: grade_pieces(ctx)}, seconds)
    if whole or ctx.wants("answers"):
        found |= check_own_op(ctx, shapes, seconds)
    if whole and shipped_ready():
        found |= timed({"eager": lambda: measure_eager(ctx)}, seconds)
    if ctx.wants("answers") and op_checked(found):
        custom_op = found["compile"]["custom_op"]
        facts = launch_facts.measure_facts(found["step_launches"], custom_op["extern_calls"])
        engine.grade(ctx, "answers", facts)
    ctx.render_summary(graded=ctx.graded, **summary_values(found))
    ctx.extra.update(json_values(found, seconds))


def regrade(ctx: LabContext, lab_dir: Path) -> None:
    """`check custom_op answers` after a run: the answers graded against the learner's latest run (lab_dir), from
    what it wrote for them to read, its launch record (result.json) and Inductor's code (inductor_custom_op.txt).
    No kernel runs: seconds."""
    try:
        result = json.loads((lab_dir / "result.json").read_text(encoding="utf-8"))
        code = (lab_dir / "inductor_custom_op.txt").read_text(encoding="utf-8")
        census = inductor_code.census([code], op_probes.namespace("custom_op"))
        facts = launch_facts.measure_facts(result["step_launches"], census["extern_calls"])
    except (OSError, KeyError, IndexError, TypeError, ValueError) as e:
        raise RunFolderError(
            _("{folder} is not a complete custom_op run ({error}): run the lab again").format(
                folder=lab_dir, error=f"{type(e).__name__}: {e}"
            )
        ) from e
    engine.grade(ctx, "answers", facts)
    ctx.summary = _(
        "Your answers graded against the run in {folder}: its launch record and inductor_custom_op.txt. No "
        "kernel ran."
    ).format(folder=lab_dir)


def summary_values(found: dict) -> dict:
    values = {
        "registration": found["registration"],
        "shapes": found["shapes"],
        "own": found.get("own"),
        "eager": found.get("eager"),
        "eager_waits": not shipped_ready(),
        "shipped_built": softmax_op.OPS is not None,
        "side_by_side": inductor_code.SIDE_BY_SIDE,
    }
    if op_checked(found):
        values |= {
            "dtype_errors": found["correctness"]["dtype_errors"],
            "long_rows": found["correctness"]["long_rows"],
            "bad_inputs": found["correctness"]["bad_inputs"],
            "census": found["compile"],
            "minigpt": found["minigpt"],
            "step_launches": found["step_launches"],
            "step_shape": list(eager_cost.STEP),
        }
    if found.get("eager"):
        values |= {
            "launch_share": eager_cost.launch_share(found["eager"]),
            "by_hand_saves": eager_cost.by_hand_saves(found["eager"]),
            "trace": found["eager"]["trace"],
        }
    return values


def json_values(found: dict, seconds: dict) -> dict:
    """result.json's part of the run: the typed records as dicts; the correctness and compile sections only where
    every section of the op's checks ran to its end."""
    # No facts keyed by the questions' keys: that would be an answer key in the learner's run folder.
    left_out = ("exercises", "facts") + (() if op_checked(found) else ("compile", "correctness"))
    return {k: v for k, v in found.items() if k not in left_out} | {"seconds": seconds}
