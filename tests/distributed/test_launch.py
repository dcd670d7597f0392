"""torchrun launches: injected failures end fast and name the rank; two agents meet over a rendezvous;
N that cannot work is refused before any process starts."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys

import pytest

from workshop.labs.distributed import launch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.distributed
@pytest.mark.slow
def test_a_failing_rank_ends_the_job_fast_and_is_named(tmp_path):
    cmd = launch.command("ddp", 2, "cpu", tmp_path, demo_args=["--fail-rank", "1"])
    rc, seconds = launch.run(cmd, tmp_path / "log.txt", timeout_s=90)
    log = (tmp_path / "log.txt").read_text()
    assert rc != 0
    assert seconds < 60, f"took {seconds:.0f} s"
    assert "injected failure on rank 1" in log
    assert re.search(r"rank\s*:\s*1\b", log), "torchrun's failure summary names rank 1"
    assert not (tmp_path / "measurements.json").exists()


@pytest.mark.distributed
@pytest.mark.slow
def test_two_torchrun_agents_meet_over_a_c10d_rendezvous(tmp_path):
    endpoint = f"127.0.0.1:{free_port()}"
    cmd = launch.command(
        "ddp", 1, "cpu", tmp_path, nnodes=2, rdzv_endpoint=endpoint, rdzv_id="two-nodes"
    )
    agents = [
        subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=launch.environment(),
        )
        for _ in range(2)
    ]
    outputs = [a.communicate(timeout=180)[0] for a in agents]
    assert [a.returncode for a in agents] == [0, 0], outputs
    data = json.loads((tmp_path / "measurements.json").read_text())
    assert data["world_size"] == 2
    run = data["runs"]["ddp"]
    assert (
        run["max_param_error"] <= data["tolerance"] and run["max_loss_error"] <= data["tolerance"]
    )


def test_command_standalone_and_multi_node():
    one = launch.command("fsdp", 4, "cpu", "/tmp/o")
    assert one[1:4] == ["-m", "torch.distributed.run", "--nproc-per-node"] and "--standalone" in one
    assert one[one.index("-m", 2) + 1] == "workshop.labs.distributed.fsdp"
    two = launch.command(
        "ddp", 2, "cuda", "/tmp/o", nnodes=2, node_rank=1, rdzv_endpoint="h:29400", rdzv_id="j"
    )
    assert "--standalone" not in two
    for flag, value in (
        ("--nnodes", "2"),
        ("--rdzv-backend", "c10d"),
        ("--rdzv-endpoint", "h:29400"),
        ("--rdzv-id", "j"),
        ("--node-rank", "1"),
        ("--device", "cuda"),
    ):
        assert two[two.index(flag) + 1] == value


@pytest.mark.parametrize(
    "strategy, n, words", [("tp", 3, "heads"), ("tp", 8, "heads"), ("pp", 5, "blocks")]
)
def test_strategies_refuse_an_n_they_cannot_split(strategy, n, words):
    assert words in launch.strategy_problem(strategy, n)


@pytest.mark.parametrize(
    "strategy, n", [("ddp", 3), ("fsdp", 3), ("tp", 2), ("tp", 4), ("pp", 4), ("pp", 1)]
)
def test_strategies_accept_usable_n(strategy, n):
    assert launch.strategy_problem(strategy, n) is None


def test_more_processes_than_gpus_suggests_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert "--device cpu" in launch.capacity_problem(2, "cuda")
    assert launch.capacity_problem(1, "cuda") is None and launch.capacity_problem(1, "cpu") is None


def test_more_cpu_processes_than_the_machine_holds_are_refused(monkeypatch):
    monkeypatch.setattr(launch.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(launch, "available_memory", lambda: 100e9)
    assert launch.capacity_problem(8, "cpu") is None
    assert "holds 8 (4 per core on 2 cores" in launch.capacity_problem(9, "cpu")
    monkeypatch.setattr(launch, "available_memory", lambda: 2.5e9)  # 4 ranks of 0.6 GB
    assert "use --n 4 or less" in launch.capacity_problem(5, "cpu")


def test_launcher_refuses_before_starting(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "workshop.labs.distributed.launch",
        "tp",
        "--n",
        "3",
        "--out",
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "N=3" in proc.stderr
    assert "torch.distributed.run" not in proc.stdout  # nothing was launched


def fake_launches(monkeypatch) -> list[list[str]]:
    """Replace torchrun by a recorder that 'fails' at once, so the lab's decisions can be seen without processes."""
    started = []

    def fake_run(cmd, log, timeout_s=0):
        started.append(cmd)
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("not started: a test\n")
        return 1, 0.0

    monkeypatch.setattr(launch, "run", fake_run)
    return started


def test_lab_skips_a_strategy_that_cannot_use_n_with_a_failed_check(monkeypatch, tmp_path, capsys):
    from workshop.foundations import lab_log
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.distributed import lab

    started = fake_launches(monkeypatch)
    ctx = LabContext("distributed", tmp_path, RunOptions("cpu", 3, 0))
    lab.run(ctx)
    demos = [cmd[cmd.index("-m", 2) + 1].rsplit(".", 1)[1] for cmd in started]
    assert demos == ["ddp", "fsdp", "pp", "ddp"]  # tp never started; the last is the hung-rank demo
    assert "hang" in started[-1]
    steps = [lab_log.read_step(line) for line in capsys.readouterr().out.splitlines()]
    assert [s[:2] for s in steps if s and "torchrun" in s[0]] == [
        ("the ddp demo under torchrun", 1),
        ("the fsdp demo under torchrun", 2),
        ("the pp demo under torchrun", 3),
        ("the hang demo under torchrun", 4),
    ], "each launch a step on the run's screen, tp (never started) not among them"
    assert (
        "## ddp failed" in ctx.summary and "not started: a test" in ctx.summary
    )  # the log's end is shown
    tp = [c for c in ctx.checks if c.name.startswith("tp:")]
    assert len(tp) == 1 and not tp[0].passed and "divide the attention heads" in tp[0].value


def test_lab_refuses_more_processes_than_gpus_before_starting(monkeypatch, tmp_path):
    import torch

    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.distributed import lab

    started = fake_launches(monkeypatch)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(ValueError, match="--device cpu"):
        lab.run(LabContext("distributed", tmp_path, RunOptions("cuda", 2, 0)))
    assert started == []
