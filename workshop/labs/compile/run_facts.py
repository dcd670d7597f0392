"""Exercise compile.answers: the handout's questions whose answer is a fact of the run (a count of kernels, of
calls, of compiles, of graph breaks), answered in a dict ANSWERS and checked against this run's figures.

A wrong answer gets a message computed from it (the number of another experiment, a count that leaves out
half of what it counts), never the figure itself.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from workshop.i18n import _
from workshop.lab import LabContext


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


QUESTIONS = (
    "softmax_calls",
    "extern_matmuls",
    "optimizer_kernels",
    "default_compiles",
    "item_graph_breaks",
)


def reference_answers(facts: RunFacts) -> dict:
    """The instructor's solution: the run's own facts (they differ by device: 2 optimizer kernels on the CPU
    with torch 2.13, 5 on an H200 with torch 2.11)."""
    return {key: value for key, value in asdict(facts).items() if key in QUESTIONS}


def grade_answers(ctx: LabContext, answers, facts: RunFacts) -> None:
    """One check per question: the learner's ANSWERS[key] equals this run's fact."""
    if not isinstance(answers, dict):
        raise TypeError(
            _("ANSWERS must be a dict with the keys {keys}, not a {type}").format(
                keys=", ".join(QUESTIONS), type=type(answers).__name__
            )
        )
    if all(answers.get(key, ...) is ... for key in QUESTIONS):
        raise NotImplementedError
    for key in QUESTIONS:
        given = answers.get(key, ...)
        message = answer_message(key, given, facts)
        ctx.check_equal(
            _("ANSWERS[{key!r}] matches this run").format(key=key),
            message == "",
            True,
            message=message or None,
        )


def answer_message(key: str, given, facts: RunFacts) -> str:
    """'' when right; else what the value says about the mistake."""
    if given is ...:
        return _("not filled in: replace the `...`")
    if not isinstance(given, int) or isinstance(given, bool):
        return _("give a whole number (an int), not {value!r}").format(value=given)
    if given == getattr(facts, key):
        return ""
    return DIAGNOSES[key](given, facts)


def softmax_calls(given: int, f: RunFacts) -> str:
    if given == 1:
        return _(
            "the kernel is defined once but called once per transformer block: count its calls in call()"
        )
    return _("count the lines of call() in code/train_forward.py that call the `_softmax` kernel")


def extern_matmuls(given: int, f: RunFacts) -> str:
    if given == f.addmm_calls:
        return _(
            "you counted addmm (the Linear layers) only: the attention's two bmm per block are matmuls too"
        )
    if given == f.extern_matmuls - f.addmm_calls:
        return _("you counted bmm only: every nn.Linear is an extern addmm (or mm) call too")
    return _(
        "count the `extern_kernels.` matmul calls (mm, addmm, bmm) in call() of code/train_forward.py"
    )


def optimizer_kernels(given: int, f: RunFacts) -> str:
    if given == f.parameter_tensors:
        return _(
            "one kernel per parameter is what an unfused loop would launch; Inductor fuses the updates: "
            "count the kernel definitions in code/optimizer_inference.py"
        )
    return _(
        "count the kernel definitions (`<name> = async_compile...`) in code/optimizer_inference.py of "
        "this run: their number depends on the device"
    )


def default_compiles(given: int, f: RunFacts) -> str:
    if given == f.static_compiles:
        return _(
            "that is dynamic=False (a compile per length): the default recompiles once, then the length is symbolic"
        )
    if given == 1:
        return _(
            "the default does not start dynamic: it compiles for the first length, then recompiles once with "
            "the length symbolic (automatic dynamic); see breaks.json"
        )
    return _("read the default row of breaks.json's recompiles")


def item_graph_breaks(given: int, f: RunFacts) -> str:
    if given == f.item_graph_breaks + 1:
        return _("that is the number of graphs: a break splits one graph into two")
    if given == 0:
        return _(
            "`.item()` needs a tensor's value while tracing: Dynamo ends the graph there; see breaks.json"
        )
    return _("read the .item() variant's graph_breaks in breaks.json")


DIAGNOSES = {
    "softmax_calls": softmax_calls,
    "extern_matmuls": extern_matmuls,
    "optimizer_kernels": optimizer_kernels,
    "default_compiles": default_compiles,
    "item_graph_breaks": item_graph_breaks,
}
