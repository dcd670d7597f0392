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


def run(args, rank: process_group.Rank) -> tuple[dict[str, measurements.Run], dict]:
    """The demo's one run (N divides the heads and the vocabulary: run_demos checked), the plain training step
    (instruments.train_whole_model) on the whole batch on every rank, its cross-entropy computed on the
    vocabulary-sharded logits, forward and backward (loss_parallel); and the LM head's rows on each rank for its
    measurements.json."""
    mesh = init_device_mesh(rank.device.type, (rank.world,), mesh_dim_names=("tp",))
    model = training.load_model(rank.device)
    # each matrix split over the mesh's ranks (BLOCK_PLAN, HEAD_PLAN), in place; the rest stays replicated
    for block in model.blocks:
        parallelize_module(block, mesh, BLOCK_PLAN)
    parallelize_module(model, mesh, HEAD_PLAN)
    return {
        "tp": instruments.train_whole_model(args, rank, "tp", model, 1, loss_context=loss_parallel)
    }, {"lm_head_local_shape": list(instruments.local(model.lm_head.weight).shape)}


if __name__ == "__main__":
    instruments.run_demos(
        N_("Tensor-parallel demo of the MiniGPT (run under torchrun)"), {"tp": run}
    )
