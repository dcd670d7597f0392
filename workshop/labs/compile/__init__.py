from workshop.i18n import N_
from workshop.lab_api import LabSpec


def run(ctx) -> None:
    """The lab's work (LabSpec.entry): its module, and torch, imported in the lab's own process only."""
    from workshop.labs.compile import lab

    lab.run(ctx)


def regrade(ctx, lab_dir) -> None:
    """LabSpec.regrade: the from_run exercises graded against an earlier run's folder."""
    from workshop.labs.compile.grading import run_grading

    run_grading.regrade(ctx, lab_dir)


def benchmark(out):
    """LabSpec.bench: `python -m workshop bench compile`."""
    from workshop.labs.compile.bench import loop

    return loop.main(out)


LAB = LabSpec(
    name="compile",
    order=5,
    title=N_(
        "torch.compile on the MiniGPT: Dynamo -> AOTAutograd -> Inductor, graph breaks, a generated kernel explained"
    ),
    entry=run,
    # the learner's loop timed: the whole lab once, then each exercise re-graded
    bench=benchmark,
    # check compile kernel|answers: graded against the learner's latest run's files, without compiling
    regrade=regrade,
    # g++'s products (kernel .so files, ISA probes, the precompiled header) kept between runs: the training
    # step compiles in 36 s instead of 94 s here; the lab turns the FX-graph and AOT caches off, so the code
    # it explains is generated fresh each run
    build_cache=True,
)
