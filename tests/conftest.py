"""Shared fixtures. `lab_dir(name)` gives a lab's output folder, running the lab once per test session.

Two modes:
- WORKSHOP_RUN_DIR=results/<run-id> (the container, after `python -m workshop run`): check that run's outputs;
  a lab missing from it is a failure, not a skip. A test that asks for another --n than that run's (say a
  4-process run of the distributed demos) gets a run of its own, as in the other mode; so does every test when
  that run is not in English (a learner's Spanish session): the tests read English check names and summaries.
- otherwise: run `python -m workshop run LAB --device $WORKSHOP_TEST_DEVICE` into a temporary results root, once
  per lab and session: pytest-xdist's workers share that root, and a file lock per lab makes the first worker
  that needs a lab runs it while the others wait (`-n auto` in pyproject.toml). WORKSHOP_TEST_DEVICE's default
  is the machine's: cuda where torch sees a GPU (so `python -m pytest` on a GPU host runs the `gpu` tests' labs
  on the GPU, as those tests need), cpu elsewhere.

The suite runs in English whatever the developer's locale (WORKSHOP_LANG=en, inherited by every command a test
starts); a test that wants Spanish asks for it (--lang es, or its own environment).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from filelock import FileLock

from tests.support import installed
from workshop import i18n
from workshop.foundations.device import resolve, use_triton_interpreter
from workshop.grading import edition

os.environ["WORKSHOP_LANG"] = "en"
i18n.set_language("en")
TEST_DEVICE = os.environ.get("WORKSHOP_TEST_DEVICE") or resolve("auto")
# Threads per process: pytest-xdist's workers and the labs they start share the cores, and left to itself each
# torch process takes all of them. On one H200's 16 cores, 12 workers so oversubscribed made the minigpt lab take
# 273 s instead of 17 s. A worker and what it starts (labs, learners' workers: they inherit OMP_NUM_THREADS) get
# their share, at least 2; on a 2-core machine that is torch's own default, unchanged.
CORES = len(os.sched_getaffinity(0))
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if WORKERS > 1 and "OMP_NUM_THREADS" not in os.environ:
    threads = max(2, CORES // WORKERS)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)
# Without CUDA, Triton kernels run in its interpreter, which must be on before ANY test module imports triton.
use_triton_interpreter()

# The Ctrl-C tests send SIGINT to the processes they start, which must not ignore it. A shell that starts pytest
# in the background (docker/session.sh: `pytest &`) gives it SIGINT ignored, and an ignored signal stays ignored
# across fork and exec; a handled one is reset to the default at exec. So handle it here: its children get SIGINT.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionstart(session):
    """The tests start `python -m workshop` from folders of their own (a learner's workspace, a class of
    hand-ins, a planted sitecustomize.py): without the README's install, each of those fails on its own, far from
    the cause. So say it once, before any test (the controller only, not each xdist worker)."""
    if not os.environ.get("PYTEST_XDIST_WORKER") and not installed.importable_elsewhere():
        pytest.exit(installed.NOT_INSTALLED, returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_xdist_auto_num_workers(config):
    """How many workers `-n auto` (pyproject.toml) starts: one per core up to 4 cores, three in four cores above.
    The labs and learner workers the tests start need cores of their own: on one H200's 16 cores, 15 test workers
    kept every core busy for the whole suite (127 CPU-minutes in 8m51s)."""
    return CORES if CORES <= 4 else CORES * 3 // 4


@pytest.hookimpl(tryfirst=True)  # before `-m` selects: `-m lab_run` sees the markers added here
def pytest_collection_modifyitems(config, items):
    skip = pytest.mark.skip(reason="needs a CUDA GPU; this machine has none")
    for item in items:
        # a test that reads a run of the labs: the container session runs these on its own run
        if "lab_dir" in item.fixturenames:
            item.add_marker(pytest.mark.lab_run)
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip)


class LabRuns:
    def __init__(self, root: Path):
        self.root = root
        self.done: dict[tuple[str, int], Path] = {}
        self.given = os.environ.get("WORKSHOP_RUN_DIR")
        manifest = read_manifest(Path(self.given)) if self.given else {}
        self.given_n = manifest.get("n_procs")
        self.given_in_english = manifest.get("lang", "en") == "en"

    def __call__(self, lab: str, n: int = 2) -> Path:
        if self.given and n == self.given_n and self.given_in_english:
            lab_dir = Path(self.given) / lab
            assert (lab_dir / "result.json").is_file(), (
                f"{lab_dir}/result.json is missing from the run under test"
            )
            return lab_dir
        if (lab, n) not in self.done:
            with FileLock(self.root / f"{lab}-n{n}.lock"):
                self.done[(lab, n)] = self.run(lab, n)
        return self.done[(lab, n)]

    def run(self, lab: str, n: int) -> Path:
        """The lab's folder in the run another worker made, else in a run made now."""
        out = self.root / f"{lab}-n{n}"
        lab_dir = (out / "latest").resolve() / lab
        if (lab_dir / "result.json").is_file():
            return lab_dir
        cmd = [
            sys.executable,
            "-m",
            "workshop",
            "run",
            lab,
            "--device",
            lab_device(lab, n),
            "--n",
            str(n),
        ]
        proc = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True)
        lab_dir = (out / "latest").resolve() / lab
        assert (lab_dir / "result.json").is_file(), (
            f"lab {lab} wrote no result:\n{proc.stdout}\n{proc.stderr}"
        )
        return lab_dir


