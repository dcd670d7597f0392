"""The run's dispatch decisions, and the grading of a table_entry and a walk (the learner's or reimpl's) on them.

Two kinds of decision, both answered by the real dispatcher:
- slots: (op, key) -> the kernel in that slot of the op's computed table. Every slot a recorded call walked
  through, and every slot at GRADED_KEYS of every op the run recorded (the keys where the precedence rules
  differ: a backend with its own kernel, autograd keys wrapping a nested-tensor kernel, ...).
- walks: (op, tensor keys, TLS include, TLS exclude) -> the whole chain of keys the real dispatcher walked.
The wrong answers come back with a diagnosis computed from the learner's output: the first disagreement, and
the rule it breaks.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass

from workshop.i18n import _, ngettext
from workshop.lab_api import LabContext
from workshop.labs.dispatcher import keys
from workshop.labs.dispatcher.crosscheck import flat
from workshop.labs.dispatcher.grading import probes
from workshop.labs.dispatcher.keys import TableEntry
from workshop.labs.dispatcher.reimpl import functionality, rank
from workshop.labs.dispatcher.tracing import ScenarioResult

# Every op of the run is also graded at these keys (where this torch has them), whether or not a call walked
# there: the dense backends, the autograd and nested-tensor keys of CPU and CUDA, and the single keys above
# them that the lab's calls carry or that hold fallbacks.
GRADED_KEYS = (
    "CPU",
    "CUDA",
    "Meta",
    "NestedTensorCPU",
    "NestedTensorCUDA",
    "AutogradCPU",
    "AutogradCUDA",
    "AutogradMeta",
    "AutogradNestedTensor",
    "ADInplaceOrView",
    "AutocastCPU",
    "AutocastCUDA",
    "BackendSelect",
    "Python",
    "PythonTLSSnapshot",
    "PythonDispatcher",
    "PreDispatch",
    "Functionalize",
    "Conjugate",
    "Negative",
    "ZeroTensor",
)


@dataclass(frozen=True)
class Slot:
    op: str  # the qualified name its table goes by: "aten::transpose.int"
    key: str
    real: TableEntry | None  # the dispatcher's computed table (None: the slot is empty)
    recorded: bool  # a call of the run walked through this slot


@dataclass(frozen=True)
class Walk:
    scenario: str
    op: str
    tensor_keys: tuple[str, ...]
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    real: tuple[str, ...]  # the keys the real dispatcher walked, to the kernel that did the work


def slots(results: list[ScenarioResult]) -> list[Slot]:
    """Recorded slots first, then the other GRADED_KEYS slots of the same ops; each (op, key) once."""
    nodes = [n for r in results for n in flat(r.tree)]
    recorded = {(n.qualified, k): None for n in nodes for k in n.real_keys}
    known = set(keys.runtime_key_names())
    swept = {(n.qualified, k): None for n in nodes for k in GRADED_KEYS if k in known}
    pairs = list(recorded) + [p for p in swept if p not in recorded]
    return [Slot(op, k, keys.computed_table(op).get(k), (op, k) in recorded) for op, k in pairs]


def walks(results: list[ScenarioResult]) -> list[Walk]:
    return [
        Walk(
            r.name,
            n.qualified,
            tuple(n.tensor_keys),
            tuple(n.tls_include),
            tuple(n.tls_exclude),
            tuple(n.real_keys),
        )
        for r in results
        for n in flat(r.tree)
    ]


def _same(mine, real: TableEntry | None) -> bool:
    if not isinstance(mine, TableEntry) or real is None:
        return mine is real
    return (mine.source, mine.tag, bool(mine.fallthrough)) == astuple(real)


def _show(entry) -> str:
    if entry is None:
        return _("an empty slot")
    if isinstance(entry, str):  # not a TableEntry: its type's name, as the worker sent it back
        return entry
    fall = _(", fallthrough") if entry.fallthrough else ""
    return f"{entry.tag} ({entry.source}{fall})"


def _rule_for(real_tag: str | None) -> str:
    """The precedence rule that put the dispatcher's kernel (tagged real_tag) in the slot."""
    rules = {
        "kernel": _("A kernel registered for exactly this key comes first, before any alias key."),
        "default backend kernel": _(
            "A dense backend key (CPU, CUDA, Meta) without a kernel of its own takes the "
            "CompositeExplicitAutograd kernel (the NonFunctional one first), before any decomposition."
        ),
        "autograd kernel": _(
            "At an autograd key the decomposition (CompositeImplicitAutograd) is used only when the backend "
            "it wraps has no kernel of its own (nor a CompositeExplicitAutograd one); otherwise autograd wraps "
            "that kernel with the op's Autograd[alias] kernel."
        ),
        "math kernel": _(
            "The CompositeImplicitAutograd decomposition fills dense, nested-tensor and autograd slots the op "
            "has no kernel for, before the key's backend fallback."
        ),
        "backend fallback": _(
            "A slot the op registered nothing for takes the key's backend fallback (the fallbacks argument)."
        ),
        None: _("This slot is empty in the real table: no rule puts a kernel there."),
    }
    return rules.get(real_tag, _("Compare with the precedence in the handout, step by step."))


