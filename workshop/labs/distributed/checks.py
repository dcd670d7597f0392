"""Turn a demo's measurements.json into checks, and into the figures the summary and the survey quote.

Every check compares a measured value with a threshold: equality with the one-process reference (losses and
parameters within the demo's stated tolerance), the bytes each rank holds, the collectives of one step, and,
for the pipeline, its idle fraction against the theory.
"""

from __future__ import annotations

from workshop.lab import LabContext
from workshop.labs.distributed import comms
from workshop.minigpt.model import GPT, GPTConfig

MAX_STEP_S = 5.0  # a sanity bound: a step of this model takes milliseconds


def full_param_bytes() -> int:
    return sum(p.numel() * p.element_size() for p in GPT(GPTConfig()).parameters())


def state_bytes(rank_record: dict) -> int:
    return sum(rank_record["bytes"].values())


def check_run(ctx: LabContext, label: str, run: dict, tolerance: float) -> None:
    ctx.check_max(
        f"{label}: losses equal the 1-process reference (max relative diff)",
        run["max_loss_error"],
        tolerance,
    )
    ctx.check_max(
        f"{label}: final parameters equal the reference (max abs diff)",
        run["max_param_error"],
        tolerance,
    )
    ctx.check_max(
        f"{label}: median step time (s)", max(r["step_time_s"] for r in run["per_rank"]), MAX_STEP_S
    )


def check_strategy(ctx: LabContext, data: dict, ddp: dict | None) -> None:
    """All checks of one demo. ddp: the DDP demo's data, for FSDP's memory ratio (None if DDP did not run)."""
    s, n, full = data["strategy"], data["world_size"], full_param_bytes()
    for name, run in data["runs"].items():
        check_run(ctx, s if name == s else f"{s}/{name}", run, data["tolerance"])
    rank0 = next(iter(data["runs"].values()))["per_rank"][0]
    one_step = rank0["collectives"]
    talks = n > 1  # one rank communicates nothing: the collective checks apply from N=2
    if s == "ddp":
        ctx.check_max(
            "ddp: each rank holds all parameters (|bytes / model's - 1|)",
            abs(rank0["bytes"]["params"] / full - 1),
            0.001,
        )
        _, reduced = comms.total(one_step, "allreduce", "backward")
        if talks:
            ctx.check_max(
                "ddp: gradient all-reduce bytes per step vs parameter bytes (|ratio - 1|)",
                abs(reduced / full - 1),
                0.01,
            )
    elif s == "fsdp":
        _, scattered = comms.total(one_step, "reduce_scatter", "backward")
        _, gathered = comms.total(one_step, "allgather")
        if talks:
            # up to a few % more: a dim 0 that N does not divide is padded to N equal shards (N=3: +1.7%)
            ctx.check_max(
                "fsdp: gradient reduce-scatter bytes per step vs parameter bytes (|ratio - 1|)",
                abs(scattered / full - 1),
                0.05,
            )
            ctx.check_min(
                "fsdp: parameter all-gather bytes per step / parameter bytes (forward + backward)",
                gathered / full,
                1.0,
            )
        if ddp:
            biggest = max(state_bytes(r) for r in data["runs"]["fsdp"]["per_rank"])
            ratio = biggest * n / state_bytes(ddp["runs"]["ddp"]["per_rank"][0])
            ctx.check_max(
                f"fsdp: per-rank params+grads+optimizer bytes x N / DDP's (|ratio - 1|, N={n})",
                abs(ratio - 1),
                0.1,
            )
            peaks = [
                max(r.get("cuda_peak_bytes", 0) for r in d["runs"][d["strategy"]]["per_rank"])
                for d in (data, ddp)
            ]
            if (
                all(peaks) and talks
            ):  # on GPUs: the allocator's high-water mark, activations and buffers included
                ctx.check_max("fsdp: CUDA peak memory per rank / DDP's", peaks[0] / peaks[1], 1.0)
    elif s == "tp":
        ctx.check_equal(
            "tp: lm_head weight rows on each rank (600 / N)",
            data["lm_head_local_shape"][0],
            600 // n,
        )
        count, _ = comms.total(one_step, "all_reduce", "forward")
        if talks:
            ctx.check_min(
                "tp: forward all-reduces per step (2 row-parallel outputs per block, + loss)",
                count,
                2 * GPTConfig().n_layer,
            )
        ctx.check_max(
            "tp: per-rank parameter bytes / model's",
            rank0["bytes"]["params"] / full,
            1 - (1 - 1 / n) / 2,
        )
    elif s == "pp":
        for name, run in data["runs"].items():
            _check_pipeline(ctx, name, run, n)


def _check_pipeline(ctx: LabContext, name: str, run: dict, n: int) -> None:
    m, v = run["microbatches"], run["stages_per_rank"]
    wrong = [
        (rank, step, kind, count)
        for rank, steps in enumerate(run["intervals"])
        for step, ivs in enumerate(steps)
        for kind in "FB"
        if (count := sum(iv[0] == kind for iv in ivs)) != m * v
    ]
    ctx.check_equal(
        f"pp/{name}: (rank, step) with other than m={m} forwards/backwards per stage", wrong, []
    )
    sends = sum(comms.total(r["collectives"], "send")[0] for r in run["per_rank"])
    expected = (
        2 * m * (n * v - 1) if n > 1 else 0
    )  # looped placement: neighbouring stages sit on different ranks
    ctx.check_equal(f"pp/{name}: sends per step, all ranks (2 m (stages - 1))", sends, expected)
    ctx.check_min(
        f"pp/{name}: measured idle fraction >= theory - 0.05 (theory {run['bubble_theory']:.3f})",
        run["bubble"]["measured"],
        round(run["bubble_theory"] - 0.05, 4),
    )
    biggest = max(r["bytes"]["params"] for r in run["per_rank"])
    ctx.check_max(
        f"pp/{name}: largest per-rank parameter bytes / model's (1/N + embeddings or head)",
        biggest / full_param_bytes(),
        1 / n + 0.2,
    )


def figures(data: dict) -> list[dict]:
    """One row per run, for the summary and the survey: bytes per rank, collectives, time, errors, bubble."""
    rows = []
    for name, run in data["runs"].items():
        r0 = run["per_rank"][0]
        row = {
            "strategy": data["strategy"],
            "run": name,
            "n": data["world_size"],
            "device": data["device"],
            "state_bytes_per_rank": max(state_bytes(r) for r in run["per_rank"]),
            "bytes_rank0": r0["bytes"],
            "cuda_peak_bytes": max(r.get("cuda_peak_bytes", 0) for r in run["per_rank"]),
            "collectives_rank0": r0["collectives"],
            "step_ms": 1e3 * max(r["step_time_s"] for r in run["per_rank"]),
            "max_loss_error": run["max_loss_error"],
            "max_param_error": run["max_param_error"],
        }
        if "bubble" in run:
            row.update(bubble=run["bubble"]["measured"], bubble_theory=run["bubble_theory"])
        rows.append(row)
    return rows


def collectives_text(summary: list[dict]) -> str:
    return (
        ", ".join(
            f"{r['phase']} {r['op']} x{r['count']} {r['bytes'] / 1e3:.0f} kB" for r in summary
        )
        or "none"
    )
