"""What every demo shares: process-group set-up, the data, the one-process reference, the measurements.

A demo (ddp.py, fsdp.py, tp.py, pp.py) runs under torchrun, one process per rank. Each trains the shipped
MiniGPT for a few SGD steps, then, on every rank, replays the same steps in one process without any process
group (the reference) and compares: losses and final parameters must agree within TOLERANCE. Rank 0 writes
<out>/measurements.json; the lab turns it into checks.

The training objective is the same everywhere: a step's batch is `chunks` chunks of ROWS sentences and the loss
is the mean over chunks of lm_loss(chunk). DDP and FSDP give each rank a chunk (gradients are averaged),
pipeline parallel makes them its micro-batches (the schedule averages), tensor parallel has one chunk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from workshop import atomic
from workshop.labs.distributed.comms import CollectiveLog
from workshop.minigpt import checkpoint
from workshop.minigpt.data import train_tensors
from workshop.minigpt.model import lm_loss

STEPS = 5
ROWS = 8  # sentences per chunk (per rank for DDP/FSDP, per micro-batch for PP)
LR = 0.02
# Largest allowed |demo - reference| of a parameter, and relative difference of a loss. fp32 sums taken in
# another order (an all-reduce, a sharded matmul) differ by a few ulps: ~1e-7 relative.
TOLERANCE = {"cpu": 1e-6, "cuda": 1e-5}


def parse_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument(
        "--out", type=Path, required=True, help="folder for measurements.json (written by rank 0)"
    )
    p.add_argument(
        "--device",
        choices=("cpu", "cuda"),
        default="cpu",
        help="cpu: gloo; cuda: NCCL, a GPU per rank",
    )
    p.add_argument("--steps", type=int, default=STEPS)
    p.add_argument(
        "--fail-rank", type=int, default=None, help="inject a failure on this rank at step 1"
    )
    p.add_argument(
        "--fail-mode",
        choices=("raise", "hang"),
        default="raise",
        help="raise: the rank dies; hang: it stops answering (peers wait for --pg-timeout)",
    )
    p.add_argument(
        "--pg-timeout",
        type=float,
        default=30.0,
        help="seconds a collective may wait before failing",
    )
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
            "run this under torchrun: python -m torch.distributed.run --nproc-per-node N -m <demo> ..."
        )
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise SystemExit(
                f"local rank {local_rank} has no GPU ({torch.cuda.device_count()} visible); "
                "use fewer processes per node or --device cpu"
            )
        device, backend = torch.device("cuda", local_rank), "nccl"
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = (
            False  # TF32 would put fp32 results ~1e-3 off the reference
        )
        torch.backends.cudnn.allow_tf32 = False
    else:
        device, backend = torch.device("cpu"), "gloo"
    # The timeout bounds every collective: a rank that stops answering fails its peers after it, not 30 min.
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


def reference_run(steps: int, chunks: int, device) -> tuple[list[float], dict[str, torch.Tensor]]:
    """The same steps in one process, no process group: per-step losses and the final parameters by name."""
    model = load_model(device)
    opt = optimizer(model.parameters())
    x, y = batches(steps, chunks, device)
    losses = []
    for s in range(steps):
        opt.zero_grad()
        loss = sum(lm_loss(model(x[s, c]), y[s, c]) for c in range(chunks)) / chunks
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {n: p.detach() for n, p in model.named_parameters()}


def local(t: torch.Tensor) -> torch.Tensor:
    """The part of a (possibly sharded) tensor that lives on this rank."""
    return t.to_local() if hasattr(t, "to_local") else t


def full(t: torch.Tensor) -> torch.Tensor:
    """The whole tensor (a collective for a DTensor: every rank must call it)."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def nbytes(tensors) -> int:
    return sum(local(t).numel() * local(t).element_size() for t in tensors if t is not None)


def memory(params: list[torch.Tensor], opt: torch.optim.Optimizer) -> dict[str, int]:
    """Bytes this rank holds for parameters, gradients and optimizer state (SGD: momentum buffers)."""
    state = [v for s in opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)]
    return {
        "params": nbytes(params),
        "grads": nbytes(p.grad for p in params),
        "optimizer": nbytes(state),
    }


