"""Issue 41, probe 1 (b): Nsight Compute on the benchmark's graph replay, caches NOT flushed (run under
`ncu --profile-from-start off --cache-control none ...`, with --graph-profiling graph: a replay of the whole graph is
one result; or node: each kernel of the graph is one result).

For each shape, direction and contender, the graph that benchmark.graph_ms captures (call(0), ..., call(n - 1) on
the benchmark's rotating inputs) is replayed WARM times unprofiled, then once between cudaProfilerStart and Stop:
what that replay finds in L2 is what the replay before it left, as in the benchmark's timed replays.
The labels, in the order profiled, go to LABELS.json (one per graph replay; in node mode a graph's n kernels share
its label).

Usage: ncu ... python3 ncu_replay.py LABELS.json
"""

import json
import sys

import torch

import replay_probe as rp
from workshop.labs.custom_op.bench import benchmark

SHAPES = [
    (torch.float32, (4096, 4096)),
    (torch.float32, (4096, 8192)),
    (torch.bfloat16, (4096, 4096)),
    (torch.bfloat16, (4096, 16384)),
]
CONTENDERS = {
    "fwd": ("ours", "ours + .cs store", "liger", "liger without hints", "copy"),
    "bwd": ("ours", "ours + .cs store", "liger", "liger without hints", "copy"),
}
WARM = 3

labels = []
for dtype, shape in SHAPES:
    inputs = benchmark.rotating_inputs(shape, dtype)
    n = inputs["n"]
    fns = rp.contenders(inputs, dtype, shape)
    for direction, names in CONTENDERS.items():
        for name in names:
            graph = rp.capture(fns[direction][name], n)
            for _ in range(WARM):
                graph.replay()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            graph.replay()
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            labels.append(
                {"direction": direction, "contender": name, "dtype": str(dtype)[6:], "shape": list(shape), "n": n}
            )
            del graph
    del inputs, fns
    torch.cuda.empty_cache()
    with open(sys.argv[1], "w") as f:
        json.dump(labels, f, indent=1)
print(f"profiled {len(labels)} graph replays", flush=True)
