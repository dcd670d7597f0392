"""tasks.py (Invoke): the commands it spells, its GPU/CPU choice, and its messages when Docker is unusable.

Docker and nvidia-smi are replaced by small fake programs on PATH, so these tests run anywhere (also inside
the image, which has no Docker) and never start a container: they use --dry-run or stop at the preflight.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workshop.labs import all_labs

# Invoke is a host tool (pinned in requirements-pinned.txt, so CI and the image have it); a machine without it
# (the GPU machines run the project in place) cannot run tasks.py at all.
pytest.importorskip(
    "invoke", reason="invoke is not installed here: pip install -r requirements-pinned.txt"
)

ROOT = Path(__file__).resolve().parents[2]

FAKE_DOCKER = """#!/bin/sh
case "$*" in
  "info --format {{.ServerVersion}}")
    [ -n "$FAKE_DOCKER_INFO_ERROR" ] && { echo "$FAKE_DOCKER_INFO_ERROR" >&2; exit 1; }
    echo 20.10.24 ;;
  "info --format {{json .Runtimes}}") echo "${FAKE_DOCKER_RUNTIMES:-{\\"runc\\":{}}}" ;;
  "compose version") exit "${FAKE_COMPOSE_RC:-0}" ;;
  *) echo "fake docker: unexpected $*" >&2; exit 2 ;;
esac
"""
FAKE_NVIDIA_SMI = """#!/bin/sh
printf 'GPU 0: NVIDIA H200 (UUID: GPU-1)\\nGPU 1: NVIDIA H200 (UUID: GPU-2)\\n'
"""


@pytest.fixture
def fake_bin(tmp_path):
    """A PATH holding only the fakes a test installs: real Docker and nvidia-smi are out of sight."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()

    def install(name: str, script: str) -> None:
        (bin_dir / name).write_text(script)
        (bin_dir / name).chmod(0o755)

    install.dir = bin_dir
    return install


def invoke(fake_bin, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "invoke", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PATH": str(fake_bin.dir), **env},
        timeout=120,
    )


def commands(out: subprocess.CompletedProcess) -> list[str]:
    """The commands a dry run printed (invoke echoes them as '+ cd ROOT && COMMAND')."""
    return [
        line.split(" && ", 1)[1] for line in out.stdout.splitlines() if line.startswith("+ cd ")
    ]


def test_list_shows_every_task_with_its_help(fake_bin):
    out = invoke(fake_bin, "--list")
    assert out.returncode == 0, out.stderr
    listed = json.loads(invoke(fake_bin, "--list", "--list-format", "json").stdout)["tasks"]
    assert {t["name"] for t in listed} >= {
        "build",
        "lab",
        "test",
        "report",
        "shell",
        "clean",
        "export",
        "import",
        "grade",
    }
    assert all(t["help"] and len(t["help"].split()) > 3 for t in listed), (
        "every task needs a help line"
    )
    assert all(t["name"] in out.stdout for t in listed)


