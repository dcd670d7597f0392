"""The check-loop benchmark's workspace (tools/check_loop.py): the references written as a learner's
code, which the worker runs, for every lab; an import of a reference, the way it once was written, is refused."""

from __future__ import annotations

import pytest

from tools import check_loop
from tools.check_loop import (
    REGRADED,
    RUNS,
    Target,
    Timing,
    bind_to_run,
    global_names,
    lab_table,
    reference_source,
    reference_workspace,
)
from workshop import labs
from workshop.learner import source_check


@pytest.mark.parametrize("lab", list(check_loop.TARGETS))
def test_the_benchmarks_workspace_is_code_the_worker_runs(lab, tmp_path):
    text = (reference_workspace(lab, tmp_path) / f"{lab}.py").read_text()
    assert source_check.file_findings(text, labs.workspace_header(lab)) == []
    for ex in labs.exercises(lab):
        if ex.attribute and not (lab in check_loop.BOUND_TO_A_RUN and check_loop.constant(ex)):
            assert f"\n{ex.attribute} = " in text or f"\ndef {ex.attribute}(" in text


def test_a_constant_whose_reference_is_a_function_is_bound_to_its_value(tmp_path):
    """distributed's PREDICTIONS = reference(N) as a dict (the worker refuses a function as a value)."""
    text = (reference_workspace("distributed", tmp_path) / "distributed.py").read_text()
    assert "\nPREDICTIONS = {'n': 2, " in text and "\nPREDICTIONS = reference" not in text


def test_compiles_constants_are_bound_to_the_run_they_are_graded_against(tmp_path, monkeypatch):
    work = reference_workspace("compile", tmp_path)
    assert "\nANSWERS = {'" not in (work / "compile.py").read_text()
    asked = []
    monkeypatch.setattr(
        "workshop.labs.compile.grading.run_grading.answers",
        lambda run: asked.append(run) or {"x": 1},
    )
    monkeypatch.setattr(
        "workshop.labs.compile.grading.run_grading.kernel_explained", lambda run: {"k": run}
    )
    bind_to_run("compile", work, tmp_path / "run" / "compile")
    text = (work / "compile.py").read_text()
    assert asked == [str(tmp_path / "run" / "compile")] and "\nANSWERS = {'x': 1}\n" in text


def test_custom_ops_references_keep_their_decorators_and_reach_torch_library_by_name():
    header = labs.workspace_header("custom_op")
    kernel = reference_source(
        "workshop.ops.softmax_kernels:_fwd_one_pass", "softmax_fwd_kernel", header
    )
    # under the exercise's name: the lab counts launches of softmax_fwd_kernel by the kernel's name
    assert kernel.startswith("@triton.jit\ndef softmax_fwd_kernel(")
    op = reference_source("workshop.ops.softmax_op:define_triton_op", "define_triton_op", header)
    assert op.startswith("wrap_triton = torch.library.wrap_triton\n")
    # its nested `def softmax` is its own: the module's `softmax = OPS.forward ...` is not pulled in
    assert "OPS" not in op and source_check.file_findings(header + op, header) == []


def test_a_name_a_function_binds_itself_is_not_a_global_it_reads():
    source = "def f(x):\n    def g():\n        return x + h\n    g.y = 1\n    return g\n"
    assert global_names(source) == {"h"}
    assert global_names("A = B + len(C)\n") == {"B", "len", "C"}


def test_a_target_is_met_or_missed_by_the_checks_it_names():
    def timing(exercise, how, wall):
        target = check_loop.TARGETS["distributed"]
        applies = target.wall_s if target.applies(exercise, how) else None
        return Timing("distributed", exercise, how, applies, [wall], [wall / 2], [1.0], True)

    fresh, regraded = timing("predictions", RUNS, 45.0), timing("predictions", REGRADED, 15.0)
    assert fresh.met and regraded.met is None and timing("answers", RUNS, 90.0).met is None
    assert "| met |" in lab_table([fresh, regraded])
    assert "| MISSED |" in lab_table(
        [timing("predictions", RUNS, 61.0)]
    )  # planted: a slow fresh check
    assert Target(5.0).applies("anything", REGRADED)


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
