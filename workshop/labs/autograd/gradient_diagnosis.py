"""What a wrong gradient says about the mistake that made it: the pointed message of a failed hand-gradient check.

Each rule looks at the learner's output next to autograd's and names one typical mistake when the output shows
it: not a tensor, a transposed or mis-summed shape, NaN/inf from an unshifted softmax, the wrong dtype, the
<pad> mask dropped or put on the wrong axis, or the right direction at the wrong scale (a sum where the loss is
a mean, a sign). The first rule that recognises the output speaks; otherwise the message says where the error is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from workshop.i18n import _
from workshop.minigpt.model import PAD_ID

SCALE_RTOL = 1e-3  # got = r * want to this relative residual counts as "a constant factor off"


@dataclass
class Evidence:
    name: str  # "loss", "dlogits", "dW", "db", "dx"
    got: object  # what the learner returned
    want: torch.Tensor  # autograd's value
    targets: torch.Tensor  # (B, T) int64, PAD_ID where nothing is predicted
    largest_logit: float | None = None  # what exp() was given, for the cross-entropy's outputs

    @property
    def pad(self) -> torch.Tensor:
        return self.targets.reshape(-1) == PAD_ID  # (M,) True on <pad> rows

    @property
    def n_real(self) -> int:
        return int((~self.pad).sum())


def diagnose(e: Evidence) -> str:
    for rule in (not_a_tensor, wrong_shape, not_finite, wrong_dtype, pad_column, pad_rows, scaled):
        message = rule(e)
        if message:
            return message
    return where_it_differs(e)


def not_a_tensor(e: Evidence) -> str | None:
    if isinstance(e.got, torch.Tensor):
        return None
    return _("{name} is a {kind}, not a tensor").format(name=e.name, kind=type(e.got).__name__)


def wrong_shape(e: Evidence) -> str | None:
    got, want = tuple(e.got.shape), tuple(e.want.shape)
    if got == want:
        return None
    head = _("{name} has shape {got}, expected {want}").format(name=e.name, got=got, want=want)
    if len(got) == 2 and got == want[::-1]:
        why = _("transposed: dW = G^T X has W's shape (V, C); X^T G is its transpose")
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
    return f"{head}: {why}"


def not_finite(e: Evidence) -> str | None:
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
    else:
        why = _("look for a division by zero or the log of zero")
    return f"{head}: {why}"


def wrong_dtype(e: Evidence) -> str | None:
    if e.got.dtype == e.want.dtype:
        return None
    return _(
        "{name} is {got}, the inputs are {want}: compute in the inputs' dtype "
        "(make masks and one-hot tensors with dtype=logits.dtype)"
    ).format(name=e.name, got=e.got.dtype, want=e.want.dtype)


def pad_column(e: Evidence) -> str | None:
    """dL/dlogits with the column of the class <pad> zeroed where real rows need it: the mask's wrong axis."""
    if e.name != "dlogits":
        return None
    got = e.got.reshape(-1, e.got.shape[-1])[~e.pad, PAD_ID]  # (N,) the <pad> column, real rows
    want = e.want.reshape(-1, e.want.shape[-1])[~e.pad, PAD_ID]
    if bool((got != 0).any()) or not bool((want != 0).any()):
        return None
    return _(
        "the column of the class <pad> (id {pad}) is zero on the real rows: the mask applies to the "
        "positions whose target is <pad> (rows), not to the class <pad> (a column)"
    ).format(pad=PAD_ID)


def pad_rows(e: Evidence) -> str | None:
    """Gradient on the rows whose target is <pad>, where autograd's is exactly zero."""
    if e.name not in ("dlogits", "dx") or e.got.ndim < 2:
        return None
    rows = e.got.reshape(-1, e.got.shape[-1])  # (M, last)
    if not e.pad.any() or not bool((rows[e.pad] != 0).any()):
        return None
    n_pad = int(e.pad.sum())
    if bool((rows[~e.pad].abs().amax(dim=1) == 0).any()):
        return _(
            "{name} is zero on some real rows and not on the <pad> rows: the mask is misaligned; "
            "flatten targets (B, T) the way you flatten the logits, row b*T + t"
        ).format(name=e.name)
    return _(
        "the {n_pad} rows whose target is <pad> have a nonzero {name}: the <pad> mask was dropped; "
        "keep only the real rows (target != <pad>) and divide by their number N = {n}"
    ).format(n_pad=n_pad, name=e.name, n=e.n_real)


def scaled(e: Evidence) -> str | None:
    """got = r * want: the right direction with a wrong factor, named when it is a typical one."""
    got, want = e.got.to(e.want.dtype), e.want
    r = float((got * want).sum() / (want * want).sum())
    if float((got - r * want).abs().max()) > SCALE_RTOL * float(want.abs().max()):
        return None
    n, m = e.n_real, e.pad.numel()
    known = {
        float(n): _("a sum over the {n} real targets where the loss is their mean: divide by N"),
        1 / n: _("divided by N twice: dL/dlogits already carries the mean's 1/N"),
        n / m: _(
            "divided by all {m} positions, <pad> included: divide by the N = {n} real targets"
        ),
        -1.0: _("the sign is flipped: dL/dz = P - Y (softmax minus one-hot), not Y - P"),
    }
    head = _("{name} is {r:.8g} times autograd's").format(name=e.name, r=r)
    for factor, why in known.items():
        if abs(r - factor) <= SCALE_RTOL * abs(factor):
            return f"{head}: {why.format(n=n, m=m)}"
    return _("{head}: the right direction at the wrong scale").format(head=head)


def where_it_differs(e: Evidence) -> str:
    diff = (e.got.to(e.want.dtype) - e.want).abs()
    where = tuple(int(i) for i in torch.unravel_index(diff.argmax(), diff.shape))
    return _(
        "{name} differs from autograd's by up to {rel:.2g} of its largest entry, worst at index "
        "{where}: not a constant factor, a mask or a shape; re-derive it"
    ).format(name=e.name, rel=float(diff.max() / e.want.abs().max()), where=where)
