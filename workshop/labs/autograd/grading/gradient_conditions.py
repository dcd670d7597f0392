"""What a wrong gradient shows: the conditions the hand-gradient exercises' diagnoses read
(gradient_diagnosis.py), each on one output of the learner's function next to autograd's (an Evidence).

A condition returns None where the output does not show it, else the values its diagnosis's message is
formatted with ({} for none). They use tensor methods and the facts the case builder measured (hand_cases.py:
the <pad> rows `pad`, their id `pad_id`, N real targets `n` of `m` positions, exp's overflow limit `limit`, the
largest logit `largest`, the loss over every position `over_all`, ...): this module imports no torch at import
time, so that the declaration stays cheap to import.
"""

from __future__ import annotations

import math

from workshop.declarations.diagnosis import Evidence

SCALE_RTOL = 1e-3  # got = r * want to this relative residual counts as "a constant factor off"
# Agreement to at least this relative error is read as precision (digits), not as a factor or a formula.
PRECISION_RTOL = 1e-3
# float32 rounding, accumulated: 64 units of float32's eps (2^-23), 7.6e-6 relative
FLOAT32_REACH = 64 * 2.0**-23


def all_of(*conditions):
    """A condition that shows where each of `conditions` does, with all their values."""

    def shows(e: Evidence) -> dict | None:
        values = {}
        for condition in conditions:
            found = condition(e)
            if found is None:
                return None
            values |= found
        return values

    return shows


def not_a_tensor(e: Evidence) -> dict | None:
    import torch  # only a wrong output pays for it; the declaration imports no torch

    return None if isinstance(e.got, torch.Tensor) else {"kind": type(e.got).__name__}


def wrong_shape(e: Evidence) -> dict | None:
    got, want = tuple(e.got.shape), tuple(e.want.shape)
    return None if got == want else {"got": got, "want": want}


def transposed(e: Evidence) -> dict | None:
    got, want = tuple(e.got.shape), tuple(e.want.shape)
    return {} if len(got) == 2 and got == want[::-1] else None


def as_many_entries(e: Evidence) -> dict | None:
    return {} if e.got.numel() == e.want.numel() else None


def not_finite(e: Evidence) -> dict | None:
    bad = int((~e.got.isfinite()).sum())
    return {"k": bad, "size": e.got.numel()} if bad else None


def exp_overflowed(e: Evidence) -> dict | None:
    largest = e.facts.get("largest")
    return {} if largest is not None and largest > e.facts["limit"] else None


def wrong_dtype(e: Evidence) -> dict | None:
    return None if e.got.dtype == e.want.dtype else {"got": e.got.dtype, "want": e.want.dtype}


def real_rows(t, pad):
    """The rows of t (flattened to (M, last)) whose target is not <pad>."""
    return t.reshape(-1, t.shape[-1])[~pad]


def pad_column_zeroed(e: Evidence) -> dict | None:
    """dL/dlogits with the column of the class <pad> zeroed where real rows need it: the mask's wrong axis."""
    pad, pad_id = e.facts["pad"], e.facts["pad_id"]
    got, want = real_rows(e.got, pad)[:, pad_id], real_rows(e.want, pad)[:, pad_id]  # (N,) each
    return {} if not bool((got != 0).any()) and bool((want != 0).any()) else None


def gradient_on_pad_rows(e: Evidence) -> dict | None:
    """Gradient on the rows whose target is <pad>, where autograd's is exactly zero (dL/dlogits, dL/dx)."""
    pad = e.facts["pad"]
    if e.output not in ("dlogits", "dx") or e.got.ndim < 2 or not bool(pad.any()):
        return None
    return {} if bool((e.got.reshape(-1, e.got.shape[-1])[pad] != 0).any()) else None


def zero_real_rows(e: Evidence) -> dict | None:
    return {} if bool((real_rows(e.got, e.facts["pad"]).abs().amax(dim=1) == 0).any()) else None


