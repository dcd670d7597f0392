from workshop.i18n import N_
from workshop.lab_api import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.dispatcher import lab

    lab.run(ctx)


LAB = LabSpec(
    name="dispatcher",
    order=2,
    title=N_(
        "trace F.linear(x, W, b) and torch.matmul through the dispatcher: keys, kernels, GEMM op and kernel"
    ),
    entry=run,
)
