from workshop.i18n import N_
from workshop.lab_api import LabSpec

# LabSpec.precondition: more ranks than this machine holds, said before a run starts (launch.py imports torch
# only where it counts GPUs)
from workshop.labs.distributed.launch import capacity_problem


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.distributed import lab

    lab.run(ctx)


def regrade(ctx, lab_dir) -> None:
    """LabSpec.regrade: the from_run exercises graded against an earlier run's folder."""
    from workshop.labs.distributed import lab

    lab.regrade(ctx, lab_dir)


LAB = LabSpec(
    name="distributed",
    order=6,
    title=N_(
        "DDP, FSDP2, tensor and pipeline parallel under torchrun: each proven equal to one process, and measured"
    ),
    entry=run,
    # more ranks than this machine holds is refused before a run starts (one line: the limit and the fix)
    precondition=capacity_problem,
    # `check distributed <exercise>` after a run grades that run's figures again (every exercise is graded from
    # a run's files)
    regrade=regrade,
)
