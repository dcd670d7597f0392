from workshop.i18n import N_
from workshop.lab_api import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.autograd import lab

    lab.run(ctx)


LAB = LabSpec(
    name="autograd",
    order=3,
    title=N_(
        "the LM head's gradients by hand, its grad_fn graph walked, drawn and replayed by a hand-made engine"
    ),
    entry=run,
    # Its tensors are (8, 64) rows, its learner's worker's too (gradcheck's own thread count is set where it runs:
    # finite_diff.one_thread). Measured on a shared 2-core machine at a load of 8: the lab 28.2 s with 2 threads,
    # 15.6 s with one.
    cpu_threads=1,
)
