from workshop.i18n import N_
from workshop.lab_api import LabSpec

LAB = LabSpec(
    name="distributed",
    order=5,
    title=N_(
        "DDP, FSDP2, tensor and pipeline parallel under torchrun: each proven equal to one process, and measured"
    ),
    entry="workshop.labs.distributed.lab:run",
    # more ranks than this machine holds is refused before a run starts (one line: the limit and the fix)
    precondition="workshop.labs.distributed.launch:capacity_problem",
    # `check distributed predictions` (answers, survey) after a run grades that run's figures again
    regrade="workshop.labs.distributed.lab:regrade",
    # how long `check distributed` takes (python -m workshop bench distributed)
    bench="workshop.labs.distributed.bench.check_wait:main",
)
