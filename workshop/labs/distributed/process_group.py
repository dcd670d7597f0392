"""A demo's process: its options, joining the process group that torchrun describes, and leaving it.

torchrun starts one process per rank and tells each who it is (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT
in its environment); `join` turns that into a process group on gloo (CPU) or NCCL (one GPU per rank).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed import distributed_c10d

from workshop.i18n import N_, _
from workshop.labs.distributed import flight_recorder, training

# How long joining the process group may wait for every rank: on a 2-core machine under load (a load average of
# 12 was seen) a rank's imports took over 5 s, and the hung-rank demo's --pg-timeout 5 failed the join itself.
JOIN_TIMEOUT_S = 120.0
# Every demo's options: (flags, argparse keywords); a demo's own follow (instruments.run_demos parses them).
OPTIONS = [
    (
        ("--out",),
        {"type": Path, "required": True, "help": N_("folder for measurements.json (rank 0)")},
    ),
    (
        ("--device",),
        {"choices": ("cpu", "cuda"), "default": "cpu", "help": N_("cpu: gloo; cuda: NCCL")},
    ),
    (("--steps",), {"type": int, "default": training.STEPS}),
    (
        ("--fail-rank",),
        {"type": int, "default": None, "help": N_("inject a failure on this rank at step 1")},
    ),
    (
        ("--fail-mode",),
        {
            "choices": ("raise", "hang"),
            "default": "raise",
            "help": N_("hang: peers wait for --pg-timeout"),
        },
    ),
    (
        ("--pg-timeout",),
        {"type": float, "default": 30.0, "help": N_("seconds a collective may wait")},
    ),
]


def runs_option(flag: str, runs) -> tuple:
    """A demo's option that picks some of its training runs (`runs`: their names), all by default."""
    choices = tuple(runs)
    return (flag,), {
        "nargs": "+",
        "choices": choices,
        "default": choices,
        "help": N_("which to run"),
    }


@dataclass
class Rank:
    rank: int
    world: int
    device: torch.device
    backend: str


def join(args: argparse.Namespace) -> Rank:
    """Join the process group that torchrun's rendezvous describes (RANK, WORLD_SIZE, MASTER_ADDR ... in env)."""
    if "RANK" not in os.environ:
        raise SystemExit(
            _(
                "run this under torchrun: python -m torch.distributed.run --nproc-per-node N -m <demo> ..."
            )
        )
    local_rank = int(os.environ["LOCAL_RANK"])
    if args.device == "cuda":
        if local_rank >= torch.cuda.device_count():
            raise SystemExit(
                _(
                    "local rank {rank} has no GPU ({visible} visible); use fewer processes per node or "
                    "--device cpu"
                ).format(rank=local_rank, visible=torch.cuda.device_count())
            )
        device, backend = torch.device("cuda", local_rank), "nccl"
        torch.cuda.set_device(device)
        # TF32 would put fp32 results ~1e-3 off the reference
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    else:
        device, backend = torch.device("cpu"), "gloo"
    flight_recorder.enable(args.out)  # read when the process group is made
    # Joining waits for every rank (JOIN_TIMEOUT_S); then --pg-timeout bounds every collective: a rank that stops
    # answering fails its peers after it, not after the default (10 min for NCCL, 30 min for gloo). torch sets a
    # made group's timeout only through a private function (distributed_c10d._set_pg_timeout, in 2.11 and 2.13).
    dist.init_process_group(
        backend,
        timeout=timedelta(seconds=max(args.pg_timeout, JOIN_TIMEOUT_S)),
        device_id=device if device.type == "cuda" else None,
    )
    distributed_c10d._set_pg_timeout(timedelta(seconds=args.pg_timeout))
    return Rank(dist.get_rank(), dist.get_world_size(), device, backend)


def leave() -> None:
    """End a demo: every rank done, the process groups destroyed, then leave at once.

    Why os._exit: the results are written by now, and in the interpreter's own teardown that would follow,
    worker threads of gloo / the device mesh's groups were seen to abort the process now and then
    ("terminate called without an active exception", SIGABRT, in about one run of the lab in five on CPU),
    which would turn a correct demo into a failed one. Skipping that teardown loses nothing.
    """
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
