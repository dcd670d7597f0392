"""The exercises that register the op with torch.library's public API (op_probes.REGISTRATIONS): the custom_op's
(custom_op, register_fake, register_autograd) and the triton_op's (triton_op, wrap_triton, register_autograd).

The learner's function registers graded_<exercise>::softmax from the grader's stand-in pieces (torch_pieces.py:
PyTorch's softmax and its backward), with no backward operator of its own. What it registered is read as facts
(`registration_facts`: by what torch.library holds for the name, and by what the op does: on a fake tensor,
through a backward); each fact is judged here with a message for the mistake it shows (a custom_op where a
triton_op was asked, a schema without dim's default, no fake, no setup_context, launches not through
wrap_triton); then the op goes through gradcheck, opcheck and torch.compile
(learner_op). Under Triton's interpreter a triton_op can be neither compiled nor opchecked (softmax_op.py says
why): there the triton_op is graded by its registration, its launches and gradcheck, and on a GPU by Inductor's
code too. The learner's function registers and runs in the worker (this module's probe `registration`, with
`registration_facts`); the facts are judged here, in the lab's process.
"""

from __future__ import annotations

import torch
from torch._library import custom_ops
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.functional_tensor import FunctionalTensorMode

from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import learner_op, op_probes, torch_pieces
from workshop.ops import softmax_op

SCHEMA = "(Tensor x, SymInt dim=-1) -> Tensor"
NO_FORMULA = (
    "no autograd formula was registered"  # torch.library's error for a backward through such an op
)
# exercise -> the kind it asks for
ASKED = {exercise: kind for kind, exercise in op_probes.REGISTRATIONS.items()}


BY_HAND = N_("an operator registered by hand")


def _kind(qualname: str) -> str:
    opdef = custom_ops._maybe_get_opdef(qualname)
    if opdef is None:
        return BY_HAND
    # triton_op is a custom_op plus a FunctionalTensorMode rule that runs its body under torch.compile
    return "triton_op" if FunctionalTensorMode in opdef._torch_dispatch_fns else "custom_op"


def _outcome(call) -> str:
    try:
        call()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return "ok"


def registration_facts(
    define, exercise: str, device: str
) -> tuple[dict, softmax_op.SoftmaxOps | None]:
    """Registers graded_<exercise>::softmax with the learner's `define` and the grader's stand-in pieces
    (torch_pieces.py); returns the facts, plain values, and the registration (None when nothing was registered).
    The facts: "registered" (an operator under the qualname it was given), "kind" ("custom_op" or "triton_op"
    where torch.library made it, BY_HAND, None where nothing is registered), "schema" (after the name: "(Tensor x,
    SymInt dim=-1) -> Tensor"), "fake" ("ok", or the error of the op called on a fake tensor), "setup_calls" (times
    setup_context ran in a forward with a gradient to track), "backward" ("ok", or the error of a backward through
    the op), "wraps" (per call of the implementation: was `wrap` torch.library.wrap_triton)."""
    kind, qualname = ASKED[exercise], f"graded_{exercise}::softmax"
    _forget(qualname)
    wraps, setups = [], []

    def implementation(x, dim, wrap=None):
        wraps.append(wrap is torch.library.wrap_triton)
        return torch_pieces.forward(x, dim, wrap)

    def setup_context(ctx, inputs, output):
        setups.append(1)
        torch_pieces.setup_context(ctx, inputs, output)

    fake = (
        [softmax_op.fakes(softmax_op.Pieces(fake=torch_pieces.fake))[0]]
        if kind == "custom_op"
        else []
    )
    define(qualname, implementation, *fake, setup_context, torch_pieces.gradients_by_torch)
    facts = {
        "registered": False,
        "kind": None,
        "schema": None,
        "fake": "",
        "setup_calls": 0,
        "backward": "",
        "wraps": wraps,
    }
    try:
        ops = softmax_op.SoftmaxOps(softmax_op.registered(qualname), None, kind)
    except LookupError:
        return facts, None
    x = torch.randn(4, 7, dtype=torch.float64, device=device)
    fake_outcome = "ok"
    if kind == "custom_op":  # a triton_op's fake is its body
        with FakeTensorMode() as mode:
            fake_outcome = _outcome(lambda: ops.forward(mode.from_tensor(x), 0))
    facts |= {
        "registered": True,
        "kind": _kind(qualname),
        "schema": str(ops.forward._schema).removeprefix(qualname),
        "fake": fake_outcome,
        # the backward's forward runs setup_context: counted after it
        "backward": _outcome(lambda: ops.forward(x.requires_grad_(), -1).sum().backward()),
        "setup_calls": len(setups),
    }
    return facts, ops


def _forget(qualname: str) -> None:
    """Unregisters an earlier grading's operator of this name (a custom_op's registrations live in a Library that
    torch.library keeps by name), so that a learner's define that registers nothing is seen to."""
    library = getattr(custom_ops, "OPDEF_TO_LIB", {}).pop(qualname, None)
    if library is not None:
        library._destroy()


