"""The worker in a Docker container of its own: `grade`'s sandbox for one hand-in's lab.

The lab's process stays on the host and makes every verdict; only the worker runs in the container, talking over
the container's stdin and stdout (`docker run -i`). The container:
- is started from the learner edition's image (no reference solutions, no model answers in it: edition.py);
- has no network, a read-only root (code included), a tmpfs for scratch, a uid that owns nothing, no
  capabilities, no-new-privileges, limits on memory (no swap), processes, CPUs and file size;
- gets no bind mount and no volume: the learner's file arrives over the channel, so no hand-in, no cache and no
  folder of the host is in it, and nothing in it outlives it;
- is labelled with the host process that owns it, killed with `docker kill` when its lab ends, its wall limit
  passes or it stops answering, and swept (sweep_stale) when that process died without killing it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

from workshop.foundations.worker_process import (
    CPU_S,
    CPUS,
    FILE_SIZE,
    GRACE_S,
    MEMORY,
    PROCESSES,
    Launched,
    scratch_environment,
)
from workshop.i18n import _

# compose.yaml's learner-edition service builds it (WORKSHOP_LEARNER_IMAGE names another, there and here)
LEARNER_IMAGE = os.environ.get(
    "WORKSHOP_LEARNER_IMAGE", "pytorch-internals-workshop-learner:latest"
)
LABEL = "workshop.worker.owner"  # "<host>:<pid>" of the lab's process
UID = "65534:65534"  # owns nothing in the image
DOCKER_TIMEOUT_S = 60


def docker_problem(image: str = LEARNER_IMAGE) -> str | None:
    """Why a worker container cannot be started here (no docker, no daemon, no image); None when it can."""
    if shutil.which("docker") is None:
        return _("docker is not installed")
    try:
        probe = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Id}}", image],
            capture_output=True,
            text=True,
            timeout=DOCKER_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return _("the Docker daemon did not answer")
    if probe.returncode != 0:
        error = (probe.stderr.strip().splitlines() or [""])[-1]
        return _('the image `{image}` is not usable (Docker says: "{error}")').format(
            image=image, error=error
        )
    return None


def container_command(name: str, image: str, device: str) -> list[str]:
    tmp = "/tmp"
    env = scratch_environment(tmp) | ({"TRITON_INTERPRET": "1"} if device == "cpu" else {})
    return [
        *("docker", "run", "--rm", "-i", "--name", name),
        *("--label", f"{LABEL}={socket.gethostname()}:{os.getpid()}"),
        *("--network", "none", "--read-only"),
        *("--tmpfs", f"{tmp}:rw,nosuid,nodev,size=1g,mode=1777"),
        *("--user", UID, "--cap-drop", "ALL", "--security-opt", "no-new-privileges"),
        *("--memory", str(MEMORY), "--memory-swap", str(MEMORY)),
        *("--pids-limit", str(PROCESSES), "--cpus", str(CPUS)),
        *("--ulimit", f"fsize={FILE_SIZE}", "--ulimit", "core=0"),
        *("--ulimit", f"cpu={CPU_S}:{CPU_S + 5}"),
        *(("--gpus", "all") if device == "cuda" else ()),
        *(flag for key, value in env.items() for flag in ("-e", f"{key}={value}")),
        *("--entrypoint", "python", image, "-m", "workshop.learner.worker"),
    ]


class ContainerWorker(Launched):
    """The worker in a throwaway container (see the module's docstring); the same interface as NativeWorker."""

    def __init__(self, device: str, log_path: Path | None, image=None):
        super().__init__(device, log_path)
        self.image = image or LEARNER_IMAGE

    def start(self) -> tuple[int, int]:
        self.name = f"workshop-worker-{uuid.uuid4().hex[:12]}"
        return self.launch(container_command(self.name, self.image, self.device))

    def returncode(self, code: int) -> int:
        # docker run exits 128 + N when the worker died of signal N (137: SIGKILL, the memory limit or a kill)
        return 128 - code if code > 128 else code

    def end(self) -> None:
        kill(self.name)
        try:
            self.proc.wait(GRACE_S + DOCKER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def kill(*names: str) -> None:
    """Kill and remove these containers (no error for one already gone)."""
    if names:
        with contextlib.suppress(subprocess.TimeoutExpired, OSError):
            subprocess.run(
                ["docker", "rm", "--force", *names], capture_output=True, timeout=DOCKER_TIMEOUT_S
            )


def sweep_stale() -> list[str]:
    """Kill the worker containers of this host whose lab process is gone (it was killed before it could)."""
    try:
        listing = subprocess.run(
            [
                "docker",
                "ps",
                "--all",
                "--filter",
                f"label={LABEL}",
                "--format",
                '{{.Names}} {{.Label "' + LABEL + '"}}',
            ],
            capture_output=True,
            text=True,
            timeout=DOCKER_TIMEOUT_S,
        )
    except (subprocess.TimeoutExpired, OSError):
        return []
    from workshop.foundations import proctree

    stale = []
    for line in listing.stdout.splitlines():
        name, _, who = line.partition(" ")
        host, _, pid = who.rpartition(":")
        if host == socket.gethostname() and pid.isdigit() and not proctree.alive(int(pid)):
            stale.append(name)
    kill(*stale)
    return stale
