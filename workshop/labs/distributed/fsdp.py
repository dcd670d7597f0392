"""FSDP2: each rank keeps only a 1/N shard (dim 0) of every parameter, gradient and optimizer state. Before a
block runs it all-gathers the block's parameters, afterwards frees them; in backward it gathers them again and
reduce-scatters the gradients, so each rank ends with the averaged gradient of its own shard.

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.fsdp --out /tmp/fsdp
"""

from __future__ import annotations

import warnings

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.elastic.multiprocessing.errors import record
from torch.distributed.fsdp import fully_shard

from workshop.i18n import N_
from workshop.labs.distributed import common

# The root returns the logits as a view; FSDP warns that an in-place op on it would skip a hook. We do none.
warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")


@record
def main() -> None:
    args = common.parse_args(N_("FSDP2 (fully_shard) demo of the MiniGPT (run under torchrun)"))
    rank = common.setup(args)
    mesh = init_device_mesh(rank.device.type, (rank.world,), mesh_dim_names=("dp",))
    model = common.load_model(rank.device)
    for block in model.blocks:  # one all-gather / reduce-scatter unit per block ...
        fully_shard(block, mesh=mesh)
    # ... and one for the rest (embeddings, ln_f, lm_head), the root: its parameters become DTensors, and the
    # optimizer, built after this, holds sharded state too
    fully_shard(model, mesh=mesh)
    common.train_data_parallel(args, rank, "fsdp", model, model)


if __name__ == "__main__":
    main()
