"""Shared fixtures. `lab_dir(name)` gives a lab's output folder, running the lab once per test session.

Two modes:
- WORKSHOP_RUN_DIR=results/<run-id> (the container, after `python -m workshop run`): check that run's outputs;
  a lab missing from it is a failure, not a skip. A test that asks for another --n than that run's (say a
  4-process run of the distributed demos) gets a run of its own, as in the other mode.
- otherwise: run `python -m workshop run LAB --device $WORKSHOP_TEST_DEVICE (default cpu)` into a temporary
  results root, once per lab and session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from workshop.device import use_triton_interpreter

TEST_DEVICE = os.environ.get("WORKSHOP_TEST_DEVICE", "cpu")
# Without CUDA, Triton kernels run in its interpreter, which must be on before ANY test module imports triton.
use_triton_interpreter()


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


class LabRuns:
    def __init__(self, root: Path):
        self.root = root
        self.done: dict[tuple[str, int], Path] = {}
        self.given = os.environ.get("WORKSHOP_RUN_DIR")
        self.given_n = run_n(Path(self.given)) if self.given else None

    def __call__(self, lab: str, n: int = 2) -> Path:
        if self.given and n == self.given_n:
            lab_dir = Path(self.given) / lab
            assert (lab_dir / "result.json").is_file(), (
                f"{lab_dir}/result.json is missing from the run under test"
            )
            return lab_dir
        if (lab, n) not in self.done:
            out = self.root / f"{lab}-n{n}"
            cmd = [
                sys.executable,
                "-m",
                "workshop",
                "run",
                lab,
                "--device",
                TEST_DEVICE,
                "--n",
                str(n),
                "--out",
                str(out),
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            run_dir = (out / "latest").resolve()
            assert (run_dir / lab / "result.json").is_file(), (
                f"lab {lab} wrote no result:\n{proc.stdout}\n{proc.stderr}"
            )
            self.done[(lab, n)] = run_dir / lab
        return self.done[(lab, n)]


def run_n(run_dir: Path) -> int:
    """The --n a run was made with (its manifest records it)."""
    return json.loads((run_dir / "manifest.json").read_text())["n_procs"]


@pytest.fixture(scope="session")
def lab_dir(tmp_path_factory):
    return LabRuns(tmp_path_factory.mktemp("lab-runs"))


def read_result(lab_dir: Path) -> dict:
    return json.loads((lab_dir / "result.json").read_text())


def assert_result_shape(result: dict, lab: str) -> None:
    """The result.json contract every lab keeps."""
    assert result["lab"] == lab
    assert isinstance(result["passed"], bool)
    assert result["checks"], "a lab must record checks"
    for check in result["checks"]:
        assert set(check) >= {"name", "passed", "value", "threshold"}, check
    assert result["passed"] == all(c["passed"] for c in result["checks"])
