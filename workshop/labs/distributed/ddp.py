"""DDP: every rank holds the whole model and optimizer, trains on its own chunk of the batch, and all-reduces
(averages) the gradients during backward, bucket by bucket, so all replicas take the same step. In forward
DDP also broadcasts the module's buffers from rank 0 (broadcast_buffers=True).

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.ddp --out /tmp/ddp
"""

from __future__ import annotations

from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel

from workshop.i18n import N_
from workshop.labs.distributed import common


@record  # a rank's traceback goes into torchrun's failure summary
def main() -> None:
    args = common.parse_args(N_("DDP demo of the MiniGPT (run under torchrun)"))
    rank = common.setup(args)
    model = common.load_model(rank.device)
    ids = [rank.device.index] if rank.device.type == "cuda" else None
    # the all-reduce runs while backward goes on: one bucket (25 MB cap) holds this model's 1.1 MB
    ddp = DistributedDataParallel(model, device_ids=ids)
    common.train_data_parallel(args, rank, "ddp", model, ddp)


if __name__ == "__main__":
    main()
