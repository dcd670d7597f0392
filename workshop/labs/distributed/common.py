"""What every demo shares: process-group set-up, the data, the one-process reference, the measurements.

A demo (ddp.py, fsdp.py, tp.py, pp.py) runs under torchrun, one process per rank. Each trains the shipped
MiniGPT for a few SGD steps; rank 0 replays the same steps in one process without any process group (the
reference) and sends the result to every rank, which compares: losses and final parameters must agree within
TOLERANCE. Rank 0 writes <out>/measurements.json (records.py); the lab turns it into checks.

The training objective is the same everywhere: a step's batch is `chunks` chunks of ROWS sentences and the loss
is the mean over chunks of lm_loss(chunk). DDP and FSDP give each rank a chunk (gradients are averaged),
pipeline parallel makes them its micro-batches (the schedule averages), tensor parallel has one chunk.

The last step is the instrumented one: its collectives are logged (comms.py) and it is profiled (traces.py),
so it is left out of the step times, like the first (which also sets up).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from workshop import i18n
from workshop.i18n import N_, _
from workshop.labs.distributed import flight_recorder, traces
from workshop.labs.distributed.comms import CollectiveLog
from workshop.labs.distributed.records import Measurements, RankRecord, Run, timed_steps
from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors
from workshop.minigpt.grammar import MAX_SENTENCE_LEN
from workshop.minigpt.model import lm_loss

STEPS = 5
ROWS = 8  # sentences per chunk (per rank for DDP/FSDP, per micro-batch for PP)
LR = 0.02
# Largest allowed |demo - reference| of a parameter, and relative difference of a loss. fp32 sums taken in
# another order (an all-reduce, a sharded matmul) differ by a few ulps: ~1e-7 relative.
TOLERANCE = {"cpu": 1e-6, "cuda": 1e-5}

# Every demo's options: (flags, argparse keywords).
OPTIONS = [
    (
        ("--out",),
        {"type": Path, "required": True, "help": N_("folder for measurements.json (rank 0)")},
    ),
    (
        ("--device",),
        {"choices": ("cpu", "cuda"), "default": "cpu", "help": N_("cpu: gloo; cuda: NCCL")},
    ),
    (("--steps",), {"type": int, "default": STEPS}),
    (
        ("--fail-rank",),
        {"type": int, "default": None, "help": N_("inject a failure on this rank at step 1")},
    ),
    (
        ("--fail-mode",),
        {
            "choices": ("raise", "hang"),
            "default": "raise",
            "help": N_("hang: peers wait for --pg-timeout"),
        },
    ),
    (
        ("--pg-timeout",),
        {"type": float, "default": 30.0, "help": N_("seconds a collective may wait")},
    ),
]


def parse_args(description: str, extra=()) -> argparse.Namespace:
    """The demos' options, plus `extra` ((flags, keywords) pairs) for one demo's own. A rank speaks the lab's
    language (WORKSHOP_LANG in its environment: launch.environment); its texts are marked N_() until now."""
    i18n.set_language(None)
    p = argparse.ArgumentParser(description=_(description))
    for flags, keywords in (*OPTIONS, *extra):
        p.add_argument(*flags, **{k: _(v) if k == "help" else v for k, v in keywords.items()})
    return p.parse_args()


@dataclass
class Rank:
    rank: int
    world: int
    device: torch.device
    backend: str


def setup(args: argparse.Namespace) -> Rank:
    """Join the process group that torchrun's rendezvous describes (RANK, WORLD_SIZE, MASTER_ADDR ... in env)."""
    if "RANK" not in os.environ:
        raise SystemExit(
            _(
                "run this under torchrun: python -m torch.distributed.run --nproc-per-node N -m <demo> ..."
            )
        )
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise SystemExit(
                _(
                    "local rank {rank} has no GPU ({visible} visible); use fewer processes per node or "
                    "--device cpu"
                ).format(rank=local_rank, visible=torch.cuda.device_count())
            )
        device, backend = torch.device("cuda", local_rank), "nccl"
        torch.cuda.set_device(device)
        # TF32 would put fp32 results ~1e-3 off the reference
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        device, backend = torch.device("cpu"), "gloo"
    flight_recorder.enable(args.out)  # read when the process group is made
    # The timeout bounds every collective: a rank that stops answering fails its peers after it, not after
    # the default (10 min for NCCL, 30 min for gloo).
    dist.init_process_group(
        backend,
        timeout=timedelta(seconds=args.pg_timeout),
        device_id=device if device.type == "cuda" else None,
    )
    return Rank(dist.get_rank(), dist.get_world_size(), device, backend)


