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
from pathlib import Path

from workshop import engine
from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.distributed import (
    collectives,
    demo_checks,
    figure_rows,
    launch,
    measurements,
    pipeline_idle,
    plans,
)
from workshop.labs.distributed.grading import survey

TIMEOUT_S = 300
HANG_TIMEOUT_S = 5.0  # the hung-rank demo's --pg-timeout: how long its peers wait
DEMOS = (*launch.STRATEGIES, "hang")
EXERCISES = ("predictions", "answers", "survey")


# `check distributed predictions`: every strategy's figures at N, in one launch (together.py), the logged step
# after DDP rebuilt its buckets (at step 1), without DDP's small buckets, the other schedules or the hung rank
PREDICTIONS_ONLY = ["--runs", "ddp", "--schedules", "gpipe", "--steps", "3"]


def plan(ctx: LabContext) -> tuple[tuple[str, ...], dict, bool]:
    """The demos this run needs, their options, and whether they run in one launch: all of them when it grades
    every exercise (`run`, `check distributed`); the four strategies' when it grades some (no hung rank); for
    the predictions alone, only the runs they are graded on, in one launch (PREDICTIONS_ONLY)."""
    if all(ctx.wants(name) for name in EXERCISES):
        return DEMOS, {}, False
    if any(ctx.wants(name) for name in EXERCISES if name != "predictions"):
        return launch.STRATEGIES, {}, False
    return launch.STRATEGIES, {"together": PREDICTIONS_ONLY}, True


def run(
    ctx: LabContext, demos: tuple[str, ...] | None = None, demo_args: dict | None = None
) -> None:
    """The demos this run needs (plan), or `demos` (a subset, for the tests); demo_args: strategy -> extra
    options of its demo."""
    demos, demo_args, together = plan(ctx) if demos is None else (demos, demo_args or {}, False)
    agents = launch.agents()  # one standalone torchrun, or one agent per task of a Slurm job
    if why := agents.problem(ctx.options.n_procs) or launch.capacity_problem(
        ctx.options.n_procs // agents.count, ctx.options.device
    ):
        raise ValueError(why)
    wall, failures, data = {}, {}, {}
    usable = [s for s in launch.STRATEGIES if s in demos and usable_here(ctx, s)]
    # each launch: (its module, the strategies it runs, their options); together: one launch, together.py runs
    # them one after another
    groups = (
        [("together", usable, ["--strategies", *usable, *demo_args["together"]])]
        if together
        else [(strategy, [strategy], demo_args.get(strategy, ())) for strategy in usable]
    )
    # each launch a step on the screen of a run (LabContext.step); the hung rank's needs a peer (N > 1)
    launches = [module for module, _strategies, _args in groups] + (
        ["hang"] if "hang" in demos and ctx.options.n_procs > 1 else []
    )
    for module, strategies, args in groups:
        data |= launch_demos(ctx, module, strategies, args, wall, failures, launches)
    pipeline = figure_rows.idle_by_schedule(data)
    for measured in data.values():
        demo_checks.check_strategy(ctx, measured, data.get("ddp"), pipeline)
    rows = figure_rows.rows(data, pipeline)
    ctx.write_json("figures.json", [figure_rows.as_json(f) for f in rows])
    if pipeline:
        ctx.save_figure("pp/gantt.png", pipeline_idle.draw(data["pp"]["runs"], pipeline))
    hang = hang_demo(ctx, launches) if "hang" in launches else None
    grade_exercises(ctx, rows, data, ctx.out_dir)
    ctx.extra.update(
        n_procs=ctx.options.n_procs,
        wall_s=wall,
        skipped_schedules=data["pp"]["skipped_schedules"] if "pp" in data else {},
    )
    ctx.render_summary(**summary_values(ctx, rows, data, pipeline, hang, wall, failures))


def usable_here(ctx: LabContext, strategy: str) -> bool:
    """Whether the strategy can split the model N ways; if not, a failed check says why (it is not started)."""
    if why := launch.strategy_problem(strategy, ctx.options.n_procs):
        ctx.check_equal(
            _("{strategy}: N={n} is usable (not started)").format(
                strategy=strategy, n=ctx.options.n_procs
            ),
            why,
            "usable",
        )
    return why is None


def launch_demos(
    ctx: LabContext,
    module: str,
    strategies: list[str],
    args,
    wall: dict,
    failures: dict,
    launches: list[str],
) -> dict[str, measurements.Measurements]:
    """One torchrun launch of a demo module (a strategy's, or together.py for several): the measurements each
    of `strategies` wrote in its folder ({} when the launch failed: its log's end goes in the summary)."""
    out = ctx.out_dir if module == "together" else ctx.out_dir / module
    rc, wall[module] = torchrun(ctx, module, module, out, args, launches)
    ctx.check_equal(
        _("{strategy}: torchrun --nproc-per-node {n} exit code").format(
            strategy="+".join(strategies), n=ctx.options.n_procs // launch.agents().count
        ),
        rc,
        0,
    )
    if rc != 0:
        log = ctx.out_dir / module / "log.txt"
        failures[module] = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
        return {}
    return {s: measurements.read(ctx.out_dir / s) for s in strategies}


