"""A process and everything it started, found and stopped together (on Linux through /proc).

Why not a process group: torchrun starts each rank in a session of its own, so `killpg` on the lab's group
misses the ranks. `stop_tree` takes a snapshot of the whole tree before it signals anything (a rank whose
parent dies first is still in the snapshot), sends SIGTERM, and SIGKILLs whatever is left after a grace period.

Three Linux settings tie a lab's process to the workshop's (`prctl(2)`, through ctypes):
- PR_SET_PDEATHSIG: the lab's process gets SIGTERM when the `python -m workshop run` that started it dies,
  even by SIGKILL, so it stops its own tree and never runs on as an orphan;
- PR_SET_CHILD_SUBREAPER: a process whose parent died is re-parented to the lab's process (not to init),
  so the lab can still find it and stop it before it exits.
- PR_SET_DUMPABLE 0: no other process of the same uid can read the lab's memory or open files.
Elsewhere (macOS) all three are skipped and `stop_tree` falls back to the process group.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from pathlib import Path

GRACE_S = 5.0  # a stopped process's time to finish (a lab: write its result) before it is killed
PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_DUMPABLE = 4
PROC = Path("/proc")


def _prctl(option: int, value: int) -> None:
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def tie_to_parent(parent_pid: int) -> None:
    """A lab's process, bound to the workshop's that started it (`parent_pid`): SIGTERM when its parent dies (now,
    if the parent is already gone); a process whose parent died comes to it (a subreaper), so that its own sweep
    of its tree finds it; and its /proc entries (memory, environment, open files) readable by no other process
    without root's ptrace capability: the learner's worker, as this uid without capabilities, included."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if sys.platform == "linux" and os.getppid() != parent_pid:
        os.kill(os.getpid(), signal.SIGTERM)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_DUMPABLE, 0)


def processes() -> dict[int, tuple[int, int, bool]]:
    """{pid: (its parent's pid, its uid, whether it is a zombie)} of every process now (one that exited while it
    was looked at left out). A zombie is in no tree (_tree), but its uid is still taken (worker_process.free_uid)."""
    found = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="utf-8", errors="replace")
            uid = entry.stat().st_uid
        except OSError:  # it exited while we looked
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]  # the name, in (), may hold spaces
        found[int(entry.name)] = (int(ppid), uid, state in "ZX")
    return found


def _tree(roots: set[int]) -> set[int]:
    """The live processes among `roots` and below them (children, their children, ...)."""
    parents = {pid: ppid for pid, (ppid, _uid, zombie) in processes().items() if not zombie}
    found = {r for r in roots if r in parents}
    # a generation at a time (a process whose parent is gone was re-parented: it is not below that parent)
    while below := {child for child, parent in parents.items() if parent in found} - found:
        found |= below
    return found


def alive(pid: int) -> bool:
    """Whether a process with this pid exists (ours or anyone's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, and belongs to someone else
        return True
    return True


def signal_each(pids: set[int], signum: int) -> None:
    """Send `signum` to each of `pids` (one gone already, or not ours to signal, left out)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


def stop_tree(
    pid: int, grace_s: float, include_root: bool = True, root_signal: int = signal.SIGTERM
) -> None:
    """SIGTERM `pid` (unless include_root is False; `root_signal` instead: a user's Ctrl-C passed on, which the
    lab records as its own) and all its descendants; SIGKILL any left after grace_s.

    The root, when it is our child, stays a zombie for its Popen to reap (its exit code must not be lost).
    """
    if not PROC.is_dir():  # no /proc: the root's process group is the best we can do
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(pid), root_signal)
        return
    tree = _tree({pid}) - (set() if include_root else {pid})
    signalled: set[int] = set()
    deadline = time.monotonic() + grace_s
    while tree:
        signal_each((tree - signalled) & {pid}, root_signal)
        signal_each(tree - signalled - {pid}, signal.SIGTERM)
        signalled |= tree
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
        # The snapshot keeps a process whose parent died first; re-reading it adds any child started since.
        tree = _tree(tree)
    signal_each(tree, signal.SIGKILL)
    for _ in range(40):  # SIGKILL cannot be caught, but takes a moment to act
        if not _tree(tree):
            break
        time.sleep(0.05)
