from workshop.lab import LabSpec

LAB = LabSpec(
    name="compile",
    order=4,
    title="torch.compile on the MiniGPT: Dynamo -> AOTAutograd -> Inductor, graph breaks, a generated kernel explained",
    entry="workshop.labs.compile.lab:run",
)
