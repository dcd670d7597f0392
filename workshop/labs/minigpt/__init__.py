from workshop.i18n import N_
from workshop.lab_api import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.minigpt import lab

    lab.run(ctx)


LAB = LabSpec(
    name="minigpt",
    order=0,
    title=N_(
        "the grammar MiniGPT: load the checkpoint, measure prompt accuracy, draw the loss curve"
    ),
    entry=run,
    # The model is 64 wide, its sentences 22 tokens. Measured on a shared 2-core machine at a load of 4-8: the
    # replay 94 s and the sampling 39 s with 2 threads, 15.5 s and 2.2 s with one; the whole lab 146 s and 64 s.
    cpu_threads=1,
)
