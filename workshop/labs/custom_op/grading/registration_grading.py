"""The checks of the registration's pieces, each on its twin (learner_op.py), before the op-level tools: the fake
against the real kernel's outputs, what setup_context saved, what backward returned and computed. The pieces ran
in the worker (piece_probes.py); these judge what came back, in the lab's process."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from workshop.grading.diagnosis import Evidence, diagnose
from workshop.i18n import N_, _
from workshop.lab_api import LabContext
from workshop.labs.custom_op.grading import torch_pieces


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


@dataclass(frozen=True)
class Layout:
    """A tensor's metadata, as plain values: what a fake says about its output (sent back by the worker)."""

    shape: tuple
    dtype: str  # "torch.float32"
    device: str  # "cpu", "cuda:0"
    strides: tuple

    @classmethod
    def of(cls, t: torch.Tensor) -> Layout:
        return cls(tuple(t.shape), str(t.dtype), str(t.device), tuple(t.stride()))

    @classmethod
    def sent(cls, found: dict) -> Layout:
        """A Layout from the worker's dict of one (its lists made tuples)."""
        return cls(tuple(found["shape"]), found["dtype"], found["device"], tuple(found["strides"]))

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def is_contiguous(self) -> bool:
        """Row-major, as torch's is_contiguous: dims of size 1 and empty tensors aside."""
        if self.numel == 0:
            return True
        expected = 1
        for n, stride in reversed(list(zip(self.shape, self.strides, strict=True))):
            if n != 1 and stride != expected:
                return False
            expected *= n
        return True


def significant_strides(t: Layout) -> tuple:
    """The strides that decide where elements are: those of dims longer than 1 (none for an empty tensor)."""
    if t.numel == 0:
        return ()
    return tuple(s if n > 1 else None for n, s in zip(t.shape, t.strides, strict=True))


COPIES_X, ROW_MAJOR = (
    "copies x's strides",
    "row-major",
)  # how a fake may lay out every output (fake_layout)


def fake_layout(outputs: list[tuple[Layout, Layout]]) -> str | None:
    """How the fake laid out its outputs, (x, fake output) over every input: with x's strides each time (as
    torch.empty_like(x)), or row-major each time (as torch.empty(x.shape)); None when neither (the transposed
    input tells the two apart)."""
    if all(significant_strides(out) == significant_strides(x) for x, out in outputs):
        return COPIES_X
    if all(out.is_contiguous() for _x, out in outputs):
        return ROW_MAJOR
    return None


def _strides_message(said: str, x, fake, real, layout: str | None) -> str:
    why = {
        COPIES_X: _("your fake's outputs all have x's strides, as torch.empty_like(x) gives"),
        ROW_MAJOR: _(
            "your fake's outputs are all row-major (the last dim innermost), as torch.empty(x.shape) gives"
        ),
    }
    return _(
        "{said} strides {got}; the kernel's output has {want} (x's are {xs}): {why}. The kernels write rows "
        "along dim, so dim is the innermost dimension (stride 1) whatever x's layout. Inductor trusts the "
        "fake: its code would read the output with the wrong strides."
    ).format(
        said=said,
        got=fake.strides,
        want=real.strides,
        xs=x.strides,
        why=why.get(layout, _("their layout does not follow dim")),
    )


def fake_mismatch(
    case: str, x: Layout, fake: dict, real: Layout, layout: str | None = None
) -> str | None:
    """What the fake's output (the worker's description of it) gets wrong against the real one's, said for this
    input; None when it is right. `layout`: how the fake laid out all its outputs (fake_layout)."""
    if "kind" in fake:
        return _("for x {case}, softmax_fake returned a {kind}, not a tensor").format(
            case=case, kind=fake["kind"]
        )
    fake = Layout.sent(fake)
    said = _("for x {case}, your fake says").format(case=case)
    if fake.shape != real.shape:
        return _("{said} shape {got}; the op returns {want}: softmax keeps x's shape").format(
            said=said, got=fake.shape, want=real.shape
        )
    if fake.dtype != real.dtype:
        return _("{said} dtype {got}; the op returns {want}, x's dtype").format(
            said=said, got=fake.dtype, want=real.dtype
        )
    if fake.device != real.device:
        return _("{said} device {got}; the op's output is on {want}: allocate on x.device").format(
            said=said, got=fake.device, want=real.device
        )
    if significant_strides(fake) != significant_strides(real):
        return _strides_message(said, x, fake, real, layout)
    return None