def torchrun(
    ctx: LabContext, name: str, module: str, out: Path, args, launches: list[str]
) -> tuple[int, float]:
    """One torchrun launch of a demo module, its output in <lab folder>/<name>/log.txt: (exit code, seconds),
    said on the screen, where it is a step of the run's `launches` (LabContext.step)."""
    ctx.step(
        _("the {demo} demo under torchrun").format(demo=name),
        launches.index(name) + 1,
        len(launches),
    )
    command = launch.agents().command(module, ctx.options.n_procs, ctx.options.device, out, args)
    rc, seconds = launch.run(command, ctx.out_dir / name / "log.txt", TIMEOUT_S)
    print(
        _("[{lab}] {strategy}: torchrun exited {rc} after {seconds:.1f} s").format(
            lab=ctx.name, strategy=name, rc=rc, seconds=seconds
        ),
        flush=True,
    )
    return rc, seconds


def hang_demo(ctx: LabContext, launches: list[str]) -> dict:
    """DDP with the last rank hanging at step 1: the peers give up after HANG_TIMEOUT_S, and every rank dumps
    its Flight Recorder buffer. The run's last launch (`launches`: torchrun), where it is one: one rank alone has
    no peer to wait for, so N=1 does not run it."""
    out, hung = ctx.out_dir / "hang", ctx.options.n_procs - 1
    # the default DDP run only: the hung rank stops it at step 1
    options = [
        *("--fail-rank", str(hung), "--fail-mode", "hang", "--pg-timeout", str(HANG_TIMEOUT_S)),
        *("--steps", "2", "--runs", "ddp"),
    ]
    rc, seconds = torchrun(ctx, "hang", "ddp", out, options, launches)
    return demo_checks.check_hang(ctx, rc, seconds, HANG_TIMEOUT_S, hung, out)


def grade_exercises(
    ctx: LabContext,
    rows: list[figure_rows.FigureRow],
    data: dict[str, measurements.Measurements],
    lab_dir: Path,
    graded: tuple[str, ...] = EXERCISES,
) -> None:
    """Grade the exercises `graded` against a run's figures (`rows`, `data`: its demos' measurements), whose lab
    folder is `lab_dir`: this run's, or an earlier one's (regrade)."""
    n = next(iter(data.values()))["world_size"] if data else ctx.options.n_procs
    if "predictions" in graded:
        truths, rows_ran = figure_rows.prediction_truths(rows, n)
        engine.grade(ctx, "predictions", truths, facts=rows_ran, reference_args=(n,))
    if "answers" in graded:
        engine.grade(
            ctx,
            "answers",
            figure_rows.answer_truths(rows, data.get("tp")),
            # what the answers' diagnoses read (exercises.ANSWER_DIAGNOSES)
            facts={
                "n": n,
                "interleaved_idle_theory": pipeline_idle.theory(n, plans.microbatches(n), 2),
            },
            reference_args=(n,),
        )
    if "survey" in graded:
        # the learner's survey.md against the figures it quotes, or the model answer in the run's language (the
        # reference) against the committed runs'
        engine.grade(
            ctx,
            "survey",
            None,
            also=lambda document, _graded: (
                survey.grade(ctx, document, rows, lab_dir)
                if ctx.graded
                else survey.grade(ctx, survey.model_answer(ctx.options.lang), None, lab_dir)
            ),
        )


def regrade(ctx: LabContext, lab_dir: Path) -> None:
    """LabSpec.regrade: grade the wanted exercises against an earlier run of the lab, from the measurements its
    demos wrote there, as the lab grades its own run (the output names that run). An exercise graded on runs
    that run lacks (one made for the predictions alone has no DDP small buckets, no interleaving) says so in
    one line instead."""
    data = figure_rows.measurements_in(lab_dir)
    lacking = {name: missing_runs(data, name) for name in EXERCISES if ctx.wants(name)}
    for name in (name for name, missing in lacking.items() if missing):
        with ctx.grading(name):
            ctx.check_equal(
                _("{name}: the run graded against ran every run it is graded on (missing)").format(
                    name=name
                ),
                lacking[name],
                [],
                message=_(
                    "your latest run ({run}) did not run all that {name} is graded on: run the lab again "
                    "with `python -m workshop check distributed {name} --rerun`"
                ).format(run=lab_dir.parent.name, name=name),
            )
    graded = tuple(name for name, missing in lacking.items() if not missing)
    grade_exercises(ctx, figure_rows.rows(data), data, lab_dir, graded)


