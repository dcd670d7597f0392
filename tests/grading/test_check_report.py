"""grading.check_report (`check LAB`'s report): a check that cannot start is one line with the fix; each
exercise's lines say why it failed, how to get a hint (the hint itself, with its level, only when asked) and
where to read, wrapped at 100 columns without breaking a path; every text the learner reads keeps its square
brackets through rich's markup; a failing check of the lab's own is named on its own; a file that does not
compile is one box; the marks line up in every language; a re-grade is never mistaken for a run. `exercises
list`: a stub is "not started" in either language, a changed file "changed since last check"."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from rich.console import Console

from workshop import i18n, labs
from workshop.cli.main import main
from workshop.declarations import checks
from workshop.grading import check_report
from workshop.harness import child
from workshop.learner import workspace


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    return tmp_path / "my-work"


def test_a_check_that_cannot_start_says_the_fix(work):
    with pytest.raises(
        SystemExit,
        match="lab minigpt has no exercises; the labs with exercises: tensor, dispatcher",
    ):
        main(["check", "minigpt", "--work", str(work), "--lang", "en"])
    with pytest.raises(
        workspace.LearnerError,
        match=r"nowhere is not a folder: make your workspace with `python -m",
    ):
        check_report.unrunnable(["autograd"], work.parent / "nowhere")
    with pytest.raises(
        workspace.LearnerError,
        match=r"my-work/autograd.py does not exist: write it with `python -m",
    ):
        check_report.unrunnable(["autograd"], work)


def test_the_marks_line_up_in_every_language():
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            widths = {
                len(re.sub(r"\[/?\w+\]", "", check_report.mark(s))) for s in check_report.MARKS
            }
        assert len(widths) == 1, lang


def printed(lines: list[str]) -> str:
    """The lines as `check` prints them (rich markup on), on one line: the words as the learner reads them."""
    console = Console(file=io.StringIO(), width=100, force_terminal=False)
    for line in lines:
        console.print(line, markup=True, highlight=False)
    return " ".join(console.file.getvalue().split())


def test_a_failed_exercise_says_why_how_to_get_a_hint_and_where_to_read():
    ex = labs.exercises("autograd")[1]
    failed = checks.Check(
        f"{ex.id}: value", False, 3e-4, 1e-4, relation="<=", message="the pad rows"
    )
    entry = ex.result(checks.FAILING, [failed.name], failed)
    text = printed(check_report.exercise_lines(ex.id, entry, ex))
    assert "FAIL" in text and "0.0003 (at most 0.0001)" in text and "the pad rows" in text
    assert entry["handout"] in text  # whole, on one line: copyable
    assert f"`python -m workshop check autograd {ex.name} --hint` shows hint 1 of" in text
    assert " ".join(ex.hints[0].split()) not in text, "a hint is shown only when asked for"
    with i18n.using("es"):
        ex = labs.exercises("autograd")[1]
        text = printed(
            check_report.exercise_lines(ex.id, ex.result(checks.FAILING, [], failed), ex)
        )
        asked = printed(
            check_report.exercise_lines(
                ex.id, ex.result(checks.FAILING, [], failed, 1), ex, asked=True
            )
        )
    assert f"`python -m workshop check autograd {ex.name} --hint` muestra la pista 1 de" in text
    assert " ".join(ex.hints[0].split()) not in text
    assert " ".join(ex.hints[0].split()) + " (pista 1 de" in asked


BRACKETS = "[k = t_i] [bold]x[/bold] [/]"  # text that rich's markup would eat or choke on


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_every_hint_and_statement_of_every_lab_keeps_its_square_brackets(lang):
    """The issue's case: `check autograd cross_entropy_grad --hint` printed `mask_i (p_ik - ) / N`, rich's
    markup having eaten `[k = t_i]`. Every declared exercise, its statement and each hint level with brackets
    added (and its own as they are), printed as `check` prints them."""
    with i18n.using(lang):
        declared = [ex for exercises in labs.all_exercises().values() for ex in exercises]
        assert declared
        for ex in declared:
            ex = dataclasses.replace(
                ex,
                title=f"{ex.title} {BRACKETS}",
                statement=f"{ex.statement} {BRACKETS}",
                hints=tuple(f"{hint} {BRACKETS}" for hint in ex.hints),
            )
            failed = checks.Check(f"{ex.id}: {BRACKETS}", False, BRACKETS, 0, message=BRACKETS)
            todo = ex.result(checks.NOT_STARTED, [failed.name], failed)
            text = printed(check_report.exercise_lines(ex.id, todo, ex))
            assert " ".join(ex.statement.split()) in text and ex.title in text, (ex.id, text)
            for level, hint in enumerate(ex.hints, start=1):
                entry = ex.result(checks.FAILING, [failed.name], failed, hints_taken=level)
                text = printed(check_report.exercise_lines(ex.id, entry, ex, asked=True))
                assert " ".join(hint.split()) in text, (ex.id, level, text)
                assert f"{failed.name}: {BRACKETS}" in text and f"{BRACKETS}" in text


def test_a_failing_check_of_the_lab_itself_is_named_with_why(tmp_path):
    """The issue's case: "8 of 8 exercises passing" and exit 1, a check that belongs to no exercise failing
    unseen. Planted: a lab whose every exercise passes and whose own check fails."""
    ex = labs.exercises("autograd")[0]
    mine = checks.Check(f"{ex.id}: value", True, 0, 0, exercise=ex.id)
    own = checks.Check(
        "the op made of your pieces runs its [autograd] checks", False, "RuntimeError: x", "ok"
    )
    extra = {"exercises": {ex.id: ex.result(checks.PASSING, [mine.name], None)}}
    child.write_result(tmp_path, "autograd", "cpu", [mine, own], 1.0, "", extra)
    lines, passed = check_report.lab_report("autograd", tmp_path)
    text = printed(lines)
    assert not passed
    assert "the lab itself checks of no one exercise: the lab ran your code as a whole" in text
    assert "the op made of your pieces runs its [autograd] checks: RuntimeError: x" in text
    assert "why the lab's log.txt shows what it printed" in text
    assert "1 of 1 exercise passing; 1 check of the lab itself failing" in text
    with i18n.using("es"):
        text = printed(check_report.lab_report("autograd", tmp_path)[0])
    assert "el propio laboratorio comprobaciones de ningún ejercicio en concreto" in text
    assert "; 1 comprobación del propio laboratorio no superada" in text


def test_a_file_that_does_not_compile_is_one_box_with_its_line(work):
    (work / "autograd.py").write_text("def f(:\n    pass\n")
    (work / "dispatcher.py").write_text("x = 1\n")
    text = printed(check_report.unrunnable(["autograd"], work)["autograd"])
    assert (
        "FAIL your file does not compile: my-work/autograd.py line 1; no exercise of it was graded"
        in text
    )
    assert "my-work/autograd.py:1: SyntaxError" in text
    assert check_report.unrunnable(["dispatcher"], work) == {}


def test_wrapping_keeps_a_path_whole_and_lines_within_100_columns():
    path = "workshop/labs/custom_op/README.md#4-registering-the-op-with-torchlibrary-and-its-fake-kernel"
    lines = check_report.wrapped("read", "see " * 30 + path)
    plain = [re.sub(r"\[/?\w+\]", "", line) for line in lines]
    assert any(path in line for line in plain)
    assert all(len(line) <= 100 for line in plain if path not in line)


def test_wrapping_keeps_a_quoted_command_on_one_line():
    command = "`python -m workshop check autograd cross_entropy_grad --hint`"
    for lead in range(60, 100, 3):
        lines = check_report.wrapped(
            "hint", "x" * lead + f" (hint 1 of 3; {command} shows the next)"
        )
        assert any(command in line for line in lines), lines


def test_a_regrade_is_not_taken_for_a_run(tmp_path):
    """Of the learner's runs of a lab, a re-grade reads the newest run of the lab: never a re-grade's folder (its
    result.json says what it was graded against), nor a result.json cut short."""
    work = tmp_path / "my-work"
    work.mkdir()
    mine = {"kind": "workspace", "work": str(work.resolve())}
    root = tmp_path / "results"
    for run, extra in (
        ("20260101-000001-aaaaaa", {}),
        ("20260101-000002-aaaaaa", {"graded_against": "results/20260101-000001-aaaaaa"}),
        ("20260101-000003-aaaaaa", None),  # a result.json cut short
    ):
        (root / run / "compile").mkdir(parents=True)
        (root / run / "manifest.json").write_text("{}")
        if extra is None:
            (root / run / "compile" / "result.json").write_text("{")
        else:
            extra = {"implementation": mine, **extra}
            child.write_result(root / run / "compile", "compile", "cpu", [], 1.0, "", extra)
    sources = check_report.regrade_sources(root, work, ("compile.answers",))
    assert sources == {"compile": str((root / "20260101-000001-aaaaaa" / "compile").resolve())}


# `exercises list` (check_report.workspace_progress): an exercise whose stub is still in the file is "not
# started", in either language; a written one is "not checked yet" until a run grades it, then that run's
# status, and "changed since last check" once the file no longer has the hash the run recorded.
ID = "autograd.cross_entropy_grad"
EX = next(e for e in labs.exercises("autograd") if e.id == ID)


def graded_run(tmp_path, work, status: str, run: str = "20261202-0400"):
    run_dir = tmp_path / "results" / run
    sha = workspace.file_sha256(work / "autograd.py")
    result = {
        "implementation": {"kind": "workspace", "work": str(work), "sha256": {"autograd.py": sha}},
        "exercises": {EX.id: {"status": status}},
    }
    return run_dir, result


def standing_without_hash(ex, work, runs):
    """Planted: trusts the last run whatever the file holds now."""
    found = check_report.standing(ex, work, runs)
    return dataclasses.replace(found, status=found.last_status or found.status)


def test_a_stub_is_not_started_in_either_language(tmp_path):
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):  # as `exercises init --lang` writes it
            stub = next(e for e in labs.exercises("autograd") if e.id == ID).stub_code()
        (tmp_path / "autograd.py").write_text("import torch\n\n\n" + stub)
        assert check_report.standing(EX, tmp_path, []).status == checks.NOT_STARTED


def test_written_then_graded_then_changed(tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    (work / "autograd.py").write_text("def cross_entropy_grad(logits, targets):\n    return 1\n")
    assert check_report.standing(EX, work, []).status == check_report.NOT_CHECKED
    runs = [graded_run(tmp_path, work, checks.FAILING)]
    assert check_report.standing(EX, work, runs).status == checks.FAILING
    (work / "autograd.py").write_text("def cross_entropy_grad(logits, targets):\n    return 2\n")
    changed = check_report.standing(EX, work, runs)
    assert (changed.status, changed.last_status) == (check_report.CHANGED, checks.FAILING)
    assert (
        standing_without_hash(EX, work, runs).status != check_report.CHANGED
    )  # the check catches it


def test_the_newest_run_that_graded_the_exercise_counts(tmp_path):
    (tmp_path / "autograd.py").write_text(
        "def cross_entropy_grad(logits, targets):\n    return 1\n"
    )
    ungraded = graded_run(tmp_path, tmp_path, checks.NOT_GRADED, "new")
    graded = graded_run(tmp_path, tmp_path, checks.PASSING, "old")
    assert check_report.standing(EX, tmp_path, [ungraded, graded]).status == checks.PASSING
    assert check_report.standing(EX, tmp_path, [ungraded]).status == checks.NOT_GRADED
