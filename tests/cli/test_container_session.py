"""docker/session.sh, what `docker compose up workshop[-cpu]` and `invoke lab` run: the labs (whose run writes its
REPORT.md), then the tests on that very run. A fake Python records each call, so the order, the run folder
handed to pytest and the exit status are checked in milliseconds; CI runs the real thing in the image."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SESSION = Path(__file__).resolve().parents[2] / "docker" / "session.sh"

# Answers `$PYTHON -m workshop run ...` (and `report`, which the session must not need) and `$PYTHON -m
# pytest`; `run` makes a new run folder. The session's messages (`$PYTHON -m workshop.i18n.say ...`) come from
# the real package, and are not calls.
FAKE_PYTHON = """#!/bin/sh
[ "$2" = workshop.i18n.say ] && exec "$REAL_PYTHON" "$@"
echo "$* | N=$WORKSHOP_N DEVICE=$WORKSHOP_DEVICE RUN_DIR=${WORKSHOP_RUN_DIR:-}" >> calls.log
case "$2 $3" in
  "workshop run") [ -n "${FAKE_NO_RUN:-}" ] && exit 2
                  if [ -n "${FAKE_SLOW:-}" ]; then  # a run that stops cleanly on SIGTERM, as the real one
                    trap 'echo "run got TERM" >> calls.log; exit 143' TERM; echo started > started
                    while :; do sleep 0.05; done
                  fi
                  mkdir -p results/run2 && ln -sfn run2 results/latest; exit "${FAKE_RUN_RC:-0}" ;;
  "workshop report") exit 0 ;;
  "pytest "*) exit "${FAKE_TEST_RC:-0}" ;;
esac
"""


def session(tmp_path, *labs, signal_after_start=None, **env):
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
        "REAL_PYTHON": sys.executable,
        "PYTHONPATH": str(SESSION.parents[1]),
        "WORKSHOP_N": "3",
        "WORKSHOP_DEVICE": "cpu",
        **env,
    }
    proc = subprocess.Popen(
        ["sh", str(SESSION), *labs],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    if signal_after_start:
        deadline = time.monotonic() + 10
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal_after_start)
    proc.stdout_text, proc.stderr_text = proc.communicate(timeout=30)
    log = tmp_path / "calls.log"
    return proc, log.read_text().splitlines() if log.exists() else []


def test_runs_labs_then_pytest_on_that_run_and_writes_the_report_once(tmp_path):
    """`workshop run` writes REPORT.md itself: the session asks for no second one."""
    proc, calls = session(tmp_path)
    assert proc.returncode == 0, proc.stderr_text
    assert calls == [
        "-m workshop run --n 3 --device cpu -- | N=3 DEVICE=cpu RUN_DIR=",
        "-m pytest -m lab_run and not slow --durations=10 | N=3 DEVICE=cpu RUN_DIR=results/run2",
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
    assert calls[0].startswith("-m workshop run --n 3 --device cpu -- minigpt")
    assert not any(c.startswith("-m pytest") for c in calls)
    assert "not run" in proc.stdout_text


def test_a_refused_run_never_tests_or_reports_an_older_run(tmp_path):
    proc, calls = session(tmp_path, "nosuchlab", FAKE_NO_RUN="1")
    assert proc.returncode == 2
    assert len(calls) == 1 and "wrote no run folder" in proc.stderr_text


def test_the_sessions_messages_are_in_the_workshops_language(tmp_path):
    proc, _ = session(tmp_path, "minigpt", WORKSHOP_LANG="es")
    assert "solo se han ejecutado minigpt" in proc.stdout_text
    (tmp_path / "again").mkdir()
    proc, _ = session(tmp_path / "again", "nosuchlab", FAKE_NO_RUN="1", WORKSHOP_LANG="es")
    assert "no escribió ninguna carpeta de ejecución" in proc.stderr_text


def test_a_lab_name_that_looks_like_an_option_stays_a_lab_name(tmp_path):
    _, calls = session(tmp_path, "--help")
    assert calls[0].startswith("-m workshop run --n 3 --device cpu -- --help")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_reaches_the_run_and_nothing_runs_after_it(tmp_path, signum):
    """As the container's PID 1 the shell would ignore `docker stop`'s SIGTERM: it passes it on instead."""
    proc, calls = session(tmp_path, signal_after_start=signum, FAKE_SLOW="1")
    assert proc.returncode == 143
    assert calls[-1] == "run got TERM", calls
    assert not any("report" in c or "pytest" in c for c in calls)
    assert "interrupted" in proc.stderr_text
