"""The op the lab's checks run on: in a graded run the learner's own, made of their pieces (their kernels, fake,
autograd functions); in a plain run the shipped pieces, torch.ops.workshop.softmax's. Its probes (probes.py) run the
pieces and return plain values; every verdict is the lab's, from those values and PyTorch's own results.

An op whose pieces are not all there (a stub, a missing function: the learner edition's references are stubs too)
cannot be built: its checks wait on those exercises, which the lab says in one line instead of running them.
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass, field

from workshop import labs
from workshop.grading import workspace
from workshop.lab import LabContext
from workshop.labs.custom_op.grading import probes
from workshop.labs.custom_op.grading.learner_op import is_stub


@dataclass
class OwnOp:
    pieces: dict = field(default_factory=dict)  # exercise name -> the piece
    kernel_names: dict = field(
        default_factory=dict
    )  # "forward_kernel", "backward_kernel" -> its name
    waiting: list[str] = field(default_factory=list)  # the exercises whose piece is not there yet
    graded: bool = False  # the learner's pieces (else the shipped ones)

    def probe(self, name: str, *args):
        """probes.<name>(pieces, *args): where the learner's code may run."""
        return getattr(probes, name)(self.pieces, *args)


def own_op(ctx: LabContext) -> OwnOp:
    """The pieces of the op this run checks, or the exercises it waits on."""
    own = OwnOp(graded=ctx.graded)
    for name in needed(ctx.device):
        ex = ctx.exercise(name)
        try:
            piece = ctx.solution(ex)
        except (NotImplementedError, workspace.LearnerError):
            own.waiting.append(name)
            continue
        if is_stub(piece):
            own.waiting.append(name)
            continue
        own.pieces[name] = piece
        if name.endswith("_kernel"):
            own.kernel_names[name] = ex.attribute if ctx.graded else ex.reference.partition(":")[2]
    return own


def needed(device: str) -> tuple[str, ...]:
    """The exercises whose parts make the op: the pieces and the registrations the lab compiles (on a GPU the
    custom_op for the comparison and the triton_op; under the interpreter the custom_op)."""
    kinds = ("custom_op", "triton_op") if device == "cuda" else ("custom_op",)
    return (*probes.PIECES, *(probes.REGISTRATIONS[kind] for kind in kinds))


def shipped_pieces() -> dict:
    """torch.ops.workshop.softmax's own pieces, by exercise (the references: stubs in the learner edition)."""
    return {
        ex.name: pkgutil.resolve_name(ex.reference)
        for ex in labs.exercises("custom_op")
        if ex.name in probes.EXERCISES
    }


def shipped_ready() -> bool:
    """Whether the shipped pieces are all there: in the instructor edition; in the learner edition they are stubs,
    and the appendix's eager cost, which measures the shipped op, says it waits."""
    return not any(is_stub(piece) for piece in shipped_pieces().values())
