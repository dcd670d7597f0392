"""The tensor lab's exercises as the learner meets them: fresh stubs fail exactly the exercise checks, a correct
workspace passes every exercise, and each typical mistake (wrong_solutions.py, bound in a workspace to the
exercise's name and run in the worker) fails with the message that names it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from tests.tensor import wrong_solutions
from workshop import labs
from workshop.declarations import checks
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.tensor import lab, python_key, strided_views
from workshop.labs.tensor.grading.exercises import EXERCISES
from workshop.labs.tensor.model_predictions import PREDICTIONS

_TEXT = Path(wrong_solutions.__file__).read_text(encoding="utf-8")
WRONG = _TEXT[_TEXT.index("\ndef ") :]  # its functions; the header the workspace has already


def stubs(*but: str) -> str:
    return "\n\n".join(ex.stub_code() for ex in EXERCISES if ex.name not in but)


def correct() -> str:
    """Every exercise solved: the instructor's functions and predictions, as a learner's file."""
    functions = [
        strided_views.narrow_view,
        strided_views.diagonal_view,
        strided_views.sliding_window,
    ]
    functions += [python_key.count_dispatch, python_key.record_dispatch]
    sources = [inspect.getsource(f) for f in functions]
    return (
        labs.workspace_header("tensor")
        + "\n\n".join(sources)
        + f"\n\nPREDICTIONS = {PREDICTIONS!r}\n"
    )


def graded(tmp_path: Path, source: str, *only: str) -> LabContext:
    """The lab run on a workspace holding `source` as tensor.py, grading `only` (every exercise when empty)."""
    work, out = tmp_path / "my-work", tmp_path / "out"
    work.mkdir()
    out.mkdir()
    (work / "tensor.py").write_text(source)
    options = RunOptions("cpu", 1, 0, work=work, only=tuple(f"tensor.{name}" for name in only))
    ctx = LabContext("tensor", out, options)
    try:
        lab.run(ctx)
    finally:
        ctx.stop_worker()
    return ctx


def test_the_reference_run_passes_and_draws_the_storage(tmp_path):
    ctx = LabContext("tensor", tmp_path, RunOptions("cpu", 1, 0))
    try:
        lab.run(ctx)
    finally:
        ctx.stop_worker()
    assert ctx.passed, [c for c in ctx.checks if not c.passed]
    assert (tmp_path / "storage.png").is_file() and "W.narrow(0, 100, 50)" in ctx.summary


def test_a_correct_workspace_passes_every_exercise(tmp_path):
    ctx = graded(tmp_path, correct(), *(ex.name for ex in EXERCISES))
    assert ctx.checks and all(c.passed for c in ctx.checks), [c for c in ctx.checks if not c.passed]
    assert {c.exercise for c in ctx.checks} == {ex.id for ex in EXERCISES}


@pytest.mark.parametrize(
    "exercise, wrong, expected",
    [
        ("narrow_view", "narrow_strides_in_bytes", "are byte distances"),
        ("narrow_view", "narrow_offset_of_x_forgotten", "add x.storage_offset()"),
        ("narrow_view", "narrow_by_narrow", "write the view with as_strided alone"),
        ("diagonal_view", "diagonal_of_a_contiguous_tensor", "read them with x.stride()"),
        ("sliding_window", "window_copied", "has a storage of its own"),
        ("count_dispatch", "count_without_bias", "your addmm FLOPs are the matrix product's alone"),
        ("count_dispatch", "count_forgetting_func", "returned None for aten."),
        ("record_dispatch", "record_without_unwrapping", "Unwrap them (t.elem) first"),
        ("record_dispatch", "record_without_wrapping", "Wrap func's tensor results in cls"),
    ],
)
def test_a_planted_mistake_fails_with_its_message(tmp_path, exercise, wrong, expected):
    source = (
        labs.workspace_header("tensor") + WRONG + f"\n\n{exercise} = {wrong}\n\n" + stubs(exercise)
    )
    ctx = graded(tmp_path, source, exercise)
    failed = [c for c in ctx.checks if not c.passed]
    assert failed, f"{wrong} passed {exercise}"
    first = checks.reported(ctx.checks)
    messages = "\n".join(str(c.message) for c in failed)
    assert expected in messages, messages
    assert (
        first is not None
        and first.message
        and (expected in first.message or "as_strided" in first.name)
    )


@pytest.mark.parametrize(
    "key, answer, expected",
    [
        ("wt_stride", [4, 256], "are byte distances"),
        ("step_offset", 0, "has an offset"),
        ("y_version", 0, "shares its base's"),
    ],
)
def test_a_wrong_prediction_is_named(tmp_path, key, answer, expected):
    predictions = PREDICTIONS | {key: answer}
    source = (
        labs.workspace_header("tensor")
        + f"PREDICTIONS = {predictions!r}\n\n"
        + stubs("predictions")
    )
    ctx = graded(tmp_path, source, "predictions")
    failed = [c for c in ctx.checks if not c.passed]
    assert len(failed) == 1 and expected in failed[0].message, failed
