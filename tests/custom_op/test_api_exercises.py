"""The exercises that register the op with torch.library's public API
(workshop/labs/custom_op/grading/registration_grading.py), each run as a learner's code is, in a worker process: a
learner's correct define_custom_op and define_triton_op pass, and each typical mistake fails with a message that
names it (a custom_op where a triton_op was asked among them)."""

from __future__ import annotations

import pytest

from tests.custom_op import planted as custom_op_planted
from tests.custom_op import wrong_solutions as w
from workshop import i18n
from workshop.lab_api import LabContext
from workshop.ops import INTERPRETED

DEVICE = custom_op_planted.DEVICE
# the planted file in a worker, and grade(name, piece) with it (fixtures)
planted, grade = custom_op_planted.planted, custom_op_planted.grade


def failures(ctx: LabContext) -> list:
    return [c for c in ctx.checks if not c.passed]


@pytest.mark.parametrize(
    "exercise, define",
    [("define_custom_op", w.define_custom_op), ("define_triton_op", w.define_triton_op)],
    ids=["custom_op", "triton_op"],
)
def test_a_learners_correct_registration_passes(grade, exercise, define):
    ctx = grade(exercise, define)
    assert not failures(ctx), failures(ctx)
    names = " ".join(c.name for c in ctx.checks)
    assert "gradcheck" in names and "a backward through the op" in names
    compiled = exercise == "define_custom_op" or not INTERPRETED
    assert ("torch.compile(fullgraph=True)" in names) == compiled


WRONG = [
    (
        "define_custom_op",
        w.define_custom_op_under_its_own_name,
        "registered no operator under the name",
    ),
    ("define_custom_op", w.define_custom_op_without_dims_default, "dim -1 when it is not given"),
    ("define_custom_op", w.define_custom_op_without_fake, "no fake implementation is registered"),
    ("define_custom_op", w.define_custom_op_without_setup_context, "setup_context never ran"),
    ("define_custom_op", w.define_custom_op_without_backward, "no backward is registered"),
    (
        "define_triton_op",
        w.define_triton_op_as_a_custom_op,
        "registered a custom_op, which torch.compile",
    ),
    ("define_triton_op", w.define_triton_op_without_wrap_triton, "must launch its kernels through"),
]


@pytest.mark.parametrize(
    "exercise, define, expected", WRONG, ids=[f.__name__ for _e, f, _m in WRONG]
)
def test_a_registration_mistake_fails_with_a_pointed_message(grade, exercise, define, expected):
    failed = failures(grade(exercise, define))
    assert failed, "the wrong registration passed"
    assert expected in failed[0].message, failed[0]


def test_a_registrations_outcomes_are_said_in_the_learners_language(grade):
    """The op on a fake tensor and a backward through it: 'no error' in the learner's language, not 'ok'."""
    with i18n.using("es"):
        ctx = grade("define_custom_op", w.define_custom_op)
        no_error = i18n._("no error")
    outcomes = [c.value for c in ctx.checks if c.threshold == no_error]
    assert no_error != "no error" and outcomes == [no_error, no_error], [
        (c.name, c.value) for c in ctx.checks
    ]
