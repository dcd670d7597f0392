"""The tensor lab's three view exercises, declared for the one engine: x.narrow, x.diagonal() and x.unfold written
with as_strided only, each graded against torch's own view (lab.py measures the cases; grading/probes.py runs the
learner's function in the worker). No torch import here: the CLI imports this file.
"""

from __future__ import annotations

from workshop.declarations.diagnosis import Diagnosis
from workshop.declarations.exercise import Exercise
from workshop.i18n import N_

LAB = "tensor"


def times(got, want, factor: int) -> bool:
    """got is want with every number multiplied by factor (and differs from it)."""
    if isinstance(want, list):
        return isinstance(got, list) and got != want and got == [factor * w for w in want]
    return isinstance(got, int) and got != want and got == factor * want


# ---- the views: the output is what the worker saw of the learner's view (grading/probes.py, strided_call) ----
def view_error(e) -> tuple[int, int]:
    """How many of size, stride, offset, values and shared storage differ from torch's view (none may)."""
    view = e.got.get("view") if isinstance(e.got, dict) else None
    if view is None:
        return 5, 0
    wrong = [view[k] != e.want[k] for k in ("size", "stride", "offset")]
    wrong += [
        not view["shares"],
        view["size"] != e.want["size"] or not view["values"].equal(e.want["values"]),
    ]
    return sum(wrong), 0


def _call(e) -> list | None:
    """[size, stride, offset] of the learner's last as_strided call, or None when it made none."""
    return e.got.get("as_strided") if isinstance(e.got, dict) else None


VIEW_DIAGNOSES = (
    Diagnosis(
        N_("strides in bytes instead of elements"),
        lambda e: (
            {}
            if _call(e) and times(_call(e)[1], e.want["stride"], e.facts["element_size"])
            else None
        ),
        N_(
            "{name} ({label}): the strides you gave as_strided are byte distances ({element_size} bytes an "
            "element). Strides and offsets count elements."
        ),
    ),
    Diagnosis(
        N_("the offset forgotten"),
        lambda e: (
            {}
            if _call(e)
            and e.facts["x_offset"]
            and _call(e)[2] == e.want["offset"] - e.facts["x_offset"]
            else None
        ),
        N_(
            "{name} ({label}): x starts at storage index {x_offset}, and as_strided's offset is an index into "
            "the storage, not into x: add x.storage_offset() to what the view skips."
        ),
    ),
    Diagnosis(
        N_("the offset forgotten"),
        lambda e: (
            {}
            if _call(e)
            and _call(e)[2] in (None, e.facts["x_offset"])
            and e.want["offset"] != e.facts["x_offset"]
            else None
        ),
        N_(
            "{name} ({label}): your view starts where x starts; it must start at the first entry it keeps, "
            "that many strides further into the storage."
        ),
    ),
    Diagnosis(
        N_("the strides of a contiguous tensor assumed"),
        lambda e: (
            {}
            if _call(e)
            and _call(e)[1] != e.want["stride"]
            and e.facts["x_stride"] != e.facts["contiguous_stride"]
            else None
        ),
        N_(
            "{name} ({label}): x is not contiguous (its strides are {x_stride}): read them with x.stride() "
            "instead of working them out from its sizes."
        ),
    ),
    Diagnosis(
        N_("a copy, not a view"),
        lambda e: (
            {}
            if isinstance(e.got, dict) and e.got.get("view") and not e.got["view"]["shares"]
            else None
        ),
        N_(
            "{name} ({label}): the tensor you returned has a storage of its own: a view reads x's storage."
        ),
    ),
    Diagnosis(
        None,
        lambda e: (
            {"got": e.got["view"] and {k: e.got["view"][k] for k in ("size", "stride", "offset")}}
            if isinstance(e.got, dict)
            else None
        ),
        N_("{name} ({label}): your view (size, stride, offset) {got} is not torch's."),
    ),
)
VIEW_CHECK = N_("{function}: {output} = torch's ({label})")
VIEW_INTERFACE = N_(
    "x: a strided tensor, any strides, any storage offset (a view of a larger storage). Returns a view of x "
    "(it shares x's storage)."
)


