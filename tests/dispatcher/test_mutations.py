"""Planted bugs in the dispatcher lab, each applied by monkeypatching and each caught by one of the lab's OWN
checks (not a unit test). The parameter ids read "bug -> check that caught it".

The lab's sections run in-process on the CPU (tracing, the trace's checks, the observers' checks, the exercises
graded with the reference), without writing the outputs.
"""

from __future__ import annotations

import contextlib

import pytest

from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.dispatcher import keys, lab, reimpl, tracing
from workshop.labs.dispatcher.keys import TableEntry

pytestmark = pytest.mark.slow

# The re-implementation (the reference in a plain run) is graded by the exercises' checks.
WHOLE_CHAINS = "walk: recorded calls whose chain differs from the real dispatcher's (whole chains)"
SLOTS = "table_entry: recorded decisions whose kernel differs from the dispatcher's table"
PYTHON_KEY = "calls seen at the Python key where the chain says otherwise (or vice versa)"


def run_sections(tmp_path) -> LabContext:
    ctx = LabContext("dispatcher", tmp_path, RunOptions("cpu", 1, 0))
    results, _ = lab.trace_all(ctx)
    lab.check_trace(ctx, results)
    lab.check_observations(ctx, results)
    lab.grade_exercises(ctx, results)
    return ctx


def fallbacks_first(mp):
    """table_entry consults the backend fallbacks before the op's own registrations. This passed while the
    fallbacks were read from the traced op's own table (112 of 235 decisions compared with
    themselves), since that table never shows a fallback where a kernel was registered."""
    original = reimpl.table_entry
    mp.setattr(reimpl, "table_entry", lambda r, f, k: f.get(k) or original(r, {}, k))


def fallbacks_from_the_ops_table(mp):
    """The backend fallbacks read off aten::linear's computed table (the old keys.backend_fallbacks)."""
    table = keys.computed_table("aten::linear")
    own = {k: v for k, v in table.items() if v.tag == "backend fallback"}
    mp.setattr(keys, "backend_fallbacks", lambda: own)


def walk_stops_at_first_key(mp):
    """No redispatch: a chain of one key. Passed while the real chain was followed only as many steps as
    the re-implementation's."""
    original = reimpl.walk
    mp.setattr(reimpl, "walk", lambda *args: original(*args)[:1])


def walk_goes_on_past_the_working_kernel(mp):
    """One key too many: after the kernel that does the work, the next key in play below it. The real chain is
    followed to its own end, so the extra step has nothing to agree with."""
    original = reimpl.walk

    def one_more(entry, tensor_keys, include, exclude):
        chain = original(entry, tensor_keys, include, exclude)
        below = [
            k
            for k in reimpl.keys_in_play(tensor_keys, include, exclude)
            if entry(k) and not entry(k).fallthrough and reimpl.rank(k) < reimpl.rank(chain[-1])
        ]
        return chain + sorted(below, key=reimpl.rank, reverse=True)[:1]

    mp.setattr(reimpl, "walk", one_more)


def implicit_before_backend_kernel(mp):
    """The decomposition at every autograd key, even where the backend (NestedTensor) has its own kernel."""
    mp.setattr(reimpl, "_backend_has_kernel", lambda regs, key: False)


def exclude_by_name(mp):
    """Excluded keys compared by name: 'AutogradFunctionality' no longer removes AutogradCPU."""
    mp.setattr(
        reimpl,
        "keys_in_play",
        lambda tensor_keys, include, exclude: (set(tensor_keys) | set(include)) - set(exclude),
    )


def fallthrough_not_skipped(mp):
    """Fallthrough slots stay in the key set the walk picks from."""
    original = reimpl.table_entry

    def entry_without_fallthrough(regs, fallbacks, key):
        e = original(regs, fallbacks, key)
        return e and TableEntry(e.source, e.tag, False)

    mp.setattr(reimpl, "table_entry", entry_without_fallthrough)


def python_key_does_not_pass_on(mp):
    """The Python key's kernel (the recorder's mode) said to do the work itself. The real chain uses the same
    rule, so the chains agree: only the recorder's observation catches it."""
    original = reimpl.passes_on
    mp.setattr(reimpl, "passes_on", lambda key, entry: key != "Python" and original(key, entry))


def python_above_autograd(mp):
    """The priority list with Python moved above the autograd keys."""
    order = [k for k in reimpl.PRIORITY if k != "Python"]
    order.insert(order.index("AutogradNestedTensor"), "Python")
    mp.setattr(reimpl, "PRIORITY", order)


def autocast_guard_forgotten(mp):
    """The calls made by the autocast kernel predicted without its exclusion of its own key."""
    original = reimpl.guards
    mp.setattr(
        reimpl,
        "guards",
        lambda chain, entry: {k for k in original(chain, entry) if not k.startswith("Autocast")},
    )


def bmm_not_a_gemm(mp):
    """aten::bmm missing from the GEMM ops: the batched matmul's GEMM is lost."""
    mp.setattr(tracing, "GEMM_OPS", tracing.GEMM_OPS - {"aten::bmm"})


def inference_mode_not_entered(mp):
    """The inference_mode scenarios run without torch.inference_mode()."""
    original = tracing._context
    mp.setattr(
        tracing,
        "_context",
        lambda sc: contextlib.nullcontext() if sc["mode"] == "inference_mode" else original(sc),
    )


MUTATIONS = [
    (fallbacks_first, SLOTS),
    (fallbacks_from_the_ops_table, "backend fallbacks (read off an op with no kernels)"),
    (walk_stops_at_first_key, WHOLE_CHAINS),
    (walk_goes_on_past_the_working_kernel, WHOLE_CHAINS),
    (
        implicit_before_backend_kernel,
        "table_entry: other graded slots of the run's ops that differ",
    ),
    (exclude_by_name, WHOLE_CHAINS),
    (fallthrough_not_skipped, "table_entry: other graded slots of the run's ops that differ"),
    (python_key_does_not_pass_on, PYTHON_KEY),
    (python_above_autograd, "reimpl.PRIORITY pairs ordered unlike"),
    (autocast_guard_forgotten, PYTHON_KEY),
    (bmm_not_a_gemm, "scenarios whose trace holds not exactly one GEMM op call"),
    (inference_mode_not_entered, "scenarios where the root op itself reaches the Python key"),
]


@pytest.mark.parametrize(
    "mutation, check",
    MUTATIONS,
    ids=[f"{m.__name__} -> {check}" for m, check in MUTATIONS],
)
def test_a_planted_bug_fails_a_lab_check(monkeypatch, tmp_path, mutation, check):
    mutation(monkeypatch)
    ctx = run_sections(tmp_path)
    failed = [c.name for c in ctx.checks if not c.passed]
    assert any(name.startswith(check) for name in failed), failed


def test_without_a_planted_bug_every_check_passes(tmp_path):
    ctx = run_sections(tmp_path)
    assert ctx.checks and ctx.passed, [c for c in ctx.checks if not c.passed]
