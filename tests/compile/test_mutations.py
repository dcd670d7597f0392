"""Planted bugs in the compile lab, each caught by one of the lab's own checks (not by a unit test).

The lab's training step is compiled once, in this process, by the lab's own compile_training_step (the
expensive part: Inductor and g++); each mutation then re-runs only the lab section it breaks (reading the
generated code back, the recompile experiment, the graph-break experiment, the gradient comparison) on a fresh
LabContext, with the bug monkeypatched in. Each test id reads "bug -> the check that caught it". The lab's
whole run with fresh stubs (every exercise check fails, every other passes) is
tests/grading/test_every_lab.py's, through `check`.
"""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
import torch

from workshop import labs
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.compile import (
    generated_kernels,
    kernel_explanation,
    lab,
    loops,
    trace_report,
)
from workshop.labs.compile.grading import run_grading
from workshop.labs.compile.grading.exercises import ANSWERS
from workshop.minigpt import checkpoint
from workshop.minigpt.data import sample_corpus, to_tensors

pytestmark = pytest.mark.slow


@dataclasses.dataclass
class TrainingRun:
    loss_fn: object  # the lab's compiled loss (compile_training_step's)
    twin: torch.nn.Module  # the copy of the model that loss runs
    model: torch.nn.Module  # the eager model it was compiled from
    xb: torch.Tensor
    yb: torch.Tensor
    captures: dict  # {"train": what its compile produced}, as the lab read it


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> TrainingRun:
    """The lab's training step compiled once, on the lab's inputs, its own checks passing."""
    ctx = LabContext("compile", tmp_path_factory.mktemp("compile-train"), RunOptions("cpu", 1, 0))
    torch.manual_seed(ctx.options.seed)
    model = checkpoint.load()
    x, y = to_tensors(sample_corpus(max(lab.SWEEP["cpu"]), ctx.options.seed))
    xb, yb = x[: lab.BATCH], y[: lab.BATCH]
    loss_fn, twin, capture = lab.compile_training_step(ctx, model, xb, yb)
    assert failed(ctx) == []
    return TrainingRun(loss_fn, twin, model, xb, yb, {"train": snapshot(capture)})


def snapshot(cap):
    """The capture as the lab read it: a later recompile (after a test's torch._dynamo.reset) would append
    its graphs and code to the recording backend's capture."""
    return cap | {
        "dynamo": list(cap["dynamo"]),
        "aot": {k: list(v) for k, v in cap["aot"].items()},
        "code": dict(cap["code"]),
    }


@pytest.fixture
def fresh_ctx(tmp_path) -> LabContext:
    return LabContext("compile", tmp_path, RunOptions("cpu", 1, 0))


def failed(ctx: LabContext) -> list[str]:
    return [c.name for c in ctx.checks if not c.passed]


def compiled_step_gradients(run: TrainingRun, ctx: LabContext, scale: float) -> None:
    """The lab's gradient check on one more step of its compiled loss, the gradients multiplied by `scale`,
    against eager on a copy of the same weights."""
    twin = run.twin
    eager = copy.deepcopy(twin)
    for p in (*twin.parameters(), *eager.parameters()):
        p.grad = None
    loss_c = lab.forward_backward(run.loss_fn, run.xb, run.yb)
    for p in twin.parameters():
        p.grad.mul_(scale)
    loss_e = lab.lm_loss(eager(run.xb), run.yb)
    loss_e.backward()
    lab.check_training_step(ctx, loss_c, loss_e.detach(), twin, eager)


def scaled_gradients(mp, run, ctx):
    """The compiled step's gradients come out scaled by 1 + 1e-4 (a loss scale left in)."""
    compiled_step_gradients(run, ctx, 1 + 1e-4)


def unsized_stores(mp, run, ctx):
    """Every buffer the kernels write (out_ptr, in_out_ptr) sized 0 B ("0 B stored")."""
    original = generated_kernels.call_arguments

    def zero_stores(*args):
        found = original(*args)
        for a in found:
            if "store" in a["role"]:
                a["nbytes"] = 0
        return found

    mp.setattr(generated_kernels, "call_arguments", zero_stores)
    read_back(run, ctx)


def log_softmax_explained(mp, run, ctx):
    """The picker takes the loss's _log_softmax kernel for the attention softmax."""
    mp.setattr(kernel_explanation, "PREFERRED", ("_log_softmax", "native_layer_norm"))
    read_back(run, ctx)


