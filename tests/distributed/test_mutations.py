"""Planted bugs in the distributed demos, each caught by one of the lab's own checks.

The demos run under torchrun in processes of their own, so a bug is planted there without touching the product:
a sitecustomize.py on PYTHONPATH, which Python imports at every interpreter's start, patches the module before
the demo runs (only in torchrun's workers, which have RANK set). The lab then runs only the affected demo,
with fewer steps (`lab.run(ctx, demos=..., demo_args=...)`), in this process. The survey's row needs no
process: its bug is a figure copied wrong into the model answer.
The test ids read "bug -> check that caught it".
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass

import pytest

from workshop.foundations.run_options import RunOptions
from workshop.lab_api import LabContext
from workshop.labs.distributed import figure_rows, lab
from workshop.labs.distributed.grading import survey

pytestmark = [pytest.mark.distributed, pytest.mark.slow]

SITECUSTOMIZE = """\
import os

if "RANK" in os.environ:  # a torchrun worker: plant the bug
{patch}
"""


@dataclass(frozen=True)
class Mutation:
    bug: str
    check: str  # the start of the name of the lab check that must fail
    demo: str
    patch: str  # Python run at every worker's start
    args: tuple[str, ...] = ("--steps", "3")


PP_BUSY_TENTH = """
import workshop.labs.distributed.instruments as timeline

def watch(self, stage):
    for kind, method in (("F", "forward_one_chunk"), ("B", "backward_one_chunk")):
        original = getattr(stage, method)

        def timed(chunk, *args, _original=original, _kind=kind, _stage=stage.stage_index, **kw):
            start = self._now()
            out = _original(chunk, *args, **kw)
            self.steps[-1].append((_kind, _stage, chunk, start, start + (self._now() - start) / 10))
            return out

        setattr(stage, method, timed)

timeline.PipelineTimeline.watch = watch
"""

# The mesh on the model's device: fully_shard's default mesh is CUDA's wherever torch sees a GPU, even in a CPU run
DDP_SHARDS = """
import torch.distributed as dist
import torch.nn.parallel
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

def shard(model, device_ids=None, **kw):
    device = next(model.parameters()).device.type
    return fully_shard(model, mesh=init_device_mesh(device, (dist.get_world_size(),)))

torch.nn.parallel.DistributedDataParallel = shard
"""

DDP_SUMS = """
import torch.distributed as dist
import torch.nn.parallel

class Summing(torch.nn.parallel.DistributedDataParallel):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)

        def hook(state, bucket):  # all-reduce (sum) without dividing by N
            work = dist.all_reduce(bucket.buffer(), async_op=True)
            return work.get_future().then(lambda f: f.value()[0])

        self.register_comm_hook(None, hook)

torch.nn.parallel.DistributedDataParallel = Summing
"""

DDP_CAP_IGNORED = """
import torch.nn.parallel

_DDP = torch.nn.parallel.DistributedDataParallel
torch.nn.parallel.DistributedDataParallel = lambda *a, bucket_cap_mb=None, **kw: _DDP(*a, **kw)
"""

DDP_ALWAYS_SMALL = """
import torch.nn.parallel

_DDP = torch.nn.parallel.DistributedDataParallel
torch.nn.parallel.DistributedDataParallel = lambda *a, bucket_cap_mb=None, **kw: _DDP(
    *a, bucket_cap_mb=0.25, **kw
)
"""

FSDP_ROOT_ONLY = """
import torch.distributed.fsdp as fsdp
from workshop.minigpt.model import Block

_fully_shard = fsdp.fully_shard
fsdp.fully_shard = lambda module, **kw: module if isinstance(module, Block) else _fully_shard(module, **kw)
"""

TP_HEAD_WHOLE = """
import torch.distributed.tensor.parallel as tp

_parallelize = tp.parallelize_module
tp.parallelize_module = lambda module, mesh, plan: module if "lm_head" in plan else _parallelize(module, mesh, plan)
"""

MUTATIONS = [
    Mutation(
        "pipeline busy intervals recorded 10x too short",
        "pp/gpipe: busy time, all ranks / one process's forward+backward of the step (at least)",
        "pp",
        PP_BUSY_TENTH,
        ("--steps", "3", "--schedules", "gpipe"),
    ),
    Mutation(
        "DDP demo shards the model (fully_shard) instead of replicating it",
        "ddp: every rank's parameter storage vs the checkpoint's bytes",
        "ddp",
        DDP_SHARDS,
    ),
    Mutation(
        "DDP sums the gradients instead of averaging them",
        "ddp: final parameters equal the reference",
        "ddp",
        DDP_SUMS,
    ),
    Mutation(
        "DDP's small-bucket run leaves bucket_cap_mb out: one bucket, issued at backward's end",
        "ddp/small_buckets: share of backward's ops run after its first all-reduce was issued",
        "ddp",
        DDP_CAP_IGNORED,
    ),
    Mutation(
        "DDP's default run given small buckets: its all-reduces start during backward",
        "ddp: share of backward's ops run after its first all-reduce was issued",
        "ddp",
        DDP_ALWAYS_SMALL,
    ),
    Mutation(
        "FSDP wraps only the root: one unit, nothing freed between blocks",
        "fsdp: all-gather bytes per step / parameter bytes",
        "fsdp",
        FSDP_ROOT_ONLY,
    ),
    Mutation(
        "tensor parallel leaves the LM head whole (its plan not applied)",
        "tp: lm_head weight rows on each rank (600 / N)",
        "tp",
        TP_HEAD_WHOLE,
    ),
]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[f"{m.bug} -> {m.check}" for m in MUTATIONS])
def test_planted_bug_is_caught_by_a_lab_check(mutation, tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    patch = textwrap.indent(textwrap.dedent(mutation.patch).strip(), "    ")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(patch=patch))
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    )
    (tmp_path / "out").mkdir()
    ctx = LabContext("distributed", tmp_path / "out", RunOptions("cpu", 2, 0))
    lab.run(ctx, demos=(mutation.demo,), demo_args={mutation.demo: mutation.args})
    failed = [c.name for c in ctx.checks if not c.passed]
    assert any(name.startswith(mutation.check) for name in failed), (
        f"no lab check caught '{mutation.bug}'; failed: {failed}"
    )


def test_a_figure_copied_wrong_into_the_model_answer_is_caught(tmp_path, monkeypatch):
    """The survey's row: the model answer's figures were hand-copied; now each traces to a committed run."""
    text = survey.MODEL_ANSWER.read_text()
    held = figure_rows.read(survey.COMMITTED_RUNS[0])[0][
        "state_bytes_per_rank"
    ]  # DDP's bytes per rank, N=2
    right = f"{held / 1e6:.2f} MB"
    assert right in text
    typo = tmp_path / "README.md"
    typo.write_text(text.replace(right, f"{held / 1e6 + 0.18:.2f} MB", 1))
    monkeypatch.setattr(survey, "MODEL_ANSWER", typo)
    ctx = LabContext("distributed", tmp_path, RunOptions("cpu", 2, 0))
    with ctx.grading("survey") as document:
        survey.grade(ctx, document)
    failed = [c.name for c in ctx.checks if not c.passed]
    assert failed == [
        "survey: every byte count, time, percentage and bandwidth traces to the run's figures"
    ]
