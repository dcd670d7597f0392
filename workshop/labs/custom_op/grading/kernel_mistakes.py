"""What a learner's kernel got wrong (the forward_kernel and backward_kernel exercises), as data
(declarations/diagnosis.py): each Diagnosis compares what the kernel wrote with what a typical mistake would have
produced (no max subtracted, masked lanes loading 0, the sum term left out, ...) and names the mistake whose
prediction it matches. The first that the output shows, in declared order, wins.

Each reads Evidence(output=the kernel's name, got=its KernelRun on one case (kernel_grading.py: what it wrote,
float64, its errors and tolerance, the launch plan), want=the float64 result, label=the case's, facts={"first":
whether the case is the first of kernel_grading.CASES, the one with special rows; "large_rows", "negative_row":
those rows}); the messages name the kernel as {name}. The exercises declare their wrong values' diagnoses
(FORWARD_VALUES, BACKWARD_VALUES); stray and missing writes (WRITES_OUTSIDE, UNWRITTEN) are the same for both.

No diagnosis names a short `mistake`: the kernel exercises report a mistake in the message of the check that shows
it (writes, values), not in a check of their own. Cheap to import (exercises.py imports it): no torch here, tensor
methods only.
"""

from workshop.declarations.diagnosis import Diagnosis
from workshop.i18n import N_, _


def _short(items: list[int]) -> str:
    return ", ".join(map(str, items[:6])) + (" ..." if len(items) > 6 else "")


def _close(run, prediction) -> bool:
    """The output is what the mistake predicts (within the case's tolerance, NaN where it predicts NaN)."""
    err = (run.out - prediction).abs()
    err = err.masked_fill(run.out.isnan() & prediction.isnan(), 0.0)
    return bool(err.nan_to_num(float("inf")).max() <= 4 * run.tolerance + 1e-12)


def _masked_lanes_zero(run):
    """The forward whose masked lanes load 0: BLOCK_N - n_cols extra exp(0 - m) terms, m >= 0."""
    x = run.inputs["x"]
    pad = run.plan[1]["BLOCK_N"] - run.case.cols
    m = x.max(-1, keepdim=True).values.clamp(min=0.0)
    e = (x - m).exp()
    return e / (e.sum(-1, keepdim=True) + pad * (-m).exp())


def _only_large_rows(evidence) -> dict | None:
    run, large = evidence.got, list(evidence.facts["large_rows"])
    bad = (
        run.errors.max(-1).values > run.tolerance
    )  # (rows,) bool: the rows whose error is past the tolerance
    # the first case's large rows are wrong, and no other row is
    if not (evidence.facts["first"] and bad[large].all()) or bad.sum() > len(large):
        return None
    values = run.out[large[0]]
    got = (
        "NaN"
        if values.isnan().any()
        else _("{value:.3g} at most").format(value=values.max().item())
    )
    return {"rows": evidence.facts["large_rows"], "got": got}


def _worst(evidence) -> dict:
    """Where the error is largest, and the values there."""
    run = evidence.got
    row, col = divmod(int(run.errors.argmax()), run.case.cols)
    return {
        "e": run.error,
        "row": row,
        "col": col,
        "got": run.out[row, col].item(),
        "want": run.expected[row, col].item(),
        "tol": run.tolerance,
    }


# Wrong values in either direction, after the direction's own: the accumulation type, then the largest error.
PRECISION_AND_WORST = (
    Diagnosis(
        None,
        lambda e: (
            {"e": e.got.error}
            if str(e.got.case.dtype) == "torch.float64" and e.got.error < 1e-5
            else None
        ),
        N_(
            "{name} is off by {e:.1e} in float64, float32's accuracy: compute in float64 for float64 "
            "inputs (_acc(x) does: float64 stays float64, the rest goes to float32). gradcheck needs it"
        ),
    ),
    Diagnosis(
        None,
        lambda e: (
            {"e": e.got.error, "tol": e.got.tolerance}
            if str(e.got.case.dtype) == "torch.bfloat16"
            else None
        ),
        N_(
            "{name} is off by {e:.1e} in bfloat16, more than torch.softmax ({tol:.1e} allowed): accumulate in "
            "float32 (_acc), and convert only the stored result to the output's dtype"
        ),
    ),
    Diagnosis(
        None,
        _worst,
        N_(
            "{name}'s largest error is {e:.3g} ({label}, row {row}, column {col}: {got!r} where {want!r} is "
            "right; {tol:.1e} allowed)"
        ),
    ),
)

# The forward's wrong values (softmax_fwd_kernel), read from the first case whose error is too large.
FORWARD_VALUES = (
    Diagnosis(
        None,
        _only_large_rows,
        N_(
            "{name} is right except on the rows of large logits (rows {rows}, x + 1000), which come out "
            "{got}: exp(1000) overflows. Subtract each row's max before exp: softmax(x) = softmax(x - max)"
        ),
    ),
    Diagnosis(
        None,
        lambda e: (
            {"row": e.facts["negative_row"]}
            if e.facts["first"] and _close(e.got, _masked_lanes_zero(e.got))
            else None
        ),
        N_(
            "{name}'s masked lanes load 0, not -inf: each adds exp(0 - max) to the row's sum (row "
            "{row}, all near -60, is off by a factor of e^60). Load with other=-float('inf')"
        ),
    ),
    Diagnosis(
        None,
        # rows that read the padding (1e4, kernel_grading's POISON) sum to about 0
        lambda e: (
            {"rows": _short((e.got.out.nan_to_num(0.0).sum(-1) < 0.5).nonzero().flatten().tolist())}
            if e.facts["first"] and (e.got.out.nan_to_num(0.0).sum(-1) < 0.5).any()
            else None
        ),
        N_(
            "{name}'s rows {rows} sum to about 0, not 1: they read a value from past the end of the row "
            "(the padding holds 1e4, which then dominates). Mask the loads with cols < n_cols"
        ),
    ),
    *PRECISION_AND_WORST,
)


