from workshop.i18n import N_
from workshop.lab_api import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.custom_op import lab

    lab.run(ctx)


def regrade(ctx, lab_dir) -> None:
    """LabSpec.regrade: the from_run exercises graded against an earlier run's folder."""
    from workshop.labs.custom_op import lab

    lab.regrade(ctx, lab_dir)


def benchmark(out):
    """LabSpec.bench: `python -m workshop bench custom_op`."""
    from workshop.labs.custom_op.bench import benchmark

    return benchmark.main(out)


LAB = LabSpec(
    name="custom_op",
    order=4,
    title=N_(
        "a Triton softmax registered as torch.ops.workshop.softmax: autograd, fake tensors, compile, speed"
    ),
    entry=run,
    bench=benchmark,
    regrade=regrade,
    needs=("triton",),
)