def no_intermediates(mp, run, ctx):
    """The unfused estimate finds no eager results (1.0x the fused traffic, and still "fusing pays")."""
    mp.setattr(run_grading, "eager_results", lambda kernel, graphs: [])
    read_back(run, ctx)


def recompiles_counted(mp, run, ctx):
    """Recompiles counted instead of compiles: dynamic=True reports 0."""
    original = lab.count_compiles
    mp.setattr(
        lab,
        "count_compiles",
        lambda *a: (r := original(*a)) | {"compiles": r["compiles"] - 1},
    )
    lab.check_recompiles(ctx, run.model)


def default_marked_dynamic(mp, run, ctx):
    """The default experiment marks the length dynamic too (a copy-paste of mark_dynamic's branch)."""
    original = lab.count_compiles

    def count(model, lengths, batch, how):
        return original(model, lengths, batch, "mark_dynamic" if how == "default" else how) | {
            "how": how
        }

    mp.setattr(lab, "count_compiles", count)
    lab.check_recompiles(ctx, run.model)


def item_captured(mp, run, ctx):
    """capture_scalar_outputs left on: .item() stays in the graph."""
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        lab.check_graph_breaks(ctx, run.model, run.xb, run.yb)


def reuse_not_followed(mp, run, ctx):
    """`bufN = bufM; del bufM  # reuse` lines not followed: the softmax's in_out buffer has no size."""
    mp.setattr(generated_kernels, "ALIAS", re.compile(r"(?!)"))
    read_back(run, ctx)


def omp_for_missed(mp, run, ctx):
    """The loops under `#pragma omp for` are not found: no CPU launch grid."""
    mp.setattr(loops, "cpp_grid", lambda found: [])
    read_back(run, ctx)


def max_not_recognised(mp, run, ctx):
    """The max accumulator not recognised (a torch release renames max_propagate_nan)."""
    mp.setattr(loops, "REDUCE_CPP", {k: v for k, v in loops.REDUCE_CPP.items() if v != "max"})
    read_back(run, ctx)


def wrong_model_package(mp, run, ctx):
    """Source lines looked up under the wrong package: no kernel traces back to model.py."""
    mp.setattr(generated_kernels, "MODEL_DIR", "workshop/no_such_package/")
    read_back(run, ctx)


def trace_not_started(mp, run, ctx):
    """torch's trace never pointed at the run folder: tlparse gets no compile."""
    if trace_report.tlparse_program() is None:
        pytest.skip("tlparse is not installed here")
    (ctx.out_dir / trace_report.TRACE_DIR).mkdir()
    trace_report.tlparse_report(ctx, run.captures)


def test_the_gradient_comparison_passes_without_a_bug(run, fresh_ctx):
    """Before any test resets Dynamo: the lab's compiled loss runs again without compiling."""
    compiled_step_gradients(run, fresh_ctx, 1.0)
    assert fresh_ctx.checks and failed(fresh_ctx) == []


MUTATIONS = [
    # the mutation table's rows (the gradient one first, before the recompile experiments reset Dynamo)
    (
        scaled_gradients,
        "compiled gradients equal eager (worst parameter: max abs difference / its max abs gradient)",
    ),
    (
        unsized_stores,
        "forward softmax kernel: bytes written per call (from the code) / softmax result bytes (AOT graph), at least",
    ),
    (
        log_softmax_explained,
        "forward softmax kernel: the picked kernel fuses the attention's _softmax",
    ),
    (no_intermediates, "forward softmax kernel: unfused / fused bytes per call"),
    (recompiles_counted, "compiles for 4 sequence lengths, dynamic"),
    # more plausible bugs
    (
        default_marked_dynamic,
        "compiles for 4 sequence lengths, default: as automatic dynamic predicts",
    ),
    (
        item_captured,
        "graph breaks in the .item() variant: where `.item()` is called, and nowhere else",
    ),
    (
        reuse_not_followed,
        "forward softmax kernel: bytes read per call (from the code) / softmax result bytes (AOT graph), at least",
    ),
    (
        omp_for_missed,
        "forward softmax kernel: its launch grid spreads over the softmax's rows (AOT graph)",
    ),
    (
        max_not_recognised,
        "forward softmax kernel: reductions in its code (a max and a sum per row)",
    ),
    (wrong_model_package, "fraction of training-forward kernels traced to a MiniGPT source line"),
    (
        trace_not_started,
        "tlparse report: Inductor output-code entries = code modules this lab captured",
    ),
]


