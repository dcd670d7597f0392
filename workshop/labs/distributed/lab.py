"""Lab distributed: run the four demos under torchrun with N = --n processes, check each against its
one-process reference, put their measurements side by side, hang one rank on purpose, and grade the learner's
predictions, answers and survey against this run.

Each demo is its own torchrun launch (start-up ~3 s each, kept for clarity: one strategy per job, as you would
run them). A strategy that cannot use N (tensor parallel with N not dividing 4 heads / 600 words; pipeline
parallel with more ranks than 4 blocks) is not started: it gets one failed check that says why, the others run.
N larger than the visible GPUs stops the lab before anything starts.
"""

from __future__ import annotations

import os

from workshop.i18n import _
from workshop.lab import LabContext
from workshop.labs.distributed import (
    answers,
    checks,
    ddp,
    figures,
    flight_recorder,
    idle,
    launch,
    pipeline_gantt,
    predictions,
    survey,
)
from workshop.labs.distributed.records import Measurements

TIMEOUT_S = 300
HANG_TIMEOUT_S = 5.0  # the hung-rank demo's --pg-timeout: how long its peers wait
DEMOS = (*launch.STRATEGIES, "hang")


def run(
    ctx: LabContext, demos: tuple[str, ...] | None = None, demo_args: dict | None = None
) -> None:
    """All DEMOS, or `demos` (a subset, for the tests); demo_args: strategy -> extra options of its demo."""
    demos = DEMOS if demos is None else demos
    agents = launch.agents()  # one standalone torchrun, or one agent per task of a Slurm job
    if why := agents.problem(ctx.n_procs) or launch.capacity_problem(
        ctx.n_procs // agents.count, ctx.device
    ):
        raise ValueError(why)
    wall, failures, data = {}, {}, {}
    for strategy in (s for s in launch.STRATEGIES if s in demos):
        if measured := launch_demo(
            ctx, strategy, (demo_args or {}).get(strategy, ()), wall, failures
        ):
            data[strategy] = measured
    pipeline = figures.pipeline_idle(data)
    for measured in data.values():
        checks.check_strategy(ctx, measured, data.get("ddp"), pipeline)
    rows = figures.rows(data, pipeline)
    ctx.write_json("figures.json", [f.as_json() for f in rows])
    if pipeline:
        ctx.save_figure("pp/gantt.png", pipeline_gantt.draw(data["pp"].runs, pipeline))
    hang = hang_demo(ctx) if "hang" in demos else None
    grade_exercises(ctx, rows, data)
    ctx.extra.update(
        n_procs=ctx.n_procs,
        wall_s=wall,
        skipped_schedules=data["pp"].skipped_schedules if "pp" in data else {},
    )
    ctx.render_summary(**summary_values(ctx, rows, data, pipeline, hang, wall, failures))


def launch_demo(
    ctx: LabContext, strategy: str, args, wall: dict, failures: dict
) -> Measurements | None:
    n, out = ctx.n_procs, ctx.out_dir / strategy
    if why := launch.strategy_problem(strategy, n):
        ctx.check_equal(
            _("{strategy}: N={n} is usable (not started)").format(strategy=strategy, n=n),
            why,
            "usable",
        )
        return None
    agents = launch.agents()
    cmd = agents.command(strategy, n, ctx.device, out, demo_args=args)
    rc, wall[strategy] = launch.run(cmd, out / "log.txt", TIMEOUT_S)
    print(
        _("[{lab}] {strategy}: torchrun exited {rc} after {seconds:.1f} s").format(
            lab=ctx.name, strategy=strategy, rc=rc, seconds=wall[strategy]
        ),
        flush=True,
    )
    ctx.check_equal(
        _("{strategy}: torchrun --nproc-per-node {n} exit code").format(
            strategy=strategy, n=n // agents.count
        ),
        rc,
        0,
    )
    if rc != 0:
        failures[strategy] = "\n".join(
            (out / "log.txt").read_text(errors="replace").splitlines()[-25:]
        )
        return None
    return Measurements.read(out)


def hang_demo(ctx: LabContext) -> dict | None:
    """DDP with the last rank hanging at step 1: the peers give up after HANG_TIMEOUT_S, and every rank dumps
    its Flight Recorder buffer. One rank alone has no peer to wait for: not run with N=1."""
    n, out = ctx.n_procs, ctx.out_dir / "hang"
    if n < 2:
        return None
    hung = n - 1
    # the default DDP run only: the hung rank stops it at step 1
    options = ["--fail-rank", str(hung), "--fail-mode", "hang", "--pg-timeout", str(HANG_TIMEOUT_S)]
    options += ["--steps", "2", "--runs", "ddp"]
    rc, seconds = launch.run(
        launch.agents().command("ddp", n, ctx.device, out, demo_args=options),
        out / "log.txt",
        TIMEOUT_S,
    )
    print(
        _("[{lab}] hang: torchrun exited {rc} after {seconds:.1f} s").format(
            lab=ctx.name, rc=rc, seconds=seconds
        ),
        flush=True,
    )
    backend = "nccl" if ctx.device == "cuda" else "gloo"
    supported = flight_recorder.dump_function(backend) is not None
    states = checks.check_hang(ctx, rc, seconds, HANG_TIMEOUT_S, hung, out, supported)
    return {
        "rank": hung,
        "rc": rc,
        "seconds": seconds,
        "timeout_s": HANG_TIMEOUT_S,
        "states": states,
        "stuck": flight_recorder.stuck(states),
        "why_no_dump": _("this torch has no Flight Recorder dump for {backend}").format(
            backend=backend
        )
        if not supported
        else _("the ranks wrote none (see hang/log.txt)"),
    }


