"""The demos' pieces, in one process: the collective log and its wire arithmetic, pipeline stages, the idle
analysis, the reference, the bytes a rank holds, the Flight Recorder's reading, the traces' timing."""

from __future__ import annotations

import gzip
import json

import pytest
import torch
import torch.distributed as dist

from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.distributed import (
    collectives,
    demo_checks,
    flight_recorder,
    instruments,
    launch,
    pipeline_idle,
    training,
)
from workshop.labs.distributed.measurements import Run
from workshop.labs.distributed.plans import schedules_for
from workshop.labs.distributed.pp import Stage
from workshop.minigpt.model import GPT, GPTConfig


@pytest.fixture
def one_rank_group():
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_collective_log_records_ops_phases_and_bytes(one_rank_group):
    log = collectives.CollectiveLog()
    with log:
        with log.in_phase("backward"):
            dist.all_reduce(torch.ones(10))  # 40 bytes
            dist.all_reduce(torch.ones(5))  # 20 bytes
        dist.broadcast(torch.ones(3, dtype=torch.float64), src=0)  # 24 bytes
        torch.ones(4) * 2  # not a collective
    rows = log.summary()
    assert collectives.total(rows, "allreduce", "backward") == (2, 60)
    assert collectives.total(rows, "broadcast") == (1, 24)
    assert collectives.total(rows) == (3, 84)


