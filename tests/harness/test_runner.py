"""harness.runner's pieces around a lab's process (the whole run through it: tests/harness/test_faults.py,
tests/cli/test_main.py): each lab's own cache and temporary folders, Inductor's kept builds per torch version,
the CPU threads a lab asks for, and the sweep that removes the folders of runs whose process is gone, and only those."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from workshop.foundations import worker_process
from workshop.harness import runner


def test_each_lab_gets_its_own_folders_and_reads_its_output_as_utf8(tmp_path):
    (tmp_path / "cache").mkdir()  # the runner's mkdtemp
    env = runner.lab_environment("cpu", tmp_path / "cache")
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "cache" / "inductor")
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "cache" / "triton")
    assert (
        env["TMPDIR"] == str(tmp_path / "cache" / "tmp") and (tmp_path / "cache" / "tmp").is_dir()
    )
    assert (
        env["PYTHONIOENCODING"] == "utf-8" and env["TRITON_INTERPRET"] == "1"
    )  # no GPU: the interpreter


def test_a_lab_that_keeps_its_builds_compiles_into_the_kept_cache(tmp_path):
    kept = runner.build_cache(tmp_path / "results")
    assert importlib.metadata.version("torch") in str(kept)  # another torch's builds are not reused
    (tmp_path / "cache").mkdir()
    env = runner.lab_environment("cpu", tmp_path / "cache", kept=kept)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(kept)


def test_a_lab_on_one_cpu_thread_runs_torch_on_one_and_its_worker_too(tmp_path, monkeypatch):
    (tmp_path / "cache").mkdir()
    env = runner.lab_environment("cpu", tmp_path / "cache", threads=1)
    threads = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert threads.stdout.strip() == "1", threads.stderr
    monkeypatch.setenv("OMP_NUM_THREADS", env["OMP_NUM_THREADS"])  # as the lab's process has it
    worker = worker_process.worker_environment(tmp_path, "cpu", worker_process.code_root())
    assert worker["OMP_NUM_THREADS"] == "1"


def sweep_by_name():
    """Planted: removes every run's cache folder, the running ones' too."""
    found = list(Path(tempfile.gettempdir()).glob(f"{runner.CACHE_PREFIX}*"))
    for folder in found:
        shutil.rmtree(folder)
    return found


def sweeps_only_dead_runs(sweep, tmp_path, monkeypatch) -> bool:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    dead = tmp_path / f"{runner.CACHE_PREFIX}{int(ended.stdout)}-minigpt"
    live = tmp_path / f"{runner.CACHE_PREFIX}{os.getpid()}-autograd"
    for folder in (dead, live):
        (folder / "inductor").mkdir(parents=True)
    sweep()
    return not dead.exists() and live.exists()


def test_the_sweep_removes_the_folders_of_dead_runs_only(tmp_path, monkeypatch):
    assert sweeps_only_dead_runs(runner.sweep_stale_caches, tmp_path, monkeypatch)


def test_the_check_catches_a_sweep_that_removes_a_running_labs_folders(tmp_path, monkeypatch):
    assert not sweeps_only_dead_runs(sweep_by_name, tmp_path, monkeypatch)
