"""`python -m tools.softmax_sweep --out DIR` (GPU): the measurements behind softmax_launch's constants.

For each group of judged shapes, our kernels under each candidate setting of softmax_launch's constants, device
time as in the benchmark (workshop/labs/custom_op/bench/benchmark.py: CUDA graph, inputs rotating past L2), as a
fraction of a copy of the same bytes. Writes sweep.json after every measurement and prints one line each.
"""

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path
from unittest import mock

import torch

from workshop.foundations import atomic
from workshop.labs.custom_op.bench import benchmark as bench
from workshop.ops import softmax_launch

GROUPS = {
    "short rows": (
        [(32768, 600), (262144, 600)],
        [{"TILE_BYTES": b} for b in (8192, 16384, 32768)],
    ),
    # the backward reads two tensors: its own tile, measured where rows are short and many share a program
    "short-row backward": (
        [(4096, 600), (4096, 1024), (32768, 600)],
        [{"BACKWARD_TILE_BYTES": b} for b in (2048, 4096, 8192)],
    ),
    # few rows: fewer forward rows a program, so that every multiprocessor gets PROGRAMS_PER_SM of them
    "small batches": (
        [(64, 600), (256, 600), (1024, 600), (4096, 600)],
        [{"PROGRAMS_PER_SM": p} for p in (1, 4, 8, 16)],
    ),
    # rows of 2,048 to 16,384, one a program: how many elements a thread (PER_THREAD) sets the warps; Liger's
    # calculate_settings gives these rows twice our warps up to 8,192
    "mid rows": (
        [(4096, 2**k) for k in range(11, 15)],
        [{"PER_THREAD": p} for p in (32, 16, 8)],
    ),
    # rows of 600: fewer warps a program where the rows are short (Inductor's backward runs one warp a row)
    "short-row warps": (
        [(64, 600), (256, 600), (1024, 600), (4096, 600), (32768, 600)],
        [{"MIN_WARPS": w} for w in (4, 2, 1)],
    ),
    "rows of 32768": (
        [(4096, 32768)],
        [{}]
        + [
            {"ONE_PASS_MAX": 16384, "CHUNK": c, "CHUNK_WARPS": w}
            for c, w in ((8192, 8), (8192, 16), (16384, 16))
        ],
    ),
    "long rows": (
        [(256, 131072), (64, 262144)],
        [{}]
        + [
            {"CHUNK": c, "CHUNK_WARPS": w, "cooperative": True}
            for c, w in ((4096, 4), (8192, 8), (8192, 16), (16384, 16))
        ]
        + [{"split": True}],
    ),
}


# Settings that are not constants: a long-row strategy forced whatever the input's size ({}: softmax_launch's rule).
STRATEGIES = {
    "split": ("multiprocessors", lambda device: 0),
    "cooperative": ("l2_bytes", lambda device: 0),
}


@contextlib.contextmanager
def setting(overrides: dict):
    """softmax_launch's constants replaced by `overrides` ({"split": True}, {"cooperative": True}: STRATEGIES)."""
    with contextlib.ExitStack() as stack:
        stack.callback(
            softmax_launch.one_pass_plan.cache_clear
        )  # on leaving, once the constants are back
        for name, value in overrides.items():
            name, value = STRATEGIES.get(name, (name, value))
            stack.enter_context(mock.patch.object(softmax_launch, name, value))
        softmax_launch.one_pass_plan.cache_clear()
        yield


def measure(shape, dtype, settings: list[dict], log, peers=()) -> list[dict]:
    """Our fwd and bwd under each setting, and each of `peers` (bench.PEERS' names), as a fraction of the copy of
    the same bytes; checks our result too. Every setting's graphs are captured first (each under its setting) and
    all are timed in the same rounds (bench.timed_in_rounds), the copies and the peers with them."""
    inputs = bench.rotating_inputs(shape, dtype)
    fns = bench.contenders(inputs, dtype, peers)
    timers = {
        (d, k): bench.graph_timer(f, inputs["n"])
        for d in fns
        for k, f in bench.copy_calls(inputs, d).items()
    }
    for d, by_name in fns.items():
        captured, errors = bench.graph_timers({name: by_name[name] for name in peers}, inputs["n"])
        timers |= {(d, name): timer for name, timer in captured.items()}
        for name, error in errors.items():
            log(f"{str(dtype):>15} {str(shape):>15} {d} {name} skipped: {error}")
    errors = []
    for index, overrides in enumerate(settings):
        with setting(overrides):
            timers |= {
                (d, index): bench.graph_timer(f["ours"], inputs["n"]) for d, f in fns.items()
            }
            errors.append(bench.max_error_vs_torch(inputs))
    ms = {key: statistics.median(rounds) for key, rounds in bench.timed_in_rounds(timers).items()}
    columns = [(overrides, index) for index, overrides in enumerate(settings)]
    columns += [({"peer": name}, name) for name in peers]
    rows = []
    for overrides, key in columns:
        row = {"setting": overrides}
        row |= {
            f"{d}_vs_copy": min(ms[d, "memcpy"], ms[d, "elementwise"]) / ms[d, key]
            for d in fns
            if (d, key) in ms
        }
        if isinstance(key, int):
            row["max_error_vs_torch"] = errors[key]
        log(
            f"{str(dtype):>15} {str(shape):>15} {json.dumps(overrides):60} fwd {row.get('fwd_vs_copy', 0):.3f}"
            f"  bwd {row.get('bwd_vs_copy', 0):.3f}  err {row.get('max_error_vs_torch', 0):.1e}"
        )
        rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.softmax_sweep")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--groups", nargs="*", default=list(GROUPS))
    p.add_argument("--peers", action="store_true", help="time the installed peers beside ours")
    a = p.parse_args(argv)
    peers = [name for name in bench.PEERS if name not in bench.installed_peers()] if a.peers else []
    a.out.mkdir(parents=True, exist_ok=True)
    doc = {"device": torch.cuda.get_device_name(0), "results": []}
    start = time.time()
    for group in a.groups:
        shapes, settings = GROUPS[group]
        for dtype in bench.DTYPES:
            for shape in shapes:
                rows = measure(shape, dtype, settings, print, peers)
                doc["results"].append(
                    {"group": group, "dtype": str(dtype), "shape": shape, "rows": rows}
                )
                torch.cuda.empty_cache()
                atomic.write_json(a.out / "sweep.json", doc)
        print(f"{group}: {time.time() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
