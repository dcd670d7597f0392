"""cli.runs: a new run folder records its options (what `--resume` reads back) and what ran; an incomplete run is
one line that says how to resume it, noted once (until it is stopped again) with how to dismiss it too; a lab's
failing checks fit an 80-column terminal, a learner's text in them shown as text (rich markup escaped), a long
value cut short; of a lab's output, the screen shows its start, its verdict and failing checks, and where its
library output went (its log.txt)."""

from __future__ import annotations

import io

from rich.console import Console

from workshop.cli import runs
from workshop.foundations import results
from workshop.foundations.run_options import RunOptions
from workshop.harness import child
from workshop.lab_api import Check


def test_a_new_run_records_its_options_and_what_ran(tmp_path):
    options = RunOptions("cpu", n_procs=3, lang="en")
    run = runs.new_run(tmp_path, ["minigpt"], options)
    manifest = results.read_manifest(run)
    assert RunOptions.read(run) == options
    assert manifest["labs_planned"] == ["minigpt"] and manifest["implementation"] == {
        "kind": "reference"
    }
    assert manifest["checkpoint"]["sha256"]


def test_an_incomplete_run_says_how_to_resume_it(tmp_path):
    run = runs.new_run(tmp_path, ["minigpt"], RunOptions("cpu", lang="en"))
    results.end_run(run, "interrupted (SIGINT, Ctrl-C)", "minigpt")
    line = runs.incomplete_line(run)
    assert f"resume it: python -m workshop run --resume {run.name}" in line and "\n" not in line


def test_an_incomplete_run_is_noted_once_with_how_to_resume_or_dismiss_it(tmp_path, monkeypatch):
    """The issue's case: after one interrupted run every later command opened with its note, and no way to
    dismiss it was shown."""
    screen = Console(file=io.StringIO(), width=400, force_terminal=False)
    monkeypatch.setattr(runs, "console", screen)
    run = runs.new_run(tmp_path, ["minigpt"], RunOptions("cpu", lang="en"))
    results.end_run(run, "interrupted (SIGINT, Ctrl-C)", "minigpt")
    runs.note_incomplete_runs(tmp_path)
    first = screen.file.getvalue()
    assert f"resume it: python -m workshop run --resume {run.name}" in first
    assert f"or dismiss it: python -m workshop clean {run.name}" in first
    runs.note_incomplete_runs(tmp_path)
    assert screen.file.getvalue() == first, "noted once"
    results.resume_run(run)
    results.end_run(run, "interrupted (SIGINT, Ctrl-C)", "minigpt")
    runs.note_incomplete_runs(tmp_path)
    assert screen.file.getvalue().count("note: ") == 2, "stopped again: noted again"


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=80, force_terminal=False)
    console.print(table)
    return console.file.getvalue()


def test_the_failing_checks_fit_80_columns_and_show_markup_as_text(tmp_path):
    failing = [
        Check("[red]not markup[/red]", False, 1, 2, message="[b]a message[/b]").as_dict(),
        Check("a long value", False, "x" * 200, "y", relation="==").as_dict(),
    ]
    text = rendered(runs.failing_checks(failing))
    assert "[red]not markup[/red]" in text and "[b]a message[/b]" in text
    assert "x" * 200 not in text and "…" in text
    assert max(map(len, text.splitlines())) <= 80


def test_the_screen_shows_a_lab_s_start_end_and_failing_checks_not_its_output(
    tmp_path, monkeypatch
):
    """In a log (no terminal: no live line): a lab's own passing checks, its steps and what libraries printed
    stay in its log.txt; the screen has its start, its verdict, its failing check and where that log is."""
    out = io.StringIO()
    monkeypatch.setattr(runs, "console", Console(file=out, width=200, force_terminal=False))
    checks = [Check("loss", True, 1, 1), Check("drift", False, 0.5, 1e-4, relation="<=")]
    result = child.write_result(tmp_path / "toy", "toy", "cpu", checks, 1.0, "")
    shown = runs.LabScreen(tmp_path, ["other", "toy"])
    with shown.live:
        shown.started("toy")
        for line in (
            "[toy] ok   loss: 1 (expected 1)",
            "[toy:step] 3/30 replaying training steps",
            "USDT:2026-12-06 07:02:48 6555:6555 SyncActivityProfilerHandler.cpp:52] profiler_start",
            "RuntimeWarning: invalid value encountered in subtract",
            "[toy] FAIL drift: 0.5 (at most 0.0001)",
        ):
            shown.line("toy", line)
        shown.ended("toy", {"passed": False, "duration_s": 12.5}, result["checks"])
    lines = out.getvalue().splitlines()
    assert lines[0] == "toy: started (lab 2 of 2)"
    assert lines[1] == "toy: FAILED, 1 of 2 checks failing, 12.5 s"
    assert [line.split() for line in lines if "drift" in line] == [
        ["FAIL", "drift", "0.5", "<=", "0.0001"]
    ]
    assert (
        lines[-1]
        == f"  2 lines of library output (logs, warnings) in {tmp_path / 'toy' / 'log.txt'}"
    )
    assert not any(word in out.getvalue() for word in ("USDT", "Warning", "replaying", "ok   loss"))


def test_past_ten_failing_checks_the_summary_has_the_rest(tmp_path, monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(runs, "console", Console(file=out, width=200, force_terminal=False))
    checks = [Check(f"check {i}", False, 1, 2) for i in range(runs.SHOWN_FAILURES + 2)]
    result = child.write_result(tmp_path / "toy", "toy", "cpu", checks, 1.0, "")
    shown = runs.LabScreen(tmp_path, ["toy"])
    with shown.live:
        shown.started("toy")
        shown.ended("toy", {"passed": False, "duration_s": 1.0}, result["checks"])
    text = out.getvalue()
    assert (
        f"check {runs.SHOWN_FAILURES - 1} " in text and f"check {runs.SHOWN_FAILURES} " not in text
    )
    assert text.endswith(f"  and 2 more failing checks: {tmp_path / 'toy' / 'summary.md'}\n")


def test_on_a_terminal_a_step_moves_the_live_line(tmp_path, monkeypatch):
    terminal = Console(file=io.StringIO(), width=80, force_terminal=True)
    monkeypatch.setattr(runs, "console", terminal)
    shown = runs.LabScreen(tmp_path, ["toy"])
    with shown.live:
        shown.started("toy")
        shown.line("toy", "[toy:step] 3/30 replaying [the first] steps")
        [task] = shown.live.tasks
        assert (task.description, task.completed, task.total) == (
            "replaying [the first] steps",
            3,
            30,
        )
        assert task.fields == {"lab": "toy", "count": "3/30"}
