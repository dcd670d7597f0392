"""foundations.worker_container, the command a worker container is started with: no network, a read-only root, a
user that owns nothing, no capabilities, memory, processes, CPU and file sizes capped, the GPU only on CUDA, and
a label naming the lab's process that started it (so that one left behind is swept); where Docker cannot start
one, one line says why. (The container at work, with Docker: tests/security/test_hand_ins.py.)"""

from __future__ import annotations

import os
import socket

from workshop.foundations import worker_container


def flags(cmd: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for flag, value in zip(cmd, cmd[1:], strict=False):
        if flag.startswith("--"):
            found.setdefault(flag, []).append(value)
    return found


def test_the_container_is_shut_off_and_capped():
    cmd = worker_container.container_command("w1", "workshop-learner", "cpu")
    given = flags(cmd)
    assert given["--network"] == ["none"] and "--read-only" in cmd
    assert given["--user"] == [worker_container.UID] and given["--cap-drop"] == ["ALL"]
    assert given["--security-opt"] == ["no-new-privileges"]
    assert given["--memory"] == given["--memory-swap"] == [str(4 * 2**30)]
    assert given["--pids-limit"] == ["512"] and given["--cpus"] == ["2.0"]
    assert "cpu=900:905" in given["--ulimit"] and "core=0" in given["--ulimit"]
    assert f"fsize={256 * 2**20}" in given["--ulimit"]
    assert "--gpus" not in given and "TRITON_INTERPRET=1" in cmd
    owner = (
        f"{socket.gethostname()}:{os.getpid()}"  # the lab's process, which sweep_stale looks for
    )
    assert given["--label"] == [f"{worker_container.LABEL}={owner}"]
    assert cmd[-2:] == ["-m", "workshop.learner.worker"]


def test_on_cuda_the_gpu_and_no_interpreter():
    cmd = worker_container.container_command("w1", "img", "cuda")
    assert flags(cmd)["--gpus"] == ["all"] and "TRITON_INTERPRET=1" not in cmd


def test_without_docker_one_line_says_so(monkeypatch):
    monkeypatch.setattr(worker_container.shutil, "which", lambda name: None)
    assert worker_container.docker_problem() == "docker is not installed"