@pytest.mark.parametrize(
    "bug, check", MUTATIONS, ids=[f"{bug.__name__} -> {check}" for bug, check in MUTATIONS]
)
def test_a_planted_bug_is_caught_by_the_labs_own_check(run, fresh_ctx, bug, check):
    with pytest.MonkeyPatch.context() as mp:
        bug(mp, run, fresh_ctx)
    assert check in failed(fresh_ctx), f"{bug.__doc__} passed every check: {failed(fresh_ctx)}"
    print(f"{bug.__name__}: {bug.__doc__.strip()} -> caught by '{check}'")


def test_reading_the_snapshot_again_passes_without_a_bug(run, fresh_ctx):
    """The kept capture reads back with every check passing (the Dynamo sections' clean runs are the lab's own
    passing checks in compile/test_lab.py and grading/test_every_lab.py)."""
    read_back(run, fresh_ctx)
    assert fresh_ctx.checks and failed(fresh_ctx) == []


def run_folder(run: TrainingRun, tmp_path) -> LabContext:
    """A run folder of the compiled training step, as the lab writes it for grading (no optimizer module)."""
    ctx = LabContext("compile", tmp_path / "run", RunOptions("cpu", 1, 0))
    ctx.out_dir.mkdir()
    write_run_folder(run, ctx)
    return ctx


def write_run_folder(run: TrainingRun, ctx: LabContext) -> None:
    """The files the lab writes for grading, into ctx's folder: code/, breaks.json, grading_facts.json."""
    for kind, code in run.captures["train"]["code"].items():
        ctx.write_text(f"code/train_{kind}.py", code)
    breaks = {
        "minigpt": {"graphs": 1, "graph_breaks": 0, "break_reasons": []},
        "item_in_forward": {"graphs": 2, "graph_breaks": 1, "break_reasons": []},
    }
    counts = [
        {"how": h, "lengths": [8], "compiles": 1, "recompile_reasons": []}
        for h in ("static", "default")
    ]
    run_grading.write_facts(
        ctx,
        run.captures,
        len(list(run.model.parameters())),
        {"explain": breaks, "recompiles": counts},
    )


def read_back(run: TrainingRun, ctx: LabContext) -> None:
    """The lab's reading of its generated code: the run folder written, read back as a re-grade reads it
    (run_grading.read_run), and its kernels checked (lab.check_generated_code)."""
    write_run_folder(run, ctx)
    lab.check_generated_code(ctx, run_grading.read_run(ctx.out_dir), run.captures)


def graded_ctx(tmp_path, kernel_answer_source: str) -> LabContext:
    work = tmp_path / "my-work"
    work.mkdir()
    body = f"KERNEL_EXPLAINED = {kernel_answer_source}\n\n{ANSWERS.stub_code()}"
    (work / "compile.py").write_text(labs.workspace_header("compile") + "\n" + body)
    (tmp_path / "out").mkdir()
    return LabContext("compile", tmp_path / "out", RunOptions("cpu", 1, 0, work=work))


@pytest.mark.parametrize("right", [True, False], ids=["passing answer", "failing answer"])
def test_the_explanation_is_revealed_only_once_the_answer_passes(run, tmp_path, right):
    """A graded run reveals the learner's kernel explained (and the lab's softmax) once KERNEL_EXPLAINED
    passes; before, only the worked example of the backward, whose unfused estimate comes from the graphs."""
    folder = run_folder(run, tmp_path).out_dir
    kernels = run_grading.read_run(folder).kernels
    gelu = next(k for k in kernels if k.graph == "train/forward" and "gelu" in k.fused_ops)
    grid = loops.kernel_structure(gelu.source, gelu.language)["grid"]
    answer = {
        "kernel": gelu.name,
        "fused_ops": ["gelu"],
        "bytes_read": gelu.traffic("load"),
        "bytes_written": gelu.traffic("store") if right else 0,
        "reduction": "none",
        "grid": grid,
    }
    ctx = graded_ctx(tmp_path, repr(answer))
    run_grading.regrade(ctx, folder)
    softmax = kernel_explanation.pick_kernel([k for k in kernels if k.graph == "train/forward"])
    explained = [e["kernel"] for e in ctx.extra["explained"]]
    assert explained == ([gelu.name, softmax.name] if right else [])
    worked = run_grading.worked_example(run_grading.read_run(folder))
    assert ctx.extra["worked_example"] == worked["kernel"].name
    assert "_softmax_backward_data" in worked["kernel"].fused_ops
    assert worked["unfused_bytes"] > worked["fused_bytes"], "the graphs' sizes were kept"