def precedence_rule(key: str, mine, real: TableEntry | None) -> str:
    """The rule a wrong slot breaks, from what the learner put there and what the dispatcher has."""
    my_tag, real_tag = getattr(mine, "tag", None), (real.tag if real else None)
    if isinstance(mine, TableEntry) and real is not None and my_tag == real_tag:
        if bool(mine.fallthrough) != real.fallthrough:
            return _(
                "Return the fallthrough flag with the kernel: the walk skips fallthrough slots."
            )
        return _("Right kind of kernel, wrong file: return the registration (or fallback) itself.")
    if my_tag == "default backend kernel" and functionality(key) != "Dense":
        return _("CompositeExplicitAutograd fills dense backend keys (CPU, CUDA, Meta) only.")
    if my_tag == "backend fallback":
        return _(
            "A backend fallback is the last resort: every kernel the op registered comes first."
        )
    return _rule_for(real_tag)


def grade_table_entry(ctx: LabContext, impl, decisions: list[Slot]) -> None:
    """The learner's table_entry on every slot, called in the worker (probes.table_entries); judged here."""
    returned = impl.probe(probes.table_entries, [[d.op, d.key] for d in decisions])
    wrong = {True: [], False: []}  # recorded -> [(slot, yours)]
    for d, value in zip(decisions, returned, strict=True):
        mine = TableEntry(*value) if isinstance(value, list) else value
        if not _same(mine, d.real):
            wrong[d.recorded].append((d, mine))
    recorded = _("table_entry: recorded decisions whose kernel differs from the dispatcher's table")
    ctx.check_max(recorded, len(wrong[True]), 0, message=_slot_message(wrong[True]))
    swept = _("table_entry: other graded slots of the run's ops that differ")
    ctx.check_max(swept, len(wrong[False]), 0, message=_slot_message(wrong[False]))


def _slot_message(wrong: list[tuple[Slot, object]]) -> str | None:
    if not wrong:
        return None
    d, mine = wrong[0]
    return ngettext(
        "{n} slot differs: {op} at {key}: yours is {mine}, the dispatcher's is {real}. {rule}",
        "{n} slots differ. First: {op} at {key}: yours is {mine}, the dispatcher's is {real}. {rule}",
        len(wrong),
    ).format(
        n=len(wrong),
        op=d.op,
        key=d.key,
        mine=_show(mine),
        real=_show(d.real),
        rule=precedence_rule(d.key, mine, d.real),
    )


def grade_walk(ctx: LabContext, impl, decisions: list[Walk]) -> None:
    """The learner's walk on every call, in the worker (probes.walks), given each op's real table; judged here."""
    calls = [[d.op, list(d.tensor_keys), list(d.include), list(d.exclude)] for d in decisions]
    wrong = []
    for d, mine in zip(decisions, impl.probe(probes.walks, calls), strict=True):
        if mine != list(d.real):
            wrong.append((d, mine if isinstance(mine, list) else [str(mine)]))
    ctx.check_max(
        _("walk: recorded calls whose chain differs from the real dispatcher's (whole chains)"),
        len(wrong),
        0,
        message=_walk_message(wrong),
    )


def walk_rule(d: Walk, mine: list[str]) -> str:
    """What a wrong chain says about the walk that made it."""
    real, table = list(d.real), keys.computed_table(d.op)
    gone = {functionality(k) for k in d.exclude}
    fallthrough = [k for k in mine if k in table and table[k].fallthrough]
    excluded = [k for k in mine if functionality(k) in gone]
    if excluded:
        return _(
            "{key} is in your chain, but the TLS exclude set holds {excluded}: remove excluded keys first, "
            "and compare functionalities (excluding AutogradFunctionality removes AutogradCPU, AutogradCUDA, ...)."
        ).format(key=excluded[0], excluded=", ".join(sorted(d.exclude)))
    if fallthrough:
        return _(
            "Your chain visits {key}, whose slot for {op} is a fallthrough: the dispatcher drops fallthrough "
            "keys from the set before it picks."
        ).format(key=fallthrough[0], op=d.op)
    if mine and mine == real[: len(mine)]:
        return _(
            "Your chain stops at {key}, but that kernel passes the call on (passes_on): continue with the "
            "keys below it."
        ).format(key=mine[-1])
    if real and real == mine[: len(real)]:
        return _("Your chain goes on after {key}, whose kernel does the work: stop there.").format(
            key=real[-1]
        )
    if mine and real and rank(mine[0]) < rank(real[0]):
        return _(
            "You started at {mine}, the dispatcher at {real}: the key of highest priority (rank) wins."
        ).format(mine=mine[0], real=real[0])
    return _(
        "Follow the three steps of the handout: keys in play, highest priority, pass on or stop."
    )


def _walk_message(wrong: list[tuple[Walk, list[str]]]) -> str | None:
    if not wrong:
        return None
    d, mine = wrong[0]
    return ngettext(
        "{n} call differs: {op} in {scenario}: yours walks {mine}, the dispatcher walked {real}. {rule}",
        "{n} calls differ. First: {op} in {scenario}: yours walks {mine}, the dispatcher walked {real}. "
        "{rule}",
        len(wrong),
    ).format(
        n=len(wrong),
        op=d.op,
        scenario=d.scenario,
        mine=" → ".join(mine) or "-",
        real=" → ".join(d.real),
        rule=walk_rule(d, mine),
    )
