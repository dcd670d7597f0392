from workshop.i18n import N_
from workshop.lab import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.autograd import lab

    lab.run(ctx)


LAB = LabSpec(
    name="autograd",
    order=2,
    title=N_(
        "the LM head's gradients by hand, its grad_fn graph walked, drawn and replayed by a hand-made engine"
    ),
    entry=run,
)
