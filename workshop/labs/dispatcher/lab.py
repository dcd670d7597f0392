"""Lab dispatcher: F.linear(x, W, b) with the LM head's weights, and torch.matmul on 2-D and 3-D inputs, followed
through every dispatch decision down to the op (and, on CUDA, the cuBLAS kernel) that does the GEMM.

Each scenario is recorded (recorder.py), explained key by key with the real dispatcher's own answers (keys.py,
crosscheck.py: never with the re-implementation the learner writes), and written to trace.json / trace.md /
dispatch_path.png / profiler/*.json. The learner's table_entry and walk (reimpl.py's in a plain run), predictions
and answers are graded on the run's decisions (grading/decisions.py, grading/trace_facts.py).
"""

from __future__ import annotations

import time
from dataclasses import asdict

import torch

from workshop.declarations.questions import grade_answers
from workshop.foundations import atomic
from workshop.i18n import _, templates
from workshop.lab_api import LabContext
from workshop.labs.dispatcher import keys, trace_text
from workshop.labs.dispatcher.crosscheck import flat, priority_disagreements
from workshop.labs.dispatcher.grading import decisions, trace_facts
from workshop.labs.dispatcher.scenario_list import CALLS, all_scenarios
from workshop.labs.dispatcher.tracing import ScenarioResult, lm_head_input, run_scenario
from workshop.minigpt import checkpoint

PROFILE_DIR = "profiler"  # one Chrome trace JSON per scenario, for Perfetto / chrome://tracing


def run(ctx: LabContext) -> None:
    """The whole lab; a check of named exercises (`check dispatcher EXERCISE`) traces and grades, no more."""
    start = time.perf_counter()
    results, profiles = trace_all(ctx)
    elapsed = time.perf_counter() - start  # reported, not bounded: a slow machine is no mistake
    grade_exercises(ctx, results)
    if ctx.options.only:  # the outputs, the lab's own checks, the summary: a whole run's
        ctx.summary = _(
            "Graded only {exercises}; the whole lab runs with `python -m workshop check {lab}`."
        ).format(exercises=", ".join(ctx.options.only), lab=ctx.name)
        return
    write_outputs(ctx, results, profiles)
    check_trace(ctx, results)
    check_observations(ctx, results)
    by_name = {r.name: r for r in results}
    ctx.extra.update(
        torch=torch.__version__,
        scenarios=list(by_name),
        calls=call_count(results),
        decisions=decision_count(results),
        gemm_kernels={r.name: r.gemm_kernels for r in results if r.gemm_kernels},
        matmul={r.name: matmul_record(r) for r in results if r.call != "linear"},
        profiler_traces=sorted(profiles),
        elapsed_s=round(elapsed, 2),
    )
    ctx.render_summary(**summary_values(ctx, results, sorted(profiles)))


def trace_all(ctx: LabContext) -> tuple[list[ScenarioResult], dict[str, bytes]]:
    """Every scenario on the CPU, and on CUDA too when the run is on a GPU; each one's profiler trace."""
    results, profiles = [], {}
    for device in ["cpu"] + (["cuda"] if ctx.device == "cuda" else []):
        model = checkpoint.load(ctx.checkpoint, device=device)
        x = lm_head_input(model, ctx.seed, device)  # (2, T, 64)
        for sc in all_scenarios([device]):
            result, profile = run_scenario(sc, model.lm_head, x)
            results.append(result)
            profiles[profile_name(sc.name)] = profile
    return results, profiles


def profile_name(scenario: str) -> str:
    """'cpu/grad/3d' -> 'profiler/cpu-grad-3d.json'."""
    return f"{PROFILE_DIR}/{scenario.replace('/', '-')}.json"


def scenario_json(r: ScenarioResult) -> dict:
    return {
        **asdict(r),
        "gemm_op": r.gemm_op,
        "profiler": {**asdict(r.profiler), "ok": r.profiler.ok},
    }


def write_outputs(ctx: LabContext, results: list[ScenarioResult], profiles: dict[str, bytes]):
    ctx.write_json(
        "trace.json", {"torch": torch.__version__, "scenarios": [scenario_json(r) for r in results]}
    )
    for name, data in profiles.items():
        atomic.write_bytes(ctx.path(name), data)
    values = {
        "results": results,
        "calls": CALLS,
        "max_shown": trace_text.MAX_SHOWN,
        "t": trace_text,
    }
    ctx.write_text(
        "trace.md", templates.render(ctx.templates_folder, ctx.lang, values, "trace.md.j2")
    )
    by_name = {r.name: r for r in results}
    panels = [by_name[f"{ctx.device}/grad/3d"], by_name[f"{ctx.device}/inference_mode/3d"]]
    # matplotlib costs ~1 s to import: only a whole run draws, not a check of named exercises
    from workshop.labs.dispatcher.ladder import dispatch_path_figure

    ctx.save_figure("dispatch_path.png", dispatch_path_figure(panels))


def call_count(results: list[ScenarioResult]) -> int:
    return sum(len(list(flat(r.tree))) for r in results)


def decision_count(results: list[ScenarioResult]) -> int:
    """Dispatch decisions recorded: one per step of every call's chain (a key and its kernel)."""
    return sum(len(n.chain) for r in results for n in flat(r.tree))


