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

from workshop.labs.distributed import common
from workshop.minigpt.model import lm_loss

# The root returns the logits as a view; FSDP warns that an in-place op on it would skip a hook. We do none.
warnings.filterwarnings("ignore", message="FSDP2-wrapped module .* returned a view tensor")


@record
def main() -> None:
    args = common.parse_args("FSDP2 (fully_shard) demo of the MiniGPT (run under torchrun)")
    rank = common.setup(args)
    mesh = init_device_mesh(rank.device.type, (rank.world,), mesh_dim_names=("dp",))
    model = common.load_model(rank.device)
    for block in model.blocks:  # one all-gather / reduce-scatter unit per block ...
        fully_shard(block, mesh=mesh)
    fully_shard(
        model, mesh=mesh
    )  # ... and one for the rest (embeddings, ln_f, lm_head); params become DTensors
    opt = common.optimizer(model.parameters())  # built after sharding: its state is sharded too
    x, y = common.batches(args.steps, rank.world, rank.device)

    def step(s, log):
        with log.in_phase("forward"):  # all-gather each unit's parameters just before it runs
            loss = lm_loss(model(x[s, rank.rank]), y[s, rank.rank])
        with log.in_phase("backward"):  # all-gather again, then reduce-scatter the gradients
            loss.backward()
        return loss.item()

    record_ = common.train(args, rank, step, opt)
    record_["bytes"] = common.memory(list(model.parameters()), opt)
    params = {
        n: common.full(p.detach()) for n, p in model.named_parameters()
    }  # all-gathers, every rank
    common.finish_data_parallel(args, rank, "fsdp", record_, params)


if __name__ == "__main__":
    main()
