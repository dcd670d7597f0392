"""The operator a learner's piece is graded in, `graded_<exercise>::softmax`: the learner's piece for that exercise
and the grader's own stand-ins for the rest (torch_pieces.py: PyTorch's softmax and its backward, in the op's layout),
registered by hand (by_hand.py) as a custom_op or a triton_op.

Why a twin per exercise: each piece is graded alone (a wrong forward kernel cannot fail the grading of the fake),
torch.ops.workshop.softmax is never touched, and no check takes its truth from a reference (in the learner edition
the references are stubs). The dispatcher, autograd, fake tensors, opcheck and torch.compile see the learner's
piece where the op's own would sit. A plain run grades the reference pieces through the same twins.

Before a piece goes in, it is checked for what would otherwise fail far from the learner's code: a kernel that is
not a @triton.jit function (a Python fallback would launch nothing) or whose parameters differ from the launch's,
and a backward that returns the wrong number of gradients.

The twins are built and run in the worker, where the learner's code runs (op_probes.py); what they report is
plain values (op_probes.kernel_signature, pair_problem), which the lab's process judges (exercise_grading's
_launchable, and registration_grading for the backward's).

The registration exercises (define_custom_op, define_triton_op) register graded_<exercise>::softmax with
torch.library's public API from the grader's stand-ins, with no backward operator of its own: that op is their
twin. What it registered is read as facts (`registration_facts`: by what torch.library holds for the name, and by
what the op does: on a fake tensor, through a backward), which registration_grading judges, in the lab's process.

The twin's checks are the three tools PyTorch checks an operator with (`op_facts` in the worker, `grade_op` in
the lab's process): gradcheck (and gradgradcheck), opcheck, and torch.compile(fullgraph=True) of y = op(x, dim)
forward and backward, with the proof that the twin's kernels ran inside the compiled step.

That proof differs by registration. A custom_op (the CPU's, and a fake's twin everywhere): Inductor calls it, the
call runs its kernels eagerly, and the launch record shows them (the very function objects). A triton_op (a GPU's):
Inductor copies the kernels' source into its own code and launches them itself, so the launch record stays empty
and the generated code is the evidence: a definition of each kernel, and no call of the op left.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import torch
import torch._dynamo
from torch._library import custom_ops
from torch._subclasses.fake_tensor import FakeTensorMode
from torch._subclasses.functional_tensor import FunctionalTensorMode

from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.custom_op import by_hand, inductor_code
from workshop.labs.custom_op.grading import correctness, torch_pieces
from workshop.learner import workspace
from workshop.ops import INTERPRETED, softmax_op
from workshop.ops.triton_launch import recording


def twin(exercise: str, piece, device: str = "cpu") -> softmax_op.SoftmaxOps:
    """torch.ops.graded_<exercise>.softmax{,_backward}: the learner's piece for `exercise`, one of forward_kernel,
    backward_kernel, fake, setup_context or backward, and the grader's stand-ins (PyTorch's) for the rest,
    registered by hand (registered again at each grading: the namespace's earlier operators go). A fake's twin is
    a custom_op (a triton_op's fake is its body), the others this device's KIND; a backward goes in `counted`, which
    says what it returned where that is not (dx, None). A registration's (ASKED) is the op the learner's define
    registers from the stand-ins (registration_facts, on `device`): LookupError where it registered none."""
    if exercise in ASKED:
        ops = registration_facts(piece, exercise, device)[1]
        if ops is None:
            raise LookupError(f"{piece.__name__} registered no operator this time")
        return ops
    kind = "custom_op" if exercise == "fake" else softmax_op.KIND
    # the grader's stand-ins (by_hand.Bodies' fields), the learner's piece in its place
    bodies = {
        "forward": torch_pieces.forward,
        "backward": torch_pieces.backward,
        "fake": torch_pieces.fake,
        "setup_context": torch_pieces.setup_context,
        "gradients": torch_pieces.gradients,
    }
    if exercise.endswith("_kernel"):
        # the op's implementation (forward_kernel) or its backward operator's (backward_kernel), launching the
        # learner's one-pass kernel
        implementation = functools.partial(getattr(softmax_op, exercise), kernel=piece)
        bodies[exercise.removesuffix("_kernel")] = implementation
        bodies["kernels"] = (piece,)
    else:
        bodies[{"backward": "gradients"}.get(exercise, exercise)] = (
            counted(piece) if exercise == "backward" else piece
        )
    return by_hand.define(f"graded_{exercise}::softmax", kind, by_hand.Bodies(**bodies))


# The registration exercises (the learner's define_custom_op and define_triton_op), by the kind each asks for
REGISTRATIONS = {"custom_op": "define_custom_op", "triton_op": "define_triton_op"}
ASKED = {
    exercise: kind for kind, exercise in REGISTRATIONS.items()
}  # exercise -> the kind it asks for


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
    # an earlier grading's operator of this name unregistered (a custom_op's registrations live in a Library that
    # torch.library keeps by name), so that a learner's define that registers nothing is seen to
    library = getattr(custom_ops, "OPDEF_TO_LIB", {}).pop(qualname, None)
    if library is not None:
        library._destroy()
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


class GradientCount(Exception):
    """The learner's backward did not return (dx, None), dx shaped like dy: its args, what it returned instead
    (pair_problem's plain values) and where that backward is defined. Kept in args: autograd's engine re-raises an
    error from a backward as a new one made from its args."""


def counted(backward):
    """The learner's backward, made to raise GradientCount saying what it returned when that is not (dx, None)
    with dx of dy's shape and dtype, instead of autograd's 'returned an incorrect number of gradients (expected 3,
    got 5)' (a returned tensor unpacks by rows) or its error for a gradient of a non-tensor input."""
    where = defined_at(backward)

    def checked(ctx, dy):
        grads = backward(ctx, dy)
        problem = pair_problem(grads, dy)
        if problem is not None:
            raise GradientCount(problem, where)
        return grads

    return checked


def pair_problem(grads, dy: torch.Tensor) -> dict | None:
    """What is wrong with a backward's `grads` as (dx, None), as plain values: the problem (a key of
    registration_grading.RETURNED, which says it) and its particulars; None when nothing is."""
    if not isinstance(grads, tuple | list):
        return {"problem": "single", "kind": type(grads).__name__}
    if len(grads) != 2:
        return {"problem": "count", "kind": type(grads).__name__, "n": len(grads)}
    dx = grads[0]
    if not isinstance(dx, torch.Tensor) or dx.shape != dy.shape or dx.dtype != dy.dtype:
        got = f"{tuple(dx.shape)} {dx.dtype}" if isinstance(dx, torch.Tensor) else type(dx).__name__
        return {"problem": "dx", "got": got, "shape": str(tuple(dy.shape)), "dtype": str(dy.dtype)}
    if grads[1] is not None:
        return {"problem": "second", "kind": type(grads[1]).__name__}
    return None


def defined_at(function) -> str:
    """'my-work/custom_op.py:57': where a function is defined (its module when its source cannot be read)."""
    try:
        first = inspect.getsourcelines(function)[1]
        return f"{workspace.display(Path(inspect.getsourcefile(function)))}:{first}"
    except (OSError, TypeError):
        return getattr(function, "__module__", "?")


COMPILE_ATOL = 1e-5  # compiled vs torch.softmax, y in [0, 1] and dx: float32 rounding is ~1e-7


def x_and_dy(
    device: str, seed: int, shape: tuple[int, ...] = (8, 600), dtype=torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """x and dy of `shape` and `dtype` from `seed`, made alike in the worker and in the lab's process: by default
    the compiled step's, (8, 600) float32 (the backward exercise's case is registration_grading.gradient_inputs)."""
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(shape, generator=gen, dtype=dtype).to(device) for _ in range(2))


def op_facts(ops: softmax_op.SoftmaxOps, dim: int, device: str, seed: int) -> dict:
    """In the worker: gradcheck, opcheck and torch.compile(fullgraph=True) of the twin `ops`, as wire values."""
    found = {
        "name": ops.forward.name(),
        "kind": ops.kind,
        "kernels": [kernel.__name__ for kernel in ops.kernels],
        "gradcheck": correctness.gradchecks(ops.forward, device),
    }
    x, dy = x_and_dy(device, seed)
    if ops.kind == "triton_op" and INTERPRETED:
        # Under the interpreter a triton_op can be neither compiled nor opchecked (softmax_op.py says why): its
        # values, called eagerly, in their place.
        return found | {"eager": ops.forward(x, -1)}
    found["opcheck"] = correctness.opchecks(ops, device)
    # The op alone (around=False): what is graded is the op, and Inductor has no code of its own to compile.
    return found | compiled_facts(ops, x, dy, dim, around=False)


def compiled_facts(ops: softmax_op.SoftmaxOps, x, dy, dim: int = -1, around: bool = True) -> dict:
    """In the worker: torch.compile(fullgraph=True) of the step with `ops` (inductor_code.compiled_step), its code
    generated afresh, as wire values: y, dx, Inductor's sources, the kernels launched ("launches") and those of them
    that are the op's own function objects ("ran"), the op's namespace."""
    torch._dynamo.reset()  # each op compiled afresh: no recompilation limit across many graded pieces
    with recording() as launches:
        (y, dx), sources = inductor_code.compile_and_capture(ops.forward, x, dy, dim, around)
    return {
        "y": y,
        "dx": dx,
        "sources": sources,
        "namespace": ops.forward.namespace,
        "launches": [launch.kernel for launch in launches],
        "ran": [launch.kernel for launch in launches if launch.function in ops.kernels],
    }


def compiled_error(found: dict, x, dy, dim: int = -1, around: bool = True) -> float:
    """max |y - torch's| and |dx - torch's| of a compiled step (compiled_facts), torch's from the same step run
    eagerly with torch.softmax in the op's place."""
    y, dx = inductor_code.compiled_step(torch.softmax, dim, around, compiled=False)(x, dy)
    return max((found["y"] - y).abs().max().item(), (found["dx"] - dx).abs().max().item())


def grade_op(ctx: LabContext, found: dict, dim: int = -1) -> None:
    """gradcheck, opcheck and torch.compile of a twin, from op_facts' values, each a check of the exercise being
    graded: torch.compile(fullgraph=True)'s result against torch.softmax's, and the twin's kernels in it; for a
    triton_op under the interpreter, gradcheck and its values called eagerly."""
    name = found["name"]
    check_tools(
        ctx,
        found,
        _("gradcheck and gradgradcheck (float64) of {op}: cases passed").format(op=name),
        _("opcheck of {op}: tests passed").format(op=name),
    )
    x, dy = x_and_dy(ctx.options.device, ctx.options.seed)
    if found["kind"] == "triton_op" and INTERPRETED:
        err = (found["eager"] - torch.softmax(x, -1)).abs().max().item()
        ctx.check_max(_("{op}: max |y - torch.softmax|, called eagerly").format(op=name), err, 1e-6)
        return
    ctx.check_max(
        _("torch.compile(fullgraph=True) of {op}, dim={dim}: max |y, dx - torch's|").format(
            op=name, dim=dim
        ),
        compiled_error(found, x, dy, dim, around=False),
        COMPILE_ATOL,
    )
    # The op's Triton kernels (a twin whose pieces are all the grader's, PyTorch's, has none to show).
    names = found["kernels"]
    if found["kind"] == "triton_op":
        # Inductor's code defines each of the twin's kernels and calls the op no more
        text = "\n".join(found["sources"])
        if names:
            ctx.check_equal(
                _("torch.compile: the op's kernels inlined into Inductor's code"),
                sorted(kernel for kernel in names if inductor_code.kernel_defs(text, kernel)),
                sorted(names),
            )
        census = inductor_code.census(found["sources"], found["namespace"])
        ctx.check_equal(
            _("torch.compile: calls of the op left in Inductor's code"), census["extern_calls"], 0
        )
    elif names:
        ctx.check_equal(
            _("torch.compile: the op's kernels ran inside the compiled step (launch record)"),
            sorted(set(found["ran"])),
            sorted(names),
            message=_("launched inside the compiled step: {ran}").format(ran=found["launches"]),
        )


def check_tools(ctx: LabContext, found: dict, gradcheck: str, opcheck: str) -> None:
    """The outcomes of gradcheck and, where it ran, opcheck (correctness.gradchecks, opchecks: found's "gradcheck"
    and "opcheck"), one check each, named `gradcheck` and `opcheck`: every case passed."""
    check_passed(ctx, gradcheck, _("gradcheck"), found["gradcheck"], correctness.PASSED)
    if "opcheck" in found:
        # opcheck's outcomes by case, then by test
        tests = {f"{case}: {t}": r for case, rs in found["opcheck"].items() for t, r in rs.items()}
        check_passed(ctx, opcheck, _("opcheck"), tests, "SUCCESS")


def check_passed(
    ctx: LabContext, name: str, tool: str, outcomes: dict[str, str], passed: str
) -> None:
    """One check: every case of `tool` (case -> its outcome) gave `passed`; the message names those that did not."""
    failed = {case: r for case, r in outcomes.items() if r != passed}
    ctx.check_equal(
        name,
        len(outcomes) - len(failed),
        len(outcomes),
        message=_("{tool} failed on {cases}").format(
            tool=tool, cases="; ".join(f"{case} ({why})" for case, why in failed.items())
        ),
    )
