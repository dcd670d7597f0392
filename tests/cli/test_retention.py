"""`python -m workshop clean` and its retention rule (cli.commands): the rule keeps the newest runs of each kind
(run, check), those results/latest and latest-check point at, each exercise's last grading and any running run,
and removes the rest, incomplete runs included; `clean RUN` removes that run (a pointer to it too), never a
running one."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from workshop.cli import commands
from workshop.cli.main import main
from workshop.foundations import results
from workshop.foundations.run_options import RunOptions


def a_run(root: Path, k: int, workspace: bool, status: str = "finished", tag: str = "a") -> Path:
    """Run number k under root (a later k: a newer run; `tag` breaks ties), of the reference or of a workspace
    (check)."""
    details = {"implementation": {"kind": "workspace", "work": "/w"}} if workspace else {}
    made = results.new_run(root, [], RunOptions("cpu"), **details)
    run = made.rename(root / f"20260101-{k:06d}-{tag * 6}")
    if status == "finished":
        results.end_run(run)
    elif status == "interrupted":
        results.end_run(run, "interrupted (SIGINT, Ctrl-C)", None)
    return run


def grading(run: Path, statuses: dict[str, str]) -> None:
    """The toy lab's result.json in a check run: each exercise's status."""
    (run / "toy").mkdir()
    result = {
        "lab": "toy",
        "passed": False,
        "checks": [],
        "implementation": {"kind": "workspace", "work": "/w"},
        "exercises": {ex_id: {"status": status} for ex_id, status in statuses.items()},
    }
    (run / "toy" / "result.json").write_text(json.dumps(result))


def test_clean_keeps_what_the_retention_rule_keeps_and_removes_the_rest(tmp_path, capsys):
    runs = [a_run(tmp_path, k, workspace=k % 2 == 1) for k in range(16)]  # even: run; odd: check
    grading(runs[1], {"toy.essay": "passing", "toy.double": "failing"})  # essay's last grading
    for run in runs[3::2]:
        grading(run, {"toy.essay": "not graded", "toy.double": "failing"})
    interrupted = a_run(tmp_path, 2, workspace=False, status="interrupted", tag="b")
    running = a_run(tmp_path, 4, workspace=False, status="running", tag="c")  # this process: alive
    assert results.read_manifest(running)["host"] == socket.gethostname()
    assert results.read_manifest(running)["pid"] == os.getpid()
    assert main(["clean", "--out", str(tmp_path)]) == 0
    kept = sorted(p.name for p in results.runs(tmp_path))
    newest = [r.name for r in runs[-10:]]  # the newest 5 of each kind
    assert kept == sorted([runs[1].name, running.name, *newest])
    assert not interrupted.exists()
    assert (tmp_path / "latest").resolve() == runs[14] and (
        tmp_path / "latest-check"
    ).resolve() == runs[15]
    assert "removed 6 run folders" in capsys.readouterr().out


def test_clean_run_removes_that_run_never_a_running_one(tmp_path):
    done = a_run(tmp_path, 1, workspace=False)
    running = a_run(tmp_path, 2, workspace=False, status="running")
    with pytest.raises(SystemExit, match="is still running: stop it first"):
        main(["clean", running.name, "--out", str(tmp_path)])
    assert main(["clean", done.name, "--out", str(tmp_path)]) == 0
    assert not done.exists() and running.exists()
    assert not (tmp_path / "latest").is_symlink(), "a pointer to no run goes with it"
    assert commands.removable(tmp_path) == []
