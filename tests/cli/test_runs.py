"""cli.runs: a new run folder records its options (what `--resume` reads back) and what ran; an incomplete run is
one line that says how to resume it, noted once (until it is stopped again) with how to dismiss it too; the
checks table fits an 80-column terminal, a learner's text in it shown
as text (rich markup escaped), a long value cut short; in a log every line of a lab is prefixed with its name."""

from __future__ import annotations

import io

from rich.console import Console

from workshop.cli import runs
from workshop.harness import lab_result, results
from workshop.harness.run_options import RunOptions
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
    results.stop_run(run, "interrupted (SIGINT, Ctrl-C)", "minigpt")
    line = runs.incomplete_line(run)
    assert f"resume it: python -m workshop run --resume {run.name}" in line and "\n" not in line


def test_an_incomplete_run_is_noted_once_with_how_to_resume_or_dismiss_it(tmp_path, monkeypatch):
    """The issue's case: after one interrupted run every later command opened with its note, and no way to
    dismiss it was shown."""
    screen = Console(file=io.StringIO(), width=400, force_terminal=False)
    monkeypatch.setattr(runs, "console", screen)
    run = runs.new_run(tmp_path, ["minigpt"], RunOptions("cpu", lang="en"))
    results.stop_run(run, "interrupted (SIGINT, Ctrl-C)", "minigpt")
    runs.note_incomplete_runs(tmp_path)
    first = screen.file.getvalue()
    assert f"resume it: python -m workshop run --resume {run.name}" in first
    assert f"or dismiss it: python -m workshop clean {run.name}" in first
    runs.note_incomplete_runs(tmp_path)
    assert screen.file.getvalue() == first, "noted once"
    results.resume_run(run)
    results.stop_run(run, "interrupted (SIGINT, Ctrl-C)", "minigpt")
    runs.note_incomplete_runs(tmp_path)
    assert screen.file.getvalue().count("note: ") == 2, "stopped again: noted again"


def rendered(table) -> str:
    console = Console(file=io.StringIO(), width=80, force_terminal=False)
    console.print(table)
    return console.file.getvalue()


def test_the_checks_table_fits_80_columns_and_shows_markup_as_text(tmp_path):
    run = tmp_path / "run"
    (run / "toy").mkdir(parents=True)
    checks = [
        Check("[red]not markup[/red]", True, 1, 1),
        Check("a long value", False, "x" * 200, "y", relation="=="),
    ]
    lab_result.write_result(run / "toy", "toy", "cpu", checks, 1.0, "")
    text = rendered(runs.checks_table(run, ["toy"]))
    assert "[red]not markup[/red]" in text and "x" * 200 not in text and "…" in text
    assert max(map(len, text.splitlines())) <= 80


def test_in_a_log_each_line_is_prefixed_with_its_lab(capsys, monkeypatch):
    monkeypatch.setattr(runs, "console", Console(file=io.StringIO(), force_terminal=False))
    with runs.progress(["minigpt"]) as on_line:
        on_line("minigpt", "[minigpt] ok   loss")
    assert capsys.readouterr().out == "     minigpt | [minigpt] ok   loss\n"
