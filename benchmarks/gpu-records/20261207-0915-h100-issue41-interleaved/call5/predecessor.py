"""Issue 41: does what runs just before a contender move its time? At the shapes where Liger read 3-5% ahead of ours
in the benchmark (rounds whose order only turned: Liger always after Inductor, ours always after a copy), ours and
Liger are each timed right after each other contender of the benchmark (graphs and eager timers, as
measure_shape builds them), REPEATS times each; prints the median us per call, per predecessor."""

import json
import statistics
import sys

import torch

from workshop.labs.custom_op.bench import benchmark as bench

SHAPES = [(torch.bfloat16, (4096, 4096)), (torch.bfloat16, (4096, 8192)), (torch.float32, (4096, 4096))]
REPEATS = 9
found = []
for dtype, shape in SHAPES:
    inputs = bench.rotating_inputs(shape, dtype)
    fns = bench.contenders(inputs, dtype, ("torch", "inductor", "liger"))["fwd"]
    timers = {f"copy {k}": bench.graph_timer(f, inputs["n"]) for k, f in bench.copy_calls(inputs, "fwd").items()}
    timers |= {name: bench.graph_timer(f, inputs["n"]) for name, f in fns.items()}
    timers |= {f"{name}_eager": bench.eager_timer(lambda f=fns[name]: f(0)) for name in ("ours", "torch")}
    row = {"dtype": str(dtype)[6:], "shape": shape, "after": {}}
    for before in timers:
        row["after"][before] = {}
        for target in ("ours", "liger"):
            if target == before:
                continue
            samples = []
            for _ in range(REPEATS):
                timers[before]()
                samples.append(timers[target]() * 1e3)
            row["after"][before][target] = statistics.median(samples)
    found.append(row)
    for before, t in row["after"].items():
        cells = "  ".join(f"{k} {v:7.2f} us" for k, v in t.items())
        ratio = t["liger"] / t["ours"] if len(t) == 2 else float("nan")
        print(f"{row['dtype']:>8} {str(shape):>14} after {before:>18}: {cells}  liger/ours {ratio:.3f}", flush=True)
    del timers, fns, inputs
    torch.cuda.empty_cache()
json.dump(found, open(sys.argv[1], "w"), indent=1)