def lab_device(lab: str, n: int = 2) -> str:
    """The device a test runs `lab` on with --n n: TEST_DEVICE, except that the distributed demos take one GPU
    per process, so a host with fewer GPUs runs them on the CPU (gloo); the other labs run one process whatever
    --n says."""
    if lab == "distributed" and TEST_DEVICE == "cuda" and n > torch.cuda.device_count():
        return "cpu"
    return TEST_DEVICE


def read_manifest(run_dir: Path) -> dict:
    """What a run records of itself: its --n ("n_procs"), its language ("lang"; English before runs had one)."""
    return json.loads((run_dir / "manifest.json").read_text())


def pytest_report_header(config):
    given = os.environ.get("WORKSHOP_RUN_DIR")
    if given and read_manifest(Path(given)).get("lang", "en") != "en":
        return (
            f"{given} is not in English: the tests run the labs they check themselves, in English"
        )
    why = (
        "WORKSHOP_TEST_DEVICE"
        if os.environ.get("WORKSHOP_TEST_DEVICE")
        else "this machine's default"
    )
    return f"labs the tests run themselves run on: {TEST_DEVICE} ({why})"


@pytest.fixture(scope="session")
def lab_dir(tmp_path_factory):
    # under xdist each worker has its own base temp folder, their parent is the session's
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    (root / "lab-runs").mkdir(exist_ok=True)
    return LabRuns(root / "lab-runs")


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


@pytest.fixture(scope="session")
def learner_edition(tmp_path_factory) -> Path:
    """The learner edition, built once per worker by the real build (edition.build_apart)."""
    out = tmp_path_factory.mktemp("learner-edition") / "edition"
    edition.build_apart(out)
    return out


@pytest.fixture
def edition_built_once(learner_edition, monkeypatch):
    """`grade`'s class edition as a copy of the session's build (tests/grading/test_edition.py tests the build):
    each grade still gets a folder of its own, which its hand-ins may rewrite, at a copy's cost, not a build's.
    Into a folder that may exist already, as the real build's: check's cached edition is built into a fresh
    temporary folder (the first check after the code changed builds it)."""
    monkeypatch.setattr(
        edition,
        "build_apart",
        lambda out: shutil.copytree(learner_edition, out, symlinks=True, dirs_exist_ok=True),
    )
