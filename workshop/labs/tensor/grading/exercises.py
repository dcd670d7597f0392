"""The tensor lab's exercises: predictions of the LM head's views and version counters, three views written with
as_strided only, and the two halves of the Python dispatch key written by the learner (a mode that counts, a
subclass that records). Each is graded by the one engine (workshop/engine.py) on what the run measures
(lab.py); the mistakes learners make are the diagnoses below. No torch import here: the CLI imports this file.
"""

from __future__ import annotations

from workshop.declarations.diagnosis import Diagnosis
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.i18n import N_
from workshop.labs.tensor.grading.dispatch_exercises import COUNT_DISPATCH, RECORD_DISPATCH
from workshop.labs.tensor.grading.view_exercises import (
    DIAGONAL_VIEW,
    NARROW_VIEW,
    SLIDING_WINDOW,
    times,
)

LAB = "tensor"
BYTES_PER_ELEMENT = 4  # the head's tensors are float32

WORKSPACE_DOC = N_("""Your tensor lab: predictions of the LM head's strides, offsets and version counters, three
views written with as_strided only, and the body of a dispatch mode and of a tensor subclass.

Write PREDICTIONS before your first run, then replace each `raise NotImplementedError(...)` with your code and
grade this file with `python -m workshop check tensor`: the lab runs torch's own views, counters and observers on
the same tensors and compares. The handout, workshop/labs/tensor/README.md, teaches the method.""")

WORKSPACE_IMPORTS = """
from __future__ import annotations

import torch
from torch.utils._pytree import tree_leaves, tree_map_only
"""


# ---- predictions: each diagnosis reads one answer (Evidence.output: the question's key) next to the truth ----
STRIDES, OFFSETS = ("wt_stride", "step_stride", "expand_stride"), ("narrow_offset", "step_offset")

PREDICTION_DIAGNOSES = (
    *(
        Diagnosis(
            N_("strides in bytes instead of elements"),
            lambda e: {} if times(e.got, e.want, BYTES_PER_ELEMENT) else None,
            N_(
                "{name}: your numbers are byte distances. A stride counts elements: how many storage "
                "elements one step along a dimension skips, whatever an element's size."
            ),
            output=key,
        )
        for key in STRIDES + OFFSETS
    ),
    *(
        Diagnosis(
            N_("the offset forgotten"),
            lambda e: {} if e.got == 0 and e.want != 0 else None,
            N_(
                "{name}: a view that starts inside its base's storage has an offset: the storage index of its "
                "first element, where the base's first element is at index 0. Count what the view skips."
            ),
            output=key,
        )
        for key in OFFSETS
    ),
    Diagnosis(
        N_("a view's counter treated as its own"),
        lambda e: {} if e.got == 0 and e.want != 0 else None,
        N_(
            "{name}: the in-place ops went through the view v, and a view has no version counter of its own: "
            "it shares its base's, so every write through v moves y._version too."
        ),
        output="y_version",
    ),
    Diagnosis(
        N_("a view's counter treated as its own"),
        lambda e: {} if "view_mul_" in e.want and "view_mul_" not in e.got else None,
        N_(
            "{name}: view_mul_ writes through a view of y, and a view shares its base's version counter: "
            "the write counts for y."
        ),
        output="bumping_ops",
    ),
    Diagnosis(
        N_("the saved tensor taken for x itself"),
        lambda e: {} if isinstance(e.got, list) and len(e.got) == 3 else None,
        N_(
            "{name}: the node did not save x but the tensor its matrix product multiplies, a view of x with "
            "x's rows; the error names that view, whose version counter is x's."
        ),
        output="error_shape",
    ),
    Diagnosis(
        N_("a copy taken for a view"),
        lambda e: {} if "W.t().contiguous()" in e.got else None,
        N_(
            "{name}: contiguous() of a tensor that is not contiguous copies its elements into a new storage "
            "laid out row by row: the copy shares nothing with W."
        ),
        output="sharing_w",
    ),
)

QUESTIONS = (
    Question(
        "wt_stride",
        N_("Q1. The strides of W.t(), W the head's weight (600, 64)? (list of ints)"),
        N_("summary.md's table of views"),
        kind="list",
    ),
    Question(
        "narrow_offset",
        N_("Q2. The storage offset of W.narrow(0, 100, 50)? (int)"),
        N_("summary.md's table of views"),
    ),
    Question(
        "step_stride",
        N_("Q3. The strides of W[2::3, 16:]? (list of ints)"),
        N_("summary.md's table of views"),
        kind="list",
    ),
    Question(
        "step_offset",
        N_("Q4. The storage offset of W[2::3, 16:]? (int)"),
        N_("summary.md's table of views"),
    ),
    Question(
        "expand_stride",
        N_("Q5. The strides of b.expand(176, 600), b the head's bias (600,)? (list of ints)"),
        N_("summary.md's table of views"),
        kind="list",
    ),
    Question(
        "sharing_w",
        N_(
            'Q6. Which of "W.t()", "W.narrow(0, 100, 50)", "W.t().contiguous()", "W[2::3, 16:]" share W\'s '
            "storage? (a list of those strings)"
        ),
        N_("summary.md's table of views, column 'shares'"),
        kind="names",
    ),
    Question(
        "bumping_ops",
        N_(
            'Q7. Which of the ops "add_", "mul", "setitem", "t", "copy_", "detach", "view_mul_" (README.md, '
            "section 3, says what each does to y) move y._version? (a list of those names)"
        ),
        N_("summary.md's version-counter table"),
        kind="names",
    ),
    Question(
        "y_version",
        N_(
            "Q8. y = x.clone(); v = y.view(-1, 64); v.mul_(3); v.add_(1). What is y._version? (int)"
        ),
        N_("summary.md's version-counter section"),
    ),
    Question(
        "error_at_version",
        N_(
            "Q9. After the head's forward, x.mul_(2), then backward: the version the error says the saved "
            "tensor is at? (int)"
        ),
        N_("the error quoted in summary.md"),
    ),
    Question(
        "error_shape",
        N_("Q10. The shape of the saved tensor that error names? (list of ints)"),
        N_("the error quoted in summary.md"),
        kind="list",
    ),
)

PREDICTIONS = Exercise(
    lab=LAB,
    name="predictions",
    title=N_("the head's strides, offsets, shared storage and version counters, predicted"),
    statement=N_(
        "Predict, before your first run, the strides and storage offsets of the LM head's views, which of them "
        "share W's storage, which ops move a tensor's version counter, and what autograd says when the head's "
        "x is changed in place after the forward. Graded against what the run measures."
    ),
    hints=(
        N_(
            "Each failed answer names where the run shows it; the handout's sections 1 and 3 say how to work it "
            "out on paper."
        ),
        N_(
            "Element [i, j] of a view lives at storage index offset + i * stride[0] + j * stride[1]; a view keeps "
            "its base's storage and changes only these numbers; a copy gets a new storage. A view shares its "
            "base's version counter."
        ),
        N_(
            "For each view write the storage index of its elements [0, 0], [0, 1] and [1, 0]: the first is the "
            "offset, the differences are the strides."
        ),
    ),
    handout=N_("README.md#predictions"),
    reference="workshop.labs.tensor.model_predictions:PREDICTIONS",
    attribute="PREDICTIONS",
    questions=QUESTIONS,
    diagnoses=PREDICTION_DIAGNOSES,
)


EXERCISES = [
    PREDICTIONS,
    NARROW_VIEW,
    DIAGONAL_VIEW,
    SLIDING_WINDOW,
    COUNT_DISPATCH,
    RECORD_DISPATCH,
]
