"""Turn a demo's measurements into checks.

Every check compares a measured value with a threshold: equality with the one-process reference (losses and
parameters within the demo's stated tolerance), the bytes each rank really holds, the collectives of one step,
and, for the pipeline, its idle time against the theory from below and its busy time against the same work
timed in one process.
"""

from __future__ import annotations

import math

from workshop.i18n import _
from workshop.lab_api import LabContext
from workshop.labs.distributed import collectives, flight_recorder, measurements, pipeline_idle
from workshop.minigpt import checkpoint, model

MAX_STEP_S = 5.0  # a sanity bound: a step of this model takes milliseconds
# The pipeline's busy time (all ranks' chunks) against the same forward and backward timed by rank 0 alone: the
# same ops on the same data, plus pipelining's per-chunk bookkeeping. Both are their run's fastest timed step.
# At least: in wall seconds, which the machine's other work only adds to. CPU runs measured 0.66-1.10 with a core
# per rank, and 0.44-2.18 with 2 ranks on 2 cores shared with other work; a loaded H200 (15 test processes on 16
# cores) 0.29. Planted bug (tests/distributed/test_mutations.py): intervals 10x short give ~0.1.
# At most: on the CPU in CPU seconds (the process's, inside the chunks and inside the reference's step), since
# wall seconds stretch with the load: ranks taking turns on a core measured up to 2.7 (4 ranks on 2 cores), and the
# loaded 2-core CI machine above 2.5, against a quiet 0.8-1.6, while the work's CPU seconds stay the work's. It
# catches intervals that count more work than the step has (tests/distributed/test_units.py plants chunks counted
# three times). On a GPU, wall seconds (its CPU time is the host's waiting). A known gap: intervals that also
# count each wait since the rank's previous chunk (1.2-2.8 in wall seconds, GPipe, 2 ranks, their idle within
# 0.001 of the ideal pipeline's) cost little CPU while they wait: timing alone cannot always tell a wait from work.
MIN_BUSY_RATIO, MAX_BUSY_RATIO = 0.3, 2.5
# DDP with small buckets: the share of backward's ops run after its first all-reduce was issued. Its first bucket
# (0.25 MiB) fills with the head's, ln_f's and the last block's MLP's gradients: 284 of 309 ops (0.92) were still
# to run at N=2 on the CPU. With one bucket it is 0; a bucket cap that is not applied gives 0.
MIN_SMALL_BUCKET_OVERLAP = 0.5


def checkpoint_param_bytes(root_unit: bool = False) -> int:
    """The demos' checkpoint's parameter bytes (--checkpoint, else the shipped one), read from the file, not from
    a model built here; `root_unit`: only those outside the blocks, FSDP's root unit (embeddings, ln_f,
    lm_head)."""
    state = checkpoint.load_raw(checkpoint.from_environment())["state_dict"]
    return sum(
        t.numel() * t.element_size()
        for name, t in state.items()
        if not (root_unit and name.startswith("blocks."))
    )


def check_strategy(
    ctx: LabContext,
    data: measurements.Measurements,
    ddp: measurements.Measurements | None,
    idle: dict[str, pipeline_idle.Idle],
):
    """All checks of one demo: each of its runs against the one-process reference and the sanity bound on its
    step time, then its strategy's own (STRATEGY_CHECKS). ddp: the DDP demo's data, for FSDP's memory ratio
    (None if DDP did not run); idle: the pipeline's analysis per schedule."""
    for name, run in data["runs"].items():
        label = data["strategy"] if name == data["strategy"] else f"{data['strategy']}/{name}"
        ctx.check_max(
            _("{label}: losses equal the 1-process reference (max relative diff)").format(
                label=label
            ),
            run["max_loss_error"],
            data["tolerance"],
        )
        ctx.check_max(
            _("{label}: final parameters equal the reference (max abs diff)").format(label=label),
            run["max_param_error"],
            data["tolerance"],
        )
        ctx.check_max(
            _("{label}: median step time (s)").format(label=label),
            max(r["step_time_s"] for r in run["per_rank"]),  # the slowest rank's
            MAX_STEP_S,
        )
    STRATEGY_CHECKS[data["strategy"]](ctx, data, ddp, idle)


