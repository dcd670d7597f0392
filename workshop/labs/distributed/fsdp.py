"""FSDP2: each rank keeps only a 1/N shard (dim 0) of every parameter, gradient and optimizer state. Before a
unit runs it all-gathers the unit's parameters, afterwards frees them; in backward it gathers them again and
reduce-scatters the gradients, so each rank ends with the averaged gradient of its own shard. The training step
is the plain one: fully_shard changed what the model's forward and backward communicate, not the loop.

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.fsdp --out /tmp/fsdp
"""

from __future__ import annotations

import warnings

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from workshop.i18n import N_
from workshop.labs.distributed import instruments, measurements, process_group, training
from workshop.minigpt.model import lm_loss

# The root returns the logits as a view; FSDP warns that an in-place op on it would skip a hook. We do none.
warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")


def train(args, rank: process_group.Rank) -> measurements.Run:
    mesh = init_device_mesh(rank.device.type, (rank.world,), mesh_dim_names=("dp",))
    model = training.load_model(rank.device)
    for block in model.blocks:  # one all-gather / reduce-scatter unit per block ...
        fully_shard(block, mesh=mesh)
    # ... and one for the rest (embeddings, ln_f, lm_head), the root: its parameters become DTensors, and the
    # optimizer, built after this, holds sharded state too
    fully_shard(model, mesh=mesh)
    opt = training.optimizer(model.parameters())
    x, y = training.batches(args.steps, rank.world, rank.device)  # (steps, N, ROWS, T)
    with instruments.Instruments(args, rank, "fsdp", opt) as measure:
        for s in measure.steps():
            opt.zero_grad()
            # forward: before each unit runs, all-gather its parameters; after it, free the gathered copy (the
            # root's stays: backward needs it first)
            loss = lm_loss(model(x[s, rank.rank]), y[s, rank.rank])
            # backward: all-gather each block's parameters again, then reduce-scatter its gradients: each rank
            # receives the average of its own shard
            loss.backward()
            opt.step()  # each rank steps its own shards: parameters, gradients and momentum are 1/N each
            measure.loss(loss.item())
    return instruments.whole_model_run(measure, model, chunks=rank.world)


def run(args, rank: process_group.Rank) -> tuple[dict[str, measurements.Run], dict]:
    return {"fsdp": train(args, rank)}, {}


if __name__ == "__main__":
    instruments.run_demos(
        N_("FSDP2 (fully_shard) demo of the MiniGPT (run under torchrun)"), {"fsdp": run}
    )
