"""The distributed lab inside a Slurm job (slurm/distributed.sbatch): one torchrun agent per task, started by
srun, meeting over the c10d rendezvous; --n stays the world size. CI submits the script to a real one-node Slurm
(.ci/slurm-up.sh); these tests check the commands the lab builds, without Slurm."""

from __future__ import annotations

import pytest

from workshop.labs.distributed import launch

SLURM_JOB = {"WORKSHOP_RDZV_ENDPOINT": "node-a:29517", "SLURM_NTASKS": "2", "SLURM_JOB_ID": "17"}


def option(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_outside_slurm_one_standalone_torchrun_starts_every_process():
    agents = launch.agents({})
    assert agents == launch.Agents()
    cmd = agents.command("fsdp", 4, "cpu", "/tmp/o")
    assert cmd == launch.command("fsdp", 4, "cpu", "/tmp/o")


def test_in_a_slurm_job_srun_starts_one_agent_per_task_at_the_rendezvous():
    cmd = launch.agents(SLURM_JOB).command("ddp", 4, "cuda", "/tmp/o")
    assert cmd[:4] == ["srun", "--ntasks", "2", "--kill-on-bad-exit=1"]
    assert (
        cmd[4:7] == launch.command("ddp", 2, "cuda", "/tmp/o")[:3]
    )  # python -m torch.distributed.run
    assert "--standalone" not in cmd
    for flag, value in (
        ("--nnodes", "2"),
        ("--nproc-per-node", "2"),  # world size 4 over 2 agents
        ("--rdzv-backend", "c10d"),
        ("--rdzv-endpoint", "node-a:29517"),
        ("--rdzv-id", "17-ddp"),  # a rendezvous of its own per demo
        ("--device", "cuda"),
    ):
        assert option(cmd, flag) == value, flag


def test_a_world_size_the_tasks_cannot_share_evenly_is_refused():
    agents = launch.agents(SLURM_JOB)
    assert "multiple of 2" in agents.problem(3)
    assert agents.problem(2) is None and agents.problem(4) is None


def test_a_rendezvous_endpoint_outside_a_slurm_job_says_so():
    with pytest.raises(ValueError, match="not a Slurm job"):
        launch.agents({"WORKSHOP_RDZV_ENDPOINT": "node-a:29517"})


def test_the_lab_launches_every_demo_through_srun_in_a_slurm_job(monkeypatch, tmp_path):
    from tests.distributed.test_launch import fake_launches
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.distributed import lab

    for name, value in SLURM_JOB.items():
        monkeypatch.setenv(name, value)
    started = fake_launches(monkeypatch)
    ctx = LabContext("distributed", tmp_path, RunOptions("cpu", 2, 0))
    lab.run(ctx)
    # the four demos, then the hung-rank demo (DDP with one rank hanging)
    assert [cmd[0] for cmd in started] == ["srun"] * 5
    ids = [option(cmd, "--rdzv-id") for cmd in started]
    assert ids == ["17-ddp", "17-fsdp", "17-tp", "17-pp", "17-ddp"]
    assert (
        "--fail-mode" in started[-1]
    )  # the demo's own options still reach it, after srun and torchrun
    assert "ddp: torchrun --nproc-per-node 1 exit code" in {c.name for c in ctx.checks}


def test_the_lab_refuses_a_world_size_the_tasks_cannot_share(monkeypatch, tmp_path):
    from tests.distributed.test_launch import fake_launches
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.distributed import lab

    for name, value in SLURM_JOB.items():
        monkeypatch.setenv(name, value)
    started = fake_launches(monkeypatch)
    with pytest.raises(ValueError, match="multiple of 2"):
        lab.run(LabContext("distributed", tmp_path, RunOptions("cpu", 3, 0)))
    assert started == []
