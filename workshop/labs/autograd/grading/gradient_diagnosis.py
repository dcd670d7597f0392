"""What a wrong gradient says about the mistake that made it: the diagnosis of a failed hand-gradient check.

Each rule looks at the learner's output next to autograd's and names one typical mistake when the output shows
it: not a tensor, a transposed or mis-summed shape, NaN/inf from an unshifted softmax, the wrong dtype, the
<pad> mask dropped or put on the wrong axis, the <pad> positions averaged into the loss, a result that agrees
only to a lower precision's digits (a float32 step in a float64 computation, an epsilon in a denominator), a
typical factor (a sum where the loss is a mean, a sign). The first rule that recognises the output speaks;
otherwise the message only says where the error is, and names no mistake.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from workshop.i18n import N_, _
from workshop.minigpt.model import PAD_ID

SCALE_RTOL = 1e-3  # got = r * want to this relative residual counts as "a constant factor off"
# Agreement to at least this relative error is read as precision (digits), not as a factor or a formula.
PRECISION_RTOL = 1e-3
# float32 rounding, accumulated: 7.6e-6 relative
FLOAT32_REACH = 64 * torch.finfo(torch.float32).eps


@dataclass
class Evidence:
    name: str  # "loss", "dlogits", "dW", "db", "dx"
    got: object  # what the learner returned
    want: torch.Tensor  # autograd's value
    targets: torch.Tensor  # (B, T) int64, PAD_ID where nothing is predicted
    largest_logit: float | None = None  # what exp() was given, for the cross-entropy's outputs
    logits: torch.Tensor | None = None  # (B, T, V) the cross-entropy's input, for its loss

    @property
    def pad(self) -> torch.Tensor:
        return self.targets.reshape(-1) == PAD_ID  # (M,) True on <pad> rows

    @property
    def n_real(self) -> int:
        return int((~self.pad).sum())


@dataclass
class Diagnosis:
    """What a wrong output shows: the mistake's short name when a rule recognised one, and the message."""

    # N_() name of the mistake; None: the message describes the error, names no mistake
    mistake: str | None
    message: str


def diagnose(e: Evidence) -> Diagnosis:
    rules = (
        not_a_tensor,
        wrong_shape,
        not_finite,
        wrong_dtype,
        pad_column,
        pad_rows,
        pad_in_loss,
        precision,
        scaled,
    )
    for rule in rules:
        found = rule(e)
        if found:
            return found
    return where_it_differs(e)


def not_a_tensor(e: Evidence) -> Diagnosis | None:
    if isinstance(e.got, torch.Tensor):
        return None
    message = _("{name} is a {kind}, not a tensor").format(name=e.name, kind=type(e.got).__name__)
    return Diagnosis(N_("not a tensor"), message)


def wrong_shape(e: Evidence) -> Diagnosis | None:
    got, want = tuple(e.got.shape), tuple(e.want.shape)
    if got == want:
        return None
    head = _("{name} has shape {got}, expected {want}").format(name=e.name, got=got, want=want)
    mistake = N_("the wrong shape")
    if len(got) == 2 and got == want[::-1]:
        mistake = N_("a transposed gradient")
        why = _("transposed: dW has W's shape (V, C), not its transpose's")
    elif e.name == "db":
        why = _("db has one entry per class: sum G over every position (all axes but the last)")
    elif e.name == "loss":
        why = _("return one number, a 0-dim tensor: the mean over the real targets")
    elif e.got.numel() == e.want.numel():
        why = _("the right number of entries in the wrong shape: reshape to {want}").format(
            want=want
        )
    else:
        why = _("check which axes you summed or reshaped")
    return Diagnosis(mistake, f"{head}: {why}")


def not_finite(e: Evidence) -> Diagnosis | None:
    bad = ~torch.isfinite(e.got)
    if not bad.any():
        return None
    head = _("{name} has {k} NaN or inf entries of {n}").format(
        name=e.name, k=int(bad.sum()), n=e.got.numel()
    )
    limit = math.log(torch.finfo(e.want.dtype).max)  # exp() overflows past this
    if e.largest_logit is not None and e.largest_logit > limit:
        why = _(
            "exp() of logits up to {largest:.0f} overflows ({dtype} overflows past {limit:.1f}): "
            "subtract each row's max before exp(), which leaves the softmax unchanged"
        ).format(largest=e.largest_logit, dtype=e.want.dtype, limit=limit)
        return Diagnosis(N_("no max shift before exp()"), f"{head}: {why}")
    why = _("look for a division by zero or the log of zero")
    return Diagnosis(N_("NaN or inf"), f"{head}: {why}")


def wrong_dtype(e: Evidence) -> Diagnosis | None:
    if e.got.dtype == e.want.dtype:
        return None
    message = _(
        "{name} is {got}, the inputs are {want}: compute in the inputs' dtype "
        "(make masks and one-hot tensors with dtype=logits.dtype)"
    ).format(name=e.name, got=e.got.dtype, want=e.want.dtype)
    return Diagnosis(N_("the wrong dtype"), message)


