"""The op the lab's checks run on: in a graded run the learner's own, made of their pieces (their kernels, fake,
autograd functions) inside the worker (the worker protocol: the learner's code never runs in the lab's
process); in a plain run the shipped pieces, torch.ops.workshop.softmax's, here. Its probes (op_probes.py) run the
pieces and return plain values; every verdict is the lab's, from those values and PyTorch's own results.

An op whose pieces are not all there (a stub, a missing function: the learner edition's references are stubs too)
cannot be built: its checks wait on those exercises, which the lab says in one line instead of running them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from workshop import labs
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import learner_op, op_probes
from workshop.learner.learner_code import LearnerCodeFailed


@dataclass
class OwnOp:
    ctx: LabContext  # whose worker runs the pieces: the learner's, or in a plain run the references, in the lab
    graded: bool  # the learner's pieces (ctx.graded), or the references
    kernel_names: dict  # "forward_kernel", "backward_kernel" -> its name (the launch record's)
    exercise_of: dict  # a piece's attribute -> its exercise
    waiting: list[str] = field(default_factory=list)  # the exercises whose piece is not there yet

    def probe(self, function: Callable, *args):
        """function(the op made of the pieces, or the pieces, *args), one of op_probes.ON_OP or ON_PIECES, in the
        ctx's worker (op_probes.in_worker finds it there by its name, and builds the op): in a graded run the
        learner's pieces in the worker process, where an error of theirs raises LearnerCodeFailed; in a plain run
        the shipped pieces, in the lab's own process."""
        return self.ctx.probe(
            op_probes.in_worker,
            self.exercise_of,
            self.ctx.options.lang,
            function.__name__,
            *args,
            attributes=tuple(self.exercise_of),
        )


def own_op(ctx: LabContext) -> OwnOp:
    """The pieces of the op this run checks, or the exercises it waits on."""
    exercises = {name: ctx.exercise(name) for name in needed(ctx.options.device)}
    # the launch record names a kernel by its function's name: the learner's attribute, or the reference's
    kernels = {
        name: ex.attribute if ctx.graded else ex.reference.partition(":")[2]
        for name, ex in exercises.items()
        if name.endswith("_kernel")
    }
    own = OwnOp(ctx, ctx.graded, kernels, {ex.attribute: name for name, ex in exercises.items()})
    own.waiting = waiting_on(own)
    return own


def waiting_on(own: OwnOp) -> list[str]:
    """The exercises whose piece the learner's file lacks or leaves a stub: asked of the worker, which only reads
    the pieces' source (a learner who lies here gets the op's checks run, and failed, on what is there)."""
    try:
        stubs = own.probe(op_probes.stubs)
    except LearnerCodeFailed as e:
        if e.kind != "missing":
            # a file that does not load, or is refused: each exercise fails with it too
            print(e, flush=True)
            return list(own.exercise_of.values())
        missing = e.error.split(", ")
        return [name for attribute, name in own.exercise_of.items() if attribute in missing]
    return [name for name in own.exercise_of.values() if name in stubs]


def needed(device: str) -> tuple[str, ...]:
    """The exercises whose parts make the op: the pieces and the registrations the lab compiles (on a GPU the
    custom_op for the comparison and the triton_op; under the interpreter the custom_op)."""
    kinds = ("custom_op", "triton_op") if device == "cuda" else ("custom_op",)
    return (*op_probes.PIECES, *(learner_op.REGISTRATIONS[kind] for kind in kinds))


def shipped_pieces() -> dict:
    """torch.ops.workshop.softmax's own pieces, by exercise (the references: stubs in the learner edition)."""
    return {
        ex.name: ex.load_reference()
        for ex in labs.exercises("custom_op")
        if ex.name in op_probes.EXERCISES
    }


def shipped_ready() -> bool:
    """Whether the shipped pieces are all there: in the instructor edition; in the learner edition they are stubs,
    and the appendix's eager cost, which measures the shipped op, says it waits."""
    return not any(op_probes.is_stub(piece) for piece in shipped_pieces().values())
