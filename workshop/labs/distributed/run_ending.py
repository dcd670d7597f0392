"""What a training run ends with: this rank's record completed (what it holds, how far it is from the reference),
every rank's records gathered into the run's, and rank 0 writing the demo's measurements.json (measurements.py),
which the lab reads back and checks.

What a rank holds in memory: the local part of a (possibly sharded) tensor, the bytes of the storages behind
its tensors, and a digest of its parameters that tells replicas apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib

import torch
import torch.distributed as dist

from workshop.labs.distributed import process_group
from workshop.labs.distributed.measurements import Measurements, RankRecord, Run
from workshop.labs.distributed.process_group import Rank
from workshop.labs.distributed.reference import TOLERANCE, Reference
from workshop.labs.distributed.training import LR, ROWS
from workshop.minigpt.grammar import MAX_SENTENCE_LEN


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of a (possibly sharded) tensor that lives on this rank."""
    return t.to_local() if hasattr(t, "to_local") else t


def full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor (a collective for a DTensor: every rank must call it)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def storage_bytes(tensors) -> int:
    """Bytes of the distinct storages behind these tensors (a DTensor's: its local shard's), views counted once:
    the memory they occupy on this rank, padding included."""
    storages = {}
    for t in tensors:
        if t is not None:
            storage = local(t).untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    return sum(storages.values())


def held(params: list[torch.Tensor], opt: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes this rank holds for parameters, gradients and optimizer state (SGD: momentum buffers)."""
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return {
        "params": storage_bytes(params),
        "grads": storage_bytes(p.grad for p in params),
        "optimizer": storage_bytes(state),
    }


def digest(params: dict[str, torch.Tensor]) -> str:
    """A hash of the tensors' names and bytes: two ranks holding the same replica have the same digest."""
    h = hashlib.sha256()
    for name in sorted(params):
        h.update(name.encode())
        h.update(
            params[name].detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        )
    return h.hexdigest()[:16]


def complete(
    record: RankRecord,
    params: list[torch.Tensor],
    named: dict[str, torch.Tensor],
    opt: torch.optim.Optimizer,
    reference: Reference,
) -> RankRecord:
    """This rank's record with the bytes it holds (`params`: its parameters as it keeps them, sharded or not)
    and its distance from the reference (`named`: name -> the whole parameter, as the reference has it): its
    parameters' largest error against the reference's, and their digest."""
    errors = {n: (named[n] - reference.params[n]).abs().max().item() for n in named}
    worst = max(errors, key=errors.get)
    return dataclasses.replace(
        record,
        held=held(params, opt),
        reference_losses=reference.losses,
        reference_compute_s=reference.compute_s,
        reference_compute_cpu_s=reference.compute_cpu_s,
        max_param_error=errors[worst],
        worst_param=worst,
        params_compared=len(named),
        params_digest=digest(named),
    )


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
