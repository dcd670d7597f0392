"""Lab dispatcher: F.linear(x, W, b) with the LM head's weights, and torch.matmul on 2-D and 3-D inputs, followed
through every dispatch decision down to the op (and, on CUDA, the cuBLAS kernel) that does the GEMM.

Each scenario is recorded (recorder.py), explained key by key with the real dispatcher's own answers (keys.py,
tracing.py: never with the re-implementation the learner writes), and written to trace.json / trace.md /
dispatch_path.png / profiler/*.json. The learner's table_entry and walk (reimpl.py's in a plain run), predictions
and answers are graded by the one engine (engine.py) on the run's decisions and facts, measured here
(grade_exercises); their declarations, diagnoses included, are in grading/.
"""

from __future__ import annotations

import time

import torch

from workshop import engine
from workshop.foundations import atomic
from workshop.i18n import _, templates
from workshop.lab_api import LabContext
from workshop.labs.dispatcher import keys, trace_display
from workshop.labs.dispatcher.grading import probes
from workshop.labs.dispatcher.scenario_list import CALLS, RECORDER_KEYS, all_scenarios
from workshop.labs.dispatcher.tracing import (
    depths,
    flat,
    lm_head_input,
    priority_disagreements,
    real_keys,
    run_scenario,
)
from workshop.minigpt import checkpoint

PROFILE_DIR = "profiler"  # one Chrome trace JSON per scenario, for Perfetto / chrome://tracing
# table_entry is graded at these keys of every op of the run too (where this torch has them), whether or not a
# call walked there: the dense backends, the autograd and nested-tensor keys of CPU and CUDA, and the single
# keys above them that the lab's calls carry or that hold fallbacks (the keys where the precedence rules differ:
# a backend with its own kernel, autograd keys wrapping a nested-tensor kernel, ...).
GRADED_KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradMeta",
    "AutogradNestedTensor",
    "ADInplaceOrView",
    "AutocastCPU",
    "AutocastCUDA",
    "BackendSelect",
    "Python",
    "PythonTLSSnapshot",
    "PythonDispatcher",
    "PreDispatch",
    "Functionalize",
    "Conjugate",
    "Negative",
    "ZeroTensor",
)


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
    ctx.extra.update(
        torch=torch.__version__,
        scenarios=[r["name"] for r in results],
        calls=call_count(results),
        decisions=decision_count(results),
        gemm_kernels={r["name"]: r["gemm_kernels"] for r in results if r["gemm_kernels"]},
        # what result.json says of each matmul scenario (the theory text quotes it)
        matmul={
            r["name"]: {
                "call": CALLS[r["call"]],
                "input_shapes": [a["shape"] for a in r["python_layer"][0]["tensor_args"]],
                "decided_at": real_keys(r["tree"])[-1],
                "ops": trace_display.top_ops(r["tree"]),
                "gemm_op": r["gemm_op"],
                "gemm_kernels": r["gemm_kernels"],
                "output": r["output"],
            }
            for r in results
            if r["call"] != "linear"
        },
        profiler_traces=sorted(profiles),
        elapsed_s=round(elapsed, 2),
    )
    ctx.render_summary(**summary_values(ctx, results, sorted(profiles)))


def trace_all(ctx: LabContext) -> tuple[list[dict], dict[str, bytes]]:
    """Every scenario on the CPU, and on CUDA too when the run is on a GPU; each one's profiler trace."""
    results, profiles = [], {}
    for device in ["cpu"] + (["cuda"] if ctx.options.device == "cuda" else []):
        model = checkpoint.load(ctx.options.checkpoint, device=device)
        x = lm_head_input(model, ctx.options.seed, device)  # (2, T, 64)
        for sc in all_scenarios([device]):
            result, profile = run_scenario(sc, model.lm_head, x)
            results.append(result)
            profiles[profile_name(sc["name"])] = profile
    return results, profiles


def profile_name(scenario: str) -> str:
    """'cpu/grad/3d' -> 'profiler/cpu-grad-3d.json'."""
    return f"{PROFILE_DIR}/{scenario.replace('/', '-')}.json"


def write_outputs(ctx: LabContext, results: list[dict], profiles: dict[str, bytes]):
    ctx.write_json("trace.json", {"torch": torch.__version__, "scenarios": results})
    for name, data in profiles.items():
        atomic.write_bytes(ctx.path(name), data)
    values = {
        "results": results,
        "calls": CALLS,
        "max_shown": trace_display.MAX_SHOWN,
        "t": trace_display,
        "depths": depths,
    }
    ctx.write_text(
        "trace.md", templates.render(ctx.templates_folder, ctx.options.lang, values, "trace.md.j2")
    )
    by_name = {r["name"]: r for r in results}
    panels = [
        by_name[f"{ctx.options.device}/grad/3d"],
        by_name[f"{ctx.options.device}/inference_mode/3d"],
    ]
    ctx.save_figure("dispatch_path.png", trace_display.dispatch_path_figure(panels))


