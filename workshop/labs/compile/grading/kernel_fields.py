"""How compile.kernel's KERNEL_EXPLAINED fields that are no plain equality are read: the ops a kernel fuses (as
names compare, which may leave shape-only ops out) and its grid (an int alone is a grid of one extent). The
question's `matches` and the diagnoses (explanation_mistakes.py) read them. No torch import: exercises.py imports it.
"""

from workshop.declarations.diagnosis import Evidence
from workshop.i18n import _


def op_key(op: str) -> str:
    """'aten._softmax.default', 'prims.prepare_softmax_online', '_softmax' -> 'softmax', ...: how ops compare."""
    op = op.strip().removeprefix("torch.ops.").removesuffix(".default")
    return op.split(".")[-1].lstrip("_") if "." in op else op.lstrip("_")


def names(value) -> bool:
    """Whether a fused_ops answer is a list of op names, as the handout asks."""
    return isinstance(value, list | tuple) and all(isinstance(op, str) for op in value)


def missing_ops(e: Evidence) -> list[str]:
    """The kernel's ops (as its code names them) that the answer leaves out; shape-only ops may be left out."""
    given = {op_key(op) for op in e.got}
    return [e.facts["ops"][key] for key in sorted(e.facts["required"] - given)]


def not_fused(e: Evidence) -> dict | None:
    """The first op the answer names that the kernel does not fuse, and the kernel that does, if one does."""
    extra = sorted({op_key(op) for op in e.got} - set(e.facts["ops"]))
    if not extra:
        return None
    owner = next((k.name for k in e.facts["others"] if extra[0] in map(op_key, k.fused_ops)), None)
    return {
        "op": extra[0],
        "where": _(" (it is fused in `{owner}`)").format(owner=owner) if owner else "",
    }


def as_grid(value) -> list | None:
    """A grid answer as a list of ints (an int alone: a grid of one extent); None when it is none."""
    value = [value] if isinstance(value, int) else value
    return (
        list(value)
        if isinstance(value, list | tuple) and all(isinstance(g, int) for g in value)
        else None
    )


def extents_only(e: Evidence) -> bool:
    """The grid's extents, right, in another order (a grid of more than one)."""
    given = as_grid(e.got)
    return len(given) > 1 and sorted(given) == sorted(
        g for g in e.facts["structure"]["grid"] if g is not None
    )
