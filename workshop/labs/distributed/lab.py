"""Lab distributed: run the four demos under torchrun with N = --n processes, check each against its
one-process reference, and put their measurements side by side.

Each demo is its own torchrun launch (start-up ~3 s each, kept for clarity: one strategy per job, as you would
run them). A strategy that cannot use N (tensor parallel with N not dividing 4 heads / 600 words; pipeline
parallel with more ranks than 4 blocks) is not started: it gets one failed check that says why, the others run.
N larger than the visible GPUs stops the lab before anything starts.
"""

from __future__ import annotations

from workshop.lab import LabContext
from workshop.labs.distributed import checks, launch
from workshop.results import read_json

TIMEOUT_S = 300


def run(ctx: LabContext) -> None:
    n = ctx.n_procs
    if why := launch.capacity_problem(n, ctx.device):
        raise ValueError(why)
    data: dict[str, dict] = {}
    failures: dict[str, str] = {}  # strategy -> the end of its torchrun output
    for strategy in launch.STRATEGIES:
        out = ctx.out_dir / strategy
        if why := launch.strategy_problem(strategy, n):
            ctx.check_equal(f"{strategy}: N={n} is usable (not started)", why, "usable")
            continue
        rc, seconds = launch.run(
            launch.command(strategy, n, ctx.device, out), out / "log.txt", TIMEOUT_S
        )
        print(f"[{ctx.name}] {strategy}: torchrun exited {rc} after {seconds:.1f} s", flush=True)
        ctx.check_equal(f"{strategy}: torchrun --nproc-per-node {n} exit code", rc, 0)
        if rc != 0:
            failures[strategy] = "\n".join(
                (out / "log.txt").read_text(errors="replace").splitlines()[-25:]
            )
        elif (out / "measurements.json").is_file():
            data[strategy] = read_json(out / "measurements.json")
            data[strategy]["wall_s"] = round(seconds, 1)
            checks.check_strategy(ctx, data[strategy], data.get("ddp"))

    rows = [row for d in data.values() for row in checks.figures(d)]
    ctx.extra.update(
        n_procs=n,
        figures=rows,
        wall_s={s: d["wall_s"] for s, d in data.items()},
        skipped_schedules=data.get("pp", {}).get("skipped_schedules", {}),
    )
    ctx.write_json("figures.json", rows)
    ctx.summary = _summary(ctx, rows, data)
    for strategy, tail in failures.items():
        ctx.summary += (
            f"\n## {strategy} failed: the end of `{strategy}/log.txt`\n\n```\n{tail}\n```\n"
        )


def _summary(ctx: LabContext, rows: list[dict], data: dict) -> str:
    backend = "NCCL, one GPU per rank" if ctx.device == "cuda" else "gloo, CPU processes"
    table = [
        "| demo | bytes/rank (params+grads+optim) | CUDA peak | collectives in one step (rank 0) | step ms "
        "| loss / param err | idle: measured (theory) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        peak = f"{r['cuda_peak_bytes'] / 1e6:.2f} MB" if r["cuda_peak_bytes"] else "-"
        idle = f"{r['bubble']:.0%} ({r['bubble_theory']:.0%})" if "bubble" in r else "-"
        table.append(
            f"| {r['strategy']}/{r['run']} | {r['state_bytes_per_rank'] / 1e6:.2f} MB | {peak} "
            f"| {checks.collectives_text(r['collectives_rank0'])} | {r['step_ms']:.1f} "
            f"| {r['max_loss_error']:.1e} / {r['max_param_error']:.1e} | {idle} |"
        )
    skipped = data.get("pp", {}).get("skipped_schedules", {})
    skipped_text = "".join(f"\n- pipeline schedule `{k}` not run: {v}" for k, v in skipped.items())
    gantt = "\n![pipeline Gantt chart](pp/gantt.png)\n" if "pp" in data else ""
    return f"""
The MiniGPT ({checks.full_param_bytes() / 1e6:.2f} MB of fp32 parameters) trained for a few SGD steps by
**{ctx.n_procs} processes** ({backend}) with DDP, FSDP2, tensor parallel and pipeline parallel, each compared
with the same steps in one process. Each demo's raw data: `<demo>/measurements.json`, its torchrun output:
`<demo>/log.txt`. Wall time per launch (s): {ctx.extra["wall_s"]}.{skipped_text}

{chr(10).join(table)}
{gantt}
Look at: DDP's one all-reduce of all gradients vs FSDP's all-gathers + reduce-scatter of the same bytes with
1/N of the memory; tensor parallel's many small all-reduces (every block, forward and backward); the
pipeline's sends and its idle time, which shrinks with interleaving in theory but not always on a busy CPU.
"""