def loss_over_every_position(e: Evidence) -> dict | None:
    """The loss as the mean over every position, <pad> targets scored like real ones."""
    over_all = e.facts.get("over_all")
    if over_all is None or not e.facts["n_pad"]:
        return None
    return {} if abs(float(e.got) - over_all) <= PRECISION_RTOL * abs(over_all) else None


def fewer_digits(e: Evidence) -> dict | None:
    """An output that agrees with autograd's to a few digits fewer than its dtype keeps: rounding, not a
    formula."""
    rel = float((e.got.to(e.want.dtype) - e.want).abs().max() / e.want.abs().max())
    return {"digits": -math.log10(rel), "rel": rel} if 0 < rel <= PRECISION_RTOL else None


def float32_digits(e: Evidence) -> dict | None:
    """float32's digits in a float64 computation."""
    rel = float((e.got.to(e.want.dtype) - e.want).abs().max() / e.want.abs().max())
    return {} if e.facts["float64"] and rel <= FLOAT32_REACH else None


def constant_factor(e: Evidence) -> dict | None:
    """r where got = r * want explains the error (what remains is under 1% of it). A single number (the loss)
    is r times its reference for some r: its ratio is returned, read only where it equals a factor that names
    a mistake exactly."""
    got, want = e.got.to(e.want.dtype), e.want
    r = float((got * want).sum() / (want * want).sum())
    if want.numel() < 2:
        return {"r": r}
    residual, error = float((got - r * want).abs().max()), float((got - want).abs().max())
    return {"r": r} if residual <= 0.01 * error else None


def many_entries(e: Evidence) -> dict | None:
    return {} if e.want.numel() > 1 else None


def one_entry(e: Evidence) -> dict | None:
    return {} if e.want.numel() == 1 else None


def divided_by(e: Evidence) -> dict | None:
    """Only what divides by N: dL/dlogits and the loss."""
    return {} if e.output in ("dlogits", "loss") else None


def one_over_n_in_float32(e: Evidence) -> dict | None:
    """A factor that is 1/N rounded to float32: fl32(1/N) * N (the case's fact `one_over_n32`)."""
    r, near = constant_factor(e)["r"], e.facts["one_over_n32"]
    return {} if abs(r - near) <= 1e-3 * abs(1 - near) else None


def epsilon_in_the_mean(e: Evidence) -> dict | None:
    """A factor N / (N + epsilon), epsilon a power of ten."""
    n = e.facts["n"]
    epsilon = n / constant_factor(e)["r"] - n
    if epsilon > 0 and abs(math.log10(epsilon) - round(math.log10(epsilon))) < 0.01:
        return {"eps": epsilon}
    return None


def constant_factor_described(e: Evidence) -> dict | None:
    """A constant factor that names no mistake, described where there are entries to be alike."""
    return constant_factor(e) if e.want.numel() >= 2 else None


def scaled(e: Evidence) -> dict | None:
    """got = r * want: the right direction with a wrong factor."""
    got, want = e.got.to(e.want.dtype), e.want
    r = float((got * want).sum() / (want * want).sum())
    if float((got - r * want).abs().max()) > SCALE_RTOL * float(want.abs().max()):
        return None
    return {"r": r}


def scaled_by(factor):
    """got = factor(facts) * want, to SCALE_RTOL: a typical factor."""

    def shows(e: Evidence) -> dict | None:
        found, want = scaled(e), factor(e.facts)
        return found if found and abs(found["r"] - want) <= SCALE_RTOL * abs(want) else None

    return shows


def where_it_differs(e: Evidence) -> dict:
    import torch  # only a wrong output pays for it; the declaration imports no torch

    diff = (e.got.to(e.want.dtype) - e.want).abs()
    where = tuple(
        int(i) for i in torch.unravel_index(diff.argmax(), diff.shape)
    )  # one index per axis
    return {"rel": float(diff.max() / e.want.abs().max()), "where": where}
