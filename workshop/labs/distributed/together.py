"""Several demos in one torchrun launch, one after another in one process group, each writing its
measurements.json in <out>/<strategy>/ as it does alone: what `check distributed predictions` runs. Starting
torchrun and its ranks costs about 9 s on 2 cores, four times over when each demo is a launch of its own.

    python -m torch.distributed.run --nproc-per-node 2 -m workshop.labs.distributed.together --out /tmp/d \\
        --strategies ddp fsdp tp pp --runs ddp --schedules gpipe --steps 3
"""

from __future__ import annotations

from workshop.i18n import N_
from workshop.labs.distributed import ddp, fsdp, instruments, pp, process_group, tp

DEMOS = {"ddp": ddp.run, "fsdp": fsdp.run, "tp": tp.run, "pp": pp.run}
# which demos run, and the options of those that have their own (DDP's runs, the pipeline's schedules)
OPTIONS = [process_group.runs_option("--strategies", DEMOS), *ddp.OPTIONS, *pp.OPTIONS]

if __name__ == "__main__":
    instruments.run_demos(
        N_("Several demos of the MiniGPT in one launch (run under torchrun)"),
        DEMOS,
        OPTIONS,
        together=True,
    )
