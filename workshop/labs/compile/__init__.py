from workshop.i18n import N_
from workshop.lab import LabSpec

LAB = LabSpec(
    name="compile",
    order=4,
    title=N_(
        "torch.compile on the MiniGPT: Dynamo -> AOTAutograd -> Inductor, graph breaks, a generated kernel explained"
    ),
    entry="workshop.labs.compile.lab:run",
    # check compile kernel|answers: graded against the learner's latest run's files, without compiling
    regrade="workshop.labs.compile.run_grading:regrade",
)
