"""The compile lab graded end to end with fresh stubs, then planted bugs, each caught by one of the lab's own
checks (not by a unit test).

One lab run, in this process through the runner (`workshop.runner.main` with --work): with untouched stubs
every exercise check must fail ("not started") and every other check pass. Its compiled training step and
generated code are kept, and each mutation re-runs only the lab section it breaks (reading the code back,
the recompile experiment, the graph-break experiment, the gradient comparison) on a fresh LabContext, with
the bug monkeypatched in. Each test id reads "bug -> the check that caught it".
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re

import pytest
import torch

from workshop import exercise, runner
from workshop.lab import LabContext
from workshop.labs.compile import (
    generated_kernels,
    kernel_explanation,
    lab,
    loops,
    provenance,
    run_facts,
    trace_report,
)
from workshop.labs.compile.exercises import ANSWERS, KERNEL, WORKSPACE_HEADER

pytestmark = pytest.mark.slow


@dataclasses.dataclass
class StubRun:
    result: dict
    train: lab.TrainingStep  # the lab's compiled training step
    model: torch.nn.Module  # the eager model it was compiled from
    xb: torch.Tensor
    yb: torch.Tensor
    captures: dict


@pytest.fixture(scope="module")
def stub_run(tmp_path_factory) -> StubRun:
    """The lab run once, in-process, grading a workspace of fresh stubs; its compiled objects kept."""
    root = tmp_path_factory.mktemp("compile-stubs")
    work, out = root / "my-work", root / "compile"
    work.mkdir(), out.mkdir()
    (work / "compile.py").write_text(
        WORKSPACE_HEADER + "\n" + KERNEL.stub_code() + "\n" + ANSWERS.stub_code()
    )
    kept = {}

    def spy(name):
        original = getattr(lab, name)

        def wrapper(*args):
            kept[name] = (args, original(*args))
            return kept[name][1]

        return wrapper

    with pytest.MonkeyPatch.context() as mp:
        for name in ("compile_training_step", "check_generated_code"):
            mp.setattr(lab, name, spy(name))
        try:
            runner.main(["compile", "--out-dir", str(out), "--device", "cpu", "--work", str(work)])
        finally:  # the lab pointed torch's trace and logs at its folder: give them back
            trace_report.stop_torch_trace()
            torch._logging.set_logs()
    (_, model, xb, yb), train = kept["compile_training_step"]
    (_, captures), _ = kept["check_generated_code"]
    return StubRun(
        json.loads((out / "result.json").read_text()), train, model, xb, yb, snapshot(captures)
    )


def snapshot(captures: dict) -> dict:
    """The captures as the lab read them: a later recompile (after a test's torch._dynamo.reset) would append
    its graphs and code to the recording backend's Capture."""
    return {
        stage: dataclasses.replace(
            cap,
            dynamo=list(cap.dynamo),
            aot={k: list(v) for k, v in cap.aot.items()},
            code=dict(cap.code),
        )
        for stage, cap in captures.items()
    }


def test_fresh_stubs_fail_exactly_the_exercise_checks(stub_run):
    checks = stub_run.result["checks"]
    graded = [c for c in checks if c.get("exercise")]
    assert [c["name"] for c in checks if not c.get("exercise") and not c["passed"]] == []
    assert graded and not any(c["passed"] for c in graded)
    statuses = {ex_id: r["status"] for ex_id, r in stub_run.result["exercises"].items()}
    assert statuses == {
        "compile.kernel": exercise.NOT_STARTED,
        "compile.answers": exercise.NOT_STARTED,
    }
    assert "explained" not in stub_run.result, (
        "the explanation is revealed only once the answer passes"
    )


@pytest.fixture
def fresh_ctx(tmp_path) -> LabContext:
    return LabContext("compile", tmp_path, "cpu", 1, 0)


def failed(ctx: LabContext) -> list[str]:
    return [c.name for c in ctx.checks if not c.passed]


def compiled_step_gradients(run: StubRun, ctx: LabContext, scale: float) -> None:
    """The lab's gradient check on one more step of its compiled loss, the gradients multiplied by `scale`,
    against eager on a copy of the same weights."""
    twin = run.train.twin
    eager = copy.deepcopy(twin)
    for p in (*twin.parameters(), *eager.parameters()):
        p.grad = None
    loss_c = lab.forward_backward(run.train.loss_fn, run.xb, run.yb)
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
            if "store" in a.role:
                a.nbytes = 0
        return found

    mp.setattr(generated_kernels, "call_arguments", zero_stores)
    lab.check_generated_code(ctx, run.captures)


def log_softmax_explained(mp, run, ctx):
    """The picker takes the loss's _log_softmax kernel for the attention softmax."""
    mp.setattr(kernel_explanation, "PREFERRED", ("_log_softmax", "native_layer_norm"))
    lab.check_generated_code(ctx, run.captures)


def no_intermediates(mp, run, ctx):
    """The unfused estimate finds no eager results (1.0x the fused traffic, and still "fusing pays")."""
    mp.setattr(kernel_explanation, "eager_results", lambda kernel, graphs: [])
    lab.check_generated_code(ctx, run.captures)


def recompiles_counted(mp, run, ctx):
    """Recompiles counted instead of compiles: dynamic=True reports 0."""
    original = lab.count_compiles
    mp.setattr(
        lab,
        "count_compiles",
        lambda *a: dataclasses.replace(r := original(*a), compiles=r.compiles - 1),
    )
    lab.check_recompiles(ctx, run.model)


def default_marked_dynamic(mp, run, ctx):
    """The default experiment marks the length dynamic too (a copy-paste of mark_dynamic's branch)."""
    original = lab.count_compiles

    def count(model, lengths, batch, how):
        return dataclasses.replace(
            original(model, lengths, batch, "mark_dynamic" if how == "default" else how), how=how
        )

    mp.setattr(lab, "count_compiles", count)
    lab.check_recompiles(ctx, run.model)


def item_captured(mp, run, ctx):
    """capture_scalar_outputs left on: .item() stays in the graph."""
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        lab.check_graph_breaks(ctx, run.model, run.xb, run.yb)


def reuse_not_followed(mp, run, ctx):
    """`bufN = bufM; del bufM  # reuse` lines not followed: the softmax's in_out buffer has no size."""
    mp.setattr(generated_kernels, "ALIAS", re.compile(r"(?!)"))
    lab.check_generated_code(ctx, run.captures)


def omp_for_missed(mp, run, ctx):
    """The loops under `#pragma omp for` are not found: no CPU launch grid."""
    mp.setattr(loops, "cpp_grid", lambda found: [])
    lab.check_generated_code(ctx, run.captures)


def max_not_recognised(mp, run, ctx):
    """The max accumulator not recognised (a torch release renames max_propagate_nan)."""
    mp.setattr(loops, "REDUCE_CPP", {k: v for k, v in loops.REDUCE_CPP.items() if v != "max"})
    lab.check_generated_code(ctx, run.captures)


def wrong_model_package(mp, run, ctx):
    """Source lines looked up under the wrong package: no kernel traces back to model.py."""
    mp.setattr(provenance, "MODEL_DIR", "workshop/no_such_package/")
    lab.check_generated_code(ctx, run.captures)


def trace_not_started(mp, run, ctx):
    """torch's trace never pointed at the run folder: tlparse gets no compile."""
    if trace_report.tlparse_program() is None:
        pytest.skip("tlparse is not installed here")
    (ctx.out_dir / trace_report.TRACE_DIR).mkdir()
    lab.tlparse_report(ctx, True, run.captures)


def test_the_gradient_comparison_passes_without_a_bug(stub_run, fresh_ctx):
    """Before any test resets Dynamo: the lab's compiled loss runs again without compiling."""
    compiled_step_gradients(stub_run, fresh_ctx, 1.0)
    assert fresh_ctx.checks and failed(fresh_ctx) == []


MUTATIONS = [
    # issue 13's rows (the gradient one first, before the recompile experiments reset Dynamo)
    (
        scaled_gradients,
        "compiled gradients equal eager (worst parameter: max abs difference / its max abs gradient)",
    ),
    (
        unsized_stores,
        "explained kernel: bytes written per call (from the code) / softmax result bytes (AOT graph), at least",
    ),
    (log_softmax_explained, "explained kernel fuses the attention's _softmax"),
    (no_intermediates, "explained kernel: unfused / fused bytes per call"),
    (recompiles_counted, "compiles for 4 sequence lengths, dynamic"),
    # more plausible bugs
    (default_marked_dynamic, "compiles for 4 sequence lengths, default"),
    (item_captured, "graph breaks in the .item() variant (one .item())"),
    (
        reuse_not_followed,
        "explained kernel: bytes read per call (from the code) / softmax result bytes (AOT graph), at least",
    ),
    (
        omp_for_missed,
        "explained kernel: largest launch-grid extent = softmax rows B*H*T (AOT graph)",
    ),
    (
        max_not_recognised,
        "explained kernel: reductions in its code (softmax: a max and a sum per row)",
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
def test_a_planted_bug_is_caught_by_the_labs_own_check(stub_run, fresh_ctx, bug, check):
    with pytest.MonkeyPatch.context() as mp:
        bug(mp, stub_run, fresh_ctx)
    assert check in failed(fresh_ctx), f"{bug.__doc__} passed every check: {failed(fresh_ctx)}"
    print(f"{bug.__name__}: {bug.__doc__.strip()} -> caught by '{check}'")


def test_reading_the_snapshot_again_passes_without_a_bug(stub_run, fresh_ctx):
    """The captures kept from the lab's run read back as in the run (the other sections' clean runs are the
    lab run's own passing checks, test_fresh_stubs_fail_exactly_the_exercise_checks)."""
    lab.check_generated_code(fresh_ctx, stub_run.captures)
    assert fresh_ctx.checks and failed(fresh_ctx) == []


def graded_ctx(tmp_path, kernel_answer_source: str) -> LabContext:
    work = tmp_path / "my-work"
    work.mkdir()
    body = f"KERNEL_EXPLAINED = {kernel_answer_source}\n\n{ANSWERS.stub_code()}"
    (work / "compile.py").write_text(WORKSPACE_HEADER + "\n" + body)
    (tmp_path / "out").mkdir()
    return LabContext("compile", tmp_path / "out", "cpu", 1, 0, work=work)


@pytest.mark.parametrize("right", [True, False], ids=["passing answer", "failing answer"])
def test_the_explanation_is_revealed_only_once_the_answer_passes(stub_run, tmp_path, right):
    """A graded run reveals the learner's kernel explained (and the lab's softmax) once KERNEL_EXPLAINED
    passes, nothing before."""
    kernels = lab.generated_kernels(stub_run.captures)
    gelu = next(k for k in kernels if k.graph == "train/forward" and "gelu" in k.fused_ops)
    grid = loops.kernel_structure(gelu.source, gelu.language).grid
    answer = {
        "kernel": gelu.name,
        "fused_ops": ["gelu"],
        "bytes_read": gelu.traffic("load"),
        "bytes_written": gelu.traffic("store") if right else 0,
        "reduction": "none",
        "grid": grid,
    }
    ctx = graded_ctx(tmp_path, repr(answer))
    softmax = kernel_explanation.pick_kernel([k for k in kernels if k.graph == "train/forward"])
    explained = kernel_explanation.explain(
        softmax, stub_run.captures["train"].aot["forward"], "cpu"
    )
    facts = run_facts.RunFacts(*[0] * len(dataclasses.fields(run_facts.RunFacts)))
    shown = lab.grade_exercises(ctx, kernels, facts, explained, stub_run.captures)
    assert [ex.kernel.name for ex in shown] == ([gelu.name, softmax.name] if right else [])
