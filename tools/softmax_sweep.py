"""`python -m tools.softmax_sweep --out DIR` (GPU): the measurements behind softmax_launch's constants.

For each group of judged shapes, our kernels under each candidate setting of softmax_launch's constants, device
time as in the benchmark (workshop/labs/custom_op/bench/benchmark.py: CUDA graph, inputs rotating past L2), as a
fraction of a copy of the same bytes. Writes sweep.json after every measurement and prints one line each.
"""

import argparse
import contextlib
import json
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


def measure(shape, dtype, settings: list[dict], log) -> list[dict]:
    """Our fwd and bwd under each setting, as a fraction of the copy of the same bytes; checks the result too.
    Every setting's graphs are captured first (each under its setting) and all are timed in the same rounds
    (bench.interleaved_ms), the copies with them."""
    inputs = bench.rotating_inputs(shape, dtype)
    ours = {d: fns["ours"] for d, fns in bench.contenders(inputs, dtype, peers=()).items()}
    timers = {
        (d, k): bench.graph_timer(f, inputs["n"])
        for d in ours
        for k, f in bench.copy_calls(inputs, d).items()
    }
    errors = []
    for index, overrides in enumerate(settings):
        with setting(overrides):
            timers |= {(d, index): bench.graph_timer(f, inputs["n"]) for d, f in ours.items()}
            errors.append(bench.max_error_vs_torch(inputs))
    ms = bench.interleaved_ms(timers)
    rows = []
    for index, overrides in enumerate(settings):
        row = {"setting": overrides}
        row |= {
            f"{d}_vs_copy": min(ms[d, "memcpy"], ms[d, "elementwise"]) / ms[d, index] for d in ours
        }
        row["max_error_vs_torch"] = errors[index]
        log(
            f"{str(dtype):>15} {str(shape):>15} {json.dumps(overrides):60} fwd {row['fwd_vs_copy']:.3f}"
            f"  bwd {row['bwd_vs_copy']:.3f}  err {row['max_error_vs_torch']:.1e}"
        )
        rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.softmax_sweep")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--groups", nargs="*", default=list(GROUPS))
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    doc = {"device": torch.cuda.get_device_name(0), "results": []}
    start = time.time()
    for group in a.groups:
        shapes, settings = GROUPS[group]
        for dtype in bench.DTYPES:
            for shape in shapes:
                rows = measure(shape, dtype, settings, print)
                doc["results"].append(
                    {"group": group, "dtype": str(dtype), "shape": shape, "rows": rows}
                )
                torch.cuda.empty_cache()
                atomic.write_json(a.out / "sweep.json", doc)
        print(f"{group}: {time.time() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
