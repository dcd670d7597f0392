"""What "no autograd" forbids in the hand-gradient exercises, and the watcher that sees each forbidden thing.

The exercises ask for gradients computed with plain tensor operations. Forbidden, each with what betrays it:
- "engine": autograd's engine, on any thread: .backward(), torch.autograd.grad, torch.autograd.functional,
  and torch.func's grad, vjp, jacrev and hessian, which call it. The engine runs every node inside a profiler
  range named "autograd::engine::evaluate_function: <Node>".
- "grad_fn": a grad_fn node called by hand, out of a graph recorded for the purpose. A node's call is a profiler
  range named after its class, "<Op>Backward0".
- "derivative_op": aten's own derivative ops, called directly: any op whose name marks it as a backward or a
  derivative (`aten::_log_softmax_backward_data`, `aten::nll_loss_backward`, `aten::_standard_gamma_grad`,
  `aten::glu_jvp`): the formulas autograd's nodes run.
- "forward_ad": forward-mode AD (torch.func.jvp, jacfwd, torch.autograd.forward_ad): its dual tensors are made
  and read by `aten::_make_dual`, `aten::_unpack_dual`, `aten::_fw_primal`.
- "requires_grad": tensors that require grad: an op run with grad mode on and an argument that requires grad
  records a graph.
- "process": another process: what it runs is out of sight, so starting one at all (fork, spawn, subprocess,
  exec, system) is forbidden.
torch.func.vmap and functional_call differentiate nothing: they are allowed.

How each is watched. The first four on every thread of the process: the profiler's all-threads mode puts one
callback on every op and range, whichever thread runs it (a thread the code starts included). "requires_grad" on
the calling thread, by a dispatch mode (grad mode and requires_grad are per thread; a graph recorded on another
thread is of no use without the engine or a node call, which the profiler sees). "process" by Python's audit
hooks (fork, posix_spawn, subprocess, exec, system), the new entries in the process's children list (Linux's
/proc) and the CPU time of children it waited for (multiprocessing's spawn raises no audit event).

What a watch saw is plain data ({rule: {"count": n, "examples": [names]}}), so that it can cross a process
boundary: the verdict is made by whoever reads it, here the rules the lab hands the exercise engine
(engine.grade's rules=: `forbidden`, one check per thing forbidden, from what the watch saw in each case; and
`named_in_source`). Code that runs in the watched process can hide from it on purpose: `named_in_source` backs
the watcher with a static scan of the learner's source, made in the lab's process.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from pathlib import Path

import torch
from torch._C._profiler import _ExperimentalConfig
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from workshop.i18n import N_, _

# Rule -> what breaking it means, as the learner reads it (the module's docstring says how each is seen).
FORBIDDEN = {
    "engine": N_(
        "autograd's engine, on any thread (.backward(), torch.autograd.grad, torch.func.grad)"
    ),
    "grad_fn": N_("a grad_fn node called by hand"),
    "derivative_op": N_("aten's derivative ops (an op named *_backward*, *_grad, *_jvp)"),
    "forward_ad": N_("forward-mode AD (dual tensors: torch.func.jvp, jacfwd)"),
    "requires_grad": N_("tensors that require grad (an op that recorded an autograd graph)"),
    "process": N_("another process started (fork, spawn, subprocess)"),
}
HAND_RULES = tuple(FORBIDDEN)  # the hand gradients: nothing of autograd at all
# The engine exercises call grad_fn nodes by design (their formulas run derivative ops); the engine itself,
# on any thread or in another process, stays forbidden.
ENGINE_RULES = ("engine", "process")
EXAMPLES = 3  # names kept per rule, for the message

ENGINE_RANGE = "autograd::engine::"
NODE_RANGE = re.compile(r"\w+Backward\d*|torch::autograd::\w+")  # a node's call, by its class name
DUAL_OPS = {"_make_dual", "_make_dual_copy", "_unpack_dual", "_fw_primal", "_fw_primal_copy"}
PROCESS_EVENTS = {
    "os.fork",
    "os.forkpty",
    "os.posix_spawn",
    "os.spawn",
    "os.exec",
    "os.system",
    "subprocess.Popen",
}
CHILDREN = Path("/proc/self/task")  # <tid>/children: this process's children, per thread (Linux)


def rule_of(name: str) -> str | None:
    """The forbidden thing a profiler event's name shows, or None for an ordinary op."""
    if name.startswith(ENGINE_RANGE):
        return "engine"
    if name.startswith("aten::"):
        op = name.removeprefix("aten::")
        if op in DUAL_OPS:
            return "forward_ad"
        if "backward" in op or op.endswith(("_grad", "_jvp")):
            return "derivative_op"
        return None
    return "grad_fn" if NODE_RANGE.fullmatch(name) else None


def counted_rule(event) -> str | None:
    """The rule an event breaks, counted at the outermost event that shows one: the ops a node runs for the
    engine are the engine's, not derivative ops of their own."""
    rule, parent = rule_of(event.name), event.cpu_parent
    while rule is not None and parent is not None:
        if rule_of(parent.name) is not None:
            return None
        parent = parent.cpu_parent
    return rule


