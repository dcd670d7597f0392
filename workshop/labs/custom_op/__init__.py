from workshop.i18n import N_
from workshop.lab_api import LabSpec

LAB = LabSpec(
    name="custom_op",
    order=3,
    title=N_(
        "a Triton softmax registered as torch.ops.workshop.softmax: autograd, fake tensors, compile, speed"
    ),
    entry="workshop.labs.custom_op.lab:run",
    bench="workshop.labs.custom_op.bench.benchmark:main",
    regrade="workshop.labs.custom_op.lab:regrade",
    needs=("triton",),
)