def pad_column(e: Evidence) -> Diagnosis | None:
    """dL/dlogits with the column of the class <pad> zeroed where real rows need it: the mask's wrong axis."""
    if e.name != "dlogits":
        return None
    got = e.got.reshape(-1, e.got.shape[-1])[~e.pad, PAD_ID]  # (N,) the <pad> column, real rows
    want = e.want.reshape(-1, e.want.shape[-1])[~e.pad, PAD_ID]
    if bool((got != 0).any()) or not bool((want != 0).any()):
        return None
    message = _(
        "the column of the class <pad> (id {pad}) is zero on the real rows: the mask applies to the "
        "positions whose target is <pad> (rows), not to the class <pad> (a column)"
    ).format(pad=PAD_ID)
    return Diagnosis(N_("the <pad> mask on the class column"), message)


def pad_rows(e: Evidence) -> Diagnosis | None:
    """Gradient on the rows whose target is <pad>, where autograd's is exactly zero."""
    if e.name not in ("dlogits", "dx") or e.got.ndim < 2:
        return None
    rows = e.got.reshape(-1, e.got.shape[-1])  # (M, last)
    if not e.pad.any() or not bool((rows[e.pad] != 0).any()):
        return None
    n_pad = int(e.pad.sum())
    if bool((rows[~e.pad].abs().amax(dim=1) == 0).any()):
        message = _(
            "{name} is zero on some real rows and not on the <pad> rows: the mask is misaligned; "
            "flatten targets (B, T) the way you flatten the logits, row b*T + t"
        ).format(name=e.name)
        return Diagnosis(N_("the <pad> mask misaligned"), message)
    message = _(
        "the {n_pad} rows whose target is <pad> have a nonzero {name}: the <pad> mask was dropped; "
        "keep only the real rows (target != <pad>) and divide by their number N = {n}"
    ).format(n_pad=n_pad, name=e.name, n=e.n_real)
    return Diagnosis(N_("<pad> positions counted"), message)


def pad_in_loss(e: Evidence) -> Diagnosis | None:
    """The loss as the mean over every position, <pad> targets scored like real ones."""
    if e.name != "loss" or e.logits is None or not e.pad.any():
        return None
    logits = e.logits.reshape(-1, e.logits.shape[-1]).double()  # (M, V)
    over_all = F.cross_entropy(logits, e.targets.reshape(-1))  # no ignore_index: <pad> counted
    if abs(float(e.got) - float(over_all)) > PRECISION_RTOL * abs(float(over_all)):
        return None
    message = _(
        "the loss is the mean over all {m} positions, the {n_pad} <pad> ones included: lm_loss "
        "averages over the N = {n} real targets only"
    ).format(m=e.pad.numel(), n_pad=int(e.pad.sum()), n=e.n_real)
    return Diagnosis(N_("<pad> positions counted"), message)


def precision(e: Evidence) -> Diagnosis | None:
    """An output that agrees with autograd's to a few digits fewer than its dtype keeps: rounding, not a
    formula. Named where the evidence allows: float32's digits in a float64 call, a constant factor that is 1/N
    rounded to float32, or N with an epsilon added."""
    rel = float((e.got.to(e.want.dtype) - e.want).abs().max() / e.want.abs().max())
    if not 0 < rel <= PRECISION_RTOL:
        return None
    kept = -math.log10(torch.finfo(e.want.dtype).eps)
    head = _(
        "{name} agrees with autograd's to about {digits:.0f} significant digits (max error "
        "{rel:.1e} of its largest entry); {dtype} keeps about {kept:.0f}"
    ).format(name=e.name, digits=-math.log10(rel), rel=rel, dtype=e.want.dtype, kept=kept)
    named = off_by_a_factor(e)
    if named is not None:
        return Diagnosis(named.mistake, f"{head}: {named.message}")
    if e.want.dtype == torch.float64 and rel <= FLOAT32_REACH:
        why = _(
            "that is float32's precision (about 7 digits): a step computed in float32 would explain "
            "it (a tensor made without dtype=logits.dtype, a .float(), a float32 constant)"
        )
        return Diagnosis(N_("a float32 step in a float64 computation"), f"{head}: {why}")
    why = _(
        "more than rounding explains: look for a small constant added (an epsilon) or a step in a "
        "lower precision"
    )
    return Diagnosis(None, f"{head}: {why}")


