"""A lab's own process as the runner starts it (harness.child), for tests that run one lab without a run folder:
its orders written to <out>/options.json first, as harness.runner.run_lab writes them."""

from __future__ import annotations

import sys
from pathlib import Path

from workshop.foundations.run_options import RunOptions
from workshop.harness import child


def write_order(lab: str, out: Path, device: str = "cpu", **options) -> Path:
    """<out>/options.json for `lab`'s process: these RunOptions (device first, as RunOptions takes it)."""
    Path(out).mkdir(parents=True, exist_ok=True)
    return RunOptions(device, **options).write(out)


def command(lab: str, out: Path, device: str = "cpu", **options) -> list[str]:
    """The command line of the lab's process, its options.json written."""
    write_order(lab, out, device, **options)
    return [sys.executable, "-m", "workshop.harness.child", str(out), lab]


def run_here(lab: str, out: Path, device: str = "cpu", **options) -> int:
    """The lab's process's main, in this process (so that a test may monkeypatch the lab first)."""
    write_order(lab, out, device, **options)
    return child.main(Path(out), lab)
