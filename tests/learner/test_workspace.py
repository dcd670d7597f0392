"""learner.workspace: a document not written yet says how to start it; the record's hints count up to the
exercise's last level and no further; a run records each graded file's hash, so that a changed file is seen; a
broken record reads as none."""

from __future__ import annotations

import json

import pytest

from workshop import labs
from workshop.learner import workspace


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    return tmp_path / "my-work"


def test_a_document_not_written_yet_is_not_started_and_says_how_to_start_it(work):
    survey = next(e for e in labs.exercises("distributed") if e.id == "distributed.survey")
    with pytest.raises(NotImplementedError, match="my-work/survey.md is not written yet"):
        workspace.document(work, "distributed", survey)
    (work / "survey.md").write_text("# my survey\n")
    assert workspace.document(work, "distributed", survey) == work / "survey.md"


def test_hints_count_up_to_the_last_level_only(work):
    taken = [workspace.count_use(work, "hints", "autograd.hand", most=3) for _ in range(4)]
    assert taken == [1, 2, 3, 3] and workspace.uses(work, "hints") == {"autograd.hand": 3}


def test_a_broken_record_reads_as_none(work):
    (work / workspace.RECORD).write_text("{not json")
    assert workspace.read_record(work) == {} and workspace.uses(work, "hints") is None
    (work / workspace.RECORD).write_text(json.dumps({"learner": "ana", "hints": {"x": "9"}}))
    assert workspace.uses(work, "hints") == {} and workspace.uses(work, "shown") is None


def test_a_run_records_each_graded_files_hash(work):
    (work / "autograd.py").write_text("x = 1\n")
    recorded = workspace.implementation(work, ["autograd"])
    assert recorded["kind"] == "workspace" and recorded["work"] == str(work.resolve())
    assert recorded["sha256"]["autograd.py"] == workspace.file_sha256(work / "autograd.py")
    (work / "autograd.py").write_text("x = 2\n")
    assert workspace.implementation(work, ["autograd"])["sha256"] != recorded["sha256"]
    assert workspace.implementation(None, ["autograd"]) == {"kind": "reference"}