def batches(steps: int, chunks: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets, each (steps, chunks, ROWS, T) token ids, the same on every rank."""
    x, y = train_tensors(n_sentences=steps * chunks * ROWS)  # (steps*chunks*ROWS, T)
    shape = (steps, chunks, ROWS, x.shape[-1])
    return x.view(shape).to(device), y.view(shape).to(device)


def load_model(device):
    """Every run, demo or reference, starts from the same checkpoint: the lab's --checkpoint, else the shipped one."""
    return checkpoint.load(checkpoint.from_environment(), device=device).train()  # --checkpoint


def optimizer(params):
    """SGD with momentum (state: one buffer per parameter). Not AdamW: it divides each gradient by its own size,
    so a gradient that is mathematically zero (the key bias's: softmax ignores a per-row constant) but ~1e-10 of
    round-off becomes a full-size step whose sign is noise, and no two runs would agree to 1e-6."""
    # foreach=False: the same per-tensor arithmetic for plain tensors and DTensors, demo and reference alike.
    return torch.optim.SGD(params, lr=LR, momentum=0.9, foreach=False)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Reference:
    """The same steps in one process, no process group."""

    losses: list[float]
    params: dict[str, torch.Tensor]  # final, by name
    compute_s: float  # forward + backward of one step's chunks, median of the timed steps


def reference_run(steps: int, chunks: int, device) -> Reference:
    model = load_model(device)
    opt = optimizer(model.parameters())
    x, y = batches(steps, chunks, device)
    losses, times = [], []
    for s in range(steps):
        opt.zero_grad()
        start = time.perf_counter()
        loss = sum(lm_loss(model(x[s, c]), y[s, c]) for c in range(chunks)) / chunks
        loss.backward()
        sync(torch.device(device))
        times.append(time.perf_counter() - start)
        opt.step()
        losses.append(loss.item())
    compute = statistics.median(timed_steps(times))
    return Reference(losses, {n: p.detach() for n, p in model.named_parameters()}, compute)


def shared_reference(steps: int, chunks: int, rank: Rank) -> Reference:
    """The reference, run by rank 0 alone (its compute time is one process's, not N processes' sharing the
    cores) and sent to every rank."""
    box = [None]
    if rank.rank == 0:
        ref = reference_run(steps, chunks, rank.device)
        box = [Reference(ref.losses, {n: p.cpu() for n, p in ref.params.items()}, ref.compute_s)]
    dist.broadcast_object_list(
        box, src=0
    )  # pickled CPU tensors: each rank puts them on its own device
    ref = box[0]
    return Reference(
        ref.losses, {n: p.to(rank.device) for n, p in ref.params.items()}, ref.compute_s
    )


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


def maybe_fail(args, rank: Rank, step: int) -> None:
    if args.fail_rank == rank.rank and step == 1:
        if args.fail_mode == "hang":
            print(
                _("rank {rank}: injected hang at step {step} (--fail-rank {rank})").format(
                    rank=rank.rank, step=step
                ),
                flush=True,
            )
            time.sleep(3600)
        raise RuntimeError(
            _("injected failure on rank {rank} at step {step} (--fail-rank {rank})").format(
                rank=rank.rank, step=step
            )
        )


def train(args, rank: Rank, step_fn, opt, run: str) -> RankRecord:
    """Run args.steps steps of step_fn(s, log) -> this rank's loss (float or None); time them; log and profile
    the last one. Returns this rank's record, to be completed by compare()."""
    losses, times, log = [], [], CollectiveLog()
    trace = f"trace_{run}_rank{rank.rank}.json.gz"
    if rank.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(rank.device)
    with flight_recorder.dump_on_failure(args.out, rank.rank, rank.backend):
        for s in range(args.steps):
            maybe_fail(args, rank, s)
            dist.barrier()  # start together, so a step's time is the slowest rank's
            with contextlib.ExitStack() as instrumented:
                if s == args.steps - 1:
                    instrumented.enter_context(traces.profiled(args.out / trace, rank.device))
                    instrumented.enter_context(log)
                start = time.perf_counter()
                opt.zero_grad()
                loss = step_fn(s, log)
                with log.in_phase("optimizer"):
                    opt.step()
                sync(rank.device)
                times.append(time.perf_counter() - start)
            losses.append(loss)
    return RankRecord(
        rank=rank.rank,
        losses=losses,
        step_time_s=statistics.median(timed_steps(times)),
        collectives=log.summary(),
        held={},
        params_digest="",
        collective_seconds=traces.collective_seconds(args.out / trace),
        trace=trace,
        cuda_peak_bytes=torch.cuda.max_memory_allocated(rank.device)
        if rank.device.type == "cuda"
        else 0,
    )


def compare(record: RankRecord, params: dict[str, torch.Tensor], reference: Reference) -> None:
    """Complete this rank's record with its parameters' largest error against the reference (params: name ->
    the full tensor, on this rank) and their digest."""
    errors = {n: (params[n] - reference.params[n]).abs().max().item() for n in params}
    worst = max(errors, key=errors.get)
    record.reference_losses = reference.losses
    record.reference_compute_s = reference.compute_s
    record.max_param_error = errors[worst]
    record.worst_param = worst
    record.params_compared = len(params)
    record.params_digest = digest(params)


def gather(record: RankRecord) -> list[RankRecord]:
    """Every rank's record, on every rank, in rank order."""
    records = [None] * dist.get_world_size()
    dist.all_gather_object(records, record)
    return records


def mean_losses(records: list[RankRecord]) -> list[float]:
    """Per step, the mean of the ranks' losses: the loss of the whole batch when each rank had one chunk."""
    return [sum(steps) / len(steps) for steps in zip(*(r.losses for r in records), strict=True)]


def run_summary(records: list[RankRecord], losses: list[float], chunks: int, **pipeline) -> Run:
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


def train_data_parallel(args, rank: Rank, strategy: str, model, wrapped) -> None:
    """DDP's and FSDP's training: rank r trains `wrapped` (the strategy's view of `model`) on chunk r of each
    step, the gradients averaged by the strategy's collectives; then the common ending."""
    opt = optimizer(wrapped.parameters())
    x, y = batches(args.steps, rank.world, rank.device)

    def step(s, log):
        with log.in_phase("forward"):
            loss = lm_loss(wrapped(x[s, rank.rank]), y[s, rank.rank])
        with log.in_phase("backward"):
            loss.backward()
        return loss.item()

    record = train(args, rank, step, opt, strategy)
    finish_demo(args, rank, strategy, model, opt, record, chunks=rank.world)


def finish_demo(
    args, rank: Rank, strategy: str, model, opt, record: RankRecord, chunks: int, **extra
):
    """DDP's, FSDP's and tensor parallel's ending: measure what this rank holds, compare its (gathered) parameters
    with `chunks` chunks a step in one process (rank 0's), gather every rank's record, rank 0 writes, then leave."""
    record.held = held(list(model.parameters()), opt)
    params = {
        n: full(p.detach()) for n, p in model.named_parameters()
    }  # all-gathers DTensors: every rank
    compare(record, params, shared_reference(args.steps, chunks, rank))
    records = gather(record)
    write(
        args,
        rank,
        strategy,
        {strategy: run_summary(records, mean_losses(records), chunks)},
        **extra,
    )
    finish()


def finish() -> None:
    """End a demo: every rank done, the process groups destroyed, then leave at once.

    Why os._exit: the results are written by now, and in the interpreter's own teardown that would follow,
    worker threads of gloo / the device mesh's groups were seen to abort the process now and then
    ("terminate called without an active exception", SIGABRT, in about one run of the lab in five on CPU),
    which would turn a correct demo into a failed one. Skipping that teardown loses nothing.
    """
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