def missing_runs(data: dict[str, measurements.Measurements], exercise: str) -> list[str]:
    """The training runs ("ddp/small_buckets") that `exercise` is graded on at the run's N and the run lacks: the
    predictions, each strategy's first run; the others, every run a full run of the lab makes."""
    if not data:  # no demo wrote its measurements
        return list(launch.STRATEGIES)
    n = next(iter(data.values()))["world_size"]
    if exercise == "predictions":
        expected = {strategy: [run] for strategy, run in figure_rows.STRATEGY_RUN.items()}
    else:
        expected = {
            "ddp": list(plans.BUCKET_CAP_MB),
            "fsdp": ["fsdp"],
            "tp": ["tp"],
            "pp": [name for name, why in plans.schedules_for(n).items() if why is None],
        }
    return [
        strategy if name == strategy else f"{strategy}/{name}"
        for strategy, names in expected.items()
        if launch.strategy_problem(strategy, n) is None
        for name in names
        if strategy not in data or name not in data[strategy]["runs"]
    ]


def interleaving_idled_more(g: pipeline_idle.Idle | None, i: pipeline_idle.Idle | None) -> bool:
    """What the summary explains only when the run shows it: interleaving idled more than GPipe though its
    theory is lower, and its per-chunk waits took more of its step."""
    return (
        g is not None
        and i is not None
        and i["theory"] < g["theory"]
        and i["measured"] > g["measured"]
        and i["overhead_share"] > g["overhead_share"]
    )


def ddp_overlap(
    rows: list[figure_rows.FigureRow], data: dict[str, measurements.Measurements]
) -> dict | None:
    """The DDP runs' all-reduces against their backward, for the summary (None where DDP did not run both or a
    trace shows no all-reduce in backward); `shown`: the run shows the contrast the summary's sentence states."""
    runs = [f for f in rows if f["strategy"] == "ddp"]
    shares = [
        collectives.overlap(f["backward_ops"], f["issued_in_backward"], "allreduce") for f in runs
    ]
    if [f["run"] for f in runs] != list(plans.BUCKET_CAP_MB) or None in shares:
        return None
    table = [
        dict(
            demo=f["demo"],
            trace=f"ddp/{data['ddp']['runs'][f['run']]['per_rank'][0]['trace']}",
            issued=figure_rows.issued_early(f)[1],
            early=figure_rows.issued_early(f)[0],
            after=next(n for k, n in f["issued_in_backward"] if k == "allreduce"),
            ops=f["backward_ops"],
            share=share,
        )
        for f, share in zip(runs, shares, strict=True)
    ]
    default, small = table
    return {
        "cap_mb": plans.BUCKET_CAP_MB["small_buckets"],
        "runs": table,
        "shown": default["after"] == 0 and small["early"] > 0,
    }


def summary_values(ctx, rows, data, pipeline, hang, wall, failures) -> dict:
    by_run = {f["run"]: f for f in rows}
    pipe = [
        {
            "name": name,
            "idle": a,
            "busy_ratio": a["busy_s"]
            / data["pp"]["runs"][name]["per_rank"][0]["reference_compute_s"],
        }
        for name, a in pipeline.items()
    ]
    g, i = pipeline.get("gpipe"), pipeline.get("interleaved_1f1b")
    ddp, fsdp = by_run.get("ddp"), by_run.get("fsdp")
    traffic = (
        {
            "ddp_buffers": ddp["comm_bytes"],
            "fsdp_buffers": fsdp["comm_bytes"],
            "ddp_sent": ddp["sent_bytes"],
            "fsdp_sent": fsdp["sent_bytes"],
        }
        if ddp and fsdp and ctx.options.n_procs > 1
        else None
    )
    # gloo has no reduce-scatter: FSDP's is an all-reduce there
    seconds = fsdp["comm_seconds_rank0"] if fsdp else {}
    return {
        "param_bytes": demo_checks.checkpoint_param_bytes(),
        "steps": next(iter(data.values()))["steps"] if data else 0,
        "n": ctx.options.n_procs,
        "wall_s": wall,
        "skipped": data["pp"]["skipped_schedules"] if "pp" in data else {},
        "figures": rows,
        "fsdp_vs_ddp": traffic,
        "ddp_overlap": ddp_overlap(rows, data),
        "reduce_scatter_as_all_reduce": bool(
            fsdp and "reducescatter" not in seconds and "allreduce" in seconds
        ),
        "traces": [
            f"{m['strategy']}/{r['trace']}"
            for m in data.values()
            for run in m["runs"].values()
            for r in run["per_rank"]
        ],
        "pipeline": pipe,
        "interleaved_vs_gpipe": {"i": i, "g": g} if interleaving_idled_more(g, i) else None,
        "oversubscribed": ctx.options.device == "cpu"
        and ctx.options.n_procs > (os.cpu_count() or 1),
        "cores": os.cpu_count(),
        "hang": hang,
        "timeouts": next(iter(data.values()))["default_timeouts_s"] if data else {},
        "failures": failures,
    }
