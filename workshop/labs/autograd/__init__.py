from workshop.lab import LabSpec

LAB = LabSpec(
    name="autograd",
    order=2,
    title="the LM head's gradients by hand, its grad_fn graph walked, drawn and replayed by a hand-made engine",
    entry="workshop.labs.autograd.lab:run",
)
