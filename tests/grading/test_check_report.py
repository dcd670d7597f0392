"""grading.check_report (`check LAB`'s report): a check that cannot start is one line with the fix; each
exercise's lines say why it failed, the hint and where to read, wrapped at 100 columns without breaking a path;
the marks line up in every language; a re-grade is never mistaken for a run."""

from __future__ import annotations

import re

import pytest

from workshop import i18n, labs
from workshop.grading import check_report, checks
from workshop.grading.check_report import CheckRefused
from workshop.harness.options import LabOrder, RunOptions


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    return tmp_path / "my-work"


def test_a_check_that_cannot_start_says_the_fix(work):
    with pytest.raises(
        CheckRefused, match="lab minigpt has no exercises; the labs with exercises: dispatcher"
    ):
        check_report.refuse_early(["minigpt"], work)
    with pytest.raises(
        CheckRefused, match=r"nowhere is not a folder: make your workspace with `python -m"
    ):
        check_report.refuse_early(["autograd"], work.parent / "nowhere")
    with pytest.raises(
        CheckRefused, match=r"my-work/autograd.py does not exist: write it with `python -m"
    ):
        check_report.refuse_early(["autograd"], work)


def test_the_marks_line_up_in_every_language():
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            widths = {
                len(re.sub(r"\[/?\w+\]", "", check_report.mark(s))) for s in check_report.MARKS
            }
        assert len(widths) == 1, lang


def test_a_failed_exercise_says_why_the_hint_and_where_to_read():
    ex = labs.exercises("autograd")[1]
    failed = checks.Check(
        f"{ex.id}: value", False, 3e-4, 1e-4, relation="<=", message="the pad rows"
    )
    entry = ex.result(checks.FAILING, [failed.name], failed)
    text = "\n".join(check_report.exercise_lines(ex.id, entry, ex))
    assert "FAIL" in text and "0.0003 (at most 0.0001)" in text and "the pad rows" in text
    assert entry["handout"] in text  # whole, on one line: copyable


def test_wrapping_keeps_a_path_whole_and_lines_within_100_columns():
    path = "workshop/labs/custom_op/README.md#4-registering-the-op-with-torchlibrary-and-its-fake-kernel"
    lines = check_report.wrapped("read", "see " * 30 + path)
    plain = [re.sub(r"\[/?\w+\]", "", line) for line in lines]
    assert any(path in line for line in plain)
    assert all(len(line) <= 100 for line in plain if path not in line)


def test_a_regrade_is_not_taken_for_a_run(tmp_path):
    LabOrder("compile", RunOptions("cpu")).write(tmp_path / "run")
    LabOrder("compile", RunOptions("cpu", against={"compile": "x"})).write(tmp_path / "regrade")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "options.json").write_text("{")
    assert check_report.ran(tmp_path / "run")
    assert not check_report.ran(tmp_path / "regrade") and not check_report.ran(tmp_path / "broken")