def test_lab_on_cpu_runs_the_session_in_the_cpu_service(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    out = invoke(fake_bin, "lab", "--n", "3", "--cpu", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert commands(out) == [
        "docker compose run --rm -e WORKSHOP_N=3 workshop-cpu workshop-session"
    ]


def test_only_passes_lab_names_through(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    names = list(all_labs())[:2]
    out = invoke(fake_bin, "lab", "--cpu", "--dry-run", *[a for n in names for a in ("--only", n)])
    assert commands(out)[0].endswith("workshop-session " + " ".join(names))


def test_gpus_with_the_nvidia_runtime_use_the_gpu_service(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    fake_bin("nvidia-smi", FAKE_NVIDIA_SMI)
    out = invoke(fake_bin, "lab", "--dry-run", FAKE_DOCKER_RUNTIMES='{"nvidia":{},"runc":{}}')
    assert "2 NVIDIA GPUs" in out.stderr
    assert commands(out) == ["docker compose run --rm -e WORKSHOP_N=2 workshop workshop-session"]


def test_gpus_without_the_nvidia_runtime_fall_back_to_cpu_with_the_fix(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    fake_bin("nvidia-smi", FAKE_NVIDIA_SMI)
    out = invoke(fake_bin, "lab", "--dry-run")
    assert "no NVIDIA runtime" in out.stderr and "nvidia-ctk runtime configure" in out.stderr
    assert (
        'could not select device driver "nvidia"' in out.stderr
    )  # what Compose says, named for a search
    assert commands(out) == [
        "docker compose run --rm -e WORKSHOP_N=2 workshop-cpu workshop-session"
    ]


def test_no_gpu_says_it_runs_on_cpu(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    out = invoke(fake_bin, "lab", "--dry-run")
    assert "no NVIDIA GPU found" in out.stderr and "workshop-cpu" in commands(out)[0]


@pytest.mark.parametrize(
    "setup, message",
    [
        ({}, "Docker is not installed"),
        (
            {
                "FAKE_DOCKER_INFO_ERROR": "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
                "Is the docker daemon running?"
            },
            "sudo systemctl start docker",
        ),
        (
            {
                "FAKE_DOCKER_INFO_ERROR": "permission denied while trying to connect to the Docker daemon socket"
            },
            "usermod -aG docker",
        ),
        ({"FAKE_COMPOSE_RC": "1"}, "Docker Compose v2 is missing"),
    ],
    ids=["not installed", "daemon stopped", "no permission", "no compose"],
)
def test_unusable_docker_is_a_clear_message_not_a_traceback(fake_bin, setup, message):
    if setup:
        fake_bin("docker", FAKE_DOCKER)
    out = invoke(fake_bin, "lab", "--cpu", **setup)
    assert out.returncode == 1
    assert message in out.stderr and "Traceback" not in out.stderr
    dry = invoke(
        fake_bin, "lab", "--cpu", "--dry-run", **setup
    )  # a dry run still prints what it would run
    assert dry.returncode == 0 and message in dry.stderr and commands(dry)


def test_native_runs_the_same_session_script_with_this_python(fake_bin):
    out = invoke(fake_bin, "lab", "--native", "--cpu", "--only", "minigpt", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert commands(out) == [
        f"WORKSHOP_N=2 WORKSHOP_DEVICE=cpu PYTHON={sys.executable} sh docker/session.sh minigpt"
    ]
    assert (
        invoke(fake_bin, "test", "--native", "--dry-run")
        .stdout.strip()
        .endswith(f"{sys.executable} -m pytest")
    )


def test_build_export_and_import_commands(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    build = commands(
        invoke(fake_bin, "build", "--torch-index", "https://example.org/whl/cu126", "--dry-run")
    )
    assert build[0].endswith(
        "TORCH_INDEX_URL=https://example.org/whl/cu126 docker compose build workshop-cpu"
    )
    export = commands(invoke(fake_bin, "export", "--out", "img.tar.gz", "--dry-run"))
    assert export == [
        "docker save $(docker compose config --images workshop-cpu) | gzip -1 > img.tar.gz"
    ]
    assert commands(invoke(fake_bin, "import", "img.tar.gz", "--dry-run")) == [
        "docker load --input img.tar.gz"
    ]


def test_grade_runs_here_with_its_sandbox_and_the_learner_edition_has_its_build(fake_bin):
    """grade's lab processes run here (the verdicts), each hand-in's code in a container of the learner
    edition's image, which `build --edition learner` makes; a hand-in path is never an option of grade."""
    fake_bin("docker", FAKE_DOCKER)
    grade = invoke(fake_bin, "grade", "--path", "handin/ada", "--path=--help", "--dry-run")
    assert commands(grade) == [
        f"{sys.executable} -m workshop grade --sandbox auto -- handin/ada --help"
    ]
    build = commands(invoke(fake_bin, "build", "--edition", "learner", "--dry-run"))
    assert build[0].endswith("docker compose build learner-edition")
    assert (
        "--edition takes instructor | learner, not 'x'"
        in invoke(fake_bin, "build", "--edition", "x").stderr
    )


def test_check_grades_the_mounted_workspace_in_the_learner_service(fake_bin):
    fake_bin("docker", FAKE_DOCKER)
    out = invoke(fake_bin, "check", "autograd", "--work", "class/ada", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert commands(out) == [
        f"WORKSHOP_WORK={ROOT / 'class' / 'ada'} docker compose run --rm learner "
        "check --work my-work -- autograd"
    ]
    assert not (ROOT / "class").exists(), "a dry run makes no folder"
    fake_bin("nvidia-smi", FAKE_NVIDIA_SMI)
    gpu = invoke(fake_bin, "check", "autograd", "--dry-run", FAKE_DOCKER_RUNTIMES='{"nvidia":{}}')
    assert " learner-gpu check " in commands(gpu)[0]


def test_exercises_init_and_list_natively_and_a_bad_action(fake_bin):
    init = invoke(fake_bin, "exercises", "init", "--native", "--dry-run")
    assert commands(init) == [f"{sys.executable} -m workshop exercises init my-work"]
    bad = invoke(fake_bin, "exercises", "bogus", "--native")
    assert bad.returncode == 1 and "exercises takes init or list, not 'bogus'" in bad.stderr


@pytest.mark.parametrize("n", ["abc", "0", "-3"])
def test_a_bad_n_is_one_line_not_a_traceback(fake_bin, n):
    out = invoke(fake_bin, "lab", "--native", "--n", n, "--dry-run")
    assert out.returncode == 1
    assert f"--n must be a whole number of processes, at least 1 (got '{n}')" in out.stderr
    assert "Traceback" not in out.stderr


def test_user_values_are_never_options_of_the_commands_they_reach(fake_bin):
    """`--only=--help` is a lab name for docker/session.sh (which puts `--` before the labs), and a run folder
    for `report` comes after `--`."""
    lab = invoke(fake_bin, "lab", "--native", "--cpu", "--only=--help", "--dry-run")
    assert commands(lab)[0].endswith("sh docker/session.sh --help")
    report = invoke(fake_bin, "report", "--native", "--run=--help", "--dry-run")
    assert commands(report)[0].endswith("-m workshop report -- --help")


def test_lang_reaches_the_session_and_the_learners_commands(fake_bin):
    """--lang es: WORKSHOP_LANG for the session (its run and report), --lang for a workshop command; without it
    the commands follow the locale (compose passes the host's WORKSHOP_LANG or LANG into the container)."""
    fake_bin("docker", FAKE_DOCKER)
    lab = invoke(fake_bin, "lab", "--cpu", "--lang", "es", "--dry-run")
    assert commands(lab) == [
        "docker compose run --rm -e WORKSHOP_N=2 -e WORKSHOP_LANG=es workshop-cpu workshop-session"
    ]
    native = invoke(fake_bin, "lab", "--native", "--cpu", "--lang", "es", "--dry-run")
    assert commands(native)[0].startswith("WORKSHOP_N=2 WORKSHOP_LANG=es WORKSHOP_DEVICE=cpu ")
    check = invoke(fake_bin, "check", "autograd", "--cpu", "--lang", "es", "--dry-run")
    assert commands(check)[0].endswith("learner check --work my-work --lang es -- autograd")
    init = invoke(fake_bin, "exercises", "init", "--native", "--lang", "es", "--dry-run")
    assert commands(init) == [f"{sys.executable} -m workshop exercises init my-work --lang es"]
    report = invoke(fake_bin, "report", "--native", "--lang", "en", "--dry-run")
    assert commands(report)[0].endswith("-m workshop report --lang en")
    bad = invoke(fake_bin, "lab", "--native", "--lang", "fr", "--dry-run")
    assert bad.returncode == 1 and "--lang takes en or es, not 'fr'" in bad.stderr