def _check_ddp(ctx: LabContext, data: measurements.Measurements, _ddp, _idle) -> None:
    n, full = data["world_size"], checkpoint_param_bytes()
    for name, run in data["runs"].items():
        label, ranks = "ddp" if name == "ddp" else f"ddp/{name}", run["per_rank"]
        worst = max(abs(r["held"]["params"] / full - 1) for r in ranks)
        ctx.check_max(
            _(
                "{label}: every rank's parameter storage vs the checkpoint's bytes (|ratio - 1|, worst)"
            ).format(label=label),
            worst,
            0.001,
        )
        ctx.check_equal(
            _("{label}: distinct parameter replicas across ranks (digests)").format(label=label),
            len({r["params_digest"] for r in ranks}),
            1,
        )
        if n > 1:  # one rank communicates nothing worth checking
            reduced = collectives.total(ranks[0]["collectives"], "allreduce", "backward")[1]
            ctx.check_max(
                _(
                    "{label}: gradient all-reduce bytes per step vs parameter bytes (|ratio - 1|)"
                ).format(label=label),
                abs(reduced / full - 1),
                0.01,
            )
            ctx.check_min(
                _("{label}: seconds of all-reduce in the profiler trace").format(label=label),
                ranks[0]["collective_seconds"].get("allreduce", 0),
                1e-6,
            )
        check_overlap(ctx, label, name == "ddp", ranks[0])


def check_overlap(
    ctx: LabContext, label: str, default_buckets: bool, rank0: measurements.RankRecord
) -> None:
    """DDP's all-reduces against backward, in rank 0's trace (collectives.overlap): with the default buckets the one
    all-reduce is issued by backward's last gradient, so no backward op runs after it; with small buckets the
    first is issued when backward has most of its ops still to run (MIN_SMALL_BUCKET_OVERLAP)."""
    share = collectives.overlap(rank0["backward_ops"], rank0["issued_in_backward"], "allreduce")
    name = _("{label}: share of backward's ops run after its first all-reduce was issued").format(
        label=label
    )
    value = math.nan if share is None else share
    if default_buckets:
        ctx.check_max(
            _("{name} (one bucket: none)").format(name=name),
            value,
            0.0,
            message=_(
                "an all-reduce was issued before backward's last gradient: more than one bucket"
            ),
        )
    else:
        ctx.check_min(
            _("{name} (small buckets: most)").format(name=name),
            value,
            MIN_SMALL_BUCKET_OVERLAP,
            message=_("the all-reduces waited for backward's end: the small buckets were not used"),
        )


def _check_fsdp(
    ctx: LabContext, data: measurements.Measurements, ddp: measurements.Measurements | None, _idle
) -> None:
    ranks, n, full = data["runs"]["fsdp"]["per_rank"], data["world_size"], checkpoint_param_bytes()
    if n > 1:
        scattered = collectives.total(ranks[0]["collectives"], "reducescatter", "backward")[1]
        gathered = collectives.total(ranks[0]["collectives"], "allgather")[1]
        # up to a few % more: a dim 0 that N does not divide is padded to N equal shards (N=3: +1.7%)
        ctx.check_max(
            _("fsdp: gradient reduce-scatter bytes per step vs parameter bytes (|ratio - 1|)"),
            abs(scattered / full - 1),
            0.05,
        )
        # forward gathers every unit, backward every unit but the root, which stays gathered after forward
        expected = (2 * full - checkpoint_param_bytes(root_unit=True)) / full
        ctx.check_max(
            _(
                "fsdp: all-gather bytes per step / parameter bytes vs {expected:.3f} (every unit twice, the root "
                "once)"
            ).format(expected=expected),
            abs(gathered / full - expected),
            0.05,
        )
    if ddp:
        held = [sum(r["held"].values()) for r in (*ranks, ddp["runs"]["ddp"]["per_rank"][0])]
        ratio = max(held[:-1]) * n / held[-1]
        ctx.check_max(
            _(
                "fsdp: per-rank params+grads+optimizer bytes x N / DDP's (|ratio - 1|, N={n})"
            ).format(n=n),
            abs(ratio - 1),
            0.1,
        )
        peaks = [
            max(r["cuda_peak_bytes"] for r in d["runs"][d["strategy"]]["per_rank"])
            for d in (data, ddp)
        ]
        if (
            all(peaks) and n > 1
        ):  # on GPUs: the allocator's high-water mark, activations and buffers included
            ctx.check_max(_("fsdp: CUDA peak memory per rank / DDP's"), peaks[0] / peaks[1], 1.0)


def _check_tp(ctx: LabContext, data: measurements.Measurements, _ddp, _idle) -> None:
    n, rank0 = data["world_size"], data["runs"]["tp"]["per_rank"][0]
    ctx.check_equal(
        _("tp: lm_head weight rows on each rank (600 / N)"),
        data["lm_head_local_shape"][0],
        600 // n,
    )
    if n > 1:
        ctx.check_min(
            _("tp: forward all-reduces per step (2 row-parallel outputs per block, + loss)"),
            collectives.total(rank0["collectives"], "allreduce", "forward")[0],
            2 * model.GPTConfig().n_layer,
        )
    ctx.check_max(
        _("tp: per-rank parameter bytes / model's"),
        rank0["held"]["params"] / checkpoint_param_bytes(),
        1 - (1 - 1 / n) / 2,
    )


