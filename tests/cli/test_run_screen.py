"""The screen of `python -m workshop run` as a person sees it: the command in a pseudo-terminal (its live progress
line on, as in a learner's shell), the screen read back as the terminal shows it. A lab that passes takes a few
lines, and nothing a library printed reaches the screen (it is in the lab's log.txt); a failing lab shows its
failing checks; the run ends with REPORT.md's path."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

# A CSI escape sequence (colour, cursor moves, erasing a line) but the carriage return the live line redraws with
CSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# What libraries print into a lab's output: none of it may reach the screen
LIBRARY_LINES = ("USDT:", "profiler_start", "Warning", "Traceback", "torch._dynamo")


def run_in_terminal(*args: str, columns: int = 80) -> tuple[int, list[str]]:
    """`python -m workshop run ARGS` in a pseudo-terminal `columns` wide: its exit code and the lines left on the
    screen (a carriage return starts its line again, as the live line's redraws do; the transient live line is
    erased at the end)."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns)}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "workshop", "run", *args],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env=env,
        close_fds=True,
    )
    os.close(secondary)
    raw = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the terminal's other end closed (the command and its labs are gone)
            break
        if not chunk:
            break
        raw += chunk
    os.close(primary)
    code = proc.wait(timeout=60)
    text = CSI.sub("", raw.decode("utf-8", errors="replace")).replace("\r\n", "\n")
    shown = [line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]
    return code, [line for line in shown if line]


def assert_no_library_line(shown: list[str]) -> None:
    leaked = [line for line in shown if any(word in line for word in LIBRARY_LINES)]
    assert not leaked, "\n".join(shown)


@pytest.mark.slow
def test_a_passing_lab_takes_a_few_lines_and_the_run_ends_with_the_report(tmp_path):
    code, shown = run_in_terminal("dispatcher", "--device", "cpu", "--out", str(tmp_path))
    screen = "\n".join(shown)
    assert code == 0, screen
    # device, labs; the lab's start, end (and where its library output went); run folder, verdict, next, report
    assert len(shown) <= 9, screen
    assert shown[2] == "dispatcher: started (lab 1 of 1)", screen
    assert re.fullmatch(r"dispatcher: passed, \d+ checks, [\d.]+ s", shown[3]), screen
    assert not any("[dispatcher]" in line for line in shown), (
        "a check's line is log.txt's, not the screen's"
    )
    assert_no_library_line(shown)
    run_dir = (tmp_path / "latest").resolve()
    assert shown[-1] == f"report: {run_dir / 'REPORT.md'}" and (run_dir / "REPORT.md").is_file()
    assert "python -m workshop exercises init" in shown[-2]
    log = (run_dir / "dispatcher" / "log.txt").read_text()
    assert "[dispatcher] ok " in log, "the lab's checks are still in its log"


@pytest.mark.slow
def test_a_failing_lab_shows_its_failing_check(tmp_path):
    """The failure planted: a time limit the lab cannot meet, which fails its check "ran to completion"."""
    code, shown = run_in_terminal(
        "autograd", "--device", "cpu", "--time-limit", "1", "--out", str(tmp_path)
    )
    screen = "\n".join(shown)
    assert code == 1, screen
    assert re.fullmatch(r"autograd: FAILED, 1 of \d+ checks? failing, [\d.]+ s", shown[3]), screen
    assert any("FAIL" in line and "ran out of time (limit 1 s)" in line for line in shown), screen
    assert "FAILED: autograd" in screen
    assert_no_library_line(shown)
    assert len(shown) <= 16, screen
    run_dir = (tmp_path / "latest").resolve()
    assert shown[-1] == f"report: {run_dir / 'REPORT.md'}", screen
    assert Path(run_dir / "REPORT.md").is_file()
