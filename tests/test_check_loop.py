"""The check-loop benchmark's workspace (workshop/devtools/check_loop.py): the references written as a learner's
code, which the worker runs; an import of a reference, the way it once was written, is refused."""

from __future__ import annotations

import pytest

from workshop import labs
from workshop.devtools.check_loop import reference_source, reference_workspace
from workshop.grading import source_check


@pytest.mark.parametrize("lab", ["autograd", "dispatcher"])
def test_the_benchmarks_workspace_is_code_the_worker_runs(lab, tmp_path):
    text = (reference_workspace(lab, tmp_path) / f"{lab}.py").read_text()
    assert source_check.file_findings(text, labs.workspace_header(lab)) == []
    for ex in labs.exercises(lab):
        if ex.attribute:
            assert f"\n{ex.attribute} = " in text or f"\ndef {ex.attribute}(" in text


def test_a_reference_comes_with_the_helpers_it_uses_but_not_the_headers():
    header = labs.workspace_header("autograd")
    source = reference_source("workshop.labs.autograd.replay:engine_order", "engine_order", header)
    assert source.startswith("def dependencies(") and "\ndef engine_order(" in source
    source = reference_source(
        "workshop.labs.autograd.replay:backpropagate", "backpropagate", header
    )
    assert "def fit_to_input(" not in source  # the header imports it


def test_an_imported_reference_is_refused():
    header = labs.workspace_header("autograd")
    imported = header + "\nfrom workshop.labs.autograd.hand_grads import linear_grads\n"
    assert source_check.file_findings(imported, header)
