"""DDP: every rank holds the whole model and optimizer, trains on its own chunk of the batch, and all-reduces
(averages) the gradients during backward, bucket by bucket, so all replicas take the same step.

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.ddp --out /tmp/ddp
"""

from __future__ import annotations

from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

from workshop.labs.distributed import common
from workshop.minigpt.model import lm_loss


@record  # a rank's traceback goes into torchrun's failure summary
def main() -> None:
    args = common.parse_args("DDP demo of the MiniGPT (run under torchrun)")
    rank = common.setup(args)
    model = common.load_model(rank.device)
    ddp = DistributedDataParallel(
        model, device_ids=[rank.device.index] if rank.device.type == "cuda" else None
    )
    opt = common.optimizer(ddp.parameters())
    x, y = common.batches(
        args.steps, rank.world, rank.device
    )  # rank r trains on chunk r of each step

    def step(s, log):
        with log.in_phase(
            "forward"
        ):  # DDP broadcasts its buffers from rank 0 here (broadcast_buffers=True)
            loss = lm_loss(ddp(x[s, rank.rank]), y[s, rank.rank])
        with log.in_phase("backward"):  # gradient all-reduce, overlapped with the rest of backward
            loss.backward()
        return loss.item()

    record_ = common.train(args, rank, step, opt)
    record_["bytes"] = common.memory(list(model.parameters()), opt)
    params = {n: p.detach() for n, p in model.named_parameters()}
    common.finish_data_parallel(args, rank, "ddp", record_, params)


if __name__ == "__main__":
    main()
