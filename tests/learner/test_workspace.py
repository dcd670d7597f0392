"""learner.workspace: a learner's file that will not import is one line naming the file and line; the record's
hints count up to the exercise's last level and no further; a run records each graded file's hash, so that a
changed file is seen; a broken record reads as none."""

from __future__ import annotations

import json

import pytest

from workshop.learner import workspace
from workshop.learner.workspace import LearnerError


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    return tmp_path / "my-work"


@pytest.mark.parametrize(
    "source, says",
    [
        ("def f(:\n", "my-work/autograd.py:1: SyntaxError"),
        (
            "x = 1\nraise ValueError('bad\\n  value')\n",
            "my-work/autograd.py:2: ValueError: bad value",
        ),
        ("import no_such_module_here\n", "my-work/autograd.py:1: ModuleNotFoundError"),
    ],
)
def test_a_file_that_will_not_import_is_one_line_naming_file_and_line(work, source, says):
    (work / "autograd.py").write_text(source)
    with pytest.raises(LearnerError) as error:
        workspace.load_lab_module(work, "autograd")
    assert str(error.value).startswith(says) and "\n" not in str(error.value)


def test_a_missing_file_says_how_to_make_it(work):
    with pytest.raises(
        LearnerError, match=r"my-work/autograd.py does not exist: run `python -m workshop exe"
    ):
        workspace.load_lab_module(work, "autograd")


def test_hints_count_up_to_the_last_level_only(work):
    assert [workspace.take_hint(work, "autograd.hand", levels=3) for _ in range(4)] == [1, 2, 3, 3]
    assert workspace.hints_taken(work) == {"autograd.hand": 3}


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
