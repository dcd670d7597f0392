from workshop.i18n import N_
from workshop.lab import LabSpec

LAB = LabSpec(
    name="compile",
    order=4,
    title=N_(
        "torch.compile on the MiniGPT: Dynamo -> AOTAutograd -> Inductor, graph breaks, a generated kernel explained"
    ),
    entry="workshop.labs.compile.lab:run",
)
