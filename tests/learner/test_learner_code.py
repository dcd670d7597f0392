"""learner.learner_code, the lab's side of the worker: what the worker says is shown as one printable, capped line;
a learner's file that breaks the reading rules is refused at its line before any worker starts; the reference
answers through the same wire encoding in the lab's own process (LocalWorker), so that grading that works on the
reference works on a learner's code in a worker. (The worker process itself: tests/learner/test_worker.py.)"""

from __future__ import annotations

import pytest
import torch

from workshop import labs
from workshop.learner import learner_code
from workshop.learner.learner_code import (
    LearnerCodeFailed,
    LearnerFile,
    LocalWorker,
    Solution,
    Worker,
)

HEADER = labs.workspace_header("autograd")


class NoLauncher:
    """A launcher that fails the test if a worker is started."""

    def __getattr__(self, name):
        raise AssertionError(f"a worker was started ({name})")


def test_what_the_worker_says_is_one_printable_capped_line():
    assert learner_code.said("a\x00b\n   c" + "x" * 30, 10) == "a?b cxxxx…"


@pytest.mark.parametrize(
    "code, what",
    [
        ("import os\n", "import os"),
        (
            "from workshop.labs.autograd.hand import linear_grads\n",
            "from workshop.labs.autograd.hand import",
        ),
    ],
)
def test_a_refused_file_is_refused_at_its_line_and_no_worker_starts(code, what):
    learner = LearnerFile(HEADER + code, "my-work/autograd.py", HEADER)
    worker = Worker(NoLauncher(), "cpu", learner)
    line = HEADER.count("\n") + 1
    assert (
        worker.refused.kind == "refused" and worker.refused.where == f"my-work/autograd.py:{line}"
    )
    assert what in worker.refused.error
    assert str(worker.refused).startswith(f"my-work/autograd.py:{line}: {what}")
    assert "is not allowed in your file" in str(worker.refused)


def test_a_refusal_is_said_in_the_learners_words_where_it_is_raised():
    """The lab's own reading (an import of the answer) and the worker's reply (code from elsewhere) each become
    the finished line the exercise's check shows, naming the file and line, or the file that defines it."""
    imported = "from workshop.labs.autograd.hand import linear_grads\n"
    # a header that imports it too: the reading's rules let it through, and only the graded name is refused
    learner = LearnerFile(HEADER + imported, "my-work/autograd.py", HEADER + imported)
    with pytest.raises(LearnerCodeFailed) as e:
        Worker(NoLauncher(), "cpu", learner).refuse_imported(["linear_grads"])
    line = HEADER.count("\n") + 1
    assert str(e.value) == (
        f"my-work/autograd.py:{line}: `linear_grads` is imported, not written in your file: the "
        "workshop's own code is not an answer"
    )
    reply = {"ok": False, "kind": "refused", "error": "walk", "where": "/x/graph_walk.py"}
    assert str(learner_code.failed(reply)) == (
        "`walk` is not your own code (walk is defined in /x/graph_walk.py): the workshop's own code is "
        "not an answer"
    )


def test_an_over_long_file_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setattr(learner_code, "MAX_SOURCE", 10)
    (tmp_path / "autograd.py").write_text("x = 1\n" * 10)
    with pytest.raises(LearnerCodeFailed, match="over 10 bytes"):
        LearnerFile.read(tmp_path / "autograd.py", "my-work/autograd.py", HEADER)


def test_the_reference_answers_through_the_wire_encoding():
    reference = Solution(
        LocalWorker("cpu"),
        {
            "references": {"tensor_bytes": "workshop.foundations.tensor_bytes:tensor_bytes"},
            "one": True,
        },
    )
    assert reference(torch.zeros(3)) == 12
    ex = next(e for e in labs.exercises("autograd") if e.attribute == "linear_grads")
    assert learner_code.solution_for(LocalWorker("cpu"), [ex], graded=False).target == {
        "references": {ex.attribute: ex.reference},
        "one": True,
    }
