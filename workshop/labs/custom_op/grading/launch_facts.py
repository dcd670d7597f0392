"""Facts of this run that the handout's checked questions ask about: the truths the learner's ANSWERS are graded
against (engine.grade_answers; the questions are declared in exercises.py).

Each fact is measured: the launch parameters come from the launch record of the lab's forward + backward step,
the extern calls from the code Inductor generated in this run. The instructor's ANSWERS are what the launch plan
gives on this kind of device (the interpreter packs more rows into a program than a GPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from workshop.labs.custom_op.eager_cost import STEP
from workshop.ops import softmax_launch


@dataclass(frozen=True)
class LaunchFacts:
    fwd_programs: int  # programs of the forward kernel in the (64, 600) step
    rows_per_program: int  # its constexpr ROWS
    block_n: int  # its constexpr BLOCK_N
    align: int  # its constexpr ALIGN
    extern_calls: int  # calls of the opaque op (forward and backward) in inductor_custom_op.txt


def measure_facts(step_launches: list[dict], extern_calls: int) -> LaunchFacts:
    """From the step's launch record (forward first) and the opaque op's Inductor census."""
    forward = step_launches[0]
    constexprs = forward["constexprs"]
    return LaunchFacts(
        forward["grid"][0],
        constexprs["ROWS"],
        constexprs["BLOCK_N"],
        constexprs["ALIGN"],
        extern_calls,
    )


def _plan_answers() -> dict:
    """What the launch plan gives for the step's forward: the reference of the checked questions (exercises.py)."""
    n_rows, n_cols = STEP
    align = softmax_launch.alignment(n_cols)
    grid, constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, 4)  # float32
    return asdict(measure_facts([{"grid": grid, "constexprs": constexprs}], 2))


ANSWERS = _plan_answers()