def grade_exercises(
    ctx: LabContext, rows: list[figures.Figure], data: dict[str, Measurements]
) -> None:
    with ctx.grading("predictions") as impl:
        predictions.grade(ctx, impl, rows)
    with ctx.grading("answers") as impl:
        answers.grade(ctx, impl, answers.facts(rows, data.get("tp")))
    with ctx.grading("survey") as document:
        if not ctx.graded:  # the reference: the model answer in the run's language
            document = survey.model_answer(ctx.lang)
        survey.grade(ctx, document, *survey.figures_for(document if ctx.graded else None, rows))


def interleaving_idled_more(g: idle.Idle | None, i: idle.Idle | None) -> bool:
    """What the summary explains only when the run shows it: interleaving idled more than GPipe though its
    theory is lower, and its per-chunk waits took more of its step."""
    if g is None or i is None:
        return False
    return i.theory < g.theory and i.measured > g.measured and i.overhead_share > g.overhead_share


def ddp_overlap(rows: list[figures.Figure], data: dict[str, Measurements]) -> dict | None:
    """The DDP runs' all-reduces against their backward, for the summary (None where DDP did not run both or a
    trace shows no all-reduce in backward); `shown`: the run shows the contrast the summary's sentence states."""
    runs = [f for f in rows if f.strategy == "ddp"]
    if [f.run for f in runs] != list(ddp.BUCKET_CAP_MB) or any(f.overlap() is None for f in runs):
        return None
    table = []
    for f in runs:
        early, issued = f.issued_early()
        trace = data["ddp"].runs[f.run].per_rank[0].trace
        after = next(n for k, n in f.issued_in_backward if k == "allreduce")
        row = dict(demo=f.demo, trace=f"ddp/{trace}", issued=issued, early=early, after=after)
        table.append(row | dict(ops=f.backward_ops, share=f.overlap()))
    default, small = table
    shown = default["after"] == 0 and small["early"] > 0
    return {"cap_mb": ddp.BUCKET_CAP_MB["small_buckets"], "runs": table, "shown": shown}


def summary_values(ctx, rows, data, pipeline, hang, wall, failures) -> dict:
    by_run = {f.run: f for f in rows}
    pipe = [
        {
            "name": name,
            "idle": a,
            "busy_ratio": a.busy_s / data["pp"].runs[name].per_rank[0].reference_compute_s,
        }
        for name, a in pipeline.items()
    ]
    g, i = pipeline.get("gpipe"), pipeline.get("interleaved_1f1b")
    ddp, fsdp = by_run.get("ddp"), by_run.get("fsdp")
    traffic = None
    if ddp and fsdp and ctx.n_procs > 1:
        traffic = {
            "ddp_buffers": ddp.comm_bytes,
            "fsdp_buffers": fsdp.comm_bytes,
            "ddp_sent": ddp.sent_bytes,
            "fsdp_sent": fsdp.sent_bytes,
        }
    timeouts = next(iter(data.values())).default_timeouts_s if data else {}
    seconds = fsdp.comm_seconds_rank0 if fsdp else {}
    gloo_scatter = fsdp and "reducescatter" not in seconds and "allreduce" in seconds
    return {
        "param_bytes": checks.checkpoint_param_bytes(),
        "steps": next(iter(data.values())).steps if data else 0,
        "n": ctx.n_procs,
        "wall_s": wall,
        "skipped": data["pp"].skipped_schedules if "pp" in data else {},
        "figures": rows,
        "fsdp_vs_ddp": traffic,
        "ddp_overlap": ddp_overlap(rows, data),
        "reduce_scatter_as_all_reduce": bool(gloo_scatter),
        "traces": [
            f"{m.strategy}/{r.trace}"
            for m in data.values()
            for run in m.runs.values()
            for r in run.per_rank
        ],
        "pipeline": pipe,
        "interleaved_vs_gpipe": {"i": i, "g": g} if interleaving_idled_more(g, i) else None,
        "oversubscribed": ctx.device == "cpu" and ctx.n_procs > (os.cpu_count() or 1),
        "cores": os.cpu_count(),
        "hang": hang,
        "timeouts": timeouts,
        "failures": failures,
    }
