"""grading.gradebook's hand-ins: a hand-in is found as its workspace and its run folders.
(The table's cells: tests/grading/test_grade_table.py; `grade` end to end: tests/cli/test_learner.py; forged
hand-ins: tests/security/test_gradebook.py.)"""

from __future__ import annotations

from workshop.grading import gradebook


def test_a_hand_in_is_its_workspace_and_its_runs(tmp_path):
    work = tmp_path / "ana" / "my-work"
    work.mkdir(parents=True)
    assert gradebook.handed_in(tmp_path / "ana") == (None, [])
    (work / "autograd.py").write_text("")
    assert gradebook.is_workspace(work) and not gradebook.is_workspace(tmp_path / "ana")
    run = tmp_path / "ana" / "results" / "20261202-0400"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    found_work, runs = gradebook.handed_in(tmp_path / "ana")
    assert found_work == work and runs == [run]
