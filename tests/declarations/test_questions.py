"""declarations.questions: a lab's questions declared once give the learner's stub (no line over the project's width,
nested where keys nest) and grade their answers: each read as its kind, numbers within their tolerance, a missing
key or a wrong kind said in one line, a key no question asks for named, the truth never shown while wrong."""

from __future__ import annotations

import pytest

from workshop import engine, labs
from workshop.declarations import questions
from workshop.declarations.exercise import Exercise
from workshop.declarations.questions import Question
from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext

QUESTIONS = (
    Question("graph_nodes", "Q1. How many nodes has the backward graph? " * 4, "graph.json", "int"),
    Question("ddp.held_bytes", "Q2. Bytes a rank holds", "the wire table", "number", 0.1, True),
    Question("keys", "Q3. The dispatch keys", "trace.md", "names"),
)


def test_the_stub_is_valid_python_within_the_width_and_nested():
    source = questions.stub("ANSWERS", QUESTIONS)
    namespace = {}
    exec(source, namespace)
    assert namespace["ANSWERS"] == {"graph_nodes": None, "ddp": {"held_bytes": None}, "keys": None}
    assert max(map(len, source.splitlines())) <= questions.WIDTH


@pytest.mark.parametrize(
    "kind, given, read",
    [
        ("int", 3, 3),
        ("number", 2.5, 2.5),
        ("str", " nccl ", "nccl"),
        ("names", "AutogradCPU", frozenset({"AutogradCPU"})),
        ("names", {"b", "a"}, frozenset({"a", "b"})),
    ],
)
def test_an_answer_is_read_as_its_kind(kind, given, read):
    assert questions.as_kind(given, kind) == read


@pytest.mark.parametrize(
    "kind, given", [("int", 3.0), ("int", True), ("number", float("nan")), ("bool", 1)]
)
def test_an_answer_of_another_kind_is_refused(kind, given):
    with pytest.raises(ValueError):
        questions.as_kind(given, kind)


def test_a_number_within_its_relative_tolerance_is_right():
    held = QUESTIONS[1]
    assert questions.right(held, 1050, 1000) and not questions.right(held, 1200, 1000)
    assert questions.right(QUESTIONS[0], 7, 7) and not questions.right(QUESTIONS[0], 8, 7)


def test_keys_no_question_asks_for_are_named_as_written():
    answers = {"graph_nodes": 7, "ddp": {"held_byte": 1}, "extra": 0}
    assert questions.unknown_keys(answers, QUESTIONS) == ["ddp.held_byte", "extra"]


def test_lookup_follows_nested_keys_and_a_missing_one_is_the_default():
    assert questions.lookup({"ddp": {"held_bytes": 5}}, QUESTIONS[1]) == 5
    assert questions.lookup({"ddp": 5}, QUESTIONS[1]) is None
    assert questions.lookup({"ddp": {}}, QUESTIONS[1], questions.MISSING) is questions.MISSING


def test_not_a_dict_says_what_it_must_be(toy):
    with pytest.raises(
        TypeError, match="ANSWERS must be a dict with the keys graph_nodes, ddp, keys, not a list"
    ):
        engine.grade_answers(toy, EX_ANSWERS, [], TRUTHS, None)


def test_a_kind_outside_the_list_is_refused_where_it_is_declared():
    with pytest.raises(ValueError, match="kind must be one of"):
        Question("x", "Q", kind="float")


# ---- a plain run grades the reference's answers, and its folder may become a committed record ----
ANSWERS = {"graph_nodes": 10, "ddp": {"held_bytes": 3354144}, "keys": ["CPU", "AutogradCPU"]}
TRUTHS = {"graph_nodes": 10, "ddp.held_bytes": 3354144, "keys": frozenset({"CPU", "AutogradCPU"})}
EX_ANSWERS = Exercise(
    lab="toy",
    name="answers",
    title="the questions",
    statement="Answer them.",
    hints=("Read the run.",),
    handout="README.md#questions",
    reference=f"{__name__}:ANSWERS",
    attribute="ANSWERS",
    questions=QUESTIONS,
    from_run=True,
)


@pytest.fixture
def toy(monkeypatch, tmp_path):
    monkeypatch.setattr(labs, "exercises", lambda lab: [EX_ANSWERS])
    (tmp_path / "out").mkdir()
    return LabContext("toy", tmp_path / "out", RunOptions("cpu", 1, 0))


def graded_answers(ctx: LabContext) -> list:
    engine.grade(ctx, EX_ANSWERS, TRUTHS)  # the dict, as its worker reads it (wire data)
    return [c for c in ctx.checks if c.name.endswith("matches this run")]


def test_a_reference_runs_right_answers_are_recorded_as_true_never_as_their_values(toy, capsys):
    recorded = graded_answers(toy)
    assert [(c.passed, c.value, c.threshold) for c in recorded] == [(True, True, True)] * 3
    written = (
        capsys.readouterr().out
        + str(toy.exercise_results())
        + str([c.as_dict() for c in toy.checks])
    )
    assert "3354144" not in written and "AutogradCPU" not in written


def test_with_show_the_reference_answers_are_written_as_they_are(toy):
    toy.options.show = True  # planted: the masking must not hide what --show asks to see
    assert [c.value for c in graded_answers(toy)][:2] == [10, 3354144]