def _y_dy(evidence):
    return evidence.got.inputs["y"], evidence.got.inputs["dy"]


# The backward's wrong values (softmax_bwd_kernel): each prediction from the case's float64 y and dy.
BACKWARD_VALUES = (
    Diagnosis(
        None,
        lambda e: {} if _close(e.got, _y_dy(e)[0] * _y_dy(e)[1]) else None,
        N_(
            "{name} returns y * dy: the sum term is missing. dx = y * (dy - sum(dy * y)) along the row; "
            "without it the rows of dx do not sum to 0, as they must (softmax's outputs always sum to 1)"
        ),
    ),
    Diagnosis(
        None,
        lambda e: {} if _close(e.got, -e.want) else None,
        N_("{name} has the sign flipped: dx = y * (dy - sum(dy * y)), not y * (sum - dy)"),
    ),
    Diagnosis(
        None,
        lambda e: (
            {}
            if _close(e.got, _y_dy(e)[1] - (_y_dy(e)[1] * _y_dy(e)[0]).sum(-1, keepdim=True))
            else None
        ),
        N_("{name} returns dy - sum(dy * y): multiply by y"),
    ),
    Diagnosis(
        None,
        lambda e: {} if e.got.out.isnan().any() else None,
        N_(
            "{name} writes NaN ({label}): masked lanes must load 0 for y and dy (other=0.0), so that they "
            "add nothing to sum(dy * y)"
        ),
    ),
    *PRECISION_AND_WORST,
)

# Which mask let a store out, from where the guards around the output changed (KernelRun.outside).
WRITES_OUTSIDE = (
    Diagnosis(
        None,
        lambda e: {"n": e.got.outside["row padding"]} if e.got.outside["row padding"] else None,
        N_(
            "{name} wrote past the end of a row ({n} cells of the padding after the rows, {label}): the "
            "column mask must stop at cols < n_cols"
        ),
    ),
    Diagnosis(
        None,
        lambda e: (
            {"n": e.got.outside["rows after"], "last": e.got.case.rows - 1}
            if e.got.outside["rows after"]
            else None
        ),
        N_(
            "{name} wrote rows past the last one ({n} cells after row {last}, {label}): the last program's "
            "rows past n_rows must be masked (rows < n_rows)"
        ),
    ),
    Diagnosis(
        None,
        lambda e: {"n": e.got.outside["rows before"]},
        N_("{name} wrote before the first row ({n} cells, {label}): check the row offsets"),
    ),
)


def _unwritten_rows(evidence) -> list[int]:
    """The rows the kernel wrote nothing of."""
    return evidence.got.unwritten.all(-1).nonzero().flatten().tolist()


def _rows_past_the_first(evidence) -> dict | None:
    """Every unwritten row is one of a program's rows past its first: {"k": ROWS}."""
    rows, per_program = _unwritten_rows(evidence), evidence.got.plan[1]["ROWS"]
    return (
        {"k": per_program}
        if rows and per_program > 1 and all(r % per_program for r in rows)
        else None
    )


# Which elements the kernel never wrote (KernelRun.unwritten), as a pattern: the last column, all but one row a
# program, ...
UNWRITTEN = (
    Diagnosis(
        None,
        lambda e: {} if e.got.unwritten.all() else None,
        N_(
            "{name} wrote nothing into its output ({label}): its stores go elsewhere. The output is the "
            "last pointer argument"
        ),
    ),
    Diagnosis(
        None,
        lambda e: (
            {"last": e.got.case.cols - 1}
            if e.got.unwritten[:, -1].all() and not e.got.unwritten[:, :-1].any()
            else None
        ),
        N_(
            "{name} never wrote column {last}, the last ({label}): the column mask drops it. Columns "
            "0 ... n_cols - 1 are in: cols < n_cols"
        ),
    ),
    Diagnosis(
        None,
        _rows_past_the_first,
        N_(
            "{name} wrote only the first row of each program's {k} ({label}): a program covers ROWS rows, "
            "tl.program_id(0) * ROWS + tl.arange(0, ROWS)"
        ),
    ),
    Diagnosis(
        None,
        lambda e: {"rows": _short(_unwritten_rows(e))} if _unwritten_rows(e) else None,
        N_("{name} never wrote rows {rows} ({label})"),
    ),
    Diagnosis(
        None,
        lambda e: {
            "n": int(e.got.unwritten.sum()),
            "cols": _short(e.got.unwritten.any(0).nonzero().flatten().tolist()),
        },
        N_("{name} never wrote {n} elements, in columns {cols} ({label})"),
    ),
)