def grade_fake_outputs(ctx: LabContext, found: dict) -> bool:
    """The learner's fake, called on fake tensors in the worker (piece_probes.fake_outputs), against the op's
    real outputs, made here; True when all match."""
    cases = fake_cases(ctx.device)
    if "raised" in found:
        return _fake_raised(ctx, found["raised"])
    wrong, outputs = [], {}
    for case, (x, dim) in cases.items():
        out = found["outputs"][case]
        if out.get("is_x"):
            wrong.append(
                _(
                    "for x {case}, softmax_fake returned x itself: the op returns a new tensor"
                ).format(case=case)
            )
            continue
        outputs[case] = (Layout.of(x), out, Layout.of(torch_pieces.forward(x, dim)))
    layout = fake_layout(
        [(x, Layout.sent(out)) for x, out, _real in outputs.values() if "kind" not in out]
    )
    for case, (x, out, real) in outputs.items():
        wrong += [m for m in [fake_mismatch(case, x, out, real, layout)] if m]
    ctx.check_equal(
        _("softmax_fake: outputs like the real op's (shape, dtype, device, strides)"),
        len(cases) - len(wrong),
        len(cases),
        message=wrong[0] if wrong else None,
    )
    return not wrong


def _fake_raised(ctx: LabContext, raised: str) -> bool:
    ctx.check_equal(
        _("softmax_fake runs on fake tensors"),
        raised,
        _("no error"),
        message=_(
            "A fake implementation gets fake tensors: shapes, dtypes, strides and a device, but no data. "
            "Reading values (.item(), .tolist(), a tensor in an `if`) or launching a kernel fails there: "
            "compute only the output's metadata, and allocate it with torch.empty"
        ),
    )
    return False


def saved_names(saved: tuple, x: torch.Tensor, y: torch.Tensor) -> list[str]:
    """Each saved tensor named 'x', 'y' or 'another tensor', by its values."""

    def name(t):
        if t.shape == x.shape and torch.equal(t, x):
            return "x"
        if t.shape == y.shape and torch.equal(t, y):
            return "y"
        return "another tensor"

    return [name(t) for t in saved]


SAVED_MESSAGES = {  # what setup_context saved (names of saved_names) -> what is wrong with it
    ("x",): N_(
        "setup_context saved x, the input. The backward's formula dx = y * (dy - sum(dy * y)) needs y, the "
        "output (from x it would have to compute the softmax again): ctx.save_for_backward(output)"
    ),
    (): N_(
        "setup_context saved no tensor with ctx.save_for_backward (a tensor kept as a ctx attribute escapes "
        "autograd's saved-tensor checks): ctx.save_for_backward(output)"
    ),
    ("x", "y"): N_(
        "setup_context saved x and y: the backward needs y only, and saving x keeps it in memory "
        "until the backward for nothing"
    ),
}


def saved_input(device: str) -> torch.Tensor:
    """x of the setup_context exercise's call y = op(x, -1): (4, 7) float64."""
    return torch.randn(4, 7, generator=torch.Generator().manual_seed(6), dtype=torch.float64).to(
        device
    )


def grade_saved(ctx: LabContext, x: torch.Tensor, found: dict) -> bool:
    """What the learner's setup_context left on the autograd node of y = op(x, -1) (piece_probes.saved): y
    saved, dim as ctx.dim."""
    saved = saved_names(found["saved"], x, found["y"])
    message = SAVED_MESSAGES.get(
        tuple(sorted(saved)), N_("setup_context must save y (the output) only")
    )
    ok = ctx.check_equal(
        _("setup_context saved y (the output) for the backward"), saved, ["y"], message=_(message)
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
    """x and dy, (4, 7) float64, of the backward exercise's one case."""
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(4, 7, generator=gen, dtype=torch.float64).to(device)
    return x, torch.randn(4, 7, generator=gen, dtype=torch.float64).to(device)


def returned(problem: dict) -> str:
    """What a backward returned instead of (dx, None), from learner_op.pair_problem's values."""
    if "single" in problem:
        return _("a single {kind}").format(kind=problem["single"])
    if "n" in problem:
        return _("a {kind} of {n}").format(kind=problem["kind"], n=problem["n"])
    if "dx" in problem:
        return _("a pair whose dx is {got}, where x is {shape} {dtype}").format(
            got=problem["dx"], shape=problem["shape"], dtype=problem["dtype"]
        )
    return _("a pair whose second entry, the gradient for dim (an int), is a {kind}").format(
        kind=problem["second"]
    )


def grade_gradients(
    ctx: LabContext, x: torch.Tensor, dy: torch.Tensor, found: dict, diagnoses: tuple
) -> bool:
    """The learner's backward on one float64 case (piece_probes.gradient): one gradient per input, then dx
    against the exact formula, a wrong one named by `diagnoses` (the exercise's)."""
    if "count" in found:
        what = returned(found["count"])
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
    exact = y * (dy - (dy * y).sum(-1, keepdim=True))
    err = (dx - exact).abs().max().item()
    return ctx.check_max(
        _("backward: dx against the exact gradient (float64, relative to its largest entry)"),
        err / exact.abs().max().item(),
        1e-12,  # float64 rounding of a 7-term sum: ~1e-16 relative
        message=diagnose(diagnoses, Evidence("dx", dx, exact, facts={"y": y, "dy": dy}))[1],
    ).passed