def off_by_a_factor(e: Evidence) -> Diagnosis | None:
    """What a constant factor a little off 1 says, where one explains the error: named by factor_near_one, or
    described. A single number's ratio is read only where it names a mistake exactly (any number is some
    factor off its reference)."""
    factor = constant_factor(e)
    if factor is None:
        return None
    named = factor_near_one(e, factor)
    if named is not None or e.want.numel() < 2:
        return named
    why = _(
        "every entry is off by the same factor, {r:.10g}: a constant a little off multiplies the "
        "result (rounding would differ from entry to entry)"
    ).format(r=factor)
    return Diagnosis(None, why)


def constant_factor(e: Evidence) -> float | None:
    """r where got = r * want explains the error (what remains is under 1% of it); None otherwise. A single
    number (the loss) is r times its reference for some r: its ratio is returned, read only where it equals
    a factor that names a mistake exactly."""
    got, want = e.got.to(e.want.dtype), e.want
    r = float((got * want).sum() / (want * want).sum())
    if want.numel() < 2:
        return r
    residual, error = float((got - r * want).abs().max()), float((got - want).abs().max())
    return r if residual <= 0.01 * error else None


def factor_near_one(e: Evidence, r: float) -> Diagnosis | None:
    """A factor r a little off 1, read as what divides by N: 1/N rounded to float32, or an epsilon added to N
    (a power of ten)."""
    n = e.n_real
    if e.name not in ("dlogits", "loss"):
        return None
    if e.want.numel() > 1:
        head = _("every entry is off by the same factor, {r:.10g}").format(r=r)
    else:
        head = _("it is {r:.10g} times autograd's").format(r=r)
    one_over_n32 = float(torch.tensor(1 / n, dtype=torch.float32)) * n  # fl32(1/N) * N
    if abs(r - one_over_n32) <= 1e-3 * abs(1 - one_over_n32):
        why = _(
            "that is 1/N = 1/{n} rounded to float32; compute the mask and N in the logits' dtype"
        ).format(n=n)
        return Diagnosis(N_("a float32 step in a float64 computation"), f"{head}: {why}")
    epsilon = n / r - n  # r = N / (N + epsilon)
    if epsilon > 0 and abs(math.log10(epsilon) - round(math.log10(epsilon))) < 0.01:
        why = _(
            "as if N = {n} were N + {eps:.0e}, an epsilon added to the mean's denominator; N counts "
            "real targets, at least 1, so the mean needs none"
        ).format(n=n, eps=epsilon)
        return Diagnosis(N_("an epsilon in a denominator"), f"{head}: {why}")
    return None


# Where a sign flipped, by the output that shows it: each names its own formula. linear_grads is given dL/dz,
# so its outputs' sign says nothing of P - Y: the minus is in that output's own line.
SIGN_FLIPPED = {
    "loss": N_("the sign is flipped: the loss is the mean of -log P[i, t_i], a positive number"),
    "dlogits": N_("the sign is flipped: dL/dz = P - Y (softmax minus one-hot), not Y - P"),
    "dW": N_("the sign of dW is flipped: dW = G^T X with G = dL/dz as given, no minus"),
    "db": N_(
        "the sign of db is flipped: db = the sum of G = dL/dz (as given) over the rows, no minus"
    ),
    "dx": N_("the sign of dx is flipped: dx = G W with G = dL/dz as given, no minus"),
}


def scaled(e: Evidence) -> Diagnosis | None:
    """got = r * want: the right direction with a wrong factor, named when it is a typical one."""
    got, want = e.got.to(e.want.dtype), e.want
    r = float((got * want).sum() / (want * want).sum())
    if float((got - r * want).abs().max()) > SCALE_RTOL * float(want.abs().max()):
        return None
    n, m = e.n_real, e.pad.numel()
    known = {
        float(n): (
            N_("a sum where the loss is a mean"),
            N_("a sum over the {n} real targets where the loss is their mean: divide by N"),
        ),
        1 / n: (
            N_("divided by N twice"),
            N_("divided by N twice: dL/dlogits already carries the mean's 1/N"),
        ),
        n / m: (
            N_("<pad> positions counted"),
            N_("divided by all {m} positions, <pad> included: divide by the N = {n} real targets"),
        ),
        -1.0: (N_("the sign flipped"), SIGN_FLIPPED[e.name]),
    }
    head = _("{name} is {r:.8g} times autograd's").format(name=e.name, r=r)
    for factor, (mistake, why) in known.items():
        if abs(r - factor) <= SCALE_RTOL * abs(factor):
            return Diagnosis(mistake, f"{head}: {_(why).format(n=n, m=m)}")
    return Diagnosis(None, _("{head}: the right direction at the wrong scale").format(head=head))


def where_it_differs(e: Evidence) -> Diagnosis:
    diff = (e.got.to(e.want.dtype) - e.want).abs()
    where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    message = _(
        "{name} differs from autograd's by up to {rel:.2g} of its largest entry, worst at index "
        "{where}: not a constant factor, a mask or a shape; re-derive it"
    ).format(name=e.name, rel=float(diff.max() / e.want.abs().max()), where=where)
    return Diagnosis(None, message)
