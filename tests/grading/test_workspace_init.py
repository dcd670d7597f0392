"""The learner's starting files, derived from every lab's exercise declarations (declarations/exercise.py): in every
language each file is Python, no line is longer than the project's 100 columns, each exercise's statement occurs
once, and no message catalog holds code (only prose is translated)."""

from __future__ import annotations

import ast
import re

import pytest

from workshop import i18n, labs
from workshop.declarations.questions import WIDTH
from workshop.grading import workspace_init

LABS = list(labs.all_exercises())


@pytest.mark.parametrize("lang", i18n.LANGUAGES)
@pytest.mark.parametrize("lab", LABS)
def test_a_learners_file_fits_the_width_and_states_each_exercise_once(lab, lang):
    with i18n.using(lang):
        text = workspace_init.lab_source(lab)
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
