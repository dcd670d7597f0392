"""foundations.worker_process, what a native worker is started with: an environment of its own (nothing inherited
from the lab's process but the device's settings: no secret in an environment variable reaches the learner's
code), resource limits (CPU, file size, processes, no core file; address space on the CPU), and how it ended in
words. (The worker at work: tests/learner/test_worker.py.)"""

from __future__ import annotations

import os
import subprocess
import sys

from workshop.foundations import worker_process


def inherits_nothing(environment, tmp_path, monkeypatch) -> bool:
    monkeypatch.setenv("WORKSHOP_GRADER_TOKEN", "secret")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    env = environment(tmp_path, "cpu", tmp_path / "code")
    return "WORKSHOP_GRADER_TOKEN" not in env and env.get("CUDA_VISIBLE_DEVICES") == "1"


def copies_the_parents(scratch, device, root):
    """Planted: the lab's environment, with the worker's settings on top."""
    import os

    return {**os.environ, **worker_process.worker_environment(scratch, device, root)}


def test_the_worker_inherits_only_the_devices_settings(tmp_path, monkeypatch):
    assert inherits_nothing(worker_process.worker_environment, tmp_path, monkeypatch)
    env = worker_process.worker_environment(tmp_path, "cpu", tmp_path / "code")
    assert env["HOME"] == env["TMPDIR"] == str(tmp_path) and env["TRITON_INTERPRET"] == "1"
    assert env["PYTHONPATH"] == str(tmp_path / "code") and env["PYTHONNOUSERSITE"] == "1"


def test_the_check_catches_an_inherited_environment(tmp_path, monkeypatch):
    assert not inherits_nothing(copies_the_parents, tmp_path, monkeypatch)


def torch_threads_in_a_worker_environment(env: dict[str, str]) -> int:
    """How many intra-op threads torch starts with this environment (a fresh interpreter, as the worker is)."""
    code = "import torch; print(torch.get_num_threads())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def test_the_workers_torch_starts_no_more_threads_than_its_share(tmp_path, monkeypatch):
    """One OpenMP thread per core by default: on a host of many cores they passed the worker's processes limit
    (libgomp could not start them, and the worker died of SIGSEGV); the lab's own OMP_NUM_THREADS wins."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(worker_process.os, "cpu_count", lambda: 224)
    env = worker_process.worker_environment(tmp_path, "cpu", tmp_path / "code")
    assert env["OMP_NUM_THREADS"] == str(worker_process.WORKER_THREADS)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    env = worker_process.worker_environment(tmp_path, "cpu", tmp_path / "code")
    assert env["OMP_NUM_THREADS"] == "1"
    # what the setting does; planted: the environment without it, where torch takes a thread per core it sees
    assert torch_threads_in_a_worker_environment(env) == 1
    del env["OMP_NUM_THREADS"]
    assert torch_threads_in_a_worker_environment(env) == len(os.sched_getaffinity(0)) > 1


def test_resource_limits():
    found = worker_process.RLIMITS
    assert found["RLIMIT_CPU"] == (900, 905) and found["RLIMIT_CORE"] == (0, 0)
    assert found["RLIMIT_FSIZE"] == (2**28, 2**28) and found["RLIMIT_NPROC"] == (512, 512)
    # the memory it writes, not its address space: a CUDA build of torch reserves tens of GiB of that
    assert found["RLIMIT_DATA"] == (2**32, 2**32) and "RLIMIT_AS" not in found


def test_how_a_worker_ended_in_words():
    worker = worker_process.Launched("cpu", None)
    worker.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    assert worker.ended(wait_s=0.1) is None  # still running
    worker.proc.kill()
    assert worker.ended(wait_s=60) == "killed by SIGKILL"
    worker.proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    assert worker.ended(wait_s=60) == "exit code 1"


def test_an_output_log_keeps_the_tail_and_caps_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(worker_process, "LOG_CAP", 100)
    code = "for i in range(100): print('line', i)"
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    log = worker_process.OutputLog(proc.stdout, tmp_path / "worker.log")
    proc.wait()
    log.join()
    assert list(log.tail)[-1].strip() == "line 99" and len(log.tail) == worker_process.TAIL_LINES
    assert (tmp_path / "worker.log").stat().st_size <= 200  # capped (a last line may finish)


def test_the_workers_log_is_kept_when_its_folder_does_not_exist_yet(tmp_path):
    """A check whose run folder is made later (a re-grade's) still keeps what the worker printed; before, the
    copying thread died on the missing folder and the log was lost."""
    read, write = os.pipe()
    path = tmp_path / "not-yet" / "worker.log"
    log = worker_process.OutputLog(os.fdopen(read, "rb"), path)
    os.write(write, b"the learner printed this\n")
    os.close(write)
    log.join()
    assert path.read_bytes() == b"the learner printed this\n"
    assert list(log.tail) == ["the learner printed this"]
