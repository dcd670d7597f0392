"""The instructor's solutions of compile's two exercises: what the lab itself reads from a run's files. They
cannot be constants: kernel names and counts differ by device and torch version. A run without a workspace grades
them as its learner would be graded, through the same worker requests: so they take the run folder's path (a
wire value), not its parsed kernels.
"""

from __future__ import annotations

from pathlib import Path

from workshop.labs.compile.grading import run_grading
from workshop.labs.compile.grading.exercises import ANSWER_QUESTIONS
from workshop.labs.compile.kernel_explanation import pick_kernel


def kernel_explained(run_dir: str) -> dict:
    """KERNEL_EXPLAINED for the attention softmax kernel of the run's training forward."""
    run = run_grading.read_run(Path(run_dir))
    return run_grading.fields_of(pick_kernel(run.graph(run_grading.GRAPH)))


def answers(run_dir: str) -> dict:
    """ANSWERS: the run's own counts, those its questions ask for (they differ by device: 2 optimizer kernels on
    the CPU with torch 2.13, 5 on an H200 with torch 2.11)."""
    facts = run_grading.read_run(Path(run_dir)).facts
    return {q.key: facts[q.key] for q in ANSWER_QUESTIONS}
