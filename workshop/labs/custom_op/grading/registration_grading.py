"""The checks of the registration's pieces, each on its twin (learner_op.py), before the op-level tools: the fake
against the real kernel's outputs, what setup_context saved, what backward returned and computed. The pieces ran
in the worker (op_probes.py); these judge what came back, in the lab's process.

And the checks of the exercises that register the op with torch.library's public API (learner_op.REGISTRATIONS):
the custom_op's (custom_op, register_fake, register_autograd) and the triton_op's (triton_op, wrap_triton,
register_autograd). What the learner's function registered from the grader's stand-in pieces, read as facts in the
worker (learner_op.registration_facts), is judged here, each fact with a message for the mistake it shows (a
custom_op where a triton_op was asked, a schema without dim's default, no fake, no setup_context, launches not
through wrap_triton); then the op goes through gradcheck, opcheck and torch.compile (learner_op.grade_op). Under
Triton's interpreter a triton_op can be neither compiled nor opchecked (softmax_op.py says why): there the
triton_op is graded by its registration, its launches and gradcheck, and on a GPU by Inductor's code too."""

from __future__ import annotations

import torch

from workshop.declarations.diagnosis import Evidence, diagnose
from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import piece_mistakes, torch_pieces
from workshop.labs.custom_op.grading.kernel_grading import BACKWARD
from workshop.labs.custom_op.grading.learner_op import ASKED, BY_HAND, REGISTRATIONS, x_and_dy


def fake_cases(device: str) -> dict[str, tuple[torch.Tensor, int]]:
    """Inputs whose outputs differ in layout: last dim, dim 0, a middle dim, a transposed x, 0-d, empty."""
    gen = torch.Generator().manual_seed(4)

    def randn(*shape, dtype=torch.float32):
        return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)

    return {
        "(4, 6) float32, dim=1": (randn(4, 6), 1),
        "(4, 6) float64, dim=0": (randn(4, 6, dtype=torch.float64), 0),
        "(3, 4, 5) float32, dim=1": (randn(3, 4, 5), 1),
        "(6, 4).t() float32, dim=1": (randn(6, 4).t(), 1),
        "0-d float32, dim=0": (randn(), 0),
        "(2, 0, 3) float32, dim=1": (randn(2, 0, 3), 1),
        "(4, 6) bfloat16, dim=0": (randn(4, 6, dtype=torch.bfloat16), 0),
    }


def layout(t: torch.Tensor) -> dict:
    """A tensor's metadata, as plain values: what a fake says about its output (sent back by the worker as this
    dict, its tuples kept by the wire). {"shape": tuple, "dtype": "torch.float32", "device": "cpu" or "cuda:0",
    "strides": tuple}."""
    return {
        "shape": tuple(t.shape),
        "dtype": str(t.dtype),
        "device": str(t.device),
        "strides": tuple(t.stride()),
    }


def is_contiguous(layout: dict) -> bool:
    """Row-major, as torch's is_contiguous (dims of size 1 and empty tensors aside): asked of a meta tensor laid
    out so, which holds no data."""
    return torch.empty_strided(layout["shape"], layout["strides"], device="meta").is_contiguous()


def fake_layout(outputs: list[tuple[dict, dict]]) -> str | None:
    """How the fake laid out its outputs, (x, fake output) over every input: with x's strides each time (as
    torch.empty_like(x)), or row-major each time (as torch.empty(x.shape)); None when neither (the transposed
    input tells the two apart)."""
    if all(piece_mistakes.placed(out) == piece_mistakes.placed(x) for x, out in outputs):
        return piece_mistakes.COPIES_X
    if all(is_contiguous(out) for _x, out in outputs):
        return piece_mistakes.ROW_MAJOR
    return None


def grade_fake_outputs(ctx: LabContext, device: str, found: dict, diagnoses: tuple) -> bool:
    """The learner's fake, called on fake tensors of `device` in the worker (op_probes.fake_outputs), against the
    op's real outputs, made here, what is wrong said by `diagnoses` (the exercise's); True when all match."""
    cases = fake_cases(device)
    if "raised" in found:
        ctx.check_equal(
            _("softmax_fake runs on fake tensors"),
            found["raised"],
            _("no error"),
            message=_(
                "A fake implementation gets fake tensors: shapes, dtypes, strides and a device, but no data. "
                "Reading values (.item(), .tolist(), a tensor in an `if`) or launching a kernel fails there: "
                "compute only the output's metadata, and allocate it with torch.empty"
            ),
        )
        return False
    # case -> x's layout, what the fake sent back for it, the real op's output's layout
    outputs = {
        case: (layout(x), found["outputs"][case], layout(torch_pieces.forward(x, dim)))
        for case, (x, dim) in cases.items()
    }
    # a tensor's layout has a shape; x itself and a value that is no tensor have none
    laid_out = fake_layout([(x, out) for x, out, _real in outputs.values() if "shape" in out])
    # each case's diagnosis: None where the fake's output is laid out as the real one
    diagnosed = [
        diagnose(
            diagnoses,
            Evidence(
                case,
                out if "shape" in out else None,
                real,
                case,
                {"is_x": out.get("is_x"), "returned": out.get("kind"), "x": x, "layout": laid_out},
            ),
        )
        for case, (x, out, real) in outputs.items()
    ]
    wrong = [found[1] for found in diagnosed if found]
    ctx.check_equal(
        _("softmax_fake: outputs like the real op's (shape, dtype, device, strides)"),
        len(cases) - len(wrong),
        len(cases),
        message=wrong[0] if wrong else None,
    )
    return not wrong


