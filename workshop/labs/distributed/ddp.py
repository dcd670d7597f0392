"""DDP: every rank holds the whole model and optimizer, trains on its own chunk of the batch, and all-reduces
(averages) the gradients during backward, bucket by bucket, so all replicas take the same step. In forward
DDP also broadcasts the module's buffers from rank 0 (broadcast_buffers=True).

Two runs, from the same checkpoint, that differ only in DDP's buckets (BUCKET_CAP_MB). A bucket is all-reduced
once its last gradient has arrived. By default the first bucket is capped at 1 MiB and the others at 25 MiB;
the model's 1,118,048 B of gradients all fall in that first bucket, because the gradient that takes it past
1 MiB (1,048,576 B) is the last to arrive, tok_emb's (153,600 B): its one all-reduce is issued when backward has
nothing left to compute, and overlaps none of it. With small buckets (0.25 MiB) the all-reduces of the first
buckets are issued while backward is still computing the earlier layers' gradients: communication overlaps
computation, which is what buckets are for.

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.ddp --out /tmp/ddp
"""

from __future__ import annotations

from torch.nn.parallel import DistributedDataParallel

from workshop.i18n import N_
from workshop.labs.distributed import instruments, measurements, plans, process_group, training


def train(args, rank: process_group.Rank, run: str) -> measurements.Run:
    """One run: the plain training step (instruments.train_whole_model) on each rank's chunk of the batch, its
    gradients all-reduced (averaged) in backward, bucket by bucket (plans.BUCKET_CAP_MB[run]), and rank 0's
    buffers broadcast in forward: every replica takes the same step."""
    model = training.load_model(rank.device)
    ids = [rank.device.index] if rank.device.type == "cuda" else None
    ddp = DistributedDataParallel(model, device_ids=ids, bucket_cap_mb=plans.BUCKET_CAP_MB[run])
    return instruments.train_whole_model(args, rank, run, model, rank.world, forward=ddp)


def run(args, rank: process_group.Rank) -> tuple[dict[str, measurements.Run], dict]:
    """The demo's training runs (--runs), and what else its measurements.json says (nothing)."""
    return {run: train(args, rank, run) for run in args.runs}, {}


OPTIONS = [process_group.runs_option("--runs", plans.BUCKET_CAP_MB)]


if __name__ == "__main__":
    instruments.run_demos(N_("DDP demo of the MiniGPT (run under torchrun)"), {"ddp": run}, OPTIONS)
