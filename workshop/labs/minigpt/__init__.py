from workshop.i18n import N_
from workshop.lab import LabSpec


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
)