class RecordingMode(TorchDispatchMode):
    """Counts the ops that recorded an autograd graph: grad mode on and an argument that requires grad."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Nothing here runs under torch.compile. Left True (torch 2.13's default), the subclass's
        # __torch_dispatch__ is wrapped in torch._disable_dynamo, whose first call imports torch._dynamo: 3.5 s.
        return False

    def __init__(self, saw):
        super().__init__()
        self.saw = saw  # saw(rule, name): the watch's record of one sighting

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if torch.is_grad_enabled() and any(
            isinstance(a, torch.Tensor) and a.requires_grad for a in tree_leaves((args, kwargs))
        ):
            self.saw("requires_grad", str(func))
        return func(*args, **kwargs)


# The watches open now (each one's saw(rule, name)), told of process events by the audit hook
_watching: list = []
_audit_hook_added = False


def _on_audit(event: str, args) -> None:
    if event in PROCESS_EVENTS:
        for saw in _watching:
            saw("process", event)


def children() -> set[int]:
    """This process's children, alive or not yet waited for; empty where /proc has no children lists."""
    found = set()
    for listing in CHILDREN.glob("*/children"):
        with contextlib.suppress(OSError):
            found.update(int(pid) for pid in listing.read_text().split())
    return found


def children_cpu_s() -> float:
    """CPU time of the children this process waited for (a spawned Python is seconds of it)."""
    times = os.times()
    return times.children_user + times.children_system


def watched_call(function, *args, rules: tuple[str, ...] = HAND_RULES):
    """function(*args) under a watch of `rules` (by default everything "no autograd" forbids: HAND_RULES): (its
    result, which of `rules` it broke, with examples, as plain data: {rule: {"count": n, "examples": [up to
    EXAMPLES names]}}).

    Shaped as a probe of the learner's worker (called as probe(learner_function, *args): the hand exercises' call
    probe, engine.grade's call=), so that the watch runs where the learner's code runs and only wire values come
    back. An error of the function stops the
    watch (the profiler and the dispatch mode with it) and propagates."""
    global _audit_hook_added
    if (
        not _audit_hook_added
    ):  # an audit hook stays for the process's life: one, shared by all watches
        sys.addaudithook(_on_audit)
        _audit_hook_added = True
    seen: dict[str, dict] = {}

    def saw(rule: str, name: str) -> None:
        if rule in rules:
            add_seen(seen, {rule: {"count": 1, "examples": [name]}})

    before, cpu_before = children(), children_cpu_s()
    with contextlib.ExitStack() as stack:
        stack.callback(_watching.remove, saw)
        _watching.append(saw)
        config = _ExperimentalConfig(profile_all_threads=True)
        profile = stack.enter_context(
            torch.autograd.profiler.profile(use_cpu=True, experimental_config=config)
        )
        if "requires_grad" in rules:
            stack.enter_context(RecordingMode(saw))
        result = function(*args)
    for event in profile.function_events:
        rule = counted_rule(event)
        if rule is not None:
            saw(rule, event.name)
    for pid in sorted(children() - before):
        saw("process", f"pid {pid}")
    if children_cpu_s() > cpu_before:
        saw("process", "os.times(): children's CPU time")
    return result, seen


def add_seen(total: dict, seen: dict) -> dict:
    """Add one watch's plain-data sightings to `total` (several calls of one exercise): counts add up, the first
    EXAMPLES names stay."""
    for rule, found in seen.items():
        entry = total.setdefault(rule, {"count": 0, "examples": []})
        entry["count"] += found["count"]
        new = [name for name in found["examples"] if name not in entry["examples"]]
        entry["examples"] = (entry["examples"] + new)[:EXAMPLES]
    return total


def forbidden(rules: tuple[str, ...]):
    """The engine's rule for an exercise whose cases ran under a watch of `rules` (watched_call) (its call probe returns
    what the watch saw): one check per thing "no autograd" forbids (FORBIDDEN), over every case."""

    def check(ctx, ex, impl, graded) -> None:
        seen = {}
        for watched in graded.seen:
            add_seen(seen, watched)
        for rule in rules:
            found = seen.get(rule, {"count": 0, "examples": []})
            ctx.check_max(
                _("{function}, no autograd: {forbidden}").format(
                    function=ex.attribute, forbidden=_(FORBIDDEN[rule])
                ),
                found["count"],
                0,
                diagnosis=True,
                message=_(
                    "{function} used {forbidden}: {examples}. README.md, Exercises, lists what the "
                    "exercises may not use"
                ).format(
                    function=ex.attribute,
                    forbidden=_(FORBIDDEN[rule]),
                    examples=", ".join(found["examples"]),
                ),
            )

    return check


def named_in_source(ctx, ex, impl, graded) -> None:
    """The engine's rule that reads the learner's source: what the watch saw was seen where the learner's code
    runs, and a hostile learner can hide from it there. This check is made in the lab's process, from the
    learner's file as it reads it (a name built at run time escapes it; learner/source_check.py)."""
    named = [f"{found.what} (line {found.line})" for found in impl.autograd_named()]
    ctx.check_max(
        _("{function}, no autograd: named in its code (the grader's reading of your file)").format(
            function=ex.attribute
        ),
        len(named),
        0,
        diagnosis=True,
        message=_(
            "{function} names autograd in your file: {examples}. README.md, Exercises, lists what the "
            "exercises may not use"
        ).format(function=ex.attribute, examples=", ".join(named[:EXAMPLES])),
    )


# The hand gradients' rules: nothing of autograd at all, seen where the code ran or named in its source.
HAND_CHECKS = (forbidden(HAND_RULES), named_in_source)
# The engine exercises' rules: autograd's own engine, seen where the code ran.
ENGINE_CHECKS = (forbidden(ENGINE_RULES),)
