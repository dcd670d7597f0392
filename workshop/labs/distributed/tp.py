"""Tensor parallel: every rank sees the whole batch but holds a slice of each big matrix (Megatron style).

In each block, q/k/v and the MLP's fc are split column-wise (each rank computes some heads / some hidden
units, no communication), out_proj and proj row-wise (partial sums, all-reduced). The LM head Linear(64, 600)
is split over the vocabulary: each rank computes 600/N logits, and the loss is computed on the sharded logits
(loss_parallel: three all-reduces of one number per token, the max logit, the sum of exponentials and the
target's logit) instead of gathering (B, T, 600) logits.
Embeddings and LayerNorms stay replicated. The attention infers its local head count from the shapes.

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.tp --out /tmp/tp
"""

from __future__ import annotations

from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import (
    ColwiseParallel,
    RowwiseParallel,
    loss_parallel,
    parallelize_module,
)

from workshop.i18n import N_
from workshop.labs.distributed import instruments, measurements, process_group, training
from workshop.minigpt.model import GPT, lm_loss

BLOCK_PLAN = {
    "attn.q_proj": ColwiseParallel(),  # (B, T, 64) -> (B, T, 64/N): heads split over ranks
    "attn.k_proj": ColwiseParallel(),
    "attn.v_proj": ColwiseParallel(),
    "attn.out_proj": RowwiseParallel(),  # (B, T, 64/N) -> partial (B, T, 64), all-reduced
    "mlp.fc": ColwiseParallel(),  # (B, T, 64) -> (B, T, 256/N)
    "mlp.proj": RowwiseParallel(),  # (B, T, 256/N) -> partial (B, T, 64), all-reduced
}
# Logits stay a DTensor sharded over the vocabulary, (B, T, 600/N) per rank, for loss_parallel.
HEAD_PLAN = {"lm_head": ColwiseParallel(use_local_output=False)}


def parallelize(model: GPT, mesh) -> GPT:
    """Split the model's matrices over the mesh's ranks (BLOCK_PLAN, HEAD_PLAN); the rest stays replicated."""
    for block in model.blocks:
        parallelize_module(block, mesh, BLOCK_PLAN)
    return parallelize_module(model, mesh, HEAD_PLAN)


def train(args, rank: process_group.Rank, model: GPT) -> measurements.Run:
    opt = training.optimizer(model.parameters())
    # one chunk: every rank the same whole batch
    x, y = training.batches(args.steps, 1, rank.device)
    with instruments.Instruments(args, rank, "tp", opt) as measure:
        for s in measure.steps():
            opt.zero_grad()
            with (
                loss_parallel()
            ):  # cross-entropy on vocabulary-sharded logits, forward and backward
                # forward: each block all-reduces its two row-parallel outputs; the loss all-reduces a max and
                # two sums over the vocabulary (one number per token each)
                loss = lm_loss(model(x[s, 0]), y[s, 0])
                # backward: the column-parallel layers' input gradients are all-reduced (q, k, v and fc in
                # every block, and the LM head's)
                loss.backward()
            opt.step()  # each rank steps its own slices, and its copy of the replicated parameters
            measure.loss(instruments.full(loss).item())
    return instruments.whole_model_run(measure, model, chunks=1)


def run(args, rank: process_group.Rank) -> tuple[dict[str, measurements.Run], dict]:
    """The demo's one run (N divides the heads and the vocabulary: run_demos checked), and the LM head's rows on
    each rank for its measurements.json."""
    mesh = init_device_mesh(rank.device.type, (rank.world,), mesh_dim_names=("tp",))
    model = parallelize(training.load_model(rank.device), mesh)
    return {"tp": train(args, rank, model)}, {
        "lm_head_local_shape": list(instruments.local(model.lm_head.weight).shape)
    }


if __name__ == "__main__":
    instruments.run_demos(
        N_("Tensor-parallel demo of the MiniGPT (run under torchrun)"), {"tp": run}
    )
