from workshop.i18n import N_
from workshop.lab_api import LabSpec

LAB = LabSpec(
    name="minigpt",
    order=0,
    title=N_(
        "the grammar MiniGPT: load the checkpoint, measure prompt accuracy, draw the loss curve"
    ),
    entry="workshop.labs.minigpt.lab:run",
)
