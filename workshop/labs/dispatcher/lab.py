"""Lab dispatcher: one F.linear(x, W, b) with the LM head's weights, followed through every dispatch decision.

Each scenario is recorded (recorder.py), explained key by key with the readable re-implementation (reimpl.py)
beside the real dispatcher's answers (keys.py), and written to trace.json / trace.md / dispatch_path.png.
"""

from __future__ import annotations

import time

import torch

from workshop.lab import LabContext
from workshop.labs.dispatcher import render
from workshop.labs.dispatcher.explain import flat, priority_disagreements
from workshop.labs.dispatcher.scenarios import all_scenarios, lm_head_input, run_scenario
from workshop.minigpt import checkpoint


def run(ctx: LabContext) -> None:
    devices = ["cpu"] + (["cuda"] if ctx.device == "cuda" else [])
    start = time.perf_counter()
    results = []
    for device in devices:
        model = checkpoint.load(ctx.checkpoint, device=device)
        x = lm_head_input(model, ctx.seed, device)  # (2, T, 64)
        results += [run_scenario(sc, model.lm_head, x) for sc in all_scenarios([device])]
    elapsed = time.perf_counter() - start
    by_name = {r["name"]: r for r in results}
    calls = [n for r in results for n in flat(r["tree"])]
    steps = [s for n in calls for s in n["chain"]]

    ctx.write_json("trace.json", {"torch": torch.__version__, "scenarios": results})
    ctx.write_text("trace.md", render.trace_md(results))
    main = by_name[f"{ctx.device}/grad/3d"]
    inference = by_name[f"{ctx.device}/inference_mode/3d"]
    ctx.save_figure("dispatch_path.png", render.dispatch_path_figure([main, inference]))

    ctx.check_max(
        "aten op calls without a winning key and kernel", sum(not n["explained"] for n in calls), 0
    )
    ctx.check_min("dispatch decisions compared (key + kernel per chain step)", len(steps), 100)
    ctx.check_max(
        "decisions where the re-implementation disagrees with the dispatcher",
        sum(not s["agrees"] for s in steps),
        0,
    )
    ctx.check_max(
        "reimpl.PRIORITY pairs ordered unlike DispatchKeySet.highestPriorityTypeId",
        len(priority_disagreements()),
        0,
    )
    ctx.check_max(
        "calls seen at the Python key where the chain says otherwise (or vice versa)",
        sum(not n["python_key_consistent"] for n in calls),
        0,
    )
    ctx.check_max(
        "scenarios whose profiler op list the trace does not explain",
        sum(not r["profiler"]["ok"] for r in results),
        0,
    )
    ctx.check_max(
        "scenarios whose output differs from lm_head(x) (torch.equal)",
        sum(not r["output_equals_lm_head"] for r in results),
        0,
    )
    ctx.check_equal(
        "scenarios where aten::linear itself reaches the Python key",
        sorted(r["name"] for r in results if r["tree"]["arrived_at_python"]),
        sorted(r["name"] for r in results if r["mode"] == "inference_mode"),
    )
    root_node = {
        ("grad", 3): "ViewBackward0",
        ("grad", 2): "AddmmBackward0",
        ("autocast_bf16", 3): "ViewBackward0",
    }
    ctx.check_equal(
        "autograd node recorded for the output, per scenario",
        {r["name"]: (r["autograd_nodes"] or [None])[0] for r in results},
        {r["name"]: root_node.get((r["mode"], r["rank"])) for r in results},
    )
    if ctx.device == "cuda":
        ctx.check_min(
            "GEMM kernels named in the CUDA trace (cuda/grad/3d)",
            len(by_name["cuda/grad/3d"]["gemm_kernels"]),
            1,
        )
    ctx.check_max("tracing time, all scenarios (s)", elapsed, 120)

    gemm = {r["name"]: r["gemm_kernels"] for r in results if r["gemm_kernels"]}
    ctx.extra.update(
        torch=torch.__version__,
        scenarios=[r["name"] for r in results],
        calls=len(calls),
        decisions=len(steps),
        gemm_kernels=gemm,
        elapsed_s=round(elapsed, 2),
    )
    ctx.summary = summary(ctx, results, main, len(calls), len(steps))


def summary(ctx: LabContext, results: list[dict], main: dict, n_calls: int, n_steps: int) -> str:
    root = main["tree"]
    inf = next(r for r in results if r["name"] == f"{ctx.device}/inference_mode/3d")["tree"]
    gemm = {r["name"]: r["gemm_kernels"] for r in results if r["gemm_kernels"]}
    gemm_text = (
        "\n".join(f"- `{n}`: " + ", ".join(f"`{k}`" for k in ks) for n, ks in gemm.items())
        or "- none on this run (CPU only: run with `--device cuda` to see the cuBLAS/cuBLASLt kernel)"
    )
    first_ops = ", ".join(f"`{c['op']}`" for c in root["children"][:4])
    addmm = next(c for c in root["children"] if c["op"] == "aten::addmm")
    addmm_keys = " → ".join(s["key"] for s in addmm["chain"])
    addmm_node = main["autograd_nodes"][1] if len(main["autograd_nodes"]) > 1 else "-"
    return f"""
`F.linear(x, lm_head.weight, lm_head.bias)` traced in {len(results)} scenarios on torch {torch.__version__}:
{n_calls} operator calls, {n_steps} dispatch decisions, each compared with the real dispatcher.

- **{main["name"]}**: `aten::linear` {render.chain_text(root)}. The decomposition then calls
  {first_ops}; `aten::addmm` walks
  {addmm_keys}
  and records `{addmm_node}`.
- **inference_mode**: `aten::linear` {render.chain_text(inf)}: the TLS exclude set holds
  AutogradFunctionality, so no autograd key is in play and the first kernel below the Python key is the
  decomposition registered at the backend key.
- GEMM kernels launched on the device:
{gemm_text}

See `trace.md` (tables per scenario, side by side), `trace.json`, and the key ladder:

![dispatch path](dispatch_path.png)

{render.comparison_md(results)}
"""
