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

# The root returns the logits as a view; FSDP warns that an in-place op on it would skip a hook. We do none.
warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")


def run(args, rank: process_group.Rank) -> tuple[dict[str, measurements.Run], dict]:
    """The demo's one run: the plain training step (instruments.train_whole_model) on each rank's chunk of the
    batch, every parameter sharded over the ranks; and what else its measurements.json says (nothing)."""
    mesh = init_device_mesh(rank.device.type, (rank.world,), mesh_dim_names=("dp",))
    model = training.load_model(rank.device)
    for block in model.blocks:  # one all-gather / reduce-scatter unit per block ...
        fully_shard(block, mesh=mesh)
    # ... and one for the rest (embeddings, ln_f, lm_head), the root: its parameters become DTensors, and the
    # optimizer, built after this, holds sharded state too
    fully_shard(model, mesh=mesh)
    return {"fsdp": instruments.train_whole_model(args, rank, "fsdp", model, rank.world)}, {}


if __name__ == "__main__":
    instruments.run_demos(
        N_("FSDP2 (fully_shard) demo of the MiniGPT (run under torchrun)"), {"fsdp": run}
    )
