"""docker/session.sh, what `docker compose up workshop[-cpu]` and `invoke lab` run: labs, report, then the
tests on that very run. A fake Python records each call, so the order, the run folder handed to pytest and the
exit status are checked in milliseconds; CI runs the real thing in the image."""

import subprocess
from pathlib import Path

import pytest

SESSION = Path(__file__).resolve().parents[1] / "docker" / "session.sh"

# Answers `$PYTHON -m workshop run|report ...` and `$PYTHON -m pytest`; `run` makes a new run folder.
FAKE_PYTHON = """#!/bin/sh
echo "$* | N=$WORKSHOP_N DEVICE=$WORKSHOP_DEVICE RUN_DIR=${WORKSHOP_RUN_DIR:-}" >> calls.log
case "$2 $3" in
  "workshop run") [ -n "${FAKE_NO_RUN:-}" ] && exit 2
                  mkdir -p results/run2 && ln -sfn run2 results/latest; exit "${FAKE_RUN_RC:-0}" ;;
  "workshop report") exit 0 ;;
  "pytest "*) exit "${FAKE_TEST_RC:-0}" ;;
esac
"""


def session(tmp_path, *labs, **env):
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    (tmp_path / "results" / "run1").mkdir(parents=True)
    (tmp_path / "results" / "latest").symlink_to(
        "run1"
    )  # an older run, which must not be tested or reported
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHON": str(python),
        "WORKSHOP_N": "3",
        "WORKSHOP_DEVICE": "cpu",
        **env,
    }
    proc = subprocess.run(
        ["sh", str(SESSION), *labs], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    log = tmp_path / "calls.log"
    return proc, log.read_text().splitlines() if log.exists() else []


def test_runs_labs_then_report_then_pytest_on_that_run(tmp_path):
    proc, calls = session(tmp_path)
    run2 = str((tmp_path / "results" / "run2").resolve())
    assert proc.returncode == 0, proc.stderr
    assert calls == [
        "-m workshop run --n 3 --device cpu | N=3 DEVICE=cpu RUN_DIR=",
        f"-m workshop report {run2} | N=3 DEVICE=cpu RUN_DIR=",
        f"-m pytest | N=3 DEVICE=cpu RUN_DIR={run2}",
    ]


@pytest.mark.parametrize(
    "env", [{"FAKE_RUN_RC": "1"}, {"FAKE_TEST_RC": "1"}], ids=["a lab failed", "a test failed"]
)
def test_a_failed_lab_or_test_fails_the_session_but_the_tests_still_run(tmp_path, env):
    proc, calls = session(tmp_path, **env)
    assert proc.returncode != 0
    assert calls[-1].startswith("-m pytest"), "the tests run even when a lab check failed"


def test_some_labs_only_skips_the_tests_and_says_why(tmp_path):
    proc, calls = session(tmp_path, "minigpt")
    assert proc.returncode == 0
    assert calls[0].startswith("-m workshop run --n 3 --device cpu minigpt")
    assert not any(c.startswith("-m pytest") for c in calls)
    assert "not run" in proc.stdout


def test_a_refused_run_never_tests_or_reports_an_older_run(tmp_path):
    proc, calls = session(tmp_path, "nosuchlab", FAKE_NO_RUN="1")
    assert proc.returncode == 2
    assert len(calls) == 1 and "wrote no run folder" in proc.stderr
