"""cli.runs.write_report: REPORT.md, one page per run: every lab's summary with its links re-rooted at the run folder
and its headings one level down, a picture the summary does not link shown anyway; a corrupt result.json, a
summary that is not UTF-8 and a run that never finished are each named in the report and returned as problems."""

from __future__ import annotations

import json

from workshop.cli import runs
from workshop.foundations import results
from workshop.foundations.run_options import RunOptions
from workshop.harness import child
from workshop.lab_api import Check


def run_with(tmp_path, finished: bool = True):
    run = results.new_run(
        tmp_path,
        ["python", "-m", "workshop", "run"],
        RunOptions("cpu"),
        labs_planned=["a", "b", "c"],
    )
    for lab, passed in (("a", True), ("b", False)):
        (run / lab).mkdir()
        checks = [Check("value", passed, 1, 1)]
        summary = "# What ran\n\n![loss](loss.png) and [the trace](trace.json), [docs](https://pytorch.org)"
        child.write_result(run / lab, lab, "cpu", checks, 1.0, summary)
        results.update_manifest(run, {lab: {"passed": passed, "duration_s": 1.0}})
    (run / "a" / "graph.png").write_bytes(b"\x89PNG")
    if finished:
        results.end_run(run)
    return run


def test_every_lab_summary_re_rooted_with_its_verdict(tmp_path):
    run = run_with(tmp_path)
    path, problems = runs.write_report(run)
    report = path.read_text()
    assert problems == []
    assert "| [a](#a) | yes | 1.0 |" in report and "| [b](#b) | no | 1.0 |" in report
    assert "| c | not run | |" in report
    assert "![loss](a/loss.png)" in report and "[the trace](b/trace.json)" in report
    assert "[docs](https://pytorch.org)" in report and "\n## Lab `a`: passed" in report
    assert "![graph.png](a/graph.png)" in report  # not linked by the summary: shown all the same


def test_corrupt_files_and_an_unfinished_run_are_problems_named_in_the_report(tmp_path):
    run = run_with(tmp_path, finished=False)
    (run / "b" / "result.json").write_text("{cut short")
    (run / "a" / "summary.md").write_bytes(b"\xff\xfe not utf-8")
    path, problems = runs.write_report(run)
    report = path.read_text()
    assert len(problems) == 3 and "is incomplete" in problems[0]
    assert "unreadable result.json" in report and "(summary.md is unreadable)" in report
    assert any("is not UTF-8 text" in p for p in problems)
    assert json.loads((run / "manifest.json").read_text())["status"] == "running"
