"""What each demo runs at N, decided before any process starts: whether N ranks can split the MiniGPT (tensor
and pipeline parallel), the pipeline's micro-batches and the schedules N allows, DDP's two bucket sizes.

The lab's process and the grading ask these without importing the demos: the demos import
torch.distributed.pipelining and DTensor, which cost more CPU than torch itself (measured: 1.6 s on top of
torch's 1.4 s), and a `check distributed predictions` of an earlier run starts no demo at all.
"""

from __future__ import annotations

from workshop.i18n import N_, _
from workshop.minigpt.model import GPTConfig

# run -> DDP's bucket_cap_mb (MiB); None: DDP's default (a first bucket of 1 MiB, then 25 MiB)
BUCKET_CAP_MB = {"ddp": None, "small_buckets": 0.25}
# pipeline schedule -> stages per rank (pp.py's SCHEDULE_CLASSES runs each)
STAGES_PER_RANK = {"gpipe": 1, "1f1b": 1, "interleaved_1f1b": 2}


def tp_usable(n: int, cfg: GPTConfig = GPTConfig()) -> str | None:
    """Why n ranks cannot split this model's matrices (None if they can)."""
    for what, size in (
        (N_("attention heads"), cfg.n_head),
        (N_("MLP width"), cfg.d_mlp),
        (N_("vocabulary"), cfg.vocab_size),
    ):
        if size % n:
            return _(
                "tensor parallel needs N to divide the {what} ({size}); N={n} does not (use 1, 2 or 4)"
            ).format(what=_(what), size=size, n=n)
    return None


def pp_usable(n: int, cfg: GPTConfig = GPTConfig()) -> str | None:
    """Why n ranks cannot each hold a pipeline stage of blocks (None if they can)."""
    if n > cfg.n_layer:
        return _(
            "pipeline parallel needs at most one stage per block: N={n} ranks > {blocks} blocks"
        ).format(n=n, blocks=cfg.n_layer)
    return None


def microbatches(p: int) -> int:
    return 2 * p  # m = 2p: enough for every schedule here (1F1B and interleaved need m >= p)


def schedules_for(n: int, cfg: GPTConfig = GPTConfig()) -> dict[str, str | None]:
    """Schedule -> None if it runs with n ranks, else why not (interleaving needs 2 stages per rank)."""
    return {
        name: None
        if n * v <= cfg.n_layer
        else _("{stages} stages > {blocks} blocks").format(stages=n * v, blocks=cfg.n_layer)
        for name, v in STAGES_PER_RANK.items()
    }
