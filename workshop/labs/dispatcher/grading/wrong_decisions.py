"""The mistakes a wrong decision of the dispatcher lab's code exercises shows, as data (Diagnosis entries, in the
order they are read: grading/exercises.py declares each exercise with its own), and what they read: the first
decision of a case that the learner's function got wrong, a slot of an op's table or the chain of one call, next
to the real dispatcher's, with the sentence that opens every message about it ({first}).

A case's output is one decision per item, as the probes send them back (grading/probes.py), compared whole
(`differing`); its facts name the items: "slots" ([op, key] each), or "calls" ([op, tensor keys, include,
exclude] each) and their "scenarios". No torch at import: the exercises' declarations import this module;
reading a decision needs the dispatcher's tables, imported in the lab's process when a diagnosis runs.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from workshop.declarations.diagnosis import Diagnosis, Evidence
from workshop.i18n import N_, _, ngettext


def at_first(read: Callable[[Evidence], dict], values: Callable[[dict], object]):
    """A diagnosis's `shows` over the first wrong decision of a case: read(evidence) says what that decision is,
    values(what read says) whether it shows the mistake: a dict (the message's values), True (none needed), or
    a false value (it does not). Its message opens with the decision's sentence, {first}."""

    def shows(evidence: Evidence) -> dict | None:
        first = read(evidence)
        found = values(first)
        if not found:
            return None
        return {"first": first["first"], **(found if isinstance(found, dict) else {})}

    return shows


def entry_shown(entry) -> str:
    """A slot as the probe sends it back: [source, tag, fallthrough], None (empty), or a type's name."""
    if entry is None:
        return _("an empty slot")
    if isinstance(entry, str):  # not a TableEntry: its type's name, as the worker sent it back
        return entry
    fall = _(", fallthrough") if entry[2] else ""
    return f"{entry[1]} ({entry[0]}{fall})"


def first_wrong_slot(evidence: Evidence) -> dict:
    """The first slot whose entry differs from the dispatcher's computed table: both entries' tags (None for
    what is no entry), whether the two agree on the tag and on the fallthrough flag, whether the key is a dense
    backend's."""
    from workshop.labs.dispatcher.reimpl import functionality  # torch: in the lab's process only

    slots, got, want = evidence.facts["slots"], evidence.got, evidence.want
    wrong = [(slot, m, r) for slot, m, r in zip(slots, got, want, strict=True) if m != r]
    (op, key), mine, real = wrong[0]
    mine_tag = mine[1] if isinstance(mine, list) else None
    real_tag = real[1] if real else None
    same_tag = isinstance(mine, list) and real is not None and mine_tag == real_tag
    first = ngettext(
        "{n} slot differs: {op} at {key}: yours is {mine}, the dispatcher's is {real}.",
        "{n} slots differ. First: {op} at {key}: yours is {mine}, the dispatcher's is {real}.",
        len(wrong),
    )
    return {
        "first": first.format(
            n=len(wrong), op=op, key=key, mine=entry_shown(mine), real=entry_shown(real)
        ),
        "mine_tag": mine_tag,
        "real_tag": real_tag,
        "same_tag": same_tag,
        "same_fallthrough": same_tag and bool(mine[2]) == real[2],
        "dense": functionality(key) == "Dense",
    }


def first_wrong_chain(evidence: Evidence) -> dict:
    """The first call whose chain differs from the real dispatcher's: both chains (yours: a returned value that
    is no list of names, as its type's name), the keys of yours that the call's TLS exclude set or a fallthrough
    slot of its op removes, whether yours is the real one cut short or gone on past its end, and (asked only
    when the keys are known ones: rank knows no other) whether yours starts at a key of lower priority."""
    from workshop.labs.dispatcher import keys, reimpl  # torch: in the lab's process only

    calls, scenarios = evidence.facts["calls"], evidence.facts["scenarios"]
    chains = zip(calls, scenarios, evidence.got, evidence.want, strict=True)
    wrong = [(call, scenario, m, r) for call, scenario, m, r in chains if m != r]
    (op, _tensor_keys, _include, exclude), scenario, mine, real = wrong[0]
    mine = mine if isinstance(mine, list) else [str(mine)]
    gone = {reimpl.functionality(k) for k in exclude}
    table = keys.computed_table(op)
    first = ngettext(
        "{n} call differs: {op} in {scenario}: yours walks {mine}, the dispatcher walked {real}.",
        "{n} calls differ. First: {op} in {scenario}: yours walks {mine}, the dispatcher walked {real}.",
        len(wrong),
    )
    return {
        "first": first.format(
            n=len(wrong),
            op=op,
            scenario=scenario,
            mine=" → ".join(mine) or "-",
            real=" → ".join(real),
        ),
        "op": op,
        "mine": mine,
        "real": real,
        "exclude": ", ".join(sorted(exclude)),
        "excluded": [k for k in mine if reimpl.functionality(k) in gone],
        "fallthrough": [k for k in mine if k in table and table[k].fallthrough],
        "stops_early": bool(mine) and mine == real[: len(mine)],
        "goes_on": bool(real) and real == mine[: len(real)],
        "starts_lower": lambda: bool(mine and real) and reimpl.rank(mine[0]) < reimpl.rank(real[0]),
    }


at_first_slot = functools.partial(at_first, first_wrong_slot)
at_first_chain = functools.partial(at_first, first_wrong_chain)


# The precedence rule that put the dispatcher's kernel in a slot, by its tag (None: an empty slot): what a wrong
# slot is told when it shows none of the named mistakes (SLOT_DIAGNOSES, below).
PRECEDENCE = {
    "kernel": N_(
        "{first} A kernel registered for exactly this key comes first, before any alias key."
    ),
    "default backend kernel": N_(
        "{first} A dense backend key (CPU, CUDA, Meta) without a kernel of its own takes the "
        "CompositeExplicitAutograd kernel (the NonFunctional one first), before any decomposition."
    ),
    "autograd kernel": N_(
        "{first} At an autograd key the decomposition (CompositeImplicitAutograd) is used only when the "
        "backend it wraps has no kernel of its own (nor a CompositeExplicitAutograd one); otherwise autograd "
        "wraps that kernel with the op's Autograd[alias] kernel."
    ),
    "math kernel": N_(
        "{first} The CompositeImplicitAutograd decomposition fills dense, nested-tensor and autograd slots the "
        "op has no kernel for, before the key's backend fallback."
    ),
    "backend fallback": N_(
        "{first} A slot the op registered nothing for takes the key's backend fallback (the fallbacks "
        "argument)."
    ),
    None: N_("{first} This slot is empty in the real table: no rule puts a kernel there."),
}


def differing(evidence: Evidence) -> tuple[int, int]:
    """A case's comparison: how many of its decisions differ from the real dispatcher's; none may."""
    return sum(m != r for m, r in zip(evidence.got, evidence.want, strict=True)), 0


# A wrong slot: the mistakes it shows, in order, else the precedence rule that decides it.
SLOT_DIAGNOSES = (
    Diagnosis(
        N_("a wrong fallthrough flag"),
        at_first_slot(lambda s: s["same_tag"] and not s["same_fallthrough"]),
        N_(
            "{first} Return the fallthrough flag with the kernel: the walk skips fallthrough slots."
        ),
    ),
    Diagnosis(
        N_("another registration of the right kind"),
        at_first_slot(lambda s: s["same_tag"]),
        N_(
            "{first} Right kind of kernel, wrong file: return the registration (or fallback) itself."
        ),
    ),
    Diagnosis(
        N_("CompositeExplicitAutograd beyond the dense keys"),
        at_first_slot(lambda s: s["mine_tag"] == "default backend kernel" and not s["dense"]),
        N_("{first} CompositeExplicitAutograd fills dense backend keys (CPU, CUDA, Meta) only."),
    ),
    Diagnosis(
        N_("the backend fallback before the op's own kernels"),
        at_first_slot(lambda s: s["mine_tag"] == "backend fallback"),
        N_(
            "{first} A backend fallback is the last resort: every kernel the op registered comes "
            "first."
        ),
    ),
    *(
        Diagnosis(None, at_first_slot(lambda s, tag=tag: s["real_tag"] == tag), rule)
        for tag, rule in PRECEDENCE.items()
    ),
    Diagnosis(
        None,
        at_first_slot(lambda s: True),
        N_("{first} Compare with the precedence in the handout, step by step."),
    ),
)

# A wrong chain: the mistakes it shows, in order, else the three steps.
CHAIN_DIAGNOSES = (
    Diagnosis(
        N_("an excluded key walked"),
        at_first_chain(
            lambda c: c["excluded"] and {"key": c["excluded"][0], "excluded": c["exclude"]}
        ),
        N_(
            "{first} {key} is in your chain, but the TLS exclude set holds {excluded}: remove excluded "
            "keys first, and compare functionalities (excluding AutogradFunctionality removes "
            "AutogradCPU, AutogradCUDA, ...)."
        ),
    ),
    Diagnosis(
        N_("a fallthrough slot walked"),
        at_first_chain(lambda c: c["fallthrough"] and {"key": c["fallthrough"][0], "op": c["op"]}),
        N_(
            "{first} Your chain visits {key}, whose slot for {op} is a fallthrough: the dispatcher "
            "drops fallthrough keys from the set before it picks."
        ),
    ),
    Diagnosis(
        N_("a chain that stops where the kernel passes the call on"),
        at_first_chain(lambda c: c["stops_early"] and {"key": c["mine"][-1]}),
        N_(
            "{first} Your chain stops at {key}, but that kernel passes the call on (passes_on): "
            "continue with the keys below it."
        ),
    ),
    Diagnosis(
        N_("a chain that goes on past the kernel that does the work"),
        at_first_chain(lambda c: c["goes_on"] and {"key": c["real"][-1]}),
        N_("{first} Your chain goes on after {key}, whose kernel does the work: stop there."),
    ),
    Diagnosis(
        N_("a key of lower priority first"),
        at_first_chain(
            lambda c: c["starts_lower"]() and {"mine": c["mine"][0], "real": c["real"][0]}
        ),
        N_(
            "{first} You started at {mine}, the dispatcher at {real}: the key of highest priority "
            "(rank) wins."
        ),
    ),
    Diagnosis(
        None,
        at_first_chain(lambda c: True),
        N_(
            "{first} Follow the three steps of the handout: keys in play, highest priority, pass on "
            "or stop."
        ),
    ),
)
