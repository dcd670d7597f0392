"""Probes of the dispatcher lab: trusted code that runs in the worker beside the learner's functions of the two code
exercises (the worker protocol; workshop/learner/worker.py). Their arguments (TableEntry records, a slot-lookup
function) cannot cross the wire, so each probe builds them in the worker, from the same torch as the lab's, calls
the learner's function on every decision at once, and returns wire values: what the function returned, one per
decision, and what the probe saw besides (nothing: the engine's call protocol, engine.py)."""

from __future__ import annotations

from workshop.labs.dispatcher import keys
from workshop.labs.dispatcher.keys import TableEntry


def table_entries(function, slots: list[list[str]]) -> tuple[list, None]:
    """function(registrations, fallbacks, key), the kernel in a slot, for each [op, key]: [source, tag,
    fallthrough], None, or the returned value's type name."""
    fallbacks = keys.backend_fallbacks()
    found = [
        entry_value(function(dict(keys.registrations(op)), dict(fallbacks), key))
        for op, key in slots
    ]
    return found, None


def entry_value(entry):
    """A slot's entry as it crosses the wire (the lab sends the real table's the same way)."""
    if isinstance(entry, TableEntry):
        return [str(entry.source), str(entry.tag), bool(entry.fallthrough)]
    return None if entry is None else type(entry).__name__


def walks(function, calls: list[list]) -> tuple[list, None]:
    """function(the op's real slot lookup, tensor keys, include, exclude), the chain one call walks, for each
    [op, tensor keys, include, exclude]: the chain as a list of key names (its type name where it returned no
    list of names)."""
    found = []
    for op, tensor_keys, include, exclude in calls:
        chain = function(keys.computed_table(op).get, set(tensor_keys), set(include), set(exclude))
        chain = list(chain) if isinstance(chain, list | tuple) else chain
        ok = isinstance(chain, list) and all(isinstance(k, str) for k in chain)
        found.append(chain if ok else type(chain).__name__)
    return found, None
