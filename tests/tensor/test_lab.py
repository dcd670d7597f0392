"""The tensor lab's declarations and its named checks: three hint levels in both languages, a check of one
exercise that grades only it (and fast), a diagnosis said in Spanish, and the facts the lab measures."""

from __future__ import annotations

import time

import pytest
import torch

from workshop import labs
from workshop.foundations.run_options import RunOptions
from workshop.i18n import _, using
from workshop.lab_api import LabContext
from workshop.labs.tensor import lab, strided_views
from workshop.labs.tensor.grading.exercises import EXERCISES
from workshop.labs.tensor.head_costs import (
    analytic,
    backward_ops,
    gradient,
    head_leaves,
    torch_flops,
)
from workshop.labs.tensor.versions import version_facts


def test_every_code_exercise_has_three_hint_levels_in_both_languages():
    code = [ex for ex in labs.exercises("tensor") if callable(ex.load_reference())]
    assert len(code) == 5
    for ex in code:
        assert len(ex.hints) == 3, ex.id
        with using("es"):
            spanish = ex.localized().hints
        assert all(es != en for es, en in zip(spanish, ex.hints, strict=True)), ex.id


@pytest.mark.parametrize("name", [ex.name for ex in EXERCISES])
def test_a_check_of_one_exercise_grades_only_it(tmp_path, name):
    """`check tensor EXERCISE`: that exercise's checks, none of the lab's own, no figure; the lab's own work for
    it takes seconds (the learner's worker is the reference's here: LocalWorker)."""
    ctx = LabContext("tensor", tmp_path, RunOptions("cpu", 1, 0, only=(f"tensor.{name}",)))
    start = time.process_time()
    try:
        lab.run(ctx)
    finally:
        ctx.stop_worker()
    assert time.process_time() - start < 10  # CPU seconds, loaded machine or not
    assert ctx.checks and {c.exercise for c in ctx.checks} == {f"tensor.{name}"}
    assert all(c.passed for c in ctx.checks) and not (tmp_path / "storage.png").exists()
    assert "Graded only" in ctx.summary


def test_a_diagnosis_is_said_in_spanish():
    ex = next(e for e in labs.exercises("tensor") if e.name == "narrow_view")
    with using("es"):
        assert "distancias en bytes" in _(ex.diagnoses[0].message)


def test_the_facts_the_lab_measures():
    x, W, b = torch.randn(2, 3, 64), torch.randn(600, 64), torch.randn(600)
    facts = version_facts(x, W, b)
    assert (
        facts["view_version"] == facts["base_version"] == 2
    )  # one counter, shared by the view and its base
    assert facts["error_version"] == 1 and facts["saved_shape"] == [
        6,
        64,
    ]  # addmm saved x's rows, a view of x
    assert [op for op, moved in facts["bumps"].items() if moved] == [
        "add_",
        "setitem",
        "copy_",
        "view_mul_",
    ]
    G = gradient(x, W, 0)
    costs = analytic(6, 64, 600, 4)
    assert (
        sum(torch_flops(head_leaves(x, W, b), G)["backward"].values())
        == costs["backward"]["flops"]["aten.mm.default"]
    )
    assert backward_ops(head_leaves(x, W, b), G).count("aten.mm.default") == 2


def test_the_instructors_views_equal_torchs_on_a_view_of_a_view():
    base = torch.randn(400)
    x = base[5:].as_strided((6, 7), (1, 11), 9)  # neither contiguous nor at offset 0
    for mine, torchs in [
        (strided_views.narrow_view(x, 1, 2, 3), x.narrow(1, 2, 3)),
        (strided_views.diagonal_view(x), x.diagonal()),
        (strided_views.sliding_window(x, 3, 2), x.unfold(-1, 3, 2)),
    ]:
        assert (mine.shape, mine.stride(), mine.storage_offset()) == (
            torchs.shape,
            torchs.stride(),
            torchs.storage_offset(),
        )
        assert torch.equal(mine, torchs)
