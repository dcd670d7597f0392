"""PyTorch's Flight Recorder: each rank keeps a ring buffer of its last collectives (op, sequence number, sizes,
state), which we dump when a rank fails or is told to stop. After a hang the dumps say which collective each
rank was in: the waiting ranks' last entry is a collective that the hung rank never entered.

Where it works: torch 2.13 records gloo's collectives as well as NCCL's, with a 2,000-entry buffer by default;
enable() sets the buffer's size anyway (TORCH_FR_BUFFER_SIZE), for releases whose default is no buffer
(the older names, TORCH_NCCL_TRACE_BUFFER_SIZE ..., warn as deprecated in 2.13). NCCL's watchdog also dumps
by itself on a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT, files named by TORCH_FR_DUMP_TEMP_FILE), since it may end
the process before Python could. torch's own analyzer
(`python -m torch.distributed.flight_recorder.fr_trace DIR`) reads NCCL dumps; on gloo dumps it fails in 2.13
(a KeyError on the unnamed default group), so `read()` and `stuck()` read the entries themselves.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import signal
from pathlib import Path

PREFIX = "flight_recorder_rank"  # our dumps in the demo's folder: flight_recorder_rank<r>.json
WATCHDOG_PREFIX = "flight_recorder_watchdog_rank"  # NCCL's own on a timeout: ..._rank<r> (pickle)


def enable(out: Path) -> None:
    """Before the process group exists: record collectives, and let NCCL's watchdog dump on a timeout."""
    watchdog = str(Path(out).resolve() / WATCHDOG_PREFIX)
    for name, value in (
        ("TORCH_FR_BUFFER_SIZE", "2000"),
        ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
        ("TORCH_FR_DUMP_TEMP_FILE", watchdog),
    ):
        os.environ.setdefault(name, value)


def dump_function(backend: str):
    """The installed torch's dump for this backend (JSON bytes), or None where it has none."""
    import torch

    c10d = torch._C._distributed_c10d
    names = ("_dump_nccl_trace_json", "_dump_fr_trace_json") if backend == "nccl" else ()
    return next(
        (getattr(c10d, n) for n in (*names, "_dump_fr_trace_json") if hasattr(c10d, n)), None
    )


def dump(out: Path, rank: int, backend: str) -> None:
    if fn := dump_function(backend):
        Path(out).mkdir(parents=True, exist_ok=True)  # a rank may fail before anything wrote there
        (Path(out) / f"{PREFIX}{rank}.json").write_bytes(fn(True, False))


@contextlib.contextmanager
def dump_on_failure(out: Path, rank: int, backend: str):
    """Dump this rank's buffer if the block raises (a peer timed out), or when torchrun stops this rank with
    SIGTERM because another failed (a hung rank: Python runs the handler between two bytecodes, e.g. in sleep)."""

    def stopped(signum, frame):
        dump(out, rank, backend)
        os._exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stopped)
    try:
        yield
    except BaseException:
        dump(out, rank, backend)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


# A rank's state in its dump, as a dict: rank; last_seq, the last collective this rank entered (the default
# group's sequence number); last_op, its name, e.g. "gloo:barrier", "nccl:all_reduce"
RankState = dict


def read(folder: Path) -> list[RankState]:
    """Each rank's last collective on the default group, from the JSON dumps (or NCCL's pickled ones)."""
    dumps = {
        int(path.stem.removeprefix(PREFIX)): json.loads(path.read_bytes())
        for path in sorted(Path(folder).glob(f"{PREFIX}*.json"))
    }
    for path in sorted(Path(folder).glob(f"{WATCHDOG_PREFIX}*")):
        # our job's own file, plain containers
        dumps.setdefault(
            int(path.name.removeprefix(WATCHDOG_PREFIX)), pickle.loads(path.read_bytes())
        )
    # each rank's last recorded entry on the default group (record ids grow; sequence numbers restart with each
    # new process group)
    last = {
        rank: max(
            (e for e in data.get("entries", []) if "default_pg" in e.get("process_group", ())),
            key=lambda e: e.get("record_id", e["collective_seq_id"]),
            default=None,
        )
        for rank, data in sorted(dumps.items())
    }
    return [
        {"rank": rank, "last_seq": e["collective_seq_id"], "last_op": e["profiling_name"]}
        for rank, e in last.items()
        if e is not None
    ]


def stuck(states: list[RankState]) -> tuple[int, str, list[int]] | None:
    """(sequence number, op, ranks that never entered it) of the first collective not every rank entered."""
    seq = max((s["last_seq"] for s in states), default=0)
    missing = [s["rank"] for s in states if s["last_seq"] < seq]
    if not missing:  # no dump, or every rank entered the last one
        return None
    return seq, next(s["last_op"] for s in states if s["last_seq"] == seq), missing
