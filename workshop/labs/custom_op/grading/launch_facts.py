"""Facts of this run that the handout's checked questions ask about: the truths the learner's ANSWERS are graded
against (engine.grade_answers; the questions are declared in exercises.py).

Each fact is measured: the launch parameters come from the launch record of the lab's forward + backward step,
the extern calls from the code Inductor generated in this run. The instructor's ANSWERS are what the launch plan
gives on this kind of device (the interpreter packs more rows into a program than a GPU).
"""

from workshop.labs.custom_op.eager_cost import STEP
from workshop.ops import softmax_launch


def measure_facts(step_launches: list[dict], extern_calls: int) -> dict:
    """From the step's launch record (forward first) and the opaque op's Inductor census: the truths, by question
    key."""
    forward = step_launches[0]
    constexprs = forward["constexprs"]
    return {
        "fwd_programs": forward["grid"][0],  # programs of the forward kernel in the (64, 600) step
        "rows_per_program": constexprs["ROWS"],  # its constexpr ROWS
        "block_n": constexprs["BLOCK_N"],  # its constexpr BLOCK_N
        "align": constexprs["ALIGN"],  # its constexpr ALIGN
        "extern_calls": extern_calls,  # calls of the opaque op (forward and backward) in inductor_custom_op.txt
    }


def _plan_answers() -> dict:
    """What the launch plan gives for the step's forward: the reference of the checked questions (exercises.py)."""
    n_rows, n_cols = STEP
    align = softmax_launch.alignment(n_cols)
    grid, constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, 4)  # float32
    return measure_facts([{"grid": grid, "constexprs": constexprs}], 2)


ANSWERS = _plan_answers()
