"""What a learner's fake, setup_context and backward got wrong (the exercises of the registration's pieces), as
data (declarations/diagnosis.py), declared by those exercises and read by registration_grading.py: each Diagnosis
compares what the piece gave with what a typical mistake would have produced, the first that shows winning.

No diagnosis names a short `mistake`: these exercises report a mistake in the message of the check that shows it,
not in a check of their own. Cheap to import (exercises.py imports it): no torch here, tensor methods only.
"""

import math

from workshop.declarations.diagnosis import Diagnosis
from workshop.i18n import N_, _


def _sum_dy_y(evidence):
    """(rows, 1): sum(dy * y) along each row of the backward exercise's case."""
    return (evidence.facts["dy"] * evidence.facts["y"]).sum(-1, keepdim=True)


def _dx_is(evidence, prediction) -> dict | None:
    """{} when the learner's dx is what a mistake predicts (float64: to within rounding), else None."""
    return {} if evidence.got.allclose(prediction, rtol=1e-9, atol=1e-12) else None


# The backward exercise's dx (a function: backward(ctx, dy)), against the exact gradient on one float64 (4, 7) case:
# Evidence(output="dx", got=the learner's dx, want=the exact dx, facts={"y", "dy": the case's}).
GRADIENT = (
    Diagnosis(
        None,
        lambda e: _dx_is(e, e.facts["dy"] * (e.facts["y"] - _sum_dy_y(e))),
        N_("backward passed y and dy the wrong way round: ctx.ops.backward(y, dy, ctx.dim)"),
    ),
    Diagnosis(
        None,
        lambda e: _dx_is(e, e.facts["y"] * e.facts["dy"]),
        N_("backward returns y * dy: the sum term is missing (dx = y * (dy - sum(dy * y)))"),
    ),
    Diagnosis(None, lambda e: _dx_is(e, -e.want), N_("backward's dx has the wrong sign")),
    Diagnosis(
        None,
        lambda e: {},
        N_("backward's dx is not y * (dy - sum(dy * y)): use ctx.ops.backward(y, dy, ctx.dim)"),
    ),
)


# How a fake may lay out every output (registration_grading.fake_layout): the facts its strides message reads.
COPIES_X, ROW_MAJOR = "copies x's strides", "row-major"


def placed(layout: dict) -> tuple:
    """The strides that decide where a tensor's elements are (its registration_grading.layout): those of dims
    longer than 1 (none for an empty tensor)."""
    if math.prod(layout["shape"]) == 0:
        return ()
    return tuple(
        s if n > 1 else None for n, s in zip(layout["shape"], layout["strides"], strict=True)
    )


def _fake_says(evidence, field: str) -> dict | None:
    """The fake's output and the real one's differ in `field` (shape, dtype, device): what its message says."""
    got, want = evidence.got[field], evidence.want[field]
    if got == want:
        return None
    return {
        "said": _("for x {case}, your fake says").format(case=evidence.output),
        "got": got,
        "want": want,
    }


def _fake_strides(evidence) -> dict | None:
    """The fake's output and the real one's differ where it matters (placed): the strides, and the layout the
    fake gave all its outputs."""
    if placed(evidence.got) == placed(evidence.want):
        return None
    why = {
        COPIES_X: _("your fake's outputs all have x's strides, as torch.empty_like(x) gives"),
        ROW_MAJOR: _(
            "your fake's outputs are all row-major (the last dim innermost), as torch.empty(x.shape) gives"
        ),
    }
    return {
        **_fake_says(evidence, "strides"),
        "xs": evidence.facts["x"]["strides"],
        "why": why.get(evidence.facts["layout"], _("their layout does not follow dim")),
    }


# The fake exercise's output for one input (Evidence.output: the input, "(4, 6) float64, dim=0"), against the real
# op's: got, its registration_grading.layout (None where it returned x itself or no tensor), want the real output's;
# facts: "is_x" (it returned x itself), "returned" (the type it returned instead of a tensor, or None), "x" (x's
# layout), "layout" (COPIES_X, ROW_MAJOR or None: how it laid out all its outputs).
FAKE_OUTPUT = (
    Diagnosis(
        None,
        lambda e: {"case": e.output} if e.facts["is_x"] else None,
        N_("for x {case}, softmax_fake returned x itself: the op returns a new tensor"),
    ),
    Diagnosis(
        None,
        lambda e: {"case": e.output, "kind": e.facts["returned"]} if e.facts["returned"] else None,
        N_("for x {case}, softmax_fake returned a {kind}, not a tensor"),
    ),
    Diagnosis(
        None,
        lambda e: _fake_says(e, "shape"),
        N_("{said} shape {got}; the op returns {want}: softmax keeps x's shape"),
    ),
    Diagnosis(
        None,
        lambda e: _fake_says(e, "dtype"),
        N_("{said} dtype {got}; the op returns {want}, x's dtype"),
    ),
    Diagnosis(
        None,
        lambda e: _fake_says(e, "device"),
        N_("{said} device {got}; the op's output is on {want}: allocate on x.device"),
    ),
    Diagnosis(
        None,
        _fake_strides,
        N_(
            "{said} strides {got}; the kernel's output has {want} (x's are {xs}): {why}. The kernels write rows "
            "along dim, so dim is the innermost dimension (stride 1) whatever x's layout. Inductor trusts the "
            "fake: its code would read the output with the wrong strides."
        ),
    ),
)

# What the setup_context exercise saved with ctx.save_for_backward: Evidence(output="saved", got=the saved
# tensors' names, sorted (registration_grading.saved_names: "x", "y", "another tensor")), when it is not ("y",).
SAVED = (
    Diagnosis(
        None,
        lambda e: {} if e.got == ("x",) else None,
        N_(
            "setup_context saved x, the input. The backward's formula dx = y * (dy - sum(dy * y)) needs y, the "
            "output (from x it would have to compute the softmax again): ctx.save_for_backward(output)"
        ),
    ),
    Diagnosis(
        None,
        lambda e: {} if e.got == () else None,
        N_(
            "setup_context saved no tensor with ctx.save_for_backward (a tensor kept as a ctx attribute escapes "
            "autograd's saved-tensor checks): ctx.save_for_backward(output)"
        ),
    ),
    Diagnosis(
        None,
        lambda e: {} if e.got == ("x", "y") else None,
        N_(
            "setup_context saved x and y: the backward needs y only, and saving x keeps it in memory "
            "until the backward for nothing"
        ),
    ),
    Diagnosis(None, lambda e: {}, N_("setup_context must save y (the output) only")),
)