def call_count(results: list[dict]) -> int:
    return sum(len(list(flat(r["tree"]))) for r in results)


def decision_count(results: list[dict]) -> int:
    """Dispatch decisions recorded: one per step of every call's chain (a key and its kernel)."""
    return sum(len(n["chain"]) for r in results for n in flat(r["tree"]))


def check_trace(ctx: LabContext, results: list[dict]) -> None:
    """The real dispatcher's decisions on every call of the run, and the lab's own tables beside torch's.
    (The learner's re-implementation is graded on these decisions by the exercises: grade_exercises.)"""
    nodes = [n for r in results for n in flat(r["tree"])]
    ctx.check_max(
        _("aten op calls without a winning key and kernel"),
        sum(not n["explained"] for n in nodes),
        0,
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
        sum(not n["python_key_consistent"] for n in nodes),
        0,
    )


def expected_autograd_node(r: dict) -> str | None:
    """The node autograd records for the output: none when grad mode is off or no input requires grad, else
    the backward node of the last op that made the output (aten::_unsafe_view -> UnsafeViewBackward0)."""
    records = r["mode"] not in ("no_grad", "inference_mode") and any(
        a["requires_grad"] for a in r["python_layer"][0]["tensor_args"]
    )
    if not records:
        return None
    last = trace_display.top_ops(r["tree"])[-1].removeprefix("aten::")
    return "".join(part.capitalize() for part in last.split("_")) + "Backward0"


def check_observations(ctx: LabContext, results: list[dict]) -> None:
    """What the observers saw, against each other and against what each scenario's state implies."""
    ctx.check_max(
        _("scenarios whose profiler op list the trace does not explain"),
        sum(not r["profiler"]["ok"] for r in results),
        0,
    )
    ctx.check_max(
        _("scenarios whose output differs from the same call made unobserved (torch.equal)"),
        sum(not r["output_equals_plain_call"] for r in results),
        0,
    )
    ctx.check_equal(
        _("scenarios where the root op itself reaches the Python key"),
        sorted(r["name"] for r in results if r["tree"]["arrived_at_python"]),
        sorted(r["name"] for r in results if r["mode"] == "inference_mode"),
    )
    ctx.check_equal(
        _("autograd node recorded for the output, per scenario"),
        {r["name"]: (r["autograd_nodes"] or [None])[0] for r in results},
        {r["name"]: expected_autograd_node(r) for r in results},
    )
    ctx.check_max(
        _("scenarios whose trace holds not exactly one GEMM op call"),
        sum(len(r["gemm_ops"]) != 1 for r in results),
        0,
    )
    if ctx.options.device == "cuda":
        ctx.check_max(
            _("CUDA scenarios whose GEMM op launched no device kernel the profiler saw"),
            sum(not r["gemm_kernels"] for r in results if r["device"] == "cuda"),
            0,
        )


def grade_exercises(ctx: LabContext, results: list[dict]) -> None:
    """Each exercise against what the real dispatcher decided in this run (grading/exercises.py declares how)."""
    # the slots and walks are computed for their exercise alone: not when `check` grades only others. A case's
    # label is its check's name after the function's ("{function}: {label}", the declarations' check), the
    # names the run's records and the tests read
    if ctx.wants("table_entry"):
        engine.grade(ctx, "table_entry", slot_cases(results), call=probes.table_entries)
    if ctx.wants("walk"):
        # every call of the run ([op, tensor keys, TLS include, TLS exclude]) against the whole chain of keys the
        # real dispatcher walked, to the kernel that did the work
        nodes = [n for r in results for n in flat(r["tree"])]
        calls = [
            [n["qualified"], n["tensor_keys"], n["tls_include"], n["tls_exclude"]] for n in nodes
        ]
        engine.grade(
            ctx,
            "walk",
            [
                engine.Case(
                    _(
                        "recorded calls whose chain differs from the real dispatcher's (whole chains)"
                    ),
                    (calls,),
                    {"chains": [real_keys(n) for n in nodes]},
                    {
                        "calls": calls,
                        "scenarios": [r["name"] for r in results for n in flat(r["tree"])],
                    },
                )
            ],
            call=probes.walks,
        )
    engine.grade(ctx, "predictions", prediction_facts(results))
    engine.grade(ctx, "answers", answer_facts(results))


