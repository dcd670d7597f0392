from workshop.lab import LabSpec

LAB = LabSpec(
    name="dispatcher",
    order=1,
    title="trace F.linear(x, W, b) through the dispatcher: keys, kernels, autograd node, GEMM kernel",
    entry="workshop.labs.dispatcher.lab:run",
)
