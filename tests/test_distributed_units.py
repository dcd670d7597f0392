"""The demos' pieces, in one process: the collective log, pipeline stages, bubble arithmetic, the reference."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from workshop.labs.distributed import common, comms
from workshop.labs.distributed.pp import Stage, schedules_for
from workshop.labs.distributed.timeline import bubble, theory
from workshop.minigpt.model import GPT, GPTConfig


@pytest.fixture
def one_rank_group():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_collective_log_records_ops_phases_and_bytes(one_rank_group):
    log = comms.CollectiveLog()
    with log:
        with log.in_phase("backward"):
            dist.all_reduce(torch.ones(10))  # 40 bytes
            dist.all_reduce(torch.ones(5))  # 20 bytes
        dist.broadcast(torch.ones(3, dtype=torch.float64), src=0)  # 24 bytes
        torch.ones(4) * 2  # not a collective
    rows = log.summary()
    assert comms.total(rows, "allreduce", "backward") == (2, 60)
    assert comms.total(rows, "broadcast") == (1, 24)
    assert sum(r["count"] for r in rows) == 3


def test_stages_chain_to_the_whole_model_and_keep_its_names():
    torch.manual_seed(0)
    gpt = GPT(GPTConfig())
    idx = torch.randint(0, 600, (2, 7))
    stages = [Stage(gpt, 0, 1), Stage(gpt, 1, 3), Stage(gpt, 3, 4)]
    x = idx
    for stage in stages:
        x = stage(x)
    torch.testing.assert_close(x, gpt(idx), rtol=0, atol=0)
    names = [n for s in stages for n, _ in s.named_parameters()]
    assert sorted(names) == sorted(n for n, _ in gpt.named_parameters())


def test_bubble_theory_and_measurement():
    assert theory(2, 4) == pytest.approx(1 / 5) and theory(2, 4, v=2) == pytest.approx(1 / 9)
    assert theory(1, 8) == 0
    # two ranks, one step each after a set-up step: rank 0 busy 0-2, rank 1 busy 1-3 -> span 3, idle 1/3 each
    setup = [("F", 0, 0, 0.0, 1.0)]
    steps = [[setup, [("F", 0, 0, 0.0, 2.0)]], [setup, [("F", 1, 0, 1.0, 3.0)]]]
    assert bubble(steps)["measured"] == pytest.approx(1 / 3)


def test_interleaving_needs_two_stages_per_rank():
    assert all(v is None for v in schedules_for(2).values())
    four = schedules_for(4)
    assert (
        four["gpipe"] is None
        and four["1f1b"] is None
        and "8 stages > 4 blocks" in four["interleaved_1f1b"]
    )


def test_reference_run_is_deterministic_and_chunking_only_regroups():
    losses_a, params_a = common.reference_run(2, 2, "cpu")
    losses_b, params_b = common.reference_run(2, 2, "cpu")
    assert losses_a == losses_b
    assert all(torch.equal(params_a[n], params_b[n]) for n in params_a)
    x1, _ = common.batches(2, 1, "cpu")
    x4, _ = common.batches(2, 4, "cpu")
    assert x1.shape[:3] == (2, 1, common.ROWS) and x4.shape[:3] == (2, 4, common.ROWS)


def test_memory_counts_params_grads_and_momentum():
    model = torch.nn.Linear(4, 3)  # 15 fp32 parameters = 60 bytes
    opt = common.optimizer(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    assert common.memory(list(model.parameters()), opt) == {
        "params": 60,
        "grads": 60,
        "optimizer": 60,
    }
