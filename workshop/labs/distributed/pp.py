"""Pipeline parallel: the MiniGPT's 4 blocks cut into stages, one (or, interleaved, two) per rank. A step's
batch is split into m micro-batches that flow through the stages; activations go forward and their gradients
backward by point-to-point send/recv. Three schedules of the same work, each a separate run from the checkpoint:
GPipe (all forwards, then all backwards), 1F1B (alternate once the pipe is full: fewer activations alive) and
interleaved 1F1B (two smaller stages per rank: a smaller bubble, more messages).

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.pp --out /tmp/pp
"""

from __future__ import annotations

import torch
from torch.distributed import pipelining

from workshop.i18n import N_, _
from workshop.labs.distributed import instruments, measurements, plans, process_group, training
from workshop.minigpt.model import GPT, lm_loss

# schedule -> its class (plans.STAGES_PER_RANK: how many stages each rank holds)
SCHEDULE_CLASSES = {
    "gpipe": pipelining.ScheduleGPipe,
    "1f1b": pipelining.Schedule1F1B,
    "interleaved_1f1b": pipelining.ScheduleInterleaved1F1B,
}


class Stage(torch.nn.Module):
    """Blocks [lo, hi) of a GPT; the first stage also embeds, the last also applies ln_f and lm_head.
    Parameter names are the GPT's own (blocks kept under their index), so they compare by name."""

    def __init__(self, gpt: GPT, lo: int, hi: int):
        super().__init__()
        first, last = lo == 0, hi == gpt.cfg.n_layer
        self.tok_emb, self.pos_emb = (gpt.tok_emb, gpt.pos_emb) if first else (None, None)
        self.blocks = torch.nn.ModuleDict({str(i): gpt.blocks[i] for i in range(lo, hi)})
        self.ln_f, self.lm_head = (gpt.ln_f, gpt.lm_head) if last else (None, None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tok_emb is not None:  # (B, T) token ids -> (B, T, C)
            x = self.tok_emb(x) + self.pos_emb(torch.arange(x.shape[1], device=x.device))
        for block in self.blocks.values():  # (B, T, C) -> (B, T, C)
            x = block(x)
        if self.lm_head is not None:  # (B, T, C) -> (B, T, V) logits
            x = self.lm_head(self.ln_f(x))
        return x


def build(gpt: GPT, rank: process_group.Rank, name: str) -> list[pipelining.PipelineStage]:
    """This rank's stages of the schedule `name`: looped placement, rank r holds stages r, r+p, ..."""
    n_stages, n_layer = rank.world * plans.STAGES_PER_RANK[name], gpt.cfg.n_layer
    # stage i: blocks [i L / S, (i+1) L / S) of L blocks in S stages
    return [
        pipelining.PipelineStage(
            Stage(gpt, i * n_layer // n_stages, (i + 1) * n_layer // n_stages),
            i,
            n_stages,
            rank.device,
        )
        for i in range(rank.rank, n_stages, rank.world)
    ]


def train(args, rank: process_group.Rank, name: str) -> measurements.Run:
    """Train with one schedule: the run, its losses the last stage's, its ranks' records each with its timeline."""
    cls, v = SCHEDULE_CLASSES[name], plans.STAGES_PER_RANK[name]
    m = plans.microbatches(rank.world)
    stages = build(training.load_model(rank.device), rank, name)
    schedule = cls(stages[0] if v == 1 else stages, m, loss_fn=lm_loss)
    params = [q for stage in stages for q in stage.submod.parameters()]
    opt = training.optimizer(params)
    # (steps, m, ROWS, T): the schedule splits dim 0 into micro-batches
    x, y = training.batches(args.steps, m, rank.device)
    first, last = rank.rank == 0, rank.rank == rank.world - 1
    # each stage's forward and backward chunks timed: the run's timeline
    with instruments.Instruments(args, rank, name, opt, stages) as measure:
        for s in measure.steps():
            opt.zero_grad()
            losses = []  # the last stage's, one per micro-batch
            inputs = (x[s].flatten(0, 1),) if first else ()
            targets = {"target": y[s].flatten(0, 1), "losses": losses} if last else {}
            # every micro-batch's forward and backward on this rank's stages, in the schedule's order; an
            # activation is sent to the next stage after its forward, its gradient back after its backward
            with measure.log.in_phase(
                "schedule"
            ):  # the schedule's forwards and backwards interleave
                schedule.step(*inputs, **targets)
            opt.step()  # the schedule averaged the micro-batches' gradients, as the reference its chunks' loss
            measure.losses.append(torch.stack(losses).mean().item() if last else None)
    named = {n: q.detach() for stage in stages for n, q in stage.submod.named_parameters()}
    return measure.result(params, named, m, stages_per_rank=v, microbatches=m)


def run(args, rank: process_group.Rank) -> tuple[dict[str, measurements.Run], dict]:
    """One run per schedule that N allows and --schedules asks for; the others, with why, for its
    measurements.json."""
    runs, skipped = {}, {}
    for name, why_not in plans.schedules_for(rank.world).items():
        if why_not or name not in args.schedules:
            skipped[name] = why_not or _("not asked for (--schedules)")
            continue
        runs[name] = train(args, rank, name)
    return runs, {"skipped_schedules": skipped}


OPTIONS = [process_group.runs_option("--schedules", SCHEDULE_CLASSES)]


if __name__ == "__main__":
    instruments.run_demos(
        N_("Pipeline-parallel demo of the MiniGPT (run under torchrun)"), {"pp": run}, OPTIONS
    )
