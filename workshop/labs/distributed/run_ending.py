"""What a training run ends with: this rank's record completed (what it holds, how far it is from the reference),
every rank's records gathered into the run's, and rank 0 writing the demo's measurements.json (measurements.py),
which the lab reads back and checks."""

from __future__ import annotations

import argparse

import torch
import torch.distributed as dist

from workshop.labs.distributed import process_group
from workshop.labs.distributed.measurements import Measurements, RankRecord, Run
from workshop.labs.distributed.process_group import Rank
from workshop.labs.distributed.rank_memory import full, held
from workshop.labs.distributed.reference import TOLERANCE, Reference, compare
from workshop.labs.distributed.training import LR, ROWS
from workshop.minigpt.grammar import MAX_SENTENCE_LEN


def complete(
    record: RankRecord,
    params: list[torch.Tensor],
    named: dict[str, torch.Tensor],
    opt: torch.optim.Optimizer,
    reference: Reference,
) -> RankRecord:
    """This rank's record with the bytes it holds (`params`: its parameters as it keeps them, sharded or not)
    and its distance from the reference (`named`: name -> the whole parameter, as the reference has it)."""
    record.held = held(params, opt)
    compare(record, named, reference)
    return record


def gather(record: RankRecord) -> list[RankRecord]:
    """Every rank's record, on every rank, in rank order."""
    records = [None] * dist.get_world_size()
    dist.all_gather_object(records, record)
    return records


def summary(records: list[RankRecord], losses: list[float], chunks: int, **pipeline) -> Run:
    """One run's result from all ranks' records and the losses the run reports (one per step)."""
    ref = records[0].reference_losses
    return Run(
        chunks=chunks,
        losses=losses,
        reference_losses=ref,
        max_loss_error=max(abs(a - b) / abs(b) for a, b in zip(losses, ref, strict=True)),
        max_param_error=max(r.max_param_error for r in records),
        per_rank=records,
        **pipeline,
    )


def whole_model_run(record: RankRecord, model, opt, reference: Reference, chunks: int) -> Run:
    """DDP's, FSDP's and tensor parallel's run: every rank holds (a part of) the whole model and computes a
    loss; the run's loss is the ranks' mean (each rank's chunk of the batch; tensor parallel: all the same)."""
    # full() all-gathers a sharded parameter: every rank must call it
    named = {n: full(p.detach()) for n, p in model.named_parameters()}
    records = gather(complete(record, list(model.parameters()), named, opt, reference))
    losses = [sum(step) / len(step) for step in zip(*(r.losses for r in records), strict=True)]
    return summary(records, losses, chunks)


def write(args, rank: Rank, strategy: str, runs: dict[str, Run], **extra) -> None:
    """Rank 0 writes measurements.json."""
    if rank.rank != 0:
        return
    from torch.distributed import constants

    defaults = {"gloo": constants.default_pg_timeout, "nccl": constants.default_pg_nccl_timeout}
    Measurements(
        strategy=strategy,
        world_size=rank.world,
        device=rank.device.type,
        backend=rank.backend,
        steps=args.steps,
        rows_per_chunk=ROWS,
        seq_len=MAX_SENTENCE_LEN - 1,  # every sentence padded to this (data.to_tensors)
        lr=LR,
        tolerance=TOLERANCE[rank.device.type],
        torch=torch.__version__,
        timeout_s=args.pg_timeout,
        default_timeouts_s={k: v.total_seconds() if v else None for k, v in defaults.items()},
        runs=runs,
        **extra,
    ).write(args.out)


def run_demos(args, demos: dict, own_folders: bool = False) -> None:
    """A demos' process: join the process group, run each demo (strategy -> its `run(args, rank)`, returning
    its runs and the rest of its measurements); rank 0 writes each one's measurements.json in args.out, or in
    args.out/<strategy> (`own_folders`: several demos in one launch); then leave."""
    rank = process_group.join(args)
    for strategy, run in demos.items():
        out = args.out / strategy if own_folders else args.out
        own = argparse.Namespace(**{**vars(args), "out": out})  # its traces and dumps go there too
        runs, extra = run(own, rank)
        write(own, rank, strategy, runs, **extra)
    process_group.leave()