def check_trace(ctx: LabContext, results: list[ScenarioResult]) -> None:
    """The real dispatcher's decisions on every call of the run, and the lab's own tables beside torch's.
    (The learner's re-implementation is graded on these decisions by the exercises: grade_exercises.)"""
    nodes = [n for r in results for n in flat(r.tree)]
    ctx.check_max(
        _("aten op calls without a winning key and kernel"), sum(not n.explained for n in nodes), 0
    )
    # 10 scenarios of 2-8 calls, 1-4 steps each: a recorder that loses calls falls far below
    ctx.check_min(
        _("dispatch decisions recorded (key + kernel per chain step)"), decision_count(results), 100
    )
    ctx.check_max(
        _(
            "backend fallbacks (read off an op with no kernels) that _dispatch_has_backend_fallback denies"
        ),
        len(keys.fallback_contradictions()),
        0,
    )
    ctx.check_max(
        _("reimpl.PRIORITY pairs ordered unlike DispatchKeySet.highestPriorityTypeId"),
        len(priority_disagreements()),
        0,
    )
    ctx.check_max(
        _("calls seen at the Python key where the chain says otherwise (or vice versa)"),
        sum(not n.python_key_consistent for n in nodes),
        0,
    )


def expected_autograd_node(r: ScenarioResult) -> str | None:
    """The node autograd records for the output: none when grad mode is off or no input requires grad, else
    the backward node of the last op that made the output (aten::_unsafe_view -> UnsafeViewBackward0)."""
    records = r.mode not in ("no_grad", "inference_mode") and any(
        a.requires_grad for a in r.python_layer[0].tensor_args
    )
    if not records:
        return None
    last = trace_text.top_ops(r.tree)[-1].removeprefix("aten::")
    return "".join(part.capitalize() for part in last.split("_")) + "Backward0"


def check_observations(ctx: LabContext, results: list[ScenarioResult]) -> None:
    """What the observers saw, against each other and against what each scenario's state implies."""
    ctx.check_max(
        _("scenarios whose profiler op list the trace does not explain"),
        sum(not r.profiler.ok for r in results),
        0,
    )
    ctx.check_max(
        _("scenarios whose output differs from the same call made unobserved (torch.equal)"),
        sum(not r.output_equals_plain_call for r in results),
        0,
    )
    ctx.check_equal(
        _("scenarios where the root op itself reaches the Python key"),
        sorted(r.name for r in results if r.tree.arrived_at_python),
        sorted(r.name for r in results if r.mode == "inference_mode"),
    )
    ctx.check_equal(
        _("autograd node recorded for the output, per scenario"),
        {r.name: (r.autograd_nodes or [None])[0] for r in results},
        {r.name: expected_autograd_node(r) for r in results},
    )
    ctx.check_max(
        _("scenarios whose trace holds not exactly one GEMM op call"),
        sum(len(r.gemm_ops) != 1 for r in results),
        0,
    )
    if ctx.device == "cuda":
        ctx.check_max(
            _("CUDA scenarios whose GEMM op launched no device kernel the profiler saw"),
            sum(not r.gemm_kernels for r in results if r.device == "cuda"),
            0,
        )


def grade_exercises(ctx: LabContext, results: list[ScenarioResult]) -> None:
    # the slots and walks are computed for their exercise alone: not when `check` grades only others
    if ctx.wants("table_entry"):
        with ctx.grading("table_entry", worker=True) as impl:
            decisions.grade_table_entry(ctx, impl, decisions.slots(results))
    if ctx.wants("walk"):
        with ctx.grading("walk", worker=True) as impl:
            decisions.grade_walk(ctx, impl, decisions.walks(results))
    with ctx.grading("predictions", worker=True) as impl:
        predicted = trace_facts.predictions(results)
        grade_answers(ctx, impl.value, predicted, explain=trace_facts.explain_prediction)
    with ctx.grading("answers", worker=True) as impl:
        grade_answers(ctx, impl.value, trace_facts.answers(results))


def matmul_record(r: ScenarioResult) -> dict:
    """What result.json says of a matmul scenario (the theory text quotes it)."""
    return {
        "call": CALLS[r.call],
        "input_shapes": [a.shape for a in r.python_layer[0].tensor_args],
        "decided_at": r.tree.real_keys[-1],
        "ops": trace_text.top_ops(r.tree),
        "gemm_op": r.gemm_op,
        "gemm_kernels": r.gemm_kernels,
        "output": r.output,
    }


def summary_values(ctx: LabContext, results: list[ScenarioResult], profiles: list[str]) -> dict:
    by_name = {r.name: r for r in results}
    main, inference = by_name[f"{ctx.device}/grad/3d"], by_name[f"{ctx.device}/inference_mode/3d"]
    root, folded = inference.tree, by_name[f"{ctx.device}/matmul/3d"]
    return {
        "torch": torch.__version__,
        "results": results,
        "n_calls": call_count(results),
        "n_decisions": decision_count(results),
        "main": main,
        "addmm": next(c for c in main.tree.children if c.op == "aten::addmm"),
        "inference": inference,
        # the remark on inference_mode is printed only when this run shows each part of it
        "inference_excludes_autograd": "AutogradFunctionality" in root.tls_exclude
        and not any(k.startswith("Autograd") for k in root.real_keys),
        "inference_decomposes_below_python": root.arrived_at_python
        and root.kernel is not None
        and root.kernel.tag == "math kernel",
        "matmul": [r for r in results if r.call != "linear"],
        # the sentences on matmul's GEMM op are printed only when this run's trace shows them
        "matmul_folds": folded.gemm_ops == ["aten::mm"]
        and trace_text.top_ops(folded.tree)[-1] == "aten::_unsafe_view",
        "matmul_batches": by_name[f"{ctx.device}/matmul_batched/3d"].gemm_ops == ["aten::bmm"],
        "calls": CALLS,
        "main_profile": profile_name(main.name),
        "profiles": profiles,
        "t": trace_text,
    }
