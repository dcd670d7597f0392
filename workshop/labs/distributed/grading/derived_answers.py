"""The instructor's solutions of the predictions and answers exercises: each number derived from the model's
shapes and the demos' settings, as the learner would, for the run's N (the learner's constant gives its own N).
PREDICTIONS = predictions(n): pipeline figures are GPipe's (1F1B has the same). ANSWERS = answers(n).
"""

from __future__ import annotations

import math

from workshop.labs.distributed import pipeline_idle, plans, training
from workshop.minigpt.grammar import MAX_SENTENCE_LEN
from workshop.minigpt.model import GPT, GPTConfig

FP32 = 4
SEQ = MAX_SENTENCE_LEN - 1  # tokens per sentence as the demos feed them


def tp_local_numel(name: str, shape: tuple[int, ...], n: int) -> int:
    """Elements of a parameter on one tensor-parallel rank (tp.BLOCK_PLAN, tp.HEAD_PLAN)."""
    numel = math.prod(shape)
    layer = name.rsplit(".", 1)[0].split(".", 2)[-1]  # blocks.0.attn.q_proj.weight -> attn.q_proj
    columns = layer in ("attn.q_proj", "attn.k_proj", "attn.v_proj", "mlp.fc") or name.startswith(
        "lm_head"
    )
    # a row-parallel bias is whole
    rows = layer in ("attn.out_proj", "mlp.proj") and name.endswith("weight")
    return numel // n if columns or rows else numel


def stage_bytes(shapes: dict, rank: int, p: int, cfg: GPTConfig = GPTConfig()) -> int:
    """Parameter bytes of pipeline rank `rank` of p (one stage each): its blocks, plus embeddings or head."""
    lo, hi = rank * cfg.n_layer // p, (rank + 1) * cfg.n_layer // p
    blocks = {f"blocks.{i}." for i in range(lo, hi)}
    ends = ("tok_emb", "pos_emb") if rank == 0 else ()
    ends += ("ln_f", "lm_head") if rank == p - 1 else ()
    mine = [
        s
        for name, s in shapes.items()
        if name.startswith(tuple(blocks)) or name.split(".")[0] in ends
    ]
    return FP32 * sum(math.prod(s) for s in mine)


def predictions(n: int, cfg: GPTConfig = GPTConfig()) -> dict:
    """The instructor's predictions at N = n: {"n": n, strategy: {field: value}}; None for a strategy that
    cannot use n ranks."""
    shapes = {n: tuple(p.shape) for n, p in GPT(cfg).named_parameters()}
    params = FP32 * sum(math.prod(s) for s in shapes.values())
    talks = n > 1
    # one (ROWS, T, C) tensor: a TP all-reduce, a PP send
    activation = FP32 * training.ROWS * SEQ * cfg.d_model
    per_token = FP32 * training.ROWS * SEQ  # loss_parallel's all-reduces: one number per token
    units = cfg.n_layer + 1  # FSDP: a unit per block, one for the rest (the root)
    # rank 0's shards
    padded = sum(-(-s[0] // n) * math.prod(s[1:]) for s in shapes.values()) * FP32
    root = FP32 * sum(math.prod(s) for name, s in shapes.items() if not name.startswith("blocks."))
    masks = cfg.n_layer * cfg.block_size**2  # DDP broadcasts the causal masks (bool) from rank 0
    m = plans.microbatches(n)
    return {
        "n": n,
        "ddp": {"held_bytes": 3 * params, "collectives": 2, "comm_bytes": params + masks},
        "fsdp": {
            "held_bytes": 3 * padded,
            "collectives": (3 * units - 1)
            if talks
            else 0,  # gather fwd, gather bwd but the root, scatter
            "comm_bytes": (3 * n * padded - root) if talks else 0,
        },
        "tp": None
        if plans.tp_usable(n, cfg)
        else {
            "held_bytes": 3 * FP32 * sum(tp_local_numel(k, s, n) for k, s in shapes.items()),
            "collectives": 6 * cfg.n_layer + 4
            if talks
            else 3,  # fwd 2 per block + 3 for the loss; bwd 4 + 1
            "comm_bytes": (6 * cfg.n_layer + 1) * activation + 3 * per_token
            if talks
            else 3 * per_token,
        },
        "pp": None
        if plans.pp_usable(n, cfg)
        else {
            "held_bytes": 3 * max(stage_bytes(shapes, r, n, cfg) for r in range(n)),
            "collectives": 2 * m
            if talks
            else 0,  # rank 0 sends m activations, receives m gradients
            "comm_bytes": 2 * m * activation if talks else 0,
        },
    }


def answers(n: int, cfg: GPTConfig = GPTConfig()) -> dict:
    """The instructor's ANSWERS at N = n, derived from the model's shapes and the demos' settings."""
    m = plans.microbatches(n)
    interleaves = plans.schedules_for(n, cfg)["interleaved_1f1b"] is None
    return {
        # every block again; the root stays gathered
        "fsdp_backward_allgathers": cfg.n_layer if n > 1 else 0,
        "logits_gather_bytes": training.ROWS
        * (MAX_SENTENCE_LEN - 1)
        * cfg.vocab_size
        * 4,  # (B, T, V) fp32
        "gpipe_idle_theory": pipeline_idle.theory(n, m),
        # rank 0 holds stages 0 and N: m activations forward from each, m gradients back from stage N
        "interleaved_sends_rank0": (3 * m if n > 1 else 0) if interleaves else None,
        # every bucket but the last: that one is closed by backward's last gradient
        "ddp_early_allreduces": buckets(int(plans.BUCKET_CAP_MB["small_buckets"] * 2**20), cfg) - 1,
    }


def buckets(cap_bytes: int, cfg: GPTConfig = GPTConfig()) -> int:
    """DDP's buckets for this model: gradients in the order backward produces them (the parameters' reverse
    order, here), each bucket closed by the gradient that takes it to its cap."""
    count, filled = 0, 0
    for p in reversed(list(GPT(cfg).parameters())):
        filled += p.numel() * p.element_size()
        if filled >= cap_bytes:
            count, filled = count + 1, 0
    return count + (filled > 0)
