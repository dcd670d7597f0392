from workshop.i18n import N_
from workshop.lab_api import LabSpec

LAB = LabSpec(
    name="dispatcher",
    order=1,
    title=N_(
        "trace F.linear(x, W, b) and torch.matmul through the dispatcher: keys, kernels, GEMM op and kernel"
    ),
    entry="workshop.labs.dispatcher.lab:run",
)
