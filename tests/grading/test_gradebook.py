"""grading.gradebook's hand-ins: a hand-in is found as its workspace and its run folders.
(The table's cells: tests/grading/test_grade_table.py; `grade` end to end: tests/cli/test_learner.py; forged
hand-ins: tests/security/test_gradebook.py.)"""

from __future__ import annotations

import json

import pytest

from workshop.grading import gradebook


def test_a_hand_in_is_its_workspace_and_its_runs(tmp_path):
    work = tmp_path / "ana" / "my-work"
    work.mkdir(parents=True)
    assert gradebook.handed_in(tmp_path / "ana") == (None, [])
    (work / "autograd.py").write_text("")
    assert gradebook.handed_in(tmp_path / "ana") == (work, [])
    run = tmp_path / "ana" / "results" / "20261202-0400"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("{}")
    found_work, runs = gradebook.handed_in(tmp_path / "ana")
    assert found_work == work and runs == [run]


@pytest.mark.parametrize(
    ("lab", "device", "noted"),
    [("custom_op", "cpu", True), ("custom_op", "cuda", False), ("tensor", "cpu", False)],
)
def test_kernels_graded_under_triton_s_interpreter_are_said_to_prove_nothing(
    tmp_path, lab, device, noted
):
    """Under the interpreter a kernel reaches its block's data (x.handle.data) and can pass by computing in
    numpy: in any sandbox; the row says so wherever a lab that needs Triton graded exercises on the CPU."""
    (tmp_path / lab).mkdir()
    result = {"device": device, "exercises": {f"{lab}.x": {"status": "passing"}}}
    (tmp_path / lab / "result.json").write_text(json.dumps(result))
    row = gradebook.Row("ana", "ana")
    gradebook.add_lab_result(row, tmp_path, lab)
    assert any("Triton's interpreter" in note for note in row.notes) == noted
