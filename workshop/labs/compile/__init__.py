from workshop.i18n import N_
from workshop.lab_api import LabSpec

LAB = LabSpec(
    name="compile",
    order=4,
    title=N_(
        "torch.compile on the MiniGPT: Dynamo -> AOTAutograd -> Inductor, graph breaks, a generated kernel explained"
    ),
    entry="workshop.labs.compile.lab:run",
    # the learner's loop timed: the whole lab once, then each exercise re-graded
    bench="workshop.labs.compile.bench.loop:main",
    # check compile kernel|answers: graded against the learner's latest run's files, without compiling
    regrade="workshop.labs.compile.grading.run_grading:regrade",
    # g++'s products (kernel .so files, ISA probes, the precompiled header) kept between runs: the training
    # step compiles in 36 s instead of 94 s here; the lab turns the FX-graph and AOT caches off, so the code
    # it explains is generated fresh each run
    build_cache=True,
)
