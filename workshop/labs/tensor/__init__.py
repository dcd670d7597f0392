from workshop.i18n import N_
from workshop.lab_api import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.tensor import lab

    lab.run(ctx)


LAB = LabSpec(
    name="tensor",
    order=1,
    title=N_(
        "the LM head's tensors taken apart: storage, strides, views, the version counter, a dispatch mode of your own"
    ),
    entry=run,
    # its tensors are the head's (176, 64) rows and (600, 64) weight: a second thread buys nothing
    cpu_threads=1,
)
