"""Issue 41: one launch of each contender's kernels, for Nsight Compute, at the shapes where ours misses a target.
Run under: ncu --profile-from-start off ... python3 ncu_cases.py
Everything is compiled and warmed before cudaProfilerStart; each case runs once inside it, in NVTX ranges."""

import sys

import torch

from workshop.labs.custom_op.bench import benchmark

CASES = [  # (dtype, shape, directions, peers to profile beside ours and the copy)
    (torch.float32, (64, 262144), ("fwd", "bwd"), ("inductor",)),
    (torch.bfloat16, (64, 262144), ("fwd", "bwd"), ("inductor",)),
    (torch.float32, (256, 131072), ("fwd", "bwd"), ("inductor",)),
    (torch.bfloat16, (256, 131072), ("fwd", "bwd"), ("inductor",)),
    (torch.bfloat16, (4096, 1024), ("fwd", "bwd"), ("liger", "inductor")),
    (torch.bfloat16, (4096, 600), ("fwd", "bwd"), ("liger", "inductor")),
    (torch.bfloat16, (4096, 256), ("fwd", "bwd"), ("liger", "inductor")),
    (torch.float32, (4096, 1024), ("fwd",), ("liger",)),
    (torch.bfloat16, (4096, 16384), ("fwd",), ("liger",)),
    (torch.float32, (4096, 8192), ("fwd", "bwd"), ("liger",)),
]

runs = []
for dtype, shape, directions, peers in CASES:
    inputs = benchmark.rotating_inputs(shape, dtype)
    inputs["n"] = 1
    fns = benchmark.contenders(inputs, dtype, peers)
    for direction in directions:
        src, dst = inputs["copy"][direction][0]
        calls = dict(fns[direction]) | {"copy": lambda s=src, d=dst: d.copy_(s)}
        for name, fn in calls.items():
            call = (lambda f=fn: f(0)) if name != "copy" else fn
            for _ in range(3):  # compile, autotune, warm
                call()
            runs.append((f"{direction} {name} {str(dtype)[6:]} {shape[0]}x{shape[1]}", call))
torch.cuda.synchronize()
print(len(runs), "ranges", file=sys.stderr)
torch.cuda.profiler.start()
for label, call in runs:
    torch.cuda.nvtx.range_push(label)
    call()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
torch.cuda.profiler.stop()