def view_exercise(name: str, title: str, statement: str, hints: tuple, handout: str) -> Exercise:
    return Exercise(
        lab=LAB,
        name=name,
        title=title,
        statement=statement,
        hints=hints,
        handout=handout,
        reference=f"workshop.labs.tensor.strided_views:{name}",
        attribute=name,
        interface=VIEW_INTERFACE,
        outputs=("view",),
        shown={"view": N_("the view")},
        compare=view_error,
        check=VIEW_CHECK,
        diagnoses=VIEW_DIAGNOSES,
    )


NARROW_VIEW = view_exercise(
    "narrow_view",
    N_("x.narrow(dim, start, length) with as_strided only"),
    N_(
        "Write narrow_view(x, dim, start, length): the view x.narrow(dim, start, length) returns, the entries "
        "start to start + length - 1 of dimension dim, made with x.as_strided(size, stride, storage_offset) and "
        "nothing else that makes a tensor (x.shape, x.stride() and x.storage_offset() are yours to read). "
        "Graded against x.narrow on random shapes, strides and offsets and on a view of the head's W: the same "
        "sizes, strides, offset and values, over x's storage."
    ),
    (
        N_(
            "A narrow keeps x's strides; only one size and the offset change. The handout's section 2 writes "
            "another view (the transpose) this way."
        ),
        N_(
            "size = x's sizes with size[dim] = length; stride = x.stride(); the first kept entry is start "
            "entries along dim from x's first, which is at x.storage_offset() in the storage."
        ),
        N_(
            "`size = list(x.shape)`; `size[dim] = ...`; `offset = ...` x's offset plus what the view skips; "
            "`return x.as_strided(size, x.stride(), offset)`."
        ),
    ),
    N_("README.md#2-views-are-numbers-over-a-storage"),
)

DIAGONAL_VIEW = view_exercise(
    "diagonal_view",
    N_("x.diagonal() of a matrix with as_strided only"),
    N_(
        "Write diagonal_view(x) for a 2-D x (R, C): the view x.diagonal() returns, x[k, k] for k from 0 to "
        "min(R, C) - 1, made with x.as_strided(size, stride, storage_offset) and nothing else that makes a "
        "tensor (x.shape, x.stride() and x.storage_offset() are yours to read). Graded against x.diagonal() on "
        "random shapes, strides and offsets and on a view of the head's W: the same size, stride, offset and "
        "values, over x's storage."
    ),
    (
        N_(
            "The diagonal is one dimension: how many entries, and how far apart in the storage are x[k, k] and "
            "x[k + 1, k + 1]?"
        ),
        N_(
            "x[k, k] is at x.storage_offset() + k * x.stride(0) + k * x.stride(1): one step along the diagonal "
            "is one step along each dimension at once."
        ),
        N_(
            "`n = ...` the shorter side; `step = ...` the storage distance from x[k, k] to x[k + 1, k + 1]; "
            "`return x.as_strided((n,), (step,), ...)`."
        ),
    ),
    N_("README.md#2-views-are-numbers-over-a-storage"),
)

SLIDING_WINDOW = view_exercise(
    "sliding_window",
    N_("x.unfold(-1, size, step): sliding windows with as_strided only"),
    N_(
        "Write sliding_window(x, size, step): the view x.unfold(-1, size, step) returns, the windows of size "
        "entries along x's last dimension, one every step entries, as a new last dimension, made with "
        "x.as_strided(size, stride, storage_offset) and nothing else that makes a tensor (x.shape, x.stride() "
        "and x.storage_offset() are yours to read). Graded against x.unfold on random shapes, strides and "
        "offsets and on a view of the head's W: the same sizes, strides, offset and values, over x's storage."
    ),
    (
        N_(
            "x (..., L) becomes (..., n, size): the leading dimensions keep their sizes and strides; two new "
            "dimensions replace the last: which window, and which entry in it. Windows overlap: two elements of "
            "the view may read the same storage element."
        ),
        N_(
            "There are n = (L - size) // step + 1 windows. Moving to the next window moves step entries along x's last "
            "dimension, step * x.stride(-1) in the storage; moving within a window, x.stride(-1)."
        ),
        N_(
            "`*lead, L = x.shape`; `*lead_strides, s = x.stride()`; `n = ...`; "
            "`return x.as_strided((*lead, n, size), (*lead_strides, ..., ...), x.storage_offset())`."
        ),
    ),
    N_("README.md#2-views-are-numbers-over-a-storage"),
)