def slot_cases(results: list[dict]) -> list[engine.Case]:
    """table_entry's two cases: the slots the run's calls walked through, then the GRADED_KEYS slots of the same
    ops that none did; each (op, key) once, against the kernel in the dispatcher's computed table."""
    nodes = [n for r in results for n in flat(r["tree"])]
    recorded = {(n["qualified"], k): None for n in nodes for k in real_keys(n)}
    known = set(keys.runtime_key_names())
    swept = {(n["qualified"], k): None for n in nodes for k in GRADED_KEYS if k in known}
    return [
        slot_case(
            _("recorded decisions whose kernel differs from the dispatcher's table"), list(recorded)
        ),
        slot_case(
            _("other graded slots of the run's ops that differ"),
            [p for p in swept if p not in recorded],
        ),
    ]


def slot_case(label: str, pairs: list[tuple[str, str]]) -> engine.Case:
    """The slots ([op, key]) and what the real table holds in each, as the probe sends an entry back (None:
    empty); the op is named as its table goes by ("aten::transpose.int")."""
    slots = [[op, key] for op, key in pairs]
    real = [probes.entry_value(keys.computed_table(op).get(key)) for op, key in slots]
    return engine.Case(label, (slots,), {"entries": real}, {"slots": slots})


def prediction_facts(results: list[dict]) -> dict[str, dict[str, str | None]]:
    """What PREDICTIONS is graded against, per CPU scenario (every run traces those; a CUDA run adds cuda/* ones
    that differ only in the backend's name): the key whose kernel first does real work on the traced call's root
    op (the end of its real chain: the recorder's pass-through keys only hand the call on), and the aten op that
    finally does the GEMM."""
    return {
        r["name"]: {"handled_at": real_keys(r["tree"])[-1], "gemm_op": r["gemm_op"]}
        for r in results
        if r["device"] == "cpu"
    }


def child(node: dict, op: str) -> dict:
    return next(c for c in node["children"] if c["op"] == op)


def answer_facts(results: list[dict]) -> dict[str, object]:
    """The handout's checked answers (README.md, Questions), read off this run's CPU scenarios."""
    by_name = {r["name"]: r["tree"] for r in results}
    outputs = {r["name"]: r["output_keys"] for r in results}
    grad = by_name["cpu/grad/3d"]
    addmm_autocast = child(by_name["cpu/autocast_bf16/3d"], "aten::addmm")
    inplace = keys.computed_table("aten::addmm").get("ADInplaceOrView")
    return {
        "addmm_ADInplaceOrView_kernel": inplace.tag if inplace else None,
        "addmm_ADInplaceOrView_fallthrough": bool(inplace and inplace.fallthrough),
        # the keys of a tensor made inside inference_mode: its result's own key set
        "inference_result_keys": frozenset(outputs["cpu/inference_mode/3d"]),
        "addmm_chain_without_recorder": [
            k for k in real_keys(child(grad, "aten::addmm")) if k not in RECORDER_KEYS
        ],
        # the excluded autocast key that addmm's tensors carry (autocast excludes other backends' keys too)
        "autocast_key_excluded_for_addmm": frozenset(
            k
            for k in set(addmm_autocast["tls_exclude"]) & set(addmm_autocast["tensor_keys"])
            if k.startswith("Autocast")
        ),
        "matmul_3d_last_op": by_name["cpu/matmul/3d"]["children"][-1]["op"],
    }


def summary_values(ctx: LabContext, results: list[dict], profiles: list[str]) -> dict:
    by_name = {r["name"]: r for r in results}
    main, inference = (
        by_name[f"{ctx.options.device}/grad/3d"],
        by_name[f"{ctx.options.device}/inference_mode/3d"],
    )
    root, folded = inference["tree"], by_name[f"{ctx.options.device}/matmul/3d"]
    return {
        "torch": torch.__version__,
        "results": results,
        "n_calls": call_count(results),
        "n_decisions": decision_count(results),
        "main": main,
        "addmm": child(main["tree"], "aten::addmm"),
        "inference": inference,
        # the remark on inference_mode is printed only when this run shows each part of it
        "inference_excludes_autograd": "AutogradFunctionality" in root["tls_exclude"]
        and not any(k.startswith("Autograd") for k in real_keys(root)),
        "inference_decomposes_below_python": root["arrived_at_python"]
        and root["kernel"] is not None
        and root["kernel"]["tag"] == "math kernel",
        "matmul": [r for r in results if r["call"] != "linear"],
        # the sentences on matmul's GEMM op are printed only when this run's trace shows them
        "matmul_folds": folded["gemm_ops"] == ["aten::mm"]
        and trace_display.top_ops(folded["tree"])[-1] == "aten::_unsafe_view",
        "matmul_batches": by_name[f"{ctx.options.device}/matmul_batched/3d"]["gemm_ops"]
        == ["aten::bmm"],
        "calls": CALLS,
        "main_profile": profile_name(main["name"]),
        "profiles": profiles,
        "t": trace_display,
    }
