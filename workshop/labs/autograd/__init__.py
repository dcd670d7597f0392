from workshop.i18n import N_
from workshop.lab_api import LabSpec

LAB = LabSpec(
    name="autograd",
    order=2,
    title=N_(
        "the LM head's gradients by hand, its grad_fn graph walked, drawn and replayed by a hand-made engine"
    ),
    entry="workshop.labs.autograd.lab:run",
)
