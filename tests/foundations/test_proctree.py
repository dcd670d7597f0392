"""foundations.proctree: a lab's process and everything it started are stopped together, a rank in a session of its
own (as torchrun starts them) and one that ignores SIGTERM included; a process group alone would miss them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from workshop.foundations import proctree

# A "lab" that starts a "rank" in a session of its own, which ignores SIGTERM (a rank stuck in a collective),
# prints the rank's pid, then waits.
LAB = """
import subprocess, sys, time
rank = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"],
    start_new_session=True, stdout=subprocess.PIPE, text=True)
rank.stdout.readline()
print(rank.pid, flush=True)
time.sleep(60)
"""


def stop_by_group(pid: int, grace_s: float) -> None:
    """Planted: stops the lab's process group, as killpg does."""
    os.killpg(os.getpgid(pid), signal.SIGKILL)


def left_running(stop) -> list[int]:
    """The processes of a lab (its own, its rank) still running after `stop(lab pid, grace)`."""
    lab = subprocess.Popen(
        [sys.executable, "-c", LAB], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    rank = int(lab.stdout.readline())
    try:
        stop(lab.pid, 0.3)
        lab.wait(timeout=10)
        time.sleep(0.2)
        return [pid for pid in (rank,) if proctree._tree({pid})]
    finally:
        for pid in (rank, lab.pid):  # what the test started, whatever happened
            if proctree.alive(pid):
                os.kill(pid, signal.SIGKILL)
        lab.stdout.close()


@pytest.mark.skipif(not proctree.PROC.is_dir(), reason="needs /proc (Linux)")
def test_the_whole_tree_stops_a_rank_that_ignores_sigterm_included():
    assert left_running(proctree.stop_tree) == []


@pytest.mark.skipif(not proctree.PROC.is_dir(), reason="needs /proc (Linux)")
def test_the_check_catches_a_stop_by_process_group():
    assert left_running(stop_by_group) != []


def test_the_tree_below_and_alive():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in proctree._tree({os.getpid()}) and proctree.alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not proctree.alive(child.pid)
