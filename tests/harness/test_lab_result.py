"""harness.child's record of a run: result.json and summary.md, the contract every lab's run keeps: the lab
passes only when every check does; summary.md opens with the verdict, then the lab's own summary, its
exercises, its checks."""

from __future__ import annotations

import json

from workshop.declarations.checks import Check
from workshop.harness import child


def written(tmp_path, checks, exercises=None):
    extra = {"exercises": exercises} if exercises else None
    child.write_result(tmp_path, "toy", "cpu", checks, 1.234, "What this run found.", extra)
    return json.loads((tmp_path / "result.json").read_text()), (tmp_path / "summary.md").read_text()


def test_a_lab_passes_when_every_check_does(tmp_path):
    result, summary = written(tmp_path, [Check("error", True, 1e-7, 1e-5, relation="<=")])
    assert result["passed"] is True and result["duration_s"] == 1.23 and result["device"] == "cpu"
    assert summary.startswith("# Lab `toy`: passed\n\nWhat this run found.\n\n## Checks")


def test_one_failed_check_fails_the_lab_and_is_marked_in_the_table(tmp_path):
    checks = [Check("error", True, 1e-7, 1e-5), Check("speed", False, 0.5, 1.0, relation=">=")]
    result, summary = written(tmp_path, checks)
    assert result["passed"] is False and [c["passed"] for c in result["checks"]] == [True, False]
    assert summary.startswith("# Lab `toy`: FAILED") and "| **FAIL** | speed |" in summary


def test_the_exercises_come_before_the_checks_with_their_hint(tmp_path):
    failed = Check("toy.double: value", False, 3, 4).as_dict()
    exercises = {"toy.double": {"status": "failing", "failed_check": failed, "hint": "twice x"}}
    _, summary = written(tmp_path, [Check("toy.double: value", False, 3, 4)], exercises)
    assert summary.index("## Exercises") < summary.index("## Checks")
    assert "| toy.double | failing |" in summary and "twice x |" in summary


def test_a_stopped_lab_has_a_failed_check_saying_why():
    check = child.stopped_check("interrupted (SIGINT, Ctrl-C)")
    assert not check.passed and check.value == "interrupted (SIGINT, Ctrl-C)"