def maybe_fail(args, rank: Rank, step: int) -> None:
    if args.fail_rank == rank.rank and step == 1:
        if args.fail_mode == "hang":
            print(
                f"rank {rank.rank}: injected hang at step {step} (--fail-rank {rank.rank})",
                flush=True,
            )
            time.sleep(3600)
        raise RuntimeError(
            f"injected failure on rank {rank.rank} at step {step} (--fail-rank {rank.rank})"
        )


def sync(rank: Rank) -> None:
    if rank.device.type == "cuda":
        torch.cuda.synchronize(rank.device)


def train(args, rank: Rank, step_fn, opt) -> dict:
    """Run args.steps steps of step_fn(s, log) -> this rank's loss (float or None); time them; log the last one's
    collectives. Returns this rank's record."""
    losses, times, log = [], [], CollectiveLog()
    if rank.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(rank.device)
    for s in range(args.steps):
        maybe_fail(args, rank, s)
        dist.barrier()  # start together, so a step's time is the slowest rank's
        start = time.perf_counter()
        opt.zero_grad()
        if s == args.steps - 1:
            with log:
                loss = step_fn(s, log)
                with log.in_phase("optimizer"):
                    opt.step()
        else:
            loss = step_fn(s, log)
            opt.step()
        sync(rank)
        times.append(time.perf_counter() - start)
        losses.append(loss)
    record = {
        "rank": rank.rank,
        "losses": losses,
        "step_time_s": statistics.median(times[1:] or times),
        "collectives": log.summary(),
    }
    if rank.device.type == "cuda":
        record["cuda_peak_bytes"] = torch.cuda.max_memory_allocated(rank.device)
    return record


def compare(record: dict, params: dict[str, torch.Tensor], steps: int, chunks: int, device) -> dict:
    """Add this rank's largest parameter error against the reference (params: name -> full tensor)."""
    ref_losses, ref_params = reference_run(steps, chunks, device)
    errors = {n: (params[n] - ref_params[n]).abs().max().item() for n in params}
    worst = max(errors, key=errors.get)
    return {
        **record,
        "reference_losses": ref_losses,
        "max_param_error": errors[worst],
        "worst_param": worst,
        "params_compared": len(params),
    }


def gather(record: dict) -> list[dict]:
    """Every rank's record, on every rank, in rank order."""
    records = [None] * dist.get_world_size()
    dist.all_gather_object(records, record)
    return records


def write(args, rank: Rank, strategy: str, runs: dict[str, dict], **extra) -> None:
    """Rank 0 writes measurements.json: {strategy, ..., runs: {name: {losses, per_rank: [...], ...}}}."""
    if rank.rank == 0:
        data = {
            "strategy": strategy,
            "world_size": rank.world,
            "device": rank.device.type,
            "backend": rank.backend,
            "steps": args.steps,
            "rows_per_chunk": ROWS,
            "lr": LR,
            "tolerance": TOLERANCE[rank.device.type],
            "torch": torch.__version__,
            "runs": runs,
            **extra,
        }
        atomic.write_json(args.out / "measurements.json", data)


def mean_losses(records: list[dict]) -> list[float]:
    """Per step, the mean of the ranks' losses: the loss of the whole batch when each rank had one chunk."""
    return [sum(steps) / len(steps) for steps in zip(*(r["losses"] for r in records), strict=True)]


def run_summary(records: list[dict], losses: list[float], chunks: int) -> dict:
    """One run's result from all ranks' records and the losses the run reports (one per step)."""
    ref = records[0]["reference_losses"]
    return {
        "chunks": chunks,
        "losses": losses,
        "reference_losses": ref,
        "max_loss_error": max(
            abs(a - b) / abs(b) for a, b in zip(losses, ref, strict=True)
        ),  # relative: a loss is ~3.7
        "max_param_error": max(r["max_param_error"] for r in records),
        "per_rank": records,
    }


def finish_data_parallel(args, rank: Rank, strategy: str, record_: dict, params: dict) -> None:
    """DDP's and FSDP's ending: rank r trained on chunk r of each step, so the reference takes rank.world
    chunks a step; compare with it, gather every rank's record, rank 0 writes, then leave."""
    record_ = compare(record_, params, args.steps, rank.world, rank.device)
    records = gather(record_)
    write(args, rank, strategy, {strategy: run_summary(records, mean_losses(records), rank.world)})
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
