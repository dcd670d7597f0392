"""learner.solutions: an exercise's implementation is the reference without a workspace, else the learner's;
a file that lacks the name, a document not written yet and an exercise that killed an earlier attempt each
raise the reason the grading block records, and the file is imported once."""

from __future__ import annotations

import pytest

from workshop import labs
from workshop.learner.failures import ProcessDied
from workshop.learner.solutions import Solutions
from workshop.learner.workspace import LearnerError


def exercise(lab: str, ex_id: str):
    return next(e for e in labs.exercises(lab) if e.id == ex_id)


LINEAR = exercise("autograd", "autograd.linear_grads")
SURVEY = exercise("distributed", "distributed.survey")


@pytest.fixture
def work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my-work").mkdir()
    return tmp_path / "my-work"


def test_without_a_workspace_the_reference(tmp_path):
    assert Solutions("autograd", None, {}).get(LINEAR) is LINEAR.load_reference()
    assert Solutions("autograd", None, {}).path(LINEAR) is None


def test_the_learners_function_imported_once(work):
    (work / "autograd.py").write_text("CALLS = []\ndef linear_grads(*a):\n    return 'mine'\n")
    solutions = Solutions("autograd", work, {})
    assert solutions.get(LINEAR)() == "mine"
    assert solutions.module() is solutions.module()
    assert solutions.path(LINEAR) == work / "autograd.py"


def test_each_reason_the_learners_version_is_not_there(work):
    (work / "autograd.py").write_text("x = 1\n")
    with pytest.raises(LearnerError, match=r"my-work/autograd.py defines no `linear_grads`"):
        Solutions("autograd", work, {}).get(LINEAR)
    with pytest.raises(ProcessDied, match="killed by SIGSEGV"):
        Solutions("autograd", work, {LINEAR.id: "killed by SIGSEGV"}).get(LINEAR)
    with pytest.raises(NotImplementedError, match="my-work/survey.md is not written yet"):
        Solutions("distributed", work, {}).get(SURVEY)
    (work / "survey.md").write_text("# my survey\n")
    assert Solutions("distributed", work, {}).get(SURVEY) == work / "survey.md"
