"""grading.progress (`exercises list`): an exercise whose stub is still in the file is "not started", in either
language; a written one is "not checked yet" until a run grades it, then that run's status, and "changed since
last check" once the file no longer has the hash the run recorded."""

from __future__ import annotations

import dataclasses

from workshop import i18n, labs
from workshop.declarations import checks
from workshop.grading import progress
from workshop.learner import workspace

ID = "autograd.cross_entropy_grad"
EX = next(e for e in labs.exercises("autograd") if e.id == ID)


def graded_run(tmp_path, work, status: str):
    run_dir = tmp_path / "results" / "20261202-0400"
    sha = workspace.file_sha256(work / "autograd.py")
    result = {
        "implementation": {"kind": "workspace", "work": str(work), "sha256": {"autograd.py": sha}},
        "exercises": {EX.id: {"status": status}},
    }
    return run_dir, result


def standing_without_hash(ex, work, last):
    """Planted: trusts the last run whatever the file holds now."""
    found = progress.standing(ex, work, last)
    return dataclasses.replace(found, status=found.last_status or found.status)


def test_a_stub_is_not_started_in_either_language(tmp_path):
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):  # as `exercises init --lang` writes it
            stub = next(e for e in labs.exercises("autograd") if e.id == ID).stub_code()
        (tmp_path / "autograd.py").write_text("import torch\n\n\n" + stub)
        assert progress.standing(EX, tmp_path, None).status == checks.NOT_STARTED


def test_written_then_graded_then_changed(tmp_path):
    work = tmp_path / "my-work"
    work.mkdir()
    (work / "autograd.py").write_text("def cross_entropy_grad(logits, targets):\n    return 1\n")
    assert progress.standing(EX, work, None).status == progress.NOT_CHECKED
    last = graded_run(tmp_path, work, checks.FAILING)
    assert progress.standing(EX, work, last).status == checks.FAILING
    (work / "autograd.py").write_text("def cross_entropy_grad(logits, targets):\n    return 2\n")
    changed = progress.standing(EX, work, last)
    assert (changed.status, changed.last_status) == (progress.CHANGED, checks.FAILING)
    assert standing_without_hash(EX, work, last).status != progress.CHANGED  # the check catches it


def test_the_newest_run_that_graded_the_exercise_counts():
    ungraded = ("new", {"exercises": {EX.id: {"status": checks.NOT_GRADED}}})
    graded = ("old", {"exercises": {EX.id: {"status": checks.PASSING}}})
    assert progress.last_graded([ungraded, graded], EX) == graded
    assert progress.last_graded([ungraded], EX) == ungraded
    assert progress.last_graded([], EX) is None