def registration(define, exercise: str, device: str, seed: int | None = None) -> dict:
    """What the learner's registration (either exercise of ASKED) registered (registration_facts); given a `seed`,
    the op it registers checked instead (learner_op.op_facts)."""
    op_probes.started(define)
    facts, ops = registration_facts(define, exercise, device)
    if seed is None:
        return facts
    if ops is None:
        raise LookupError(f"{define.__name__} registered no operator this time")
    return learner_op.op_facts(ops, -1, device, seed)


def grade_registration(ctx: LabContext, impl, exercise: str) -> None:
    """The learner's registration (either exercise of ASKED), in the worker (impl.probe: the probe `registration`
    on it, twice): its facts judged, then the op's checks."""
    if _check_facts(ctx, impl.probe(registration, exercise, ctx.options.device), exercise):
        learner_op.grade_op(
            ctx, impl.probe(registration, exercise, ctx.options.device, ctx.options.seed)
        )


def said(outcome: str) -> str:
    """An outcome of registration_facts as a check shows it: "ok" in the learner's words, or the error."""
    return _("no error") if outcome == "ok" else outcome


def _check_facts(ctx: LabContext, facts: dict, exercise: str) -> bool:
    """Each fact a check, in the order a registration is built; False at the first that fails."""
    asked = ASKED[exercise]
    checks = [
        (
            _("{name}: an operator registered under the name it is given").format(name=exercise),
            facts["registered"],
            True,
            _(
                "{name} registered no operator under the name it was given (graded_{name}::softmax here): "
                "pass its qualname argument to torch.library.{kind}"
            ).format(name=exercise, kind=asked),
        ),
        (
            _("{name}: made by torch.library.{kind}").format(name=exercise, kind=asked),
            facts["kind"],
            asked,
            (
                _(
                    "{name} registered a {kind}, which torch.compile cannot see into: Inductor calls it as "
                    "an extern kernel. torch.library.triton_op registers the op and the rule that runs its body "
                    "under torch.compile, where wrap_triton shows Inductor each kernel"
                )
                if asked == "triton_op"
                else _(
                    "{name} registered a {kind}; this exercise is the opaque operator of section 2, made with "
                    "torch.library.custom_op (the triton_op is {triton_op})"
                )
            ).format(
                name=exercise,
                kind=_(BY_HAND) if facts["kind"] == BY_HAND else str(facts["kind"]),
                triton_op=op_probes.REGISTRATIONS["triton_op"],
            ),
        ),
        (
            _("{name}: the op's schema").format(name=exercise),
            facts["schema"],
            SCHEMA,
            _(
                "the schema is {got}, read from your function's annotations; the op takes x and dim, dim "
                "-1 when it is not given: x: torch.Tensor, dim: int = -1, returning a torch.Tensor"
            ).format(got=facts["schema"]),
        ),
        # a custom_op's fake; a triton_op's launches (its fake is its body)
        (
            (
                _("{name}: a fake implementation registered (the op runs on a fake tensor)").format(
                    name=exercise
                ),
                said(facts["fake"]),
                _("no error"),
                _(
                    "no fake implementation is registered: torch.compile and opcheck trace with fake "
                    "tensors, which the kernels cannot run on. Register the fake you are given with "
                    "register_fake"
                )
                if "no fake impl" in facts["fake"]
                else _("the op failed on a fake tensor: {error}").format(error=facts["fake"]),
            )
            if asked == "custom_op"
            else (
                _("{name}: the launches go through torch.library.wrap_triton").format(
                    name=exercise
                ),
                all(facts["wraps"]) and bool(facts["wraps"]),
                True,
                _(
                    "the implementation was called with wrap={got}: a triton_op's body must launch its "
                    "kernels through torch.library.wrap_triton (implementation(x, dim, "
                    "wrap=torch.library.wrap_triton)), or torch.compile, tracing the body, hands fake "
                    "tensors to a kernel"
                ).format(
                    got=_("something else") if facts["wraps"] else _("nothing (it was not called)")
                ),
            )
        ),
        (
            _("{name}: an autograd formula registered").format(name=exercise),
            NO_FORMULA not in facts["backward"],
            True,
            _(
                "no backward is registered: register_autograd(backward, setup_context=setup_context) with the "
                "functions you are given"
            ),
        ),
        (
            _("{name}: setup_context registered (it ran in the forward)").format(name=exercise),
            facts["setup_calls"] > 0,
            True,
            _(
                "setup_context never ran: register_autograd(backward, setup_context=setup_context), or the "
                "backward finds nothing saved"
            ),
        ),
        (
            _("{name}: a backward through the op").format(name=exercise),
            said(facts["backward"]),
            _("no error"),
            _("the backward through the op failed: {error}").format(error=facts["backward"]),
        ),
    ]
    # all() stops at the first that fails: the checks after it are not recorded
    return all(
        ctx.check_equal(name, value, expected, message=message).passed
        for name, value, expected, message in checks
    )