def saved_names(saved: tuple, x: torch.Tensor, y: torch.Tensor) -> list[str]:
    """Each saved tensor named 'x', 'y' or 'another tensor', by its values."""
    known = {"x": x, "y": y}
    return [
        next(
            (name for name, u in known.items() if t.shape == u.shape and torch.equal(t, u)),
            "another tensor",
        )
        for t in saved
    ]


def grade_saved(ctx: LabContext, x: torch.Tensor, found: dict, diagnoses: tuple) -> bool:
    """What the learner's setup_context left on the autograd node of y = op(x, -1) (op_probes.saved): y
    saved (what else is said by `diagnoses`, the exercise's), dim as ctx.dim."""
    saved = saved_names(found["saved"], x, found["y"])
    message = diagnose(diagnoses, Evidence("saved", tuple(sorted(saved)), ("y",)))[1]
    ok = ctx.check_equal(
        _("setup_context saved y (the output) for the backward"), saved, ["y"], message=message
    ).passed
    stored = found["dim"] if found["has_dim"] else _("nothing")
    return (
        ctx.check_equal(
            _("setup_context stored dim as ctx.dim"),
            stored,
            -1,
            message=_(
                "ctx.dim is {got!r} after a call with dim=-1: the backward reads ctx.dim; set it to "
                "inputs[1]"
            ).format(got=stored),
        ).passed
        and ok
    )


def gradient_inputs(device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """x and dy, (4, 7) float64, of the backward exercise's one case; x alone is the setup_context exercise's
    (its call y = op(x, -1))."""
    return x_and_dy(device, 5, (4, 7), torch.float64)


# What a backward returned instead of (dx, None), by learner_op.pair_problem's problem, said with its particulars
RETURNED = {
    "single": N_("a single {kind}"),
    "count": N_("a {kind} of {n}"),
    "dx": N_("a pair whose dx is {got}, where x is {shape} {dtype}"),
    "second": N_("a pair whose second entry, the gradient for dim (an int), is a {kind}"),
}


def grade_gradients(
    ctx: LabContext, x: torch.Tensor, dy: torch.Tensor, found: dict, diagnoses: tuple
) -> bool:
    """The learner's backward on one float64 case (op_probes.gradient): one gradient per input, then dx
    against the exact formula, a wrong one named by `diagnoses` (the exercise's)."""
    if "count" in found:
        what = _(RETURNED[found["count"]["problem"]]).format(**found["count"])
        ctx.check_equal(
            _("backward returns one gradient per input of the op (x, dim)"),
            what,
            _("a pair (dx, None)"),
            message=_(
                "backward (defined at {where}) returned {what}: autograd needs one entry per input of the "
                "op, x and dim, so (dx, None), dx shaped like x, None where there is no gradient"
            ).format(what=what, where=found["where"]),
        )
        return False
    dx = found["dx"]
    y = torch.softmax(x, -1)
    exact = BACKWARD.expected({"y": y, "dy": dy})
    err = (dx - exact).abs().max().item()
    return ctx.check_max(
        _("backward: dx against the exact gradient (float64, relative to its largest entry)"),
        err / exact.abs().max().item(),
        1e-12,  # float64 rounding of a 7-term sum: ~1e-16 relative
        message=diagnose(diagnoses, Evidence("dx", dx, exact, facts={"y": y, "dy": dy}))[1],
    ).passed


SCHEMA = "(Tensor x, SymInt dim=-1) -> Tensor"
NO_FORMULA = (
    "no autograd formula was registered"  # torch.library's error for a backward through such an op
)


def said(outcome: str) -> str:
    """An outcome of registration_facts as a check shows it: "ok" in the learner's words, or the error."""
    return _("no error") if outcome == "ok" else outcome


def check_registration(
    ctx: LabContext, exercise: str, _device: str, facts: dict, _diagnoses: tuple
) -> bool:
    """What the learner's registration (either exercise of learner_op.ASKED) registered, on `_device` in the
    worker (op_probes.registration: learner_op.registration_facts' facts), each fact a check, in the order a
    registration is built, with the message for the mistake it shows (these exercises declare no diagnoses);
    False at the first that fails."""
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
                triton_op=REGISTRATIONS["triton_op"],
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
