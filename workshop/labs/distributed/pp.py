"""Pipeline parallel: the MiniGPT's 4 blocks cut into stages, one (or, interleaved, two) per rank. A step's
batch is split into m micro-batches that flow through the stages; activations go forward and their gradients
backward by point-to-point send/recv. Three schedules of the same work, each a separate run from the checkpoint:
GPipe (all forwards, then all backwards), 1F1B (alternate once the pipe is full: fewer activations alive) and
interleaved 1F1B (two smaller stages per rank: a smaller bubble, more messages).

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.pp --out /tmp/pp
"""

from __future__ import annotations

import torch
import torch.nn as nn
from torch.distributed import pipelining
from torch.distributed.elastic.multiprocessing.errors import record

from workshop.i18n import N_, _
from workshop.labs.distributed import common
from workshop.labs.distributed.records import RankRecord
from workshop.labs.distributed.timeline import Timeline
from workshop.minigpt.model import GPT, GPTConfig, lm_loss

# name -> (schedule class, stages per rank)
SCHEDULES = {
    "gpipe": (pipelining.ScheduleGPipe, 1),
    "1f1b": (pipelining.Schedule1F1B, 1),
    "interleaved_1f1b": (pipelining.ScheduleInterleaved1F1B, 2),
}


def microbatches(p: int) -> int:
    return 2 * p  # m = 2p: enough for every schedule here (1F1B and interleaved need m >= p)


def usable(n: int, cfg: GPTConfig = GPTConfig()) -> str | None:
    if n > cfg.n_layer:
        return _(
            "pipeline parallel needs at most one stage per block: N={n} ranks > {blocks} blocks"
        ).format(n=n, blocks=cfg.n_layer)
    return None


def schedules_for(n: int, cfg: GPTConfig = GPTConfig()) -> dict[str, str | None]:
    """Schedule -> None if it runs with n ranks, else why not (interleaving needs 2 stages per rank)."""
    return {
        name: None
        if n * v <= cfg.n_layer
        else _("{stages} stages > {blocks} blocks").format(stages=n * v, blocks=cfg.n_layer)
        for name, (_schedule, v) in SCHEDULES.items()
    }


class Stage(nn.Module):
    """Blocks [lo, hi) of a GPT; the first stage also embeds, the last also applies ln_f and lm_head.
    Parameter names are the GPT's own (blocks kept under their index), so they compare by name."""

    def __init__(self, gpt: GPT, lo: int, hi: int):
        super().__init__()
        first, last = lo == 0, hi == gpt.cfg.n_layer
        self.tok_emb, self.pos_emb = (gpt.tok_emb, gpt.pos_emb) if first else (None, None)
        self.blocks = nn.ModuleDict({str(i): gpt.blocks[i] for i in range(lo, hi)})
        self.ln_f, self.lm_head = (gpt.ln_f, gpt.lm_head) if last else (None, None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tok_emb is not None:  # (B, T) token ids -> (B, T, C)
            x = self.tok_emb(x) + self.pos_emb(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks.values():  # (B, T, C) -> (B, T, C)
            x = block(x)
        if self.lm_head is not None:  # (B, T, C) -> (B, T, V) logits
            x = self.lm_head(self.ln_f(x))
        return x


def run_schedule(args, rank: common.Rank, name: str, reference: common.Reference) -> RankRecord:
    """Train with one schedule; returns this rank's record (with its timeline)."""
    cls, v = SCHEDULES[name]
    p, m = rank.world, microbatches(rank.world)
    n_stages, n_layer = p * v, GPTConfig().n_layer
    gpt = common.load_model(rank.device)
    ids = [rank.rank + k * p for k in range(v)]  # looped placement: rank r holds stages r, r+p, ...
    modules = [Stage(gpt, i * n_layer // n_stages, (i + 1) * n_layer // n_stages) for i in ids]
    stages = [
        pipelining.PipelineStage(mod, i, n_stages, rank.device)
        for mod, i in zip(modules, ids, strict=True)
    ]
    timeline = Timeline(rank.device)
    for stage in stages:
        timeline.watch(stage)
    schedule = cls(stages[0], m, loss_fn=lm_loss) if v == 1 else cls(stages, m, loss_fn=lm_loss)
    params = [q for mod in modules for q in mod.parameters()]
    opt = common.optimizer(params)
    x, y = common.batches(
        args.steps, m, rank.device
    )  # (steps, m, ROWS, T): the schedule splits dim 0
    first, last = rank.rank == 0, rank.rank == p - 1

    def step(s, log):
        timeline.begin_step()
        losses = []
        with log.in_phase(
            "schedule"
        ):  # forwards and backwards of all micro-batches, their sends/recvs
            inputs = (x[s].flatten(0, 1),) if first else ()
            targets = {"target": y[s].flatten(0, 1), "losses": losses} if last else {}
            schedule.step(*inputs, **targets)
        # the schedule averages the micro-batches' gradients as the reference averages its chunks' losses
        return torch.stack(losses).mean().item() if last else None

    rank_record = common.train(args, rank, step, opt, name)
    rank_record.held = common.held(params, opt)
    rank_record.intervals = timeline.steps
    rank_record.timer_resolution_s = timeline.resolution()
    named = {n: q.detach() for mod in modules for n, q in mod.named_parameters()}
    common.compare(rank_record, named, reference)
    return rank_record


SCHEDULE_OPTION = (
    ("--schedules",),
    {
        "nargs": "+",
        "choices": tuple(SCHEDULES),
        "default": tuple(SCHEDULES),
        "help": N_("which to run"),
    },
)


@record
def main() -> None:
    args = common.parse_args(
        N_("Pipeline-parallel demo of the MiniGPT (run under torchrun)"), [SCHEDULE_OPTION]
    )
    rank = common.setup(args)
    if why := usable(rank.world):
        raise SystemExit(why)
    p, m = rank.world, microbatches(rank.world)
    reference = common.shared_reference(args.steps, m, rank)  # the same for every schedule
    runs, skipped = {}, {}
    for name, why_not in schedules_for(p).items():
        if why_not or name not in args.schedules:
            skipped[name] = why_not or _("not asked for (--schedules)")
            continue
        records = common.gather(run_schedule(args, rank, name, reference))
        v = SCHEDULES[name][1]
        losses = records[p - 1].losses  # the last stage computes the loss
        runs[name] = common.run_summary(records, losses, m, stages_per_rank=v, microbatches=m)
    common.write(args, rank, "pp", runs, skipped_schedules=skipped)
    common.finish()


if __name__ == "__main__":
    main()
