"""learner.workspace: a document not written yet says how to start it; the record's hints count up to the
exercise's last level and no further; a run records each graded file's hash, so that a changed file is seen; a
broken record reads as none. The learner's starting files (`exercises init`), derived from every lab's exercise
declarations (declarations/exercise.py): in every language each file is Python, no line is longer than the
project's 100 columns, each exercise's statement occurs once, and no message catalog holds code (only prose is
translated)."""

from __future__ import annotations

import ast
import json
import re

import pytest

from workshop import i18n, labs
from workshop.declarations.questions import WIDTH
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


LABS = list(labs.all_exercises())


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
@pytest.mark.parametrize("lab", LABS)
def test_a_learners_file_fits_the_width_and_states_each_exercise_once(lab, lang):
    with i18n.using(lang):
        text = workspace.lab_source(lab)
        declared = labs.exercises(lab)
    ast.parse(text)
    assert [line for line in text.splitlines() if len(line) > WIDTH] == []
    words = " ".join(re.sub(r"^\s*# ?", "", line) for line in text.splitlines()).split()
    flat = " ".join(words)
    for ex in (ex for ex in declared if ex.attribute):
        assert flat.count(" ".join(ex.statement.split())) == 1, ex.id
        assert ex.hints[0] not in text, f"{ex.id}: the hints are for check to show, one at a time"


CODE = re.compile(
    r"^\s*(import \w|from [\w.]+ import |def \w+\(|@\w|class \w+\b.*:$|\w+ = [{\[(])", re.M
)


def test_no_catalog_holds_code():
    pytest.importorskip("babel", reason="Babel (the catalog tool's library) is not installed here")
    from tools import catalogs  # Babel's: the GPU hosts lack it

    found = [
        f"{area.name}: {str(m.id)[:60]!r}"
        for area in catalogs.areas()
        for m in catalogs.extracted(area)
        if m.id and CODE.search(m.id if isinstance(m.id, str) else " ".join(m.id))
    ]
    assert found == []


def test_the_check_of_the_test_catches_code_in_a_message():
    assert CODE.search('Fill in ANSWERS.\n\nANSWERS = {\n    "a": None,\n}')
    assert CODE.search("imports:\nimport torch")
    assert not CODE.search("Use a dict: ANSWERS['a'] = 1 is how a key is set.")
