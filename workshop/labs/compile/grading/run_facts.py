"""Exercise compile.answers: the handout's questions whose answer is a fact of the run (a count of kernels, of
calls, of compiles, of graph breaks), answered in a dict ANSWERS and graded by the one grader
(declarations.questions.grade_answers; the questions are declared in exercises.py) against this run's figures.

A wrong answer gets a message computed from it where it shows the mistake (the number of another experiment, a
count that leaves out half of what it counts: `explain`), never the figure itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from workshop.declarations.questions import Question
from workshop.i18n import _
from workshop.labs.compile.grading.exercises import ANSWER_QUESTIONS


@dataclass(frozen=True)
class RunFacts:
    softmax_calls: (
        int  # calls of the attention softmax kernel in one training forward (code/train_forward.py)
    )
    extern_matmuls: int  # extern_kernels matmul calls (mm, addmm, bmm) in that forward's call()
    addmm_calls: int  # of which addmm (the nn.Linear layers, bias fused): for the diagnosis only
    optimizer_kernels: (
        int  # kernels Inductor generated for the AdamW step (code/optimizer_inference.py)
    )
    parameter_tensors: int  # the tensors that step updates: for the diagnosis only
    default_compiles: int  # Dynamo compiles over the sequence lengths with the default settings
    static_compiles: int  # the same with dynamic=False: for the diagnosis only
    item_graph_breaks: int  # graph breaks of the MiniGPT with .item() in its forward


def asked(facts: RunFacts) -> dict:
    """The run's facts that ANSWERS asks for, by question (they differ by device: 2 optimizer kernels on the
    CPU with torch 2.13, 5 on an H200 with torch 2.11)."""
    asked = {q.key for q in ANSWER_QUESTIONS}
    return {key: value for key, value in asdict(facts).items() if key in asked}


def explain(question: Question, given: int, _truth: int, facts: dict) -> str | None:
    """grade_answers' explain: what a wrong count says about the mistake, or None (then: where to look)."""
    return DIAGNOSES[question.key](given, RunFacts(**facts))


def softmax_calls(given: int, f: RunFacts) -> str | None:
    if given == 1:
        return _(
            "the kernel is defined once but called once per transformer block: count its calls in call()"
        )
    return None


def extern_matmuls(given: int, f: RunFacts) -> str | None:
    if given == f.addmm_calls:
        return _(
            "you counted addmm (the Linear layers) only: the attention's two bmm per block are matmuls too"
        )
    if given == f.extern_matmuls - f.addmm_calls:
        return _("you counted bmm only: every nn.Linear is an extern addmm (or mm) call too")
    return None


def optimizer_kernels(given: int, f: RunFacts) -> str | None:
    if given == f.parameter_tensors:
        return _(
            "one kernel per parameter is what an unfused loop would launch; Inductor fuses the updates: "
            "count the kernel definitions in code/optimizer_inference.py"
        )
    return None


def default_compiles(given: int, f: RunFacts) -> str | None:
    # Each message names the mistake and where to look; none says how often the default compiles.
    if given == f.static_compiles:
        return _(
            "that is what dynamic=False does (a compile per length); the default does not stay static when "
            "the length changes: read its row in breaks.json"
        )
    if given == 1:
        return _(
            "the default does not start dynamic: its first compile is for the first length's static shapes; "
            "read what the next lengths did in its row of breaks.json"
        )
    return None


def item_graph_breaks(given: int, f: RunFacts) -> str | None:
    if given == f.item_graph_breaks + 1:
        return _(
            "that counts graphs, not breaks: a break is where a graph ends and the next begins"
        )
    if given == 0:
        return _(
            "`.item()` needs a tensor's value while tracing: Dynamo ends the graph there; see breaks.json"
        )
    return None


DIAGNOSES = {
    "softmax_calls": softmax_calls,
    "extern_matmuls": extern_matmuls,
    "optimizer_kernels": optimizer_kernels,
    "default_compiles": default_compiles,
    "item_graph_breaks": item_graph_breaks,
}
