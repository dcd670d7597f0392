"""grading.grade_integrity: what `grade` checks beyond each row: a file that grading one hand-in added, removed
or changed in another hand-in (or in the workshop's code) is named, the results root aside; a run or a solution
that appears in two hand-ins is flagged on both, but a workspace file as `exercises init` wrote it is no copy.
(Hostile hand-ins through the real `grade`: tests/security/test_gradebook.py.)"""

from __future__ import annotations

import time

from workshop.grading import grade_integrity
from workshop.grading.gradebook import Row
from workshop.learner import workspace


def test_a_change_to_another_hand_in_is_named_and_the_results_root_is_not(tmp_path):
    ana, ben, results = tmp_path / "ana", tmp_path / "ben", tmp_path / "ana" / "results"
    for folder in (ana, ben, results):
        folder.mkdir(parents=True, exist_ok=True)
    (ben / "autograd.py").write_text("mine\n")
    watch = grade_integrity.Watch([ana, ben], results)
    (results / "run.json").write_text("{}")  # grading writes here: not a change
    (ben / "autograd.py").write_text("changed by ana's code\n")
    (ben / "new.txt").write_text("")
    touched, code = watch.after(ana)
    assert touched == {ben: ["autograd.py", "new.txt"]} and code == []
    assert watch.after(ana) == ({}, [])  # the next hand-in starts from what is there now


def test_a_fingerprint_of_names_alone_misses_a_change(tmp_path):
    """A file rewritten with as many bytes is a change (its times; ctime no process can set back): the file's
    clock ticks every few milliseconds, grading a hand-in takes seconds, so the rewrite waits a tick here."""
    (tmp_path / "a.py").write_text("1")
    before = grade_integrity.fingerprint(tmp_path)
    time.sleep(0.05)
    (tmp_path / "a.py").write_text("2")
    assert grade_integrity.changed(before, grade_integrity.fingerprint(tmp_path)) == ["a.py"]
    names_only = {name: "?" for name in before}  # planted: names without what they are
    assert grade_integrity.changed(names_only, names_only) == []


def row(name: str, *prints) -> Row:
    return Row(learner=name, source=name, fingerprints=list(prints))


def test_the_same_run_or_solution_in_two_hand_ins_is_flagged_on_both_but_not_a_fresh_stub(tmp_path):
    (tmp_path / "autograd.py").write_text(workspace.lab_source("autograd"))
    assert grade_integrity.workspace_files(tmp_path) == []  # as init wrote it: everyone's
    (tmp_path / "autograd.py").write_text("mine\n")
    [solution] = grade_integrity.workspace_files(tmp_path)
    rows = [
        row("ana", "run 20261202-0400", solution),
        row("ben", "run 20261202-0400", solution),
        row("eva", "run 20261202-0500"),
    ]
    grade_integrity.handed_twice(rows)
    assert sorted(rows[0].notes) == [
        f"handed in twice: {solution} is also in ben's hand-in",
        "handed in twice: run 20261202-0400 is also in ben's hand-in",
    ]
    assert "handed in twice: run 20261202-0400 is also in ana's hand-in" in rows[1].notes
    assert rows[2].notes == []


def test_a_long_list_of_files_is_shortened():
    assert grade_integrity.shown([f"f{i}" for i in range(7)]) == "f0, f1, f2, f3, f4 and 2 more"
