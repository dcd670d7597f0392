"""Facts of this run that the handout's checked questions ask about, and the grading of the learner's ANSWERS.

Each fact is measured: the launch parameters come from the launch record of the lab's forward + backward step,
the extern calls from the code Inductor generated in this run. The instructor's answers are what the launch plan
gives on this kind of device (the interpreter packs more rows into a program than a GPU).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from workshop.grading import answers as answers_exercise
from workshop.i18n import N_
from workshop.lab import LabContext
from workshop.labs.custom_op.eager_cost import STEP
from workshop.ops import softmax_launch


@dataclass(frozen=True)
class LaunchFacts:
    fwd_programs: int  # programs of the forward kernel in the (64, 600) step
    rows_per_program: int  # its constexpr ROWS
    block_n: int  # its constexpr BLOCK_N
    align: int  # its constexpr ALIGN
    extern_calls: int  # calls of the opaque op (forward and backward) in inductor_custom_op.txt


def _plan_answers() -> dict:
    """What the launch plan gives for the step's forward: the reference of the `answers` exercise."""
    n_rows, n_cols = STEP
    align = softmax_launch.alignment(n_cols)
    grid, constexprs = softmax_launch.one_pass_plan(n_rows, n_cols, align, 4)  # float32
    facts = LaunchFacts(grid[0], constexprs["ROWS"], constexprs["BLOCK_N"], constexprs["ALIGN"], 2)
    return asdict(facts)


ANSWERS = _plan_answers()

WHERE = {  # where the learner finds each fact, said when an answer is wrong
    "fwd_programs": N_("summary.md: the kernels the step launched, by the launch record"),
    "rows_per_program": N_("summary.md: ROWS in the forward kernel's launch"),
    "block_n": N_("summary.md: BLOCK_N in the forward kernel's launch"),
    "align": N_("summary.md: ALIGN in the forward kernel's launch"),
    "extern_calls": N_(
        "inductor_custom_op.txt: count the calls of the op's .default( in both call()s"
    ),
}


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


def grade_answers(ctx: LabContext, answers, facts: LaunchFacts, not_started: str) -> None:
    """Every fact of the launch plan is a count: an answer is right when it is that int."""
    answers_exercise.grade(
        ctx,
        answers,
        asdict(facts),
        WHERE,
        not_started,
        lambda given, fact: type(given) is int and given == fact,
    )