def _check_pipeline(
    ctx: LabContext, data: measurements.Measurements, _ddp, idle: dict[str, pipeline_idle.Idle]
) -> None:
    """Each schedule's run: its chunks, its sends, its timing, its largest stage."""
    n = data["world_size"]
    for name, run in data["runs"].items():
        m, v = run["microbatches"], run["stages_per_rank"]
        wrong = [
            (rank["rank"], step, kind, count)
            for rank in run["per_rank"]
            for step, ivs in enumerate(rank["intervals"])
            for kind in "FB"
            if (count := sum(iv[0] == kind for iv in ivs)) != m * v
        ]
        ctx.check_equal(
            _("pp/{name}: (rank, step) with other than m={m} forwards/backwards per stage").format(
                name=name, m=m
            ),
            wrong,
            [],
        )
        sends = sum(collectives.total(r["collectives"], "send")[0] for r in run["per_rank"])
        # looped placement: neighbouring stages on other ranks
        expected = 2 * m * (n * v - 1) if n > 1 else 0
        ctx.check_equal(
            _("pp/{name}: sends per step, all ranks (2 m (stages - 1))").format(name=name),
            sends,
            expected,
        )
        check_pipeline_timing(ctx, name, run, data["device"], idle[name])
        biggest = max(r["held"]["params"] for r in run["per_rank"])
        ctx.check_max(
            _(
                "pp/{name}: largest per-rank parameter bytes / model's (1/N + embeddings or head)"
            ).format(name=name),
            biggest / checkpoint_param_bytes(),
            1 / n + 0.2,
        )


def check_pipeline_timing(
    ctx: LabContext, name: str, run: measurements.Run, device: str, idle: pipeline_idle.Idle
) -> None:
    """The pipeline's recorded intervals against the ideal pipeline's idle and against the same work timed by
    one process (MIN_BUSY_RATIO, MAX_BUSY_RATIO)."""
    ctx.check_min(
        _("pp/{name}: measured idle >= theory - timer margin (theory {theory:.3f})").format(
            name=name, theory=idle["theory"]
        ),
        idle["measured"],
        round(idle["theory"] - idle["timer_margin"], 4),
        message=_("idle below the ideal pipeline's: the intervals count time as busy that was not"),
    )
    rank0 = run["per_rank"][0]
    ratio = idle["busy_s"] / rank0["reference_compute_s"]
    label = _(
        "pp/{name}: busy time, all ranks / one process's forward+backward of the step"
    ).format(name=name)
    ctx.check_min(
        _("{label} (at least)").format(label=label),
        ratio,
        MIN_BUSY_RATIO,
        message=_("the intervals miss the chunks' work"),
    )
    work = idle["busy_cpu_s"] / rank0["reference_compute_cpu_s"] if device == "cpu" else ratio
    ctx.check_max(
        _("{label} (at most)").format(label=label),
        work,
        MAX_BUSY_RATIO,
        message=_("the intervals count more than the work"),
    )


# Each strategy's own checks: (ctx, its data, DDP's data or None, the pipeline's idle per schedule)
STRATEGY_CHECKS = {"ddp": _check_ddp, "fsdp": _check_fsdp, "tp": _check_tp, "pp": _check_pipeline}


def check_hang(
    ctx: LabContext, rc: int, seconds: float, timeout_s: float, hung: int, folder
) -> dict:
    """The hung-rank demo: the job fails, soon after the process-group timeout, and (where this torch can dump
    its Flight Recorder for the backend) the dumps name a collective the hung rank never entered. Returns what
    the summary says of it: the ranks' states from the dumps, the collective the hung rank never entered."""
    ctx.check_equal(_("hang: torchrun exits non-zero when a rank stops answering"), rc != 0, True)
    # start-up and teardown take ~10-30 s on a busy 2-core machine; the default timeout would be 10-30 min
    ctx.check_max(
        _("hang: seconds until the job ended (--pg-timeout {timeout:.0f} s + start-up)").format(
            timeout=timeout_s
        ),
        seconds,
        timeout_s + 90,
    )
    backend = "nccl" if ctx.options.device == "cuda" else "gloo"
    dumps = flight_recorder.dump_function(backend) is not None
    states = flight_recorder.read(folder) if dumps else []
    found = flight_recorder.stuck(states)
    if dumps:
        ctx.check_equal(
            _("hang: Flight Recorder dumps with entries, one per rank"),
            len(states),
            ctx.options.n_procs,
        )
        ctx.check_equal(
            _("hang: ranks the dumps show missing from the collective the others waited in"),
            found[2] if found else [],
            [hung],
        )
    return {
        "rank": hung,
        "rc": rc,
        "seconds": seconds,
        "timeout_s": timeout_s,
        "states": states,
        "stuck": found,
        "why_no_dump": _("the ranks wrote none (see hang/log.txt)")
        if dumps
        else _("this torch has no Flight Recorder dump for {backend}").format(backend=backend),
    }
