"""grading.grade_table's tables: a learner's text (a name, a note) cannot become a spreadsheet formula in
grades.csv nor break out of its cell in grades.md.
(`grade` end to end: tests/cli/test_learner.py; forged hand-ins: tests/security/test_gradebook.py.)"""

from __future__ import annotations

import csv
import io

import pytest

from workshop.grading import grade_table

HOSTILE = ['=HYPERLINK("http://x")', "+1", "-2+3", "@SUM(A1)", "\tx"]


FORMULA_START = (
    grade_table.FORMULA_START
)  # what a spreadsheet reads as a formula, kept before any planting


def formulas_in(csv_text: str) -> list[str]:
    rows = list(csv.reader(io.StringIO(csv_text)))
    return [cell for row in rows for cell in row if cell.startswith(FORMULA_START)]


def test_no_cell_of_grades_csv_starts_a_formula():
    text = grade_table.to_csv(["name", "note"], [[h, "fine"] for h in HOSTILE])
    assert formulas_in(text) == []
    assert (
        next(csv.reader(io.StringIO(text.splitlines()[1])))[0] == "'" + HOSTILE[0]
    )  # shown, as text


def test_the_check_catches_a_cell_written_as_is(monkeypatch):
    monkeypatch.setattr(grade_table, "FORMULA_START", ())  # planted: every cell written as it is
    assert len(formulas_in(grade_table.to_csv(["name"], [[h] for h in HOSTILE]))) == len(HOSTILE)


@pytest.mark.parametrize("text", ["a | b", "<script>x</script>", "two\nlines", "| --- |"])
def test_a_learners_text_stays_in_its_markdown_cell(text):
    table = grade_table.to_markdown(["name", "score", "notes"], [[text, "1/2", text]], "Grades")
    rows = [line for line in table.splitlines() if line.startswith("|")]
    assert len(rows) == 3 and all(row.count("|") - row.count("\\|") == 3 for row in rows)
    assert "<script>" not in table
