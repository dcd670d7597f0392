"""The lab's summary.md: what each stage produced, the explained kernel, breaks, recompiles, timings."""

from __future__ import annotations

from workshop.labs.compile.explain import fmt_bytes


def summary(
    device: str,
    breaks: dict,
    recompiles: list[dict],
    timing: dict,
    facts: dict,
    kernels: list,
    captures: dict,
) -> str:
    stages = "\n".join(
        f"| {stage} | {len(cap.dynamo)} | {', '.join(f'{k} ({len(v)})' for k, v in cap.aot.items()) or '-'} | "
        f"{', '.join(f'`code/{stage}_{k}.py`' for k in cap.code) or '-'} | "
        f"{sum(1 for kn in kernels if kn.graph.startswith(stage + '/'))} | "
        f"{cap.compile_s:.1f} s |"
        for stage, cap in captures.items()
    )
    item = breaks["item_in_forward"]
    reasons = "\n".join(f"  - `{r['reason']}` at `{r['where']}`" for r in item["break_reasons"])
    recompile_rows = "\n".join(
        f"| {r['how']} | {r['compiles']} | {r['recompile_reasons'][0] if r['recompile_reasons'] else '-'} |"
        for r in recompiles
    )
    at = timing["at_batch"]
    time_rows = "\n".join(time_row(f"{name} (batch {t['batch']})", t) for name, t in at.items())
    sweep_rows = "\n".join(
        time_row(f"forward, batch {t['batch']}", t) for t in timing["forward_sweep"]
    )
    even = timing["forward_break_even_batch"]
    verdict = (
        f"compiled is faster from batch **{even}** on"
        if even is not None
        else "compiled was **not** faster at any swept batch size"
    )
    explained = (
        f"**`{facts['kernel']}`** ({facts['kind']}, {facts['graph']} graph, {facts['calls_per_run']} calls "
        f"per run) fuses {', '.join(f'`{o}`' for o in facts['fused_ops'])}; it moves "
        f"{fmt_bytes(facts['load_bytes'] + facts['store_bytes'])} per call against about "
        f"{fmt_bytes(facts['unfused_bytes_estimate'])} unfused. See `explanation.md`."
        if facts
        else "No kernel could be explained."
    )
    language = "C++" if device == "cpu" else "Triton"
    threads = f", {timing['cpu_threads']} CPU threads" if timing.get("cpu_threads") else ""
    return f"""
torch.compile (Inductor) on the MiniGPT, on **{device}**: Dynamo captures Python into an FX graph, AOTAutograd
splits it into forward and backward aten graphs, Inductor fuses and generates {language} kernels.

## What each stage produced (`graphs/<stage>/`, `code/`)

| compiled function | Dynamo graphs | AOT graphs | Inductor code | fused kernels | first call (trace+compile+run) |
|---|---|---|---|---|---|
{stages}

All {len(kernels)} kernels with the aten ops they fuse and their MiniGPT source lines: `kernels.json`.

## One kernel explained

{explained}

## Graph breaks and recompiles (`breaks.json`)

- MiniGPT loss: **{breaks["minigpt"]["graphs"]} graph, {breaks["minigpt"]["graph_breaks"]} breaks**.
- With `.item()` in forward: **{item["graphs"]} graphs, {item["graph_breaks"]} break(s)**:
{reasons}

Sequence lengths {recompiles[0]["lengths"]}:

| how | compiles | first recompile reason |
|---|---|---|
{recompile_rows}

## Eager vs compiled (`timing.json`, `timing.png`)

Median of repeated, interleaved calls after warm-up{threads}.
(Changing the thread count after compiling makes Dynamo recompile: it guards on it.)

| what | eager ms | compiled ms | speedup |
|---|---|---|---|
{time_rows}
{sweep_rows}

Forward: {verdict}. Compile time is paid once: {timing["compile_s"]["training step"]:.1f} s for the training step,
{timing["compile_s"]["forward"]:.1f} s for the forward. {payback(timing)}

![eager vs compiled](timing.png)
"""


def payback(timing: dict) -> str:
    """How many training steps the compile time takes to earn back, from this run's numbers."""
    step = timing["at_batch"]["training step"]
    saved_ms = step["eager_ms"] - step["compiled_ms"]
    if saved_ms <= 0:
        return "The compiled training step was not faster here, so its compile time is never earned back at this size."
    steps = timing["compile_s"]["training step"] * 1e3 / saved_ms
    return (
        f"The compiled training step saves {saved_ms:.2f} ms per step, so its compile time is earned back after "
        f"about {steps:,.0f} steps."
    )


def time_row(what: str, t: dict) -> str:
    return f"| {what} | {t['eager_ms']:.2f} | {t['compiled_ms']:.2f} | {t['speedup']:.2f}x |"