@pytest.mark.parametrize(
    "name, kind",
    [
        ("allgather_base", "allgather"),
        ("all_gather_into_tensor", "allgather"),
        ("reduce_scatter_base", "reducescatter"),
        ("all_reduce", "allreduce"),
        ("gloo:all_reduce", "allreduce"),
        ("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "reducescatter"),
        ("send", "send"),
        ("aten::mm", ""),
    ],
)
def test_op_and_event_names_map_to_one_kind(name, kind):
    assert collectives.kind(name) == kind


def test_ring_bytes_on_the_wire_per_rank():
    row = {"phase": "backward", "op": "allreduce", "count": 1, "bytes": 1000}
    sent = collectives.sent_bytes
    assert sent(row, 2) == 1000 and sent(row, 4) == 1500 and sent(row, 1) == 0
    gather = {"phase": "forward", "op": "allgather_base", "count": 5, "bytes": 1000}
    assert sent(gather, 4) == 750
    assert (
        collectives.bus_factor("allreduce", 4) == 1.5
        and collectives.bus_factor("broadcast", 4) == 1
    )


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


def pipeline_run(per_rank_steps, m=1, v=1) -> Run:
    ranks = [
        {
            "rank": r,
            "intervals": steps,
            "timer_resolution_s": 1e-6,
            "busy_cpu_s": [],
            "reference_compute_s": 4.0,
            "reference_compute_cpu_s": 4.0,
        }
        for r, steps in enumerate(per_rank_steps)
    ]
    return {"chunks": m, "per_rank": ranks, "stages_per_rank": v, "microbatches": m}


def test_idle_theory_measurement_and_waits():
    assert pipeline_idle.theory(2, 4) == pytest.approx(1 / 5) and pipeline_idle.theory(
        2, 4, v=2
    ) == pytest.approx(1 / 9)
    assert pipeline_idle.theory(1, 8) == 0
    # two ranks, one stage each, one micro-batch; step 1 is timed (step 0 sets up, step 2 is instrumented).
    # rank 0: F 0-1, B 4-5; rank 1: F 1.5-2.5 (0.5 s after it could start), B 2.5-3.5 -> span 5, busy 2 each
    step = [
        [("F", 0, 0, 0.0, 1.0), ("B", 0, 0, 4.0, 5.0)],
        [("F", 1, 0, 1.5, 2.5), ("B", 1, 0, 2.5, 3.5)],
    ]
    run = pipeline_run([[step[0]] * 3, [step[1]] * 3])
    a = pipeline_idle.analyse(run, 2)
    assert a["measured"] == pytest.approx(1 - 2 / 5) and a["busy_s"] == pytest.approx(4.0)
    # waits: rank 0's B waits from 3.5 (rank 1's B ended) to 4.0; rank 1's F from 1.0 to 1.5
    assert sorted(pipeline_idle.waits(step, 2)) == pytest.approx([0.0, 0.0, 0.5, 0.5])
    assert a["timer_margin"] == pytest.approx((2 * 2 + 2) * 1e-6 / 5)


@pytest.mark.parametrize(
    "busy_s, busy_cpu_s, passes",
    [
        (
            20.0,
            4.4,
            True,
        ),  # a loaded machine: each chunk's wall time 5x, its CPU seconds the work's
        (12.0, 12.0, False),  # planted: every chunk counted three times
    ],
)
def test_busy_time_at_most_reads_the_works_cpu_seconds(tmp_path, busy_s, busy_cpu_s, passes):
    """On the CPU the pipeline's busy time is bounded in CPU seconds, which the machine's load does not stretch;
    the reference's step took 4 s (wall and CPU)."""
    ctx = LabContext("distributed", tmp_path, RunOptions("cpu", 2, 0))
    idle = {
        "measured": 0.3,
        "theory": 0.2,
        "timer_margin": 1e-4,
        "busy_s": busy_s,
        "busy_cpu_s": busy_cpu_s,
    }
    demo_checks.check_pipeline_timing(ctx, "gpipe", pipeline_run([[], []]), "cpu", idle)
    at_most = next(c for c in ctx.checks if c.name.endswith("(at most)"))
    assert at_most.passed is passes, at_most
    assert all(c.passed for c in ctx.checks if c is not at_most)


def test_interleaving_needs_two_stages_per_rank():
    assert all(v is None for v in schedules_for(2).values())
    four = schedules_for(4)
    assert four["gpipe"] is None and four["1f1b"] is None
    assert "8 stages > 4 blocks" in four["interleaved_1f1b"]


def test_reference_run_is_deterministic_and_chunking_only_regroups():
    a, b = training.run_alone(2, 2, "cpu"), training.run_alone(2, 2, "cpu")
    assert a["losses"] == b["losses"] and a["compute_s"] > 0
    assert all(torch.equal(a["params"][n], b["params"][n]) for n in a["params"])
    x1, _ = training.batches(2, 1, "cpu")
    x4, _ = training.batches(2, 4, "cpu")
    assert x1.shape[:3] == (2, 1, training.ROWS) and x4.shape[:3] == (2, 4, training.ROWS)


def test_held_bytes_count_params_grads_and_momentum_once_each():
    model = torch.nn.Linear(4, 3)  # 15 fp32 parameters = 60 bytes
    opt = training.optimizer(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    opt.step()
    assert instruments.held(list(model.parameters()), opt) == {
        "params": 60,
        "grads": 60,
        "optimizer": 60,
    }
    shared = torch.zeros(100)  # two views of one storage hold its 400 bytes once
    assert instruments.storage_bytes([shared[:10], shared[50:]]) == 400


def test_digests_tell_replicas_apart():
    a = {"w": torch.ones(3)}
    assert instruments.digest(a) == instruments.digest({"w": torch.ones(3)})
    assert instruments.digest(a) != instruments.digest({"w": torch.tensor([1.0, 1.0, 1.0 + 1e-7])})


def test_flight_recorder_dumps_name_the_collective_a_rank_never_entered(tmp_path):
    def dump(rank, ops):
        entries = [
            {
                "process_group": ["0", "default_pg"],
                "record_id": i,
                "collective_seq_id": i + 1,
                "profiling_name": op,
            }
            for i, op in enumerate(ops)
        ]
        (tmp_path / f"{flight_recorder.PREFIX}{rank}.json").write_text(
            json.dumps({"entries": entries})
        )

    dump(0, ["gloo:barrier", "gloo:broadcast", "gloo:allreduce", "gloo:barrier"])
    dump(1, ["gloo:barrier", "gloo:broadcast", "gloo:allreduce"])
    states = flight_recorder.read(tmp_path)
    assert [(s["rank"], s["last_seq"], s["last_op"]) for s in states] == [
        (0, 4, "gloo:barrier"),
        (1, 3, "gloo:allreduce"),
    ]
    assert flight_recorder.stuck(states) == (4, "gloo:barrier", [1])


def test_this_torch_dumps_gloo_collectives(one_rank_group, tmp_path):
    dist.all_reduce(torch.ones(3))
    flight_recorder.dump(tmp_path, 0, "gloo")
    states = flight_recorder.read(tmp_path)
    assert states and "all_reduce" in states[0]["last_op"]


def test_collective_seconds_read_from_gloo_spans_and_nccl_kernels(tmp_path):
    events = [
        {"ph": "X", "name": "gloo:all_reduce", "dur": 1500, "cat": "cpu_op"},
        {"ph": "X", "name": "ncclDevKernel_AllGather_RING_LL", "dur": 250, "cat": "kernel"},
        {
            "ph": "X",
            "name": "nccl:all_gather",
            "dur": 9999,
            "cat": "cpu_op",
        },  # the launch: not counted
        {"ph": "X", "name": "aten::mm", "dur": 700, "cat": "cpu_op"},
    ]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    assert collectives.collective_seconds(path) == pytest.approx(
        {"allreduce": 1.5e-3, "allgather": 2.5e-4}
    )


def test_collectives_are_logged_in_the_phase_the_step_is_in(one_rank_group):
    """Forward unless autograd runs a backward (its hooks included) or the optimizer steps; a named phase wins."""
    w = torch.ones(3, requires_grad=True)
    opt = torch.optim.SGD([w], lr=0.1)
    w.register_post_accumulate_grad_hook(lambda p: dist.all_reduce(p.grad))  # as DDP's reducer does
    opt.register_step_post_hook(lambda *_: dist.broadcast(w.detach(), src=0))
    log = collectives.CollectiveLog()
    handles = log.watch(opt)
    with log:
        dist.broadcast(torch.ones(2), src=0)
        (w * 2).sum().backward()
        opt.step()
        with log.in_phase("schedule"):
            (w * 3).sum().backward()
    for handle in handles:
        handle.remove()
    assert [(phase, op) for phase, op, _ in log.events] == [
        ("forward", "broadcast"),
        ("backward", "allreduce"),
        ("optimizer", "broadcast"),
        ("schedule", "allreduce"),
    ]


def op(name: str, ts: float, dur: float = 1.0) -> dict:
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "cat": "cpu_op"}


def trace_file(tmp_path, events: list[dict]):
    path = tmp_path / "trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


BACKWARD = [op(f"{collectives.AUTOGRAD_OP}AddmmBackward0", float(t), 1.0) for t in range(10, 20)]


def test_an_all_reduce_issued_by_backwards_last_gradient_overlaps_nothing(tmp_path):
    """DDP's default run: one bucket, issued inside the last autograd op (its AccumulateGrad's hook); the
    collective log's dispatch mode dispatches it twice, nested: one collective."""
    issued = [op("c10d::allreduce_", 19.2, 0.5), op("c10d::allreduce_", 19.3, 0.3)]
    ops, during = collectives.backward_overlap(trace_file(tmp_path, BACKWARD + issued))
    assert (ops, during) == (10, [("allreduce", 0)])
    assert collectives.overlap(ops, during, "allreduce") == 0.0


def test_small_buckets_issue_all_reduces_with_backward_still_to_run(tmp_path):
    issued = [op("c10d::allreduce_", t, 0.2) for t in (12.5, 16.5, 19.5)]
    others = [op("c10d::broadcast_", 2.0), op("gloo:all_reduce", 12.6, 5.0)]  # forward; the work
    ops, during = collectives.backward_overlap(trace_file(tmp_path, BACKWARD + issued + others))
    assert during == [("allreduce", 7), ("allreduce", 3), ("allreduce", 0)]
    assert collectives.overlap(ops, during, "allreduce") == pytest.approx(0.7)
    assert collectives.overlap(ops, during, "reducescatter") is None
    assert collectives.backward_overlap(trace_file(tmp_path, issued)) == (
        0,
        [],
    )  # no backward traced


@pytest.mark.parametrize(
    "default_buckets, after, passed",
    [
        (True, [0], True),
        (True, [7, 0], False),  # a second bucket: an all-reduce before backward's last gradient
        (False, [7, 3, 0], True),
        (False, [0], False),  # the small buckets not used: one all-reduce at the end
        (False, [], False),  # no all-reduce in backward's trace at all
    ],
)
def test_the_overlap_check_tells_one_bucket_from_small_ones(
    default_buckets, after, passed, tmp_path
):
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext

    rank0 = {"backward_ops": 10, "issued_in_backward": [("allreduce", n) for n in after]}
    ctx = LabContext("distributed", tmp_path, RunOptions("cpu", 2, 0))
    demo_checks.check_overlap(ctx, "ddp", default_buckets, rank0)
    assert [c.passed for c in ctx.checks] == [passed]


@pytest.mark.parametrize(
    "only, demos, together",
    [
        ((), (*launch.STRATEGIES, "hang"), False),  # run, check distributed: everything
        (("distributed.predictions",), launch.STRATEGIES, True),  # one launch, fewer runs
        (("distributed.answers",), launch.STRATEGIES, False),
        (("distributed.predictions", "distributed.survey"), launch.STRATEGIES, False),
    ],
)
def test_a_run_starts_only_the_demos_its_exercises_need(only, demos, together, tmp_path):
    from workshop.foundations.run_options import RunOptions
    from workshop.lab_api import LabContext
    from workshop.labs.distributed import lab

    ctx = LabContext("distributed", tmp_path, RunOptions("cpu", 2, 0, only=only))
    planned, args, in_one_launch = lab.plan(ctx)
    assert (planned, in_one_launch) == (demos, together)
    assert ("--runs" in args.get("together", ())) == together


def measurements(runs: dict[str, list[str]], n: int = 2) -> dict:
    """Strategy -> measurements with the named runs (empty ones: missing_runs reads only which ran)."""
    return {
        s: {"strategy": s, "world_size": n, "runs": dict.fromkeys(names, {})}
        for s, names in runs.items()
    }


def test_a_run_for_the_predictions_alone_lacks_what_the_answers_are_graded_on():
    from workshop.labs.distributed import lab

    minimal = measurements({"ddp": ["ddp"], "fsdp": ["fsdp"], "tp": ["tp"], "pp": ["gpipe"]})
    assert lab.missing_runs(minimal, "predictions") == []
    assert lab.missing_runs(minimal, "answers") == [
        "ddp/small_buckets",
        "pp/1f1b",
        "pp/interleaved_1f1b",
    ]
    full = measurements(
        {
            "ddp": ["ddp", "small_buckets"],
            "fsdp": ["fsdp"],
            "tp": ["tp"],
            "pp": list(schedules_for(2)),
        }
    )
    assert lab.missing_runs(full, "survey") == []
    # at N=4 interleaving cannot run (8 stages > 4 blocks): a full run lacks nothing
    four = measurements(
        {"ddp": ["ddp", "small_buckets"], "fsdp": ["fsdp"], "tp": ["tp"], "pp": ["gpipe", "1f1b"]},
        4,
    )
    assert lab.missing_runs(four, "answers") == []
    assert lab.missing_runs({}, "predictions") == list(launch.STRATEGIES)


def test_the_check_loop_record_gives_cpu_and_load_and_misses_a_slow_prediction():
    from tools.distributed_loop import TARGET_S, report

    keys = ("what", "command", "wall_s", "cpu_s", "load", "rc", "did_it")
    steps = [
        dict(zip(keys, step, strict=True))
        for step in (
            ("fresh", "check distributed predictions", 41.0, 25.7, 8.4, 0, True),
            ("changed", "check distributed predictions", 12.4, 4.2, 9.0, 1, True),
            ("whole", "check distributed", 211.0, 90.0, 8.0, 1, True),
        )
    ]
    text = report(steps)
    assert "| 41.0 | 25.7 | 8.4 | 0 | yes |" in text and "MISSED" not in text
    slow = [{**steps[0], "wall_s": TARGET_S + 1}, *steps[1:]]
    assert "MISSED" in report(slow)
